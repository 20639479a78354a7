package jsonschema_test

import (
	"context"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/evaluators/jsonschema"
	"github.com/gauntlet-eval/gauntlet/harness"
)

// A program registers the evaluator and its expected answer type; tests
// then hold a JSON Schema in expected.answer.
func Example() {
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(jsonschema.Type, jsonschema.New(jsonschema.Options{})); err != nil {
		panic(err)
	}
	if err := jsonschema.RegisterExpectedType(reg); err != nil {
		panic(err)
	}
	expected := harness.Expected{
		Type: jsonschema.ExpectedType,
		Answer: `{"type": "object", "required": ["name", "age"],
		          "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}`,
	}
	// The write-time check of the expected type.
	if err := (harness.Validator{Registry: reg}).Expected(expected); err != nil {
		panic(err)
	}

	ev, _ := reg.Evaluator(jsonschema.Type)
	res, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
		Test:     harness.Test{ID: "person", Prompt: "Describe Ada Lovelace as JSON.", Expected: expected},
		Response: "```json\n{\"name\": \"Ada Lovelace\", \"age\": \"36\"}\n```",
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("score %.2f, passed %v\n", res.Score, res.Passed)
	fmt.Println(res.Details["checks_passed"], "of", res.Details["checks_total"], "checks")
	fmt.Println(res.Details["errors"])
	// Output:
	// score 0.67, passed false
	// 2 of 3 checks
	// [/age: got string, want integer]
}
