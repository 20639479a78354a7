package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// buildPlugin builds a plugin main package into dir under name.
func buildPlugin(t *testing.T, pkg, dir, name string) {
	t.Helper()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
}

// TestEvaluatorPluginScoresRun builds the third-party example plugin into
// the plugins directory; the real serve picks it up, and a run started
// over HTTP is scored by it.
func TestEvaluatorPluginScoresRun(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	buildPlugin(t, "../../examples/evaluator-plugin", plugins, "gauntlet-evaluator-keyword")
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	p := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
		"--definitions", filepath.Join(dir, "defs"), "--plugins", plugins, "--llm-base-url", mock.URL})

	p.call(t, "POST", "/api/settings/evaluators", map[string]any{"id": "kw", "name": "Keywords", "type": "keyword",
		"config": map[string]any{"pass_threshold": 5}}, 422, nil)
	p.call(t, "POST", "/api/settings/evaluators", map[string]any{"id": "kw", "name": "Keywords", "type": "keyword",
		"config": map[string]any{"pass_threshold": 0.6}}, 201, nil)
	p.call(t, "POST", "/api/settings/domains", map[string]any{"id": "echo", "name": "Echo", "evaluator_id": "kw"}, 201, nil)
	// The fake model echoes: the first test names both keywords, the second one.
	p.call(t, "POST", "/api/settings/tests", map[string]any{"domain_id": "echo", "level": 1, "prompt": "apples and pears",
		"expected": map[string]any{"answer": "apples, pears", "type": "contains"}}, 201, nil)
	p.call(t, "POST", "/api/settings/tests", map[string]any{"domain_id": "echo", "level": 1, "prompt": "only apples",
		"expected": map[string]any{"answer": "apples, pears", "type": "contains"}}, 201, nil)
	var started struct {
		RunID string `json:"run_id"`
	}
	p.call(t, "POST", "/api/start", map[string]any{"model_name": "plugin"}, 200, &started)

	var cell struct {
		Tests []struct {
			Prompt  string         `json:"prompt"`
			Score   float64        `json:"score"`
			Status  string         `json:"status"`
			Details map[string]any `json:"details"`
		} `json:"tests"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var last struct {
			Status string `json:"status"`
		}
		p.call(t, "GET", "/api/v1/history/last/id", nil, 200, &last)
		if last.Status != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("run did not finish")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.call(t, "GET", "/api/run/"+started.RunID+"/tests/echo/1", nil, 200, &cell)
	if len(cell.Tests) != 2 {
		t.Fatalf("tests: %+v", cell.Tests)
	}
	for _, r := range cell.Tests {
		want, status := 1.0, "passed"
		if strings.HasPrefix(r.Prompt, "only") {
			want, status = 0.5, "failed"
		}
		if r.Score != want || r.Status != status || r.Details["found"] == nil {
			t.Errorf("%q: score %v status %s details %v; want %v %s with the plugin's details", r.Prompt, r.Score, r.Status, r.Details, want, status)
		}
	}
}

func TestPluginsCommand(t *testing.T) {
	dir := t.TempDir()
	buildPlugin(t, "../../examples/evaluator-plugin", dir, "gauntlet-evaluator-keyword")
	var out strings.Builder
	if err := run(t.Context(), []string{"plugins", "--plugins", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gauntlet-evaluator-keyword", "evaluator", "keyword", "running"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := run(t.Context(), []string{"plugins", "--plugins", filepath.Join(dir, "none")}, &out, &out); err != nil || !strings.Contains(out.String(), "no plugins") {
		t.Fatalf("empty dir: %v %q", err, out.String())
	}
}

// A pinned plugin whose file does not match its checksum is not started:
// serve still runs, and the tests its evaluator scores end in error,
// saying why.
func TestPluginChecksum(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	buildPlugin(t, "../../examples/evaluator-plugin", plugins, "gauntlet-evaluator-keyword")
	if _, err := openPlugins(plugins, "nonsense", 0, nil, nil); err == nil {
		t.Fatal("a malformed --plugin-sha256 was accepted")
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	p := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
		"--definitions", filepath.Join(dir, "defs"), "--plugins", plugins, "--llm-base-url", mock.URL,
		"--plugin-sha256", "gauntlet-evaluator-keyword=" + strings.Repeat("0", 64)})
	p.call(t, "POST", "/api/settings/evaluators", map[string]any{"id": "kw", "name": "Keywords", "type": "keyword"}, 201, nil)
	p.call(t, "POST", "/api/settings/domains", map[string]any{"id": "echo", "name": "Echo", "evaluator_id": "kw"}, 201, nil)
	p.call(t, "POST", "/api/settings/tests", map[string]any{"domain_id": "echo", "level": 1, "prompt": "apples",
		"expected": map[string]any{"answer": "apples", "type": "contains"}}, 201, nil)
	p.call(t, "POST", "/api/start", map[string]any{}, 200, nil)
	var cell struct {
		Tests []struct {
			Status  string         `json:"status"`
			Details map[string]any `json:"details"`
		} `json:"tests"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(cell.Tests) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		p.call(t, "GET", "/api/v1/history/last/echo/1", nil, 200, &cell)
	}
	if len(cell.Tests) != 1 || cell.Tests[0].Status != "error" || !strings.Contains(strings.ToLower(cell.Tests[0].Details["error"].(string)), "checksum") {
		t.Fatalf("want an error result naming the checksum, got %+v", cell.Tests)
	}
}
