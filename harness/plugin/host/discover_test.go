package host

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

func TestParseName(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("names end in .exe on Windows")
	}
	for _, tc := range []struct {
		file string
		kind plugin.Kind
		name string
		ok   bool
	}{
		{"gauntlet-evaluator-keyword", plugin.KindEvaluator, "keyword", true},
		{"gauntlet-evaluator-my.eval_2", plugin.KindEvaluator, "my.eval_2", true},
		{"gauntlet-channel-slack", plugin.KindChannel, "slack", true},
		{"gauntlet-tool-get_weather", plugin.KindTool, "get_weather", true},
		{"gauntlet-tool-get-weather", plugin.KindTool, "get-weather", true},
		{"gauntlet-tool-get.weather", "", "", false}, // not a function name
		{"gauntlet-evaluator-", "", "", false},
		{"gauntlet-evaluator-.hidden", "", "", false},
		{"gauntlet-model-x", "", "", false},
		{"gauntlet", "", "", false},
		{"keyword", "", "", false},
		{"xgauntlet-evaluator-keyword", "", "", false},
	} {
		kind, name, ok := ParseName(tc.file)
		if ok != tc.ok || (ok && (kind != tc.kind || name != tc.name)) {
			t.Errorf("ParseName(%q) = %q, %q, %v; want %q, %q, %v", tc.file, kind, name, ok, tc.kind, tc.name, tc.ok)
		}
	}
}

// Discovery takes executables with a plugin's name and ignores the rest;
// it starts nothing.
func TestDiscovery(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("executable bits")
	}
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 1\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("gauntlet-evaluator-good", 0o755)
	write("gauntlet-evaluator-notexec", 0o644)
	write("gauntlet-widget-x", 0o755)
	write("gauntlet-channel-bad name", 0o755)
	write("README.md", 0o644)
	write("helper", 0o755)
	write("gauntlet-tool-onlyuser", 0o700)
	if err := os.Mkdir(filepath.Join(dir, "gauntlet-tool-adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "gauntlet-evaluator-good"), filepath.Join(dir, "gauntlet-channel-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "gauntlet-channel-dangling")); err != nil {
		t.Fatal(err)
	}

	m, reg := newManager(t, Options{Dir: dir})
	var names []string
	for _, s := range m.List() {
		names = append(names, s.Name)
		if s.Health != HealthStopped || s.PID != 0 || s.Version != "" {
			t.Errorf("started by discovery: %+v", s)
		}
		if !filepath.IsAbs(s.Path) {
			t.Errorf("path %q is not absolute", s.Path)
		}
	}
	if got := strings.Join(names, " "); got != "gauntlet-channel-link gauntlet-evaluator-good gauntlet-tool-onlyuser" {
		t.Errorf("found %s", got)
	}
	if got := strings.Join(reg.EvaluatorTypes(), " "); got != "good" {
		t.Errorf("evaluator types %s", got)
	}
	if got := strings.Join(reg.ChannelTypes(), " "); got != "link" {
		t.Errorf("channel types %s", got)
	}
	if got := strings.Join(reg.ToolNames(), " "); got != "onlyuser" {
		t.Errorf("tool names %s", got)
	}
}

func TestNoDirectory(t *testing.T) {
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "missing")} {
		m, err := New(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.List()) != 0 || m.Register(harness.NewRegistry()) != nil || m.Close() != nil {
			t.Errorf("dir %q: %+v", dir, m.List())
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Dir: file}); err == nil {
		t.Error("a file as the plugins directory: no error")
	}
}

// Names already taken (a built-in, the built-in regex type) are not
// overridden; the others are registered.
func TestRegisterConflicts(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"gauntlet-evaluator-regex", "gauntlet-evaluator-taken", "gauntlet-evaluator-free", "gauntlet-channel-taken", "gauntlet-tool-taken"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := harness.NewRegistry()
	builtin := &tool{p: &proc{found: found{typ: "taken"}}}
	_ = reg.RegisterEvaluator("taken", &evaluator{})
	_ = reg.RegisterChannel("taken", &channel{})
	_ = reg.RegisterTool(builtin)
	err = m.Register(reg)
	if !errors.Is(err, harness.ErrConflict) {
		t.Fatalf("Register: %v, want ErrConflict", err)
	}
	for _, name := range []string{"gauntlet-evaluator-regex", "gauntlet-evaluator-taken", "gauntlet-channel-taken", "gauntlet-tool-taken"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), "free") {
		t.Errorf("free reported: %v", err)
	}
	if _, ok := reg.Evaluator("free"); !ok {
		t.Error("free not registered")
	}
	if tl, _ := reg.Tool("taken"); tl != builtin {
		t.Error("the built-in tool was replaced")
	}
}
