package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// suiteLayout is what gauntlet init writes under DIR.
var suiteLayout = []string{
	"definitions/README.md",
	"definitions/evaluators/final-number.yaml",
	"definitions/tools/get_weather.yaml",
	"definitions/domains/starter/domain.yaml",
	"definitions/domains/starter/level-1.yaml",
	"definitions/domains/starter/level-2.yaml",
}

// TestInitSuiteRuns: the suite init writes passes gauntlet validate (strict
// files), and a real gauntlet run against gauntlet mockllm completes with
// every test passed, the tool call included, as its README and init's
// output say.
func TestInitSuiteRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my suite") // created by init; a space to quote
	var out strings.Builder
	if err := run(context.Background(), []string{"init", dir}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, rel := range suiteLayout {
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			t.Errorf("init did not write %s: %v", rel, err)
		}
	}
	defs := filepath.Join(dir, "definitions")
	for _, want := range []string{
		"wrote " + filepath.Join(defs, "domains", "starter", "level-2.yaml") + "\n",
		"6 of 6 tests pass",
		"gauntlet mockllm --addr 127.0.0.1:8081 &\n",
		"gauntlet run --definitions '" + defs + "' --llm-base-url http://127.0.0.1:8081/v1 --llm-model llmtest-model\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("init's output lacks %q:\n%s", want, out.String())
		}
	}
	readme, err := os.ReadFile(filepath.Join(defs, "README.md"))
	if err != nil {
		t.Fatal(err)
	}

	noPlugins := filepath.Join(t.TempDir(), "plugins")
	var vout strings.Builder
	if err := run(context.Background(), []string{"validate", "--definitions", defs, "--plugins", noPlugins}, &vout, io.Discard); err != nil {
		t.Fatalf("validate: %v\n%s", err, vout.String())
	}
	if !strings.Contains(string(readme), `prints "`+strings.TrimSpace(vout.String())+`"`) {
		t.Errorf("validate printed %q; the README says otherwise", vout.String())
	}

	// The command itself, as the README says; stopping it takes a few
	// seconds, as it waits for the connections the run left open.
	url, _ := startMockLLM(t)
	data := filepath.Join(t.TempDir(), "data")
	common := []string{"run", "--definitions", defs, "--data", data, "--plugins", noPlugins,
		"--llm-base-url", url, "--llm-model", "llmtest-model", "--min-score", "1"}
	var text strings.Builder
	if err := run(context.Background(), common, &text, io.Discard); err != nil {
		t.Fatalf("run: %v\n%s", err, text.String())
	}
	for _, line := range []string{"tests: 6 passed, 0 failed, 0 errors; 6 done of 6"} {
		if !strings.Contains(text.String(), line) || !strings.Contains(string(readme), line) {
			t.Errorf("%q: not both in the run's summary and in the README:\n%s", line, text.String())
		}
	}

	var js strings.Builder
	if err := run(context.Background(), append(common, "--format", "json"), &js, io.Discard); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunInfo     runs.Info     `json:"run_info"`
		Matrix      runs.Matrix   `json:"matrix"`
		TestResults []runs.Result `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(js.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if ri := doc.RunInfo; !ri.Complete || ri.Passed != 6 || ri.TotalTests != 6 {
		t.Errorf("run_info %+v", ri)
	}
	if c := doc.Matrix["starter"]; len(c) != 2 || c["1"].Passed != 3 || c["2"].Passed != 3 {
		t.Errorf("matrix %+v", doc.Matrix)
	}
	types := map[string]bool{}
	for _, r := range doc.TestResults {
		types[r.Expected.Type] = true
		if r.TestID == "weather" {
			calls, _ := json.Marshal(r.Details["tool_calls"])
			if r.Status != runs.TestPassed || !strings.Contains(string(calls), `"get_weather"`) || !strings.Contains(string(calls), "Lisbon") {
				t.Errorf("the tool-call test: %s, calls %s", r.Status, calls)
			}
		}
	}
	if !types["numeric"] || !types["integer"] || !types["tool_call"] {
		t.Errorf("expected types in the suite: %v", types)
	}
}

// TestInitRefusesToOverwrite: a second init writes nothing and exits 2,
// naming the files; --force (before or after DIR) writes the suite again.
func TestInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := run(context.Background(), []string{"init", dir}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	level := filepath.Join(dir, "definitions", "domains", "starter", "level-1.yaml")
	if err := os.WriteFile(level, []byte("tests: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"init", dir}, io.Discard, io.Discard)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), level) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second init: %v", err)
	}
	if b, _ := os.ReadFile(level); string(b) != "tests: []\n" {
		t.Fatalf("init overwrote an edited file: %q", b)
	}
	if !strings.Contains(err.Error(), "and 3 more already exist") {
		t.Errorf("the refusal does not sum up the other files: %v", err)
	}
	// One file left in the way: it is named, nothing else is written.
	fresh := t.TempDir()
	in := filepath.Join(fresh, "definitions", "tools", "get_weather.yaml")
	if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"init", fresh}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), in+" already exists: nothing was written") {
		t.Fatalf("init over one file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh, "definitions", "README.md")); err == nil {
		t.Error("init wrote other files after refusing")
	}
	if !testing.Short() {
		if got := exitCode(t, "init", dir); got != 2 {
			t.Errorf("exit status %d, want 2", got)
		}
	}
	for _, args := range [][]string{{"init", "--force", dir}, {"init", dir, "--force"}} {
		if err := os.WriteFile(level, []byte("tests: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if b, _ := os.ReadFile(level); !strings.Contains(string(b), "id: sum") {
			t.Fatalf("%v did not write the suite again: %q", args, b)
		}
	}
	// Other files in the directory are no obstacle and stay.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "README.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"init", other}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "README.md")); string(b) != "mine" {
		t.Errorf("README.md beside definitions/ changed: %q", b)
	}
}

// TestInitArguments: DIR defaults to the current directory; a second
// argument is refused; -h is help.
func TestInitArguments(t *testing.T) {
	var errOut strings.Builder
	if err := run(context.Background(), []string{"init", "a", "b"}, io.Discard, &errOut); !errors.Is(err, errUsage) || !strings.Contains(errOut.String(), `unexpected argument "b"`) {
		t.Errorf("two directories: %v %q", err, errOut.String())
	}
	errOut.Reset()
	if err := run(context.Background(), []string{"init", "--bogus"}, io.Discard, &errOut); !errors.Is(err, errUsage) {
		t.Errorf("unknown flag: %v", err)
	}
	errOut.Reset()
	if err := run(context.Background(), []string{"init", "-h"}, io.Discard, &errOut); err != nil || !strings.Contains(errOut.String(), "Usage: gauntlet init") {
		t.Errorf("help: %v %q", err, errOut.String())
	}

	dir := t.TempDir()
	t.Chdir(dir)
	var out strings.Builder
	if err := run(context.Background(), []string{"init"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "definitions", "domains", "starter", "domain.yaml")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "gauntlet run --definitions definitions ") {
		t.Errorf("commands for the current directory:\n%s", out.String())
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"definitions":       "definitions",
		"/tmp/a-b_c/d.e":    "/tmp/a-b_c/d.e",
		"my suite":          "'my suite'",
		"it's":              `'it'\''s'`,
		"":                  "''",
		"$HOME/definitions": "'$HOME/definitions'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
