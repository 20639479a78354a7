package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestRunTarget: gauntlet run --target sends the suite's turns to the
// black-box target named, and the report records it; an unknown target
// is refused before any test.
func TestRunTarget(t *testing.T) {
	var asked atomic.Int64
	box := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"answer": "It is 4."})
	}))
	t.Cleanup(box.Close)
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	files := map[string]string{
		"evaluators/whole.yaml":     "id: whole\nname: Whole answer\ntype: regex\n",
		"domains/chat/domain.yaml":  "id: chat\nname: Chat\nenabled: true\nevaluator_id: whole\n",
		"domains/chat/level-1.yaml": "tests:\n  - id: four\n    prompt: What is 2 + 2?\n    expected: {answer: \"4\", type: contains}\n",
		"targets/box.yaml":          "id: box\nurl: " + box.URL + "/chat\nbody:\n  text: '{{prompt}}'\nresponse: /answer\n",
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
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	args := func(target, out string) []string {
		return []string{"run", "--data", filepath.Join(dir, "data"), "--definitions", defs,
			"--llm-base-url", mock.URL, "--llm-model", "mock", "--target", target, "--format", "json", "--output", out}
	}
	var stdout, stderr strings.Builder
	if err := run(context.Background(), args("nobody", filepath.Join(dir, "bad.json")), &stdout, &stderr); err == nil ||
		!strings.Contains(err.Error(), "unknown target") {
		t.Errorf("an unknown target: %v", err)
	}
	out := filepath.Join(dir, "report.json")
	if err := run(context.Background(), args("box", out), &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if n, m := asked.Load(), mock.Stats().ChatCompletions; n != 1 || m != 0 {
		t.Errorf("the target was asked %d times and the model %d; want 1 and 0", n, m)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"target_id": "box"`, `"passed": 1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the JSON report lacks %s:\n%.2000s", want, b)
		}
	}
}
