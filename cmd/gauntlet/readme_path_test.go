package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// readmeBlocks returns the fenced code blocks of a README section, in
// order, by their language.
func readmeBlocks(t *testing.T, heading string) (blocks, langs []string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("the README has no section %q", heading)
	}
	s = s[start+len(heading)+2:]
	if end := strings.Index(s, "\n#"); end >= 0 {
		s = s[:end]
	}
	for {
		i := strings.Index(s, "```")
		if i < 0 {
			return blocks, langs
		}
		s = s[i+3:]
		nl := strings.IndexByte(s, '\n')
		lang := s[:nl]
		s = s[nl+1:]
		j := strings.Index(s, "```")
		blocks, langs = append(blocks, s[:j]), append(langs, lang)
		s = s[j+3:]
	}
}

// TestREADMEDatasetPath runs the README's path from a dataset to a
// significant difference as written, with a gauntlet command that is this
// test binary, and checks that it prints the table the README shows.
func TestREADMEDatasetPath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands in a shell")
	}
	blocks, langs := readmeBlocks(t, "### From a dataset to a significant difference")
	if len(blocks) != 2 || langs[0] != "sh" || langs[1] != "text" {
		t.Fatalf("want a sh block and a text block, got %q", langs)
	}
	script, want := blocks[0], blocks[1]

	dir, bin := readmeSandbox(t)
	// The mock listens on a free port and prints its URL to a file; the
	// run waits until it serves and uses that URL; the mock is stopped
	// when the script ends.
	if !strings.Contains(script, "--addr 127.0.0.1:8081") || !strings.Contains(script, "http://127.0.0.1:8081/v1") {
		t.Fatal("the README's commands no longer use the mock on 127.0.0.1:8081")
	}
	script = strings.ReplaceAll(script, "--addr 127.0.0.1:8081", "--addr 127.0.0.1:0")
	script = strings.ReplaceAll(script, "http://127.0.0.1:8081/v1", "$(head -n 1 mock.out)")
	i := strings.Index(script, " &\n")
	if i < 0 {
		t.Fatal("the README's mock model does not run in the background")
	}
	script = "set -e\n" + script[:i] + " > mock.out 2> mock.err &\n" +
		"mock=$!\ntrap 'kill $mock 2>/dev/null' EXIT\n" +
		"until grep -q '^http://' mock.out; do kill -0 $mock || { cat mock.err; exit 1; }; done\n" + script[i+3:]

	out, err := runSandboxed(dir, bin, script)
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("the README shows\n%s\nthe commands print\n%s", want, out)
	}
}

// readmeSandbox is a directory to run README commands in, as a user would
// from the repository's root: examples/ is there (a link to the
// repository's), and bin/ holds a gauntlet command that runs this test
// binary's main.
// runSandboxed runs a shell script of README commands in a sandbox of
// readmeSandbox (dir, with the built binaries in bin first on PATH), for
// at most five minutes, and returns its output.
func runSandboxed(dir, bin, script string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	return cmd.CombinedOutput()
}

func readmeSandbox(t *testing.T) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	wrapper := "#!/bin/sh\nGAUNTLET_HELPER_MAIN=1 exec '" + os.Args[0] + "' -test.run='^TestHelperGauntletMain$' -- \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "gauntlet"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// TestREADMEPricedRunPath runs the README's path from a fresh clone to a
// priced run, a budget stop and a resume as written, with the fake
// endpoint standing in for Anthropic (GAUNTLET_PROVIDERS gives the
// built-in provider its address): the first run stops at its budget, the
// resume completes it.
func TestREADMEPricedRunPath(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands in a shell")
	}
	blocks, langs := readmeBlocks(t, "### From a fresh clone to a priced run, a budget and a resume")
	if len(blocks) != 1 || langs[0] != "sh" {
		t.Fatalf("want one sh block, got %q", langs)
	}
	script := blocks[0]
	for _, line := range []string{"make build\n", "export ANTHROPIC_API_KEY=sk-ant-your-key\n"} {
		if !strings.Contains(script, line) {
			t.Fatalf("the README's commands no longer say %q", line)
		}
		script = strings.Replace(script, line, "", 1)
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("GAUNTLET_PROVIDERS", "anthropic=anthropic,base_url="+strings.TrimSuffix(mock.URL, "/v1"))
	t.Setenv("GAUNTLET_CONCURRENCY", "1")
	dir, bin := readmeSandbox(t)
	out, err := runSandboxed(dir, bin, "set -e\n"+script)
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}
	first, resumed, ok := strings.Cut(string(out), "verdict:")
	if !ok || !strings.Contains(first, "stopped") || !strings.Contains(first, "budget reached: the run spent $") ||
		!strings.Contains(resumed, "completed") {
		t.Fatalf("want a run stopped at its budget, then completed; the commands print\n%s", out)
	}
	if mock.Stats().ChatCompletions == 0 {
		t.Fatal("no request reached the fake Anthropic")
	}
}
