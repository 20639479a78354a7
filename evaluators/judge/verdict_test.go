package judge_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
)

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		name      string
		reply     string
		want      float64
		wantText  string // "" to skip
		wantWhy   string // Reasoning; "" to skip
		wantNoneT bool   // no verdict
	}{
		// Labelled values.
		{name: "score line", reply: "The answer is right.\nScore: 0.8", want: 0.8, wantText: "Score: 0.8"},
		{name: "score one", reply: "Score: 1", want: 1},
		{name: "score zero", reply: "Score: 0", want: 0},
		{name: "score leading dot", reply: "Score: .75", want: 0.75},
		{name: "score fraction of one", reply: "Score: 0.8/1", want: 0.8},
		{name: "score out of ten", reply: "Score: 8/10", want: 0.8},
		{name: "score out of five in words", reply: "Rating: 4 out of 5", want: 0.8},
		{name: "score percentage", reply: "Score: 80%", want: 0.8},
		{name: "final score is", reply: "So the final score is 0.65.", want: 0.65},
		{name: "score with markdown", reply: "**Score:** **0.9**", want: 0.9},
		{name: "score in backticks", reply: "Score: `0.4`", want: 0.4},
		{name: "score equals", reply: "score = 0.3", want: 0.3},
		{name: "lower-case label", reply: "score: 0.55", want: 0.55},
		{name: "score then comment", reply: "Score: 0.7 (minor omissions)", want: 0.7},
		{name: "list item", reply: "- Score: 0.2", want: 0.2},
		{name: "heading", reply: "## Score: 1.0", want: 1},
		{name: "last labelled value wins", reply: "A score of 0.5 seemed right at first.\nScore: 0.9", want: 0.9},
		{name: "last labelled value in a line", reply: "Accuracy score: 0.2, overall score: 0.6", want: 0.6},
		{name: "grade letter", reply: "Grade: B", want: 0.75},
		{name: "grade letter lower case", reply: "grade: c", want: 0.5},
		{name: "grade with modifier", reply: "Grade: A-", want: 1},
		{name: "grade D", reply: "Grade: D, incomplete", want: 0.25},
		{name: "grade F", reply: "Grade: F", want: 0},
		{name: "score as letter", reply: "Score: B", want: 0.75},
		{name: "verdict pass", reply: "Verdict: PASS", want: 1},
		{name: "verdict fail", reply: "Verdict: fail.", want: 0},
		{name: "verdict passed", reply: "**Verdict**: Passed", want: 1},

		// Lines that are only a value.
		{name: "bare number", reply: "0.8", want: 0.8},
		{name: "bare fraction", reply: "The response is fine.\n\n8/10", want: 0.8},
		{name: "bare percentage", reply: "80%", want: 0.8},
		{name: "bare grade", reply: "Mostly right.\n**B**", want: 0.75},
		{name: "bare PASS", reply: "PASS", want: 1},
		{name: "bare FAIL with reasoning after", reply: "FAIL\n\nThe answer gives the wrong year.", want: 0},
		{name: "bare value beats earlier labelled prose", reply: "I considered a score of 0.5.\n0.9", want: 0.9},

		// JSON.
		{name: "json", reply: `{"score": 0.8, "reasoning": "Correct but terse."}`, want: 0.8, wantWhy: "Correct but terse."},
		{name: "json fenced", reply: "```json\n{\"score\": 0.25, \"explanation\": \"Mostly wrong.\"}\n```", want: 0.25, wantWhy: "Mostly wrong."},
		{name: "json amid text", reply: `Here is my verdict: {"Score": "8/10", "reason": "ok"} thanks`, want: 0.8, wantWhy: "ok"},
		{name: "json grade", reply: `{"grade": "C"}`, want: 0.5},
		{name: "json passed", reply: `{"passed": false, "reasoning": "no"}`, want: 0},
		{name: "json verdict string", reply: `{"verdict": "PASS"}`, want: 1},
		{name: "json last object wins", reply: `{"score": 0.1} revised: {"score": 0.6}`, want: 0.6},
		{name: "json nested", reply: `{"result": {"x": 1}, "score": 1}`, want: 1},
		{name: "json beats text", reply: "Score: 0.1\n{\"score\": 0.9}", want: 0.9},

		// No verdict.
		{name: "empty", reply: "", wantNoneT: true},
		{name: "prose only", reply: "The response is good but misses a step.", wantNoneT: true},
		{name: "score above one", reply: "Score: 8", wantNoneT: true},
		{name: "negative score", reply: "Score: -0.5", wantNoneT: true},
		{name: "fraction above one", reply: "Score: 11/10", wantNoneT: true},
		{name: "percentage above 100", reply: "Score: 120%", wantNoneT: true},
		{name: "zero denominator", reply: "Score: 0/0", wantNoneT: true},
		{name: "json score above one", reply: `{"score": 7}`, wantNoneT: true},
		{name: "label without value", reply: "Score: the response deserves credit", wantNoneT: true},
		{name: "article is not a grade", reply: "Verdict: A response that tries hard.", wantNoneT: true},
		{name: "lower-case letter alone is not a grade", reply: "b", wantNoneT: true},
		{name: "number glued to a word", reply: "Score: 0.8x", wantNoneT: true},
		{name: "version-like number", reply: "Score: 0.8.1", wantNoneT: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := judge.ParseVerdict(tt.reply)
			if tt.wantNoneT {
				if ok {
					t.Fatalf("ParseVerdict(%q) = %+v, want no verdict", tt.reply, v)
				}
				return
			}
			if !ok {
				t.Fatalf("ParseVerdict(%q): no verdict, want %v", tt.reply, tt.want)
			}
			if math.Abs(v.Score-tt.want) > 1e-9 {
				t.Errorf("ParseVerdict(%q).Score = %v, want %v", tt.reply, v.Score, tt.want)
			}
			if tt.wantText != "" && v.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", v.Text, tt.wantText)
			}
			if tt.wantWhy != "" && v.Reasoning != tt.wantWhy {
				t.Errorf("Reasoning = %q, want %q", v.Reasoning, tt.wantWhy)
			}
		})
	}
}

// Many unbalanced braces cost linear time.
func TestParseVerdictBounded(t *testing.T) {
	reply := strings.Repeat("{", 100_000) + "\nScore: 0.5"
	v, ok := judge.ParseVerdict(reply)
	if !ok || v.Score != 0.5 {
		t.Fatalf("ParseVerdict = %+v, %v", v, ok)
	}
}
