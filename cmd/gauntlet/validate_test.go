package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// exampleDefs copies the example definitions into a temp dir.
func exampleDefs(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "defs")
	if err := os.CopyFS(dir, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeDef(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const typoLevel = "tests:\n  - id: add-small\n    prompt: What is 2 + 3?\n    expected:\n      answer: '5'\n      typ: numeric\n"

func TestValidate(t *testing.T) {
	ctx := context.Background()
	noPlugins := []string{"--plugins", filepath.Join(t.TempDir(), "none")}
	t.Run("clean", func(t *testing.T) {
		dir := exampleDefs(t)
		var out strings.Builder
		if err := run(ctx, append([]string{"validate", "--definitions", dir}, noPlugins...), &out, io.Discard); err != nil {
			t.Fatalf("validate: %v", err)
		}
		if out.String() != "17 files OK\n" {
			t.Fatalf("output %q", out.String())
		}
	})
	t.Run("errors as file:line: message", func(t *testing.T) {
		dir := exampleDefs(t)
		writeDef(t, dir, "domains/arithmetic/level-1.yaml", typoLevel)
		writeDef(t, dir, "domains/knowledge/domain.yaml", "id: knowledge\nname: [oops\n")
		var out strings.Builder
		err := run(ctx, append([]string{"validate", "--definitions", dir}, noPlugins...), &out, io.Discard)
		if !errors.Is(err, errInvalidDefinitions) {
			t.Fatalf("err = %v, want errInvalidDefinitions", err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		want := []string{
			filepath.Join(dir, "domains", "arithmetic", "level-1.yaml") + `:6: unknown key "typ" (did you mean "type"?)`,
			filepath.Join(dir, "domains", "knowledge", "domain.yaml") + ":2: ",
			filepath.Join(dir, "domains", "knowledge", "level-1.yaml") + ": skipped",
		}
		if len(lines) != 6 { // three errors of knowledge's levels, and the summary
			t.Fatalf("output:\n%s", out.String())
		}
		for i, w := range want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("line %d = %q, want it to start with %q", i, lines[i], w)
			}
		}
		if last := lines[len(lines)-1]; last != "5 errors in 5 of 17 files" {
			t.Errorf("summary %q", last)
		}
	})
	t.Run("a missing directory is an error, and is not created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nope")
		err := run(ctx, append([]string{"validate", "--definitions", dir}, noPlugins...), io.Discard, io.Discard)
		if err == nil || errors.Is(err, errInvalidDefinitions) || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("the directory was created: %v", err)
		}
	})
	t.Run("no arguments", func(t *testing.T) {
		if err := run(ctx, []string{"validate", "defs"}, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRunRefusesBrokenFilesOfSelectedDomains(t *testing.T) {
	ctx := context.Background()
	t.Run("a level file of the selected domain", func(t *testing.T) {
		flags := runFixture(t)
		defs := flags[3]
		writeDef(t, defs, "domains/arithmetic/level-2.yaml", typoLevel)
		var errOut strings.Builder
		err := run(ctx, append([]string{"run", "--domains", "arithmetic"}, flags...), io.Discard, &errOut)
		if err == nil || !strings.Contains(err.Error(), "selected domains did not load") {
			t.Fatalf("err = %v\n%s", err, errOut.String())
		}
		if !strings.Contains(errOut.String(), "error: "+filepath.Join(defs, "domains", "arithmetic", "level-2.yaml")+`:6: unknown key "typ"`) {
			t.Fatalf("stderr:\n%s", errOut.String())
		}
	})
	t.Run("every enabled domain, one of whose domain.yaml is broken", func(t *testing.T) {
		flags := runFixture(t)
		writeDef(t, flags[3], "domains/knowledge/domain.yaml", "id: knowledge\nnmae: Knowledge\n")
		err := run(ctx, append([]string{"run"}, flags...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "did not load") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("another domain's file is a warning", func(t *testing.T) {
		flags := runFixture(t)
		writeDef(t, flags[3], "domains/knowledge/level-1.yaml", typoLevel)
		var out, errOut strings.Builder
		if err := run(ctx, append([]string{"run", "--domains", "arithmetic"}, flags...), &out, &errOut); err != nil {
			t.Fatalf("run: %v\n%s", err, errOut.String())
		}
		if !strings.Contains(errOut.String(), "warning: not loaded: "+filepath.Join(flags[3], "domains", "knowledge", "level-1.yaml")+":6:") {
			t.Fatalf("stderr:\n%s", errOut.String())
		}
		if !strings.Contains(out.String(), "overall score 1.000") {
			t.Fatalf("report:\n%s", out.String())
		}
	})
	t.Run("a missing definitions directory", func(t *testing.T) {
		flags := runFixture(t)
		missing := filepath.Join(t.TempDir(), "nope")
		flags[3] = missing
		err := run(ctx, append([]string{"run", "--domains", "arithmetic"}, flags...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("the directory was created: %v", err)
		}
	})
}

// TestGauntletMain runs main in a child process started by exitCode; it
// does nothing in a normal test run.
func TestGauntletMain(t *testing.T) {
	args := os.Getenv("GAUNTLET_TEST_MAIN_ARGS")
	if args == "" {
		t.Skip("helper process of the exit status tests")
	}
	var list []string
	if err := json.Unmarshal([]byte(args), &list); err != nil {
		t.Fatal(err)
	}
	os.Args = append([]string{"gauntlet"}, list...)
	main()
	os.Exit(0)
}

// exitCode runs "gauntlet args..." in a child process and returns its
// exit status.
func exitCode(t *testing.T, args ...string) int {
	t.Helper()
	b, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestGauntletMain$")
	cmd.Env = append(os.Environ(), "GAUNTLET_TEST_MAIN_ARGS="+string(b))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return 0
}

func TestValidateExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	noPlugins := filepath.Join(t.TempDir(), "none")
	clean := exampleDefs(t)
	broken := exampleDefs(t)
	writeDef(t, broken, "domains/arithmetic/level-1.yaml", typoLevel)
	flags := runFixture(t)
	writeDef(t, flags[3], "domains/arithmetic/level-1.yaml", typoLevel)
	for name, tc := range map[string]struct {
		args []string
		want int
	}{
		"validate, clean":           {[]string{"validate", "--plugins", noPlugins, "--definitions", clean}, 0},
		"validate, errors":          {[]string{"validate", "--plugins", noPlugins, "--definitions", broken}, 1},
		"validate, no directory":    {[]string{"validate", "--plugins", noPlugins, "--definitions", filepath.Join(clean, "nope")}, 2},
		"run, selected domain file": {append([]string{"run", "--domains", "arithmetic", "--plugins", noPlugins}, flags...), 2},
	} {
		t.Run(name, func(t *testing.T) {
			if got := exitCode(t, tc.args...); got != tc.want {
				t.Fatalf("exit status %d, want %d", got, tc.want)
			}
		})
	}
}
