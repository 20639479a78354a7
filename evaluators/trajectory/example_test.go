package trajectory_test

import (
	"context"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/evaluators/trajectory"
	"github.com/gauntlet-eval/gauntlet/harness"
)

// A program registers the evaluator and its expected answer type; a test
// then lists the calls the model should make, and the evaluator says
// where the calls made left that path.
func Example() {
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(trajectory.Type, trajectory.New()); err != nil {
		panic(err)
	}
	if err := trajectory.RegisterExpectedType(reg); err != nil {
		panic(err)
	}
	expected := harness.Expected{
		Type: trajectory.ExpectedType,
		Trajectory: &harness.Trajectory{
			Tools:     []string{"search_flights", "book_flight"},
			Mode:      harness.TrajectoryInOrder,
			Arguments: []map[string]any{{"destination": "Paris"}},
		},
	}
	// The write-time check of the expected answer.
	if err := (harness.Validator{Registry: reg}).Expected(expected); err != nil {
		panic(err)
	}

	ev, _ := reg.Evaluator(trajectory.Type)
	res, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
		Test: harness.Test{ID: "trip", Prompt: "Book me a flight to Paris.", Expected: expected},
		ToolCalls: []harness.ToolCall{
			{Name: "search_flights", Arguments: `{"destination": "Rome"}`},
			{Name: "book_flight", Arguments: `{"flight": "AZ 610"}`},
		},
		Response: "Booked.",
	})
	if err != nil {
		panic(err)
	}
	tr := res.Details["trajectory"].(map[string]any)
	fmt.Printf("score %.2f, passed %v, diverged at %v\n", res.Score, res.Passed, tr["diverged_at"])
	fmt.Println(res.Details["reason"])
	// Output:
	// score 0.50, passed false, diverged at 0
	// expected[0] search_flights {"destination":"Paris"}: search_flights was called but no call's arguments include the expected ones
}
