package harness_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Validation names every offending field; the error matches ErrInvalid.
func ExampleValidator_Domain() {
	v := harness.Validator{}
	err := v.Domain(&harness.Domain{ID: "bad id", Name: "Maths", Color: "blue"})
	fmt.Println(errors.Is(err, harness.ErrInvalid))
	var ve *harness.ValidationError
	if errors.As(err, &ve) {
		for _, f := range ve.Fields {
			fmt.Printf("%s: %s\n", f.Field, f.Message)
		}
	}
	// Output:
	// true
	// id: must match ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$
	// color: must be a hex colour #RRGGBB
}

// An evaluator type registered by the program becomes valid in evaluator
// records; the registry is an instance, not global state.
func ExampleRegistry() {
	reg := harness.NewRegistry()
	v := harness.Validator{Registry: reg}
	judge := &harness.EvaluatorConfig{ID: "judge", Name: "Judge", Type: "judge"}
	fmt.Println(v.Evaluator(judge))

	_ = reg.RegisterEvaluator("judge", alwaysPass{})
	fmt.Println(v.Evaluator(judge))
	fmt.Println(reg.RegisterEvaluator("judge", alwaysPass{}))
	// Output:
	// invalid: type: unknown evaluator type "judge"
	// <nil>
	// register evaluator "judge": already registered: conflict
}

type alwaysPass struct{}

func (alwaysPass) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	return &harness.EvalResult{Score: 1, Passed: true}, nil
}

func ExampleParseNumber() {
	for _, s := range []string{"1,234", "-3.5", "1/2", "50%", "seven"} {
		n, ok := harness.ParseNumber(s)
		fmt.Println(s, n, ok)
	}
	// Output:
	// 1,234 1234 true
	// -3.5 -3.5 true
	// 1/2 0.5 true
	// 50% 0.5 true
	// seven 0 false
}

func ExampleEffectiveSystemPrompt() {
	level := harness.LevelConfig{SystemPrompt: "Answer with a number.", SystemPromptMode: harness.PromptAppend}
	fmt.Println(harness.EffectiveSystemPrompt("You are a calculator.", level))
	// Output:
	// You are a calculator.
	//
	// Answer with a number.
}
