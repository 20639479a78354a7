package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/deadport"
	"github.com/gauntlet-eval/gauntlet/internal/testbin"
	"github.com/gauntlet-eval/gauntlet/server"
)

// buildPlugin builds a plugin main package into dir under name (once per
// test process, copied for each test).
func buildPlugin(t *testing.T, pkg, dir, name string) {
	t.Helper()
	testbin.Install(t, pkg, dir, name)
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

// closedURL is the URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string { return "http://" + deadport.Addr(t) }

// pluginsJSON runs "gauntlet plugins --json" with args and decodes what it
// prints; stderr is returned beside it.
func pluginsJSON(t *testing.T, args ...string) (pluginList, string) {
	t.Helper()
	var out, errOut strings.Builder
	if err := run(t.Context(), append([]string{"plugins", "--json"}, args...), &out, &errOut); err != nil {
		t.Fatalf("plugins %v: %v\n%s", args, err, errOut.String())
	}
	var list pluginList
	if err := json.Unmarshal([]byte(out.String()), &list); err != nil {
		t.Fatalf("plugins --json printed %q: %v", out.String(), err)
	}
	return list, errOut.String()
}

// "gauntlet plugins" shows the running server's own plugin processes:
// not started until used, then running with a pid, then crashed (with the
// reason) once killed; it sends the API token, and refuses to guess
// without one.
func TestPluginsCommandAsksTheServer(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	buildPlugin(t, "../../examples/evaluator-plugin", plugins, "gauntlet-evaluator-keyword")
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	p := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
		"--definitions", filepath.Join(dir, "defs"), "--plugins", plugins, "--llm-base-url", mock.URL, "--api-token", "tok-1"})
	t.Setenv("GAUNTLET_API_TOKEN", "")

	var out, errOut strings.Builder
	err := run(t.Context(), []string{"plugins", "--server", p.base}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "API token") {
		t.Fatalf("without the token: %v\n%s", err, out.String())
	}
	err = run(t.Context(), []string{"plugins", "--server", p.base, "--api-token", "wrong"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "refused the API token") {
		t.Fatalf("with a wrong token: %v", err)
	}

	out.Reset()
	if err := run(t.Context(), []string{"plugins", "--server", p.base, "--api-token", "tok-1", "--plugins", filepath.Join(dir, "elsewhere")}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"plugins in " + plugins + " (the server at " + p.base + ")", "gauntlet-evaluator-keyword", "evaluator", "keyword", "stopped", "unpinned"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// The token from the environment, the server from GAUNTLET_SERVER.
	t.Setenv("GAUNTLET_API_TOKEN", "tok-1")
	t.Setenv("GAUNTLET_SERVER", p.base)
	// Storing a record of the plugin's type has the server start it.
	p.callAuth(t, "tok-1", "POST", "/api/settings/evaluators", map[string]any{"id": "kw", "name": "Keywords", "type": "keyword"}, 201)
	list, _ := pluginsJSON(t)
	if len(list.Plugins) != 1 || list.Dir != plugins {
		t.Fatalf("list %+v", list)
	}
	kw := list.Plugins[0]
	if kw.State != "running" || kw.PID == 0 || kw.Restarts != 0 || kw.LastErrorAt != nil || kw.Version == "" {
		t.Fatalf("after use: %+v", kw)
	}
	proc, err := os.FindProcess(kw.PID)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for kw.State != "crashed" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		list, _ = pluginsJSON(t)
		kw = list.Plugins[0]
	}
	if kw.State != "crashed" || kw.PID != 0 || !strings.Contains(kw.LastError, "killed") || kw.LastErrorAt == nil {
		t.Errorf("after the kill: %+v", kw)
	}
	out.Reset()
	if err := run(t.Context(), []string{"plugins"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "crashed") || !strings.Contains(out.String(), "killed") || !strings.Contains(out.String(), *kw.LastErrorAt) {
		t.Errorf("table after the kill:\n%s", out.String())
	}
}

// When no server answers, the command scans the directory itself, says
// so, and checks the pins as serve does: a pinned plugin whose file
// differs is not started and shows mismatch.
func TestPluginsCommandFallsBackToTheDirectory(t *testing.T) {
	dir := t.TempDir()
	buildPlugin(t, "../../examples/evaluator-plugin", dir, "gauntlet-evaluator-keyword")
	buildPlugin(t, "../../examples/evaluator-plugin", dir, "gauntlet-evaluator-pinned")
	sum := sha256File(t, filepath.Join(dir, "gauntlet-evaluator-keyword"))
	t.Setenv("GAUNTLET_PLUGIN_SHA256", "gauntlet-evaluator-keyword="+sum+",gauntlet-evaluator-pinned="+strings.Repeat("0", 64))
	nobody := closedURL(t)

	var out, errOut strings.Builder
	if err := run(t.Context(), []string{"plugins", "--server", nobody, "--plugins", dir}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "no server answered at "+nobody) || !strings.Contains(errOut.String(), "scanning "+dir+" here instead") {
		t.Errorf("stderr does not say it fell back:\n%s", errOut.String())
	}
	if !strings.Contains(out.String(), "scanned here") {
		t.Errorf("output does not say where the list comes from:\n%s", out.String())
	}
	list, _ := pluginsJSON(t, "--server", nobody, "--plugins", dir)
	byName := map[string]server.PluginInfo{}
	for _, p := range list.Plugins {
		byName[p.Name] = p
	}
	if kw := byName["gauntlet-evaluator-keyword"]; kw.State != "running" || kw.Checksum != "ok" || kw.Version == "" || kw.PID != 0 {
		t.Errorf("pinned and matching: %+v", kw)
	}
	if p := byName["gauntlet-evaluator-pinned"]; p.State != "crashed" || p.Checksum != "mismatch" || !strings.Contains(p.LastError, "checksum mismatch") {
		t.Errorf("pinned and different: %+v", p)
	}

	// --local asks no server at all; an empty directory says so.
	out.Reset()
	errOut.Reset()
	if err := run(t.Context(), []string{"plugins", "--local", "--plugins", filepath.Join(dir, "none")}, &out, &errOut); err != nil || !strings.Contains(out.String(), "no plugins") {
		t.Fatalf("empty dir: %v %q", err, out.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("--local asked a server: %s", errOut.String())
	}

	// Something that is not a Gauntlet server with the endpoint: 404 is a
	// fall-back too, other errors are reported.
	notGauntlet := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notGauntlet.Close)
	errOut.Reset()
	if _, stderr := pluginsJSON(t, "--server", notGauntlet.URL, "--plugins", dir); !strings.Contains(stderr, "404") {
		t.Errorf("404: stderr %q", stderr)
	}
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"status":500,"detail":"database is locked"}`))
	}))
	t.Cleanup(broken.Close)
	if err := run(t.Context(), []string{"plugins", "--server", broken.URL}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Errorf("500: %v", err)
	}
	if err := run(t.Context(), []string{"plugins", "--server", "ftp://x"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--server") {
		t.Errorf("bad URL: %v", err)
	}
	// A malformed pin is an error, as for serve.
	t.Setenv("GAUNTLET_PLUGIN_SHA256", "nonsense")
	if err := run(t.Context(), []string{"plugins", "--local", "--plugins", dir}, io.Discard, io.Discard); err == nil {
		t.Error("a malformed pin was accepted")
	}
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// --plugin-timeout bounds each call to a plugin: a test whose evaluation
// outlasts it ends in error, saying so. Zero or nonsense is refused.
func TestPluginTimeout(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	// The host's test evaluator waits for its context when asked to score
	// "block"; the fake model echoes the prompt.
	buildPlugin(t, "../../harness/plugin/host/testdata/evaluator", plugins, "gauntlet-evaluator-slow")
	defs := filepath.Join(dir, "defs")
	for name, content := range map[string]string{
		"evaluators/slow.yaml":      "id: slow\nname: Slow\ntype: slow\n",
		"domains/slow/domain.yaml":  "id: slow\nname: Slow\nevaluator_id: slow\nenabled: true\n",
		"domains/slow/level-1.yaml": "tests:\n  - id: blocks\n    prompt: block\n    expected:\n      answer: block\n      type: exact\n  - id: quick\n    prompt: quick\n    expected:\n      answer: quick\n      type: exact\n",
	} {
		p := filepath.Join(defs, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	flags := []string{"--data", filepath.Join(dir, "data"), "--definitions", defs, "--plugins", plugins, "--llm-base-url", mock.URL}

	var out, errOut strings.Builder
	t.Setenv("GAUNTLET_PLUGIN_TIMEOUT", "300ms")
	err := run(t.Context(), append([]string{"run", "--format", "json"}, flags...), &out, &errOut)
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("run: %v, want the gate failed by the test in error\n%s", err, errOut.String())
	}
	var report struct {
		TestResults []struct {
			TestID  string         `json:"test_id"`
			Status  string         `json:"status"`
			Details map[string]any `json:"details"`
		} `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	got := map[string]string{}
	for _, r := range report.TestResults {
		msg, _ := r.Details["error"].(string)
		got[r.TestID] = r.Status + " " + msg
	}
	if !strings.HasPrefix(got["blocks"], "error ") || !strings.Contains(got["blocks"], "did not finish within 300ms") || got["quick"] != "passed " {
		t.Errorf("results %v", got)
	}

	for _, bad := range [][]string{{"--plugin-timeout", "0s"}, {"--plugin-timeout", "-1s"}} {
		if err := run(t.Context(), append(append([]string{"run"}, flags...), bad...), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--plugin-timeout") {
			t.Errorf("%v: %v", bad, err)
		}
	}
	t.Setenv("GAUNTLET_PLUGIN_TIMEOUT", "soon")
	if err := run(t.Context(), append([]string{"serve", "--addr", "127.0.0.1:0"}, flags...), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "GAUNTLET_PLUGIN_TIMEOUT") {
		t.Errorf("GAUNTLET_PLUGIN_TIMEOUT=soon: %v", err)
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
	// The run's cells exist once it is prepared, and its result once it
	// ends: wait for the engine to be idle again (a loaded machine may
	// take a while), then read the cell.
	var status struct {
		Status string `json:"status"`
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if p.call(t, "GET", "/api/status", nil, 200, &status); status.Status == "idle" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end within a minute: status %q", status.Status)
		}
	}
	p.call(t, "GET", "/api/v1/history/last/echo/1", nil, 200, &cell)
	if len(cell.Tests) != 1 || cell.Tests[0].Status != "error" || !strings.Contains(strings.ToLower(cell.Tests[0].Details["error"].(string)), "checksum") {
		t.Fatalf("want an error result naming the checksum, got %+v", cell.Tests)
	}
}

// callAuth is call with an API token.
func (p *serveProcess) callAuth(t *testing.T, token, method, path string, body any, want int) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, p.base+path, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, data, want)
	}
}
