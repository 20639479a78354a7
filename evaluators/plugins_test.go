// Package evaluators_test checks that the first-party evaluators work as
// plugins too: each plugin main is built, loaded by the host, and run
// through the conformance kit and a scoring case.
package evaluators_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
)

// judgeModel is the run's model as the judge plugin sees it, lent over
// the plugin connection: it grades everything 0.9.
type judgeModel struct{}

func (judgeModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: "Good answer.\nScore: 0.9"},
		Usage: harness.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}}, nil
}

func TestFirstPartyEvaluatorsAsPlugins(t *testing.T) {
	dir := t.TempDir()
	for pkg, name := range map[string]string{
		"./judge/cmd/gauntlet-evaluator-judge":            "gauntlet-evaluator-judge",
		"./jsonschema/cmd/gauntlet-evaluator-json_schema": "gauntlet-evaluator-json_schema",
		"./trajectory/cmd/gauntlet-evaluator-trajectory":  "gauntlet-evaluator-trajectory",
	} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	m, err := host.New(host.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	reg := harness.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}

	judge, ok := reg.Evaluator("judge")
	if !ok {
		t.Fatal("judge plugin not registered")
	}
	harnesstest.TestEvaluator(t, judge, harnesstest.EvalCase{
		Name: "graded by the run's model",
		Request: &harness.EvalRequest{
			Test:      harness.Test{Prompt: "Name a fruit.", Expected: harness.Expected{Answer: "apple", Type: "exact"}},
			Evaluator: harness.EvaluatorConfig{Type: "judge", Config: map[string]any{"rubric": "Any fruit is right."}},
			Response:  "A pear.", Client: judgeModel{}, Model: "m",
		},
		Want: &harnesstest.Verdict{Score: 0.9, Passed: true},
	})
	if err := judge.(harness.ConfigValidator).ValidateConfig(harness.EvaluatorConfig{Type: "judge", Config: map[string]any{}}); err == nil {
		t.Error("the judge plugin accepted a config without a rubric")
	}

	schema, ok := reg.Evaluator("json_schema")
	if !ok {
		t.Fatal("json_schema plugin not registered")
	}
	harnesstest.TestEvaluator(t, schema, harnesstest.EvalCase{
		Name: "valid object",
		Request: &harness.EvalRequest{
			Test: harness.Test{Expected: harness.Expected{Type: "json_schema",
				Answer: `{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`}},
			Evaluator: harness.EvaluatorConfig{Type: "json_schema"},
			Response:  "Here it is: {\"name\": \"Ada\"}",
		},
		Want: &harnesstest.Verdict{Score: 1, Passed: true},
	})

	// The trajectory reaches the plugin with the test, and the calls with
	// the request: the plugin scores them as the evaluator in-process does.
	tr, ok := reg.Evaluator("trajectory")
	if !ok {
		t.Fatal("trajectory plugin not registered")
	}
	plan := &harness.Trajectory{Tools: []string{"search", "book"}, Mode: harness.TrajectoryInOrder,
		Arguments: []map[string]any{{"q": "Paris", "n": 2}}}
	trip := func(calls ...harness.ToolCall) *harness.EvalRequest {
		return &harness.EvalRequest{
			Test:      harness.Test{ID: "trip", Expected: harness.Expected{Type: "trajectory", Trajectory: plan}},
			Evaluator: harness.EvaluatorConfig{Type: "trajectory"},
			Response:  "Booked.", ToolCalls: calls,
		}
	}
	harnesstest.TestEvaluator(t, tr,
		harnesstest.EvalCase{Name: "in order", Request: trip(harness.ToolCall{Name: "search", Arguments: `{"q":"Paris","n":2}`},
			harness.ToolCall{Name: "log"}, harness.ToolCall{Name: "book"}), Want: &harnesstest.Verdict{Score: 1, Passed: true}},
		harnesstest.EvalCase{Name: "wrong arguments", Request: trip(harness.ToolCall{Name: "search", Arguments: `{"q":"Paris","n":3}`},
			harness.ToolCall{Name: "book"}), Want: &harnesstest.Verdict{Score: 0.5}},
		harnesstest.EvalCase{Name: "malformed arguments", Request: trip(harness.ToolCall{Name: "search", Arguments: `{"q":`}),
			Want: &harnesstest.Verdict{Score: 0}},
	)
	res, err := tr.Evaluate(context.Background(), trip(harness.ToolCall{Name: "book"}))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := res.Details["trajectory"].(map[string]any); d["diverged_at"] != 0.0 || d["mode"] != "in_order" {
		t.Errorf("plugin details %v", res.Details)
	}
}
