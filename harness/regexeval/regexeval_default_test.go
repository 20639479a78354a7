package regexeval

import (
	"context"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Without an extraction_regex, a response that is not itself an answer of
// the expected type gives its most likely candidate.
func TestDefaultExtractionByType(t *testing.T) {
	cases := []struct {
		typ, answer, response string
		pass                  bool
	}{
		{"numeric", "42", "The answer is 42.", true},
		{"numeric", "1234", "Adding them gives 1,234.", true},
		{"numeric", "-8", "-15 + 7 = -8", true},
		{"numeric", "5", "I think 3, no wait, 4.", false},
		{"integer", "465", "120 + 45 + 300 = 465", true},
		{"choice", "B", "The capital of France is Paris, so B.", true},
		{"choice", "C", "Answer: (C) Jupiter", true},
		{"boolean", "yes", "Yes, it does at sea level.", true},
		{"boolean", "no", "No.", true},
		{"numeric", "7", "seven", false},
	}
	e := New(Options{})
	for _, c := range cases {
		t.Run(c.typ+"/"+c.response, func(t *testing.T) {
			res, err := e.Evaluate(context.Background(), &harness.EvalRequest{
				Test:      harness.Test{Expected: harness.Expected{Answer: c.answer, Type: c.typ}},
				Evaluator: harness.EvaluatorConfig{Type: harness.EvaluatorTypeRegex},
				Response:  c.response,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed != c.pass {
				t.Fatalf("passed = %v, want %v; details %v", res.Passed, c.pass, res.Details)
			}
		})
	}
}
