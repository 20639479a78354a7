package harness_test

import (
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// An evaluator (a plugin's, say) scores the tool calls of a response
// against the test's expected trajectory, the way the trajectory
// evaluator does.
func ExampleMatchTrajectory() {
	tr := harness.Trajectory{
		Tools:     []string{"lookup_order", "refund_status"},
		Mode:      harness.TrajectoryExact,
		Arguments: []map[string]any{{"order_id": "1042"}},
	}
	calls := []harness.ToolCall{
		{Name: "lookup_order", Arguments: `{"order_id": "1042", "verbose": true}`},
		{Name: "cancel_order", Arguments: `{"order_id": "1042"}`},
	}
	res, err := harness.MatchTrajectory(tr, calls)
	if err != nil {
		panic(err)
	}
	fmt.Printf("score %.2f, passed %v, diverged at %d\n", res.Score, res.Passed, *res.DivergedAt)
	fmt.Println(res.Reason)
	// Output:
	// score 0.50, passed false, diverged at 1
	// actual[1] cancel_order where expected[1] refund_status was expected
}
