package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/testbin"
	"github.com/gauntlet-eval/gauntlet/server"
)

// buildTestPlugin builds one of the host's test plugins
// (harness/plugin/host/testdata/<pkg>) into dir under name: built once
// per test process, copied for each test.
func buildTestPlugin(t *testing.T, pkg, dir, name string) string {
	t.Helper()
	return testbin.Install(t, "../harness/plugin/host/testdata/"+pkg, dir, name)
}

// pluginEnv is a real server whose plugin manager has discovered dir,
// with the agent service using the plugins' channel types, as
// cmd/gauntlet/serve.go wires them.
type pluginEnv struct {
	*testEnv
	plugins *host.Manager
	reg     *harness.Registry
}

func newPluginEnv(t *testing.T, opts host.Options, extra ...envOption) *pluginEnv {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	e := &testEnv{t: t, defsDir: filepath.Join(root, "definitions"), dataDir: filepath.Join(root, "data"), logs: &syncBuffer{}}
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if opts.Logger == nil {
		opts.Logger = log
	}
	m, err := host.New(opts)
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	reg := harness.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatalf("register plugins: %v", err)
	}
	db, err := store.Open(ctx, databaseURL(t, e.dataDir))
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	cat, _, err := catalog.Open(ctx, catalog.Options{Dir: e.defsDir, DB: db, Registry: reg})
	if err != nil {
		t.Fatalf("catalog.Open: %v", err)
	}
	e.agentLLM = llmtest.NewServer(llmtest.Options{})
	t.Cleanup(e.agentLLM.Close)
	model, err := llm.New(llm.Options{BaseURL: e.agentLLM.URL, Model: agentModel, MaxRetries: -1})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: e.dataDir, Tools: cat, Registry: reg, Client: model,
		Model: agentModel, Logger: log})
	if err != nil {
		t.Fatalf("agent.Open: %v", err)
	}
	t.Cleanup(svc.Close)
	e.agents = svc
	o := server.Options{Catalog: cat, Agents: svc, Plugins: m, Logger: log}
	for _, f := range extra {
		f(&o)
	}
	e.token = o.APIToken
	srv, err := server.New(o)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return &pluginEnv{testEnv: e, plugins: m, reg: reg}
}

// pluginRecord is one entry of GET /api/plugins.
type pluginRecord struct {
	Name         string   `json:"name"`
	Kind         string   `json:"kind"`
	Type         string   `json:"type"`
	Path         string   `json:"path"`
	Version      string   `json:"version"`
	State        string   `json:"state"`
	PID          int      `json:"pid"`
	Restarts     int      `json:"restarts"`
	LastError    string   `json:"last_error"`
	LastErrorAt  *string  `json:"last_error_at"`
	Checksum     string   `json:"checksum"`
	Capabilities []string `json:"capabilities"`
	SecretFields []string `json:"secret_fields"`
}

// pluginFields are the keys of every entry, all required.
var pluginFields = []string{"capabilities", "checksum", "kind", "last_error", "last_error_at", "name", "path", "pid",
	"restarts", "secret_fields", "state", "type", "version"}

// listPlugins reads GET /api/plugins, checking that every entry has
// exactly the documented keys.
func (e *testEnv) listPlugins() (string, map[string]pluginRecord) {
	e.t.Helper()
	r := must(e.t, e.get("/api/plugins"), http.StatusOK)
	var raw struct {
		Dir     string           `json:"dir"`
		Plugins []map[string]any `json:"plugins"`
	}
	r.decode(e.t, &raw)
	if got := sortedKeys(r.object(e.t)); strings.Join(got, ",") != "dir,plugins" {
		e.t.Errorf("body keys %v, want dir, plugins", got)
	}
	for _, p := range raw.Plugins {
		if got := sortedKeys(p); strings.Join(got, ",") != strings.Join(pluginFields, ",") {
			e.t.Errorf("plugin keys %v, want %v", got, pluginFields)
		}
	}
	var body struct {
		Plugins []pluginRecord `json:"plugins"`
	}
	r.decode(e.t, &body)
	out := map[string]pluginRecord{}
	for _, p := range body.Plugins {
		out[p.Name] = p
	}
	return raw.Dir, out
}

