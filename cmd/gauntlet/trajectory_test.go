package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestRunTrajectory: `gauntlet run` scores tests by the trajectory
// evaluator the binary links in, from definition files, against the fake
// model's own tool calls; the JSON report holds details.trajectory.
func TestRunTrajectory(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(filepath.Join(defs, "tools"), os.DirFS("../../examples/definitions/tools")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"evaluators/path.yaml":       "id: path\nname: Tool path\ntype: trajectory\n",
		"domains/travel/domain.yaml": "id: travel\nname: Travel\nevaluator_id: path\n",
		"domains/travel/level-1.yaml": `tools: [get_weather, convert_currency]
tests:
  - id: weather
    prompt: What's the weather like in Paris right now?
    expected:
      type: trajectory
      trajectory: {tools: [get_weather], mode: exact, arguments: [{city: Paris}], max_steps: 1}
  - id: money-first
    prompt: What's the weather like in Paris right now?
    expected:
      type: trajectory
      trajectory: {tools: [convert_currency, get_weather], mode: in_order}
`,
	}
	for rel, body := range files {
		p := filepath.Join(defs, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	var out strings.Builder
	err := run(context.Background(), []string{"run", "--format", "json",
		"--data", filepath.Join(dir, "data"), "--definitions", defs, "--llm-base-url", mock.URL, "--llm-model", "mock"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	var doc struct {
		TestResults []struct {
			TestID  string         `json:"test_id"`
			Status  string         `json:"status"`
			Score   float64        `json:"score"`
			Details map[string]any `json:"details"`
		} `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range doc.TestResults {
		tr, _ := r.Details["trajectory"].(map[string]any)
		b, _ := json.Marshal(map[string]any{"status": r.Status, "score": r.Score, "diverged_at": tr["diverged_at"], "reason": tr["reason"]})
		got[r.TestID] = string(b)
	}
	want := map[string]string{
		"weather":     `{"diverged_at":null,"reason":null,"score":1,"status":"passed"}`,
		"money-first": `{"diverged_at":0,"reason":"expected[0] convert_currency was not called","score":0.5,"status":"failed"}`,
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %s\nwant %s", id, got[id], w)
		}
	}
}
