package regexeval_test

import (
	"context"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/regexeval"
)

// The engine registers the evaluator once and calls Evaluate for every
// test; details say what was extracted and whether a second pass ran.
func Example() {
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(harness.EvaluatorTypeRegex, regexeval.New(regexeval.Options{})); err != nil {
		panic(err)
	}
	ev, _ := reg.Evaluator(harness.EvaluatorTypeRegex)

	res, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
		Test: harness.Test{
			ID:       "add",
			Prompt:   "What is 1,200 + 34? End with 'Answer: <number>'.",
			Expected: harness.Expected{Answer: "1234", Type: "numeric"},
		},
		Evaluator: harness.EvaluatorConfig{ExtractionRegex: `Answer:\s*(?<answer>[-\d.,]+)`},
		Response:  "1,200 + 34 = 1,234.\nAnswer: 1,234",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Score, res.Passed, res.Details["extracted_answer"], res.Details["pass2_used"])
	// Output: 1 true 1,234 false
}

// Extract applies the extraction rules alone: the named group "answer",
// else group 1, else the whole match; the last match wins.
func ExampleExtract() {
	answer, ok, err := regexeval.Extract(`Answer: (\w+)`, "Answer: A\nOn reflection... Answer: C")
	fmt.Println(answer, ok, err)
	// Output: C true <nil>
}

// Compare applies the comparison rules of an expected type to an answer.
func ExampleCompare() {
	exp := harness.Expected{Answer: "B", Type: "choice"}
	for _, answer := range []string{"(b) Paris", "A) London"} {
		score, passed, detail := regexeval.Compare(exp, answer, nil)
		fmt.Printf("%v %v %q\n", score, passed, detail)
	}
	// Output:
	// 1 true ""
	// 0 false "expected B, got A"
}
