package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestRunSimulatorModel: gauntlet run --simulator-model has that model
// play the simulated users of tests that name none (the endpoint sees
// the requests under that name), the run's config records it, and the
// JSON report carries details.simulated_user.
func TestRunSimulatorModel(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	files := map[string]string{
		"evaluators/whole.yaml":     "id: whole\nname: Whole answer\ntype: regex\n",
		"domains/chat/domain.yaml":  "id: chat\nname: Chat\nenabled: true\nevaluator_id: whole\n",
		"domains/chat/level-1.yaml": "tests:\n  - id: pupil\n    expected: {answer: \"4\", type: contains}\n    simulated_user:\n      persona: A pupil.\n      goal: Learn what 2 + 2 is.\n      max_turns: 2\n",
	}
	for rel, text := range files {
		p := filepath.Join(defs, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var simulated atomic.Int64
	mock := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		if req.Model == "sim-model" {
			simulated.Add(1)
			return &llmtest.Reply{Content: "What is 2 + 2?"}
		}
		return nil
	}})
	t.Cleanup(mock.Close)
	out := filepath.Join(dir, "report.json")
	var stdout, stderr strings.Builder
	err := run(context.Background(), []string{"run", "--data", filepath.Join(dir, "data"), "--definitions", defs,
		"--llm-base-url", mock.URL, "--llm-model", "mock", "--simulator-model", "sim-model", "--format", "json", "--output", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if n := simulated.Load(); n != 2 {
		t.Errorf("the simulator model was asked %d times, want 2 (max_turns)", n)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{`"simulator_model": "sim-model"`, `"simulated_user"`, `"ended": "max_turns"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the JSON report lacks %s:\n%.3000s", want, text)
		}
	}
}