// GET /api/plugins is the server's own plugin manager: a plugin not used
// yet is stopped, one in use runs, one killed under a call is restarted
// and shows its restart and the reason with its time; a pinned executable
// whose file differs shows mismatch and is never started.
func TestListPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	buildTestPlugin(t, "evaluator", dir, "gauntlet-evaluator-testeval")
	buildTestPlugin(t, "evaluator", dir, "gauntlet-evaluator-pinned")
	buildTestPlugin(t, "channel", dir, "gauntlet-channel-declared")
	if err := os.WriteFile(filepath.Join(dir, "gauntlet-evaluator-bad name"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newPluginEnv(t, host.Options{Dir: dir, RestartBackoff: 20 * time.Millisecond,
		Checksums: map[string]string{"gauntlet-evaluator-pinned": strings.Repeat("0", 64)}})

	gotDir, list := e.listPlugins()
	if gotDir != dir || len(list) != 3 {
		t.Fatalf("dir %q, plugins %+v", gotDir, list)
	}
	ev := list["gauntlet-evaluator-testeval"]
	if ev.Kind != "evaluator" || ev.Type != "testeval" || ev.State != "stopped" || ev.PID != 0 || ev.Restarts != 0 ||
		ev.LastError != "" || ev.LastErrorAt != nil || ev.Checksum != "unpinned" || ev.Version != "" || ev.Capabilities == nil ||
		ev.Path != filepath.Join(dir, "gauntlet-evaluator-testeval") {
		t.Errorf("unused evaluator: %+v", ev)
	}
	if p := list["gauntlet-evaluator-pinned"]; p.Checksum != "mismatch" || p.State != "stopped" {
		t.Errorf("pinned with a wrong sum, before use: %+v", p)
	}
	if c := list["gauntlet-channel-declared"]; c.Kind != "channel" || c.Type != "declared" || c.SecretFields != nil {
		t.Errorf("unused channel: %+v", c)
	}

	// In use: running, with its version and capabilities.
	impl, _ := e.reg.Evaluator("testeval")
	req := &harness.EvalRequest{Test: harness.Test{ID: "t", Expected: harness.Expected{Answer: "42"}}, Response: "42"}
	if _, err := impl.Evaluate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	_, list = e.listPlugins()
	ev = list["gauntlet-evaluator-testeval"]
	if ev.State != "running" || ev.PID == 0 || ev.Version != "1.2.3" || strings.Join(ev.Capabilities, ",") != "validate_config" || ev.Restarts != 0 {
		t.Fatalf("evaluator in use: %+v", ev)
	}

	// Killed: the next call restarts it.
	proc, err := os.FindProcess(ev.PID)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	harnesstest.Eventually(t, 10*time.Second, "the killed plugin to show crashed", func() bool {
		_, list = e.listPlugins()
		return list["gauntlet-evaluator-testeval"].State == "crashed"
	})
	if _, err := impl.Evaluate(t.Context(), req); err != nil {
		t.Fatalf("the call after the crash: %v", err)
	}
	_, list = e.listPlugins()
	after := list["gauntlet-evaluator-testeval"]
	if after.State != "running" || after.Restarts != 1 || after.PID == ev.PID || after.PID == 0 ||
		!strings.Contains(after.LastError, "killed") || after.LastErrorAt == nil {
		t.Errorf("after the restart: %+v", after)
	}
	if at, err := time.Parse(harness.TimeLayout, *after.LastErrorAt); err != nil || time.Since(at) > time.Minute || time.Since(at) < -time.Second {
		t.Errorf("last_error_at %q: %v", *after.LastErrorAt, err)
	}

	// The pinned plugin is refused when used, and says why.
	pinned, _ := e.reg.Evaluator("pinned")
	if _, err := pinned.Evaluate(t.Context(), req); err == nil {
		t.Fatal("a plugin with a wrong checksum answered")
	}
	_, list = e.listPlugins()
	if p := list["gauntlet-evaluator-pinned"]; p.Checksum != "mismatch" || p.State != "crashed" || p.PID != 0 ||
		!strings.Contains(p.LastError, "checksum mismatch") || p.LastErrorAt == nil {
		t.Errorf("pinned with a wrong sum, after use: %+v", p)
	}
}

// A plugins directory that does not exist holds no plugins, and a server
// without a plugin manager lists none; both answer 200 with an empty
// list, never null. With an API token, the list needs it.
func TestListPluginsEmpty(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	e := newPluginEnv(t, host.Options{Dir: missing}, withToken("tok"))
	r := must(t, e.get("/api/plugins"), http.StatusOK)
	if got := strings.TrimSpace(string(r.body)); got != fmt.Sprintf(`{"dir":%q,"plugins":[]}`, missing) {
		t.Errorf("missing directory: %s", got)
	}
	e.token = ""
	mustProblem(t, e.get("/api/plugins"), http.StatusUnauthorized)

	bare := newEnv(t)
	r = must(t, bare.get("/api/plugins"), http.StatusOK)
	if got := strings.TrimSpace(string(r.body)); got != `{"dir":"","plugins":[]}` {
		t.Errorf("no plugin manager: %s", got)
	}
	mustProblem(t, bare.post("/api/plugins", map[string]any{}), http.StatusMethodNotAllowed)
}

// A channel plugin that declares api_key, secret and auth.password secret
// gets exactly those masked: its keywords list and monkey_mode flag come
// back as they are. Sending the masks back keeps the stored values: the
// running channel still checks pushed requests against the first secret.
func TestPluginDeclaredSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	buildTestPlugin(t, "channel", dir, "gauntlet-channel-declared")
	buildTestPlugin(t, "channel", dir, "gauntlet-channel-old-legacy")
	e := newPluginEnv(t, host.Options{Dir: dir})
	e.createAgent("bot", "")
	config := map[string]any{
		"api_key": "AK-secret-1", "secret": "S-secret-1", "keywords": []any{"blue", "red"}, "monkey_mode": true,
		"auth": map[string]any{"password": "PW-secret-1", "user": "bob"},
	}
	c := must(t, e.post("/api/agents/bot/channels", map[string]any{"type": "declared", "config": config}), http.StatusCreated).object(t)
	want := map[string]any{
		"api_key": mask, "secret": mask, "keywords": []any{"blue", "red"}, "monkey_mode": true,
		"auth": map[string]any{"password": mask, "user": "bob"},
	}
	if !jsonEqual(t, c["config"], want) {
		t.Errorf("created config %v\nwant %v", c["config"], want)
	}
	id := c["id"].(string)
	// The client sends back what it read, with one change.
	got := e.channel("bot", id)
	cfg := got["config"].(map[string]any)
	cfg["keywords"] = []any{"green"}
	updated := must(t, e.put("/api/agents/bot/channels/"+id, map[string]any{"config": cfg}), http.StatusOK).object(t)
	want["keywords"] = []any{"green"}
	if !jsonEqual(t, updated["config"], want) {
		t.Errorf("updated config %v\nwant %v", updated["config"], want)
	}
	for _, r := range []*response{e.get("/api/agents/bot/channels"), e.get("/api/agents/bot")} {
		for _, s := range []string{"AK-secret-1", "S-secret-1", "PW-secret-1"} {
			if strings.Contains(string(r.body), s) {
				t.Errorf("%q in %s", s, r.body)
			}
		}
	}
	e.channelAction("bot", id, "start")
	push := func(secret string) *response {
		return e.request(http.MethodPost, "/api/channels/"+id+"/webhook", map[string]any{"user": "u1", "text": "ping"}, "X-Secret", secret)
	}
	if r := push("S-secret-1"); r.status != http.StatusAccepted {
		t.Errorf("push with the stored secret: %s", r)
	}
	mustProblem(t, push(mask), http.StatusUnauthorized)

	// The server's list shows what the plugin declared.
	_, list := e.listPlugins()
	if got := list["gauntlet-channel-declared"].SecretFields; strings.Join(got, ",") != "api_key,secret,auth.password" {
		t.Errorf("listed secret_fields %v", got)
	}

	// A plugin that declares nothing gets the name rule.
	old := must(t, e.post("/api/agents/bot/channels", map[string]any{"type": "old-legacy", "config": config}), http.StatusCreated).object(t)
	oc := old["config"].(map[string]any)
	if oc["keywords"] != mask || oc["monkey_mode"] != mask || oc["api_key"] != mask || oc["secret"] != mask {
		t.Errorf("legacy plugin's config %v", oc)
	}
	_, list = e.listPlugins()
	if got := list["gauntlet-channel-old-legacy"]; got.SecretFields != nil || got.State != "running" {
		t.Errorf("legacy plugin listed %+v", got)
	}
}
