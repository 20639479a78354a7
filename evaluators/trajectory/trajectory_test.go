package trajectory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/evaluators/trajectory"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

func request(tr *harness.Trajectory, calls ...harness.ToolCall) *harness.EvalRequest {
	return &harness.EvalRequest{
		Test:      harness.Test{ID: "trip", Prompt: "Plan it.", Expected: harness.Expected{Type: trajectory.ExpectedType, Trajectory: tr}},
		Evaluator: harness.EvaluatorConfig{ID: "tr", Name: "Trajectory", Type: trajectory.Type},
		ToolCalls: calls,
		Response:  "Done.",
	}
}

var plan = &harness.Trajectory{Tools: []string{"search", "book"}, Mode: harness.TrajectoryExact,
	Arguments: []map[string]any{{"q": "Paris"}}}

// Cases is what the evaluator is checked with, in-process and as a plugin.
func Cases() []harnesstest.EvalCase {
	return []harnesstest.EvalCase{
		{Name: "the path", Request: request(plan, harness.ToolCall{Name: "search", Arguments: `{"q":"Paris"}`}, harness.ToolCall{Name: "book"}),
			Want: &harnesstest.Verdict{Score: 1, Passed: true}},
		{Name: "a step too many", Request: request(plan, harness.ToolCall{Name: "search", Arguments: `{"q":"Paris"}`},
			harness.ToolCall{Name: "book"}, harness.ToolCall{Name: "book"}), Want: &harnesstest.Verdict{Score: 2.0 / 3}},
		{Name: "no calls", Request: request(plan), Want: &harnesstest.Verdict{}},
		{Name: "malformed arguments", Request: request(plan, harness.ToolCall{Name: "search", Arguments: `{"q":`}, harness.ToolCall{Name: "book"}),
			Want: &harnesstest.Verdict{Score: 0.5}},
	}
}

// The conformance kit, in-process.
func TestConformance(t *testing.T) {
	harnesstest.TestEvaluator(t, trajectory.New(), Cases()...)
}

// TestEvaluate: the details say where the calls diverged; a test without
// a trajectory, or with an invalid one, is an ErrInvalid error.
func TestEvaluate(t *testing.T) {
	ctx := context.Background()
	res, err := trajectory.New().Evaluate(ctx, request(plan, harness.ToolCall{Name: "book"}, harness.ToolCall{Name: "search", Arguments: `{"q":"Paris"}`}))
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := res.Details["trajectory"].(map[string]any)
	if res.Passed || tr["diverged_at"] != 0.0 || tr["mode"] != "exact" || res.Details["extracted_answer"] != "book, search" ||
		!strings.Contains(res.Details["reason"].(string), "actual[0] book where expected[0] search") {
		t.Errorf("swapped: %+v", res)
	}
	for name, req := range map[string]*harness.EvalRequest{
		"no trajectory":      request(nil),
		"invalid trajectory": request(&harness.Trajectory{Tools: []string{"a"}, Mode: "maybe"}),
		"nil request":        nil,
	} {
		if _, err := trajectory.New().Evaluate(ctx, req); !errors.Is(err, harness.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestExpectedType: a test of type trajectory needs a trajectory and no
// answer; any config key is refused.
func TestExpectedType(t *testing.T) {
	reg := harness.NewRegistry()
	if err := trajectory.RegisterExpectedType(reg); err != nil {
		t.Fatal(err)
	}
	v := harness.Validator{Registry: reg}
	if err := v.Expected(harness.Expected{Type: "trajectory"}); err == nil || !strings.Contains(err.Error(), "trajectory: is required") {
		t.Errorf("no trajectory: %v", err)
	}
	if err := v.Expected(harness.Expected{Type: "trajectory", Trajectory: plan}); err != nil {
		t.Errorf("valid: %v", err)
	}
	if err := trajectory.New().ValidateConfig(harness.EvaluatorConfig{Config: map[string]any{"mode": "exact"}}); err == nil {
		t.Error("a config key was accepted")
	}
}
