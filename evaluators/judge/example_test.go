package judge_test

import (
	"context"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// A program registers the judge once; an evaluator record of type judge
// holds the rubric. Here the judge is a dedicated model on an
// OpenAI-compatible endpoint (a fake one, which answers every request with
// the same verdict).
func Example() {
	srv := llmtest.NewServer(llmtest.Options{
		Respond: func(*llmtest.Request) *llmtest.Reply {
			return &llmtest.Reply{Content: "Names Paris and explains nothing, as asked.\nScore: 0.9"}
		},
	})
	defer srv.Close()
	judgeModel, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "judge-large"})
	if err != nil {
		panic(err)
	}

	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(judge.Type, judge.New(judge.Options{Client: judgeModel, Model: "judge-large"})); err != nil {
		panic(err)
	}
	record := harness.EvaluatorConfig{
		ID: "graded", Name: "Graded", Type: judge.Type,
		Config: map[string]any{"rubric": "Names the capital of France, in one word.", "pass_score": 0.7},
	}
	// The write-time check of the record.
	if err := (harness.Validator{Registry: reg}).Evaluator(&record); err != nil {
		panic(err)
	}

	ev, _ := reg.Evaluator(judge.Type)
	res, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
		Test: harness.Test{
			ID: "capital", Prompt: "What is the capital of France? One word.",
			Expected: harness.Expected{Answer: "Paris", Type: "exact"},
		},
		Evaluator: record,
		Response:  "Paris",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Score, res.Passed, res.Details["judge_model"])
	fmt.Println(res.Details["judge_verdict"])
	// Output:
	// 0.9 true judge-large
	// Score: 0.9
}

// ParseVerdict reads the forms judges answer in.
func ExampleParseVerdict() {
	for _, reply := range []string{
		"Accurate and complete.\nScore: 0.8",
		"7/10",
		`{"score": 0.25, "reasoning": "Wrong year."}`,
		"Grade: B",
		"FAIL",
		"I liked it.",
	} {
		v, ok := judge.ParseVerdict(reply)
		fmt.Println(v.Score, ok)
	}
	// Output:
	// 0.8 true
	// 0.7 true
	// 0.25 true
	// 0.75 true
	// 0 true
	// 0 false
}
