package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// flagsOf returns the flags a scope registers, by name.
func flagsOf(t *testing.T, scope settingsScope) map[string]*flag.Flag {
	t.Helper()
	var s settings
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	if err := s.register(fs, scope); err != nil {
		t.Fatal(err)
	}
	out := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { out[f.Name] = f })
	return out
}

// TestSettingsScopes: serve takes every setting run takes, with the same
// default and help, plus exactly the listener's; both commands' help lists
// them, so neither registers its own copy.
func TestSettingsScopes(t *testing.T) {
	app, srv := flagsOf(t, appSettings), flagsOf(t, serverSettings)
	if len(app) < 13 {
		t.Fatalf("only %d application settings", len(app))
	}
	for name, f := range app {
		g := srv[name]
		if g == nil || g.DefValue != f.DefValue || g.Usage != f.Usage {
			t.Errorf("--%s differs between run and serve: %+v, %+v", name, f, g)
		}
	}
	var extra []string
	for name := range srv {
		if app[name] == nil {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	serveOnly := "addr,api-token,cors-origins,idle-timeout,insecure,job-attempts,max-body,max-import-body,max-upload," +
		"no-local-worker,read-body-timeout,read-header-timeout,webhook-burst,webhook-in-flight,webhook-in-flight-total,webhook-rate"
	if strings.Join(extra, ",") != serveOnly {
		t.Errorf("serve-only settings: %v", extra)
	}
	for cmd, want := range map[string]map[string]*flag.Flag{"run": app, "serve": srv} {
		var help strings.Builder
		if err := run(context.Background(), []string{cmd, "-h"}, io.Discard, &help); err != nil {
			t.Fatal(err)
		}
		for name := range want {
			if !strings.Contains(help.String(), "  -"+name+" ") && !strings.Contains(help.String(), "  -"+name+"\n") {
				t.Errorf("gauntlet %s -h lacks --%s:\n%s", cmd, name, help.String())
			}
		}
	}
}

// TestSettingsSources: a setting comes from its flag, else its
// environment variable, else its default.
func TestSettingsSources(t *testing.T) {
	parse := func(args ...string) settings {
		t.Helper()
		var s settings
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if err := s.register(fs, serverSettings); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, name := range []string{"GAUNTLET_DATA", "GAUNTLET_ADDR", "LLM_MODEL", "LLM_TIMEOUT", "GAUNTLET_CONCURRENCY", "GAUNTLET_DEBUG", "DEBUG", "LLM_API_KEY", "GAUNTLET_DATABASE"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	s := parse()
	if s.data != "./data" || s.addr != "127.0.0.1:8080" || s.llmModel != "llama3.2" || s.llmTimeout != engine.DefaultTimeout ||
		s.concurrency != 8 || s.debug || s.databaseURL() != "sqlite://data/gauntlet.db" {
		t.Errorf("defaults: %+v", s)
	}
	t.Setenv("GAUNTLET_DATA", "/srv/g")
	t.Setenv("GAUNTLET_ADDR", "127.0.0.1:9")
	t.Setenv("LLM_MODEL", "env-model")
	t.Setenv("LLM_TIMEOUT", "30s")
	t.Setenv("GAUNTLET_CONCURRENCY", "3")
	t.Setenv("LLM_API_KEY", "sk-env")
	s = parse()
	if s.data != "/srv/g" || s.addr != "127.0.0.1:9" || s.llmModel != "env-model" || s.llmTimeout != 30*time.Second ||
		s.concurrency != 3 || s.llmAPIKey != "sk-env" || s.databaseURL() != "sqlite:///srv/g/gauntlet.db" {
		t.Errorf("from the environment: %+v", s)
	}
	s = parse("--data", "d", "--llm-model", "flag-model", "--concurrency", "5", "--llm-api-key", "sk-flag", "--database", "sqlite://x.db")
	if s.data != "d" || s.llmModel != "flag-model" || s.concurrency != 5 || s.llmAPIKey != "sk-flag" || s.databaseURL() != "sqlite://x.db" {
		t.Errorf("flags over the environment: %+v", s)
	}
	t.Setenv("LLM_TIMEOUT", "soon")
	var bad settings
	if err := bad.register(flag.NewFlagSet("test", flag.ContinueOnError), appSettings); err == nil || !strings.Contains(err.Error(), "LLM_TIMEOUT") {
		t.Errorf("a bad LLM_TIMEOUT: %v", err)
	}
}

// testSettings are settings for an app on a copy of the example
// definitions, a fresh data directory and a fake model endpoint.
func testSettings(t *testing.T) settings {
	t.Helper()
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	var s settings
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	if err := s.register(fs, appSettings); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--data", filepath.Join(dir, "data"), "--definitions", defs,
		"--plugins", filepath.Join(dir, "plugins"), "--llm-base-url", mock.URL, "--llm-model", "mock"}); err != nil {
		t.Fatal(err)
	}
	return s
}

var quiet = slog.New(slog.DiscardHandler)

// TestOpenApp: the app loads the definitions and runs an evaluation to
// its end with every part it built; Close closes the database, and a
// second Close does nothing.
func TestOpenApp(t *testing.T) {
	ctx := context.Background()
	finished := make(chan runs.Info, 1)
	a, err := openApp(ctx, testSettings(t), appOptions{log: quiet, definitionsMustExist: true, onEvent: func(ev engine.Event) {
		if ev.Kind == engine.EventRunFinished {
			finished <- *ev.Info
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if l := a.loaded.Loaded; len(a.loaded.Errors) != 0 || l.Domains != 3 || l.Tests != 12 || l.Evaluators != 3 || l.Tools != 2 {
		t.Fatalf("loaded %+v, errors %v", l, a.loaded.Errors)
	}
	if a.agents != nil {
		t.Error("the agent service was opened without being asked for")
	}
	id, err := a.engine.Start(ctx, engine.StartRequest{Domains: []string{"arithmetic"}})
	if err != nil {
		t.Fatal(err)
	}
	var info runs.Info
	select {
	case info = <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not finish")
	}
	results, err := a.runs.Results(ctx, id)
	if err != nil || info.RunID != id || !info.Complete || info.Passed != 6 || len(results) != 6 {
		t.Fatalf("run %+v, %d results, %v", info, len(results), err)
	}
	if _, err := os.Stat(filepath.Join(a.settings.data, "logs", id+".log")); err != nil {
		t.Errorf("no run log in --data: %v", err)
	}

	a.Close()
	if err := a.db.Ping(ctx); err == nil {
		t.Error("the database is still open after Close")
	}
	a.Close()
}

// TestOpenAppAgents: with agents, the app removes what interrupted
// knowledge-base writes left, opens the agent service, and a tool an
// agent lists cannot be deleted from the catalog.
func TestOpenAppAgents(t *testing.T) {
	ctx := context.Background()
	s := testSettings(t)
	stale := filepath.Join(s.data, "kb", "support", ".tmp-123")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := openApp(ctx, s, appOptions{log: quiet, agents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale knowledge-base file kept: %v", err)
	}
	if _, err := a.agents.Create(ctx, harness.Agent{ID: "support", Name: "Support"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.agents.SetTools(ctx, "support", []string{"get_weather"}); err != nil {
		t.Fatal(err)
	}
	if err := a.catalog.DeleteTool(ctx, "get_weather"); !errors.Is(err, harness.ErrConflict) || !strings.Contains(err.Error(), "agent support") {
		t.Fatalf("deleting a tool an agent uses: %v", err)
	}
}

// TestOpenAppFailure: a part that cannot be built fails openApp, which
// closes what it opened: no descriptor of the database stays open.
func TestOpenAppFailure(t *testing.T) {
	ctx := context.Background()
	s := testSettings(t)
	s.pluginSums = "nonsense"
	if _, err := openApp(ctx, s, appOptions{log: quiet}); err == nil || !strings.Contains(err.Error(), "--plugin-sha256") {
		t.Fatalf("err = %v", err)
	}
	dataDirs := []string{s.data}
	s = testSettings(t)
	dataDirs = append(dataDirs, s.data)
	s.definitions = filepath.Join(t.TempDir(), "missing")
	if _, err := openApp(ctx, s, appOptions{log: quiet, definitionsMustExist: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing definitions: %v", err)
	}
	if _, err := os.Stat(s.definitions); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the missing definitions directory was created")
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count open files")
	}
	for _, data := range dataDirs {
		if _, err := os.Stat(filepath.Join(data, "gauntlet.db")); err != nil {
			t.Fatalf("the database was not opened before the failure: %v", err)
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, data) {
				t.Errorf("still open after a failed openApp: %s", target)
			}
		}
	}
}
