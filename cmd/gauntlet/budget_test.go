package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestRunMaxCost: gauntlet run --max-cost stops the run at its budget
// (stopped, the error naming it, the cost in the JSON report), and
// --resume with a new --max-cost runs it to the end.
func TestRunMaxCost(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	// Every call costs $1 or more: 1,000,000 dollars a million tokens.
	if err := os.WriteFile(filepath.Join(defs, "pricing.yaml"), []byte("models:\n  mock: {input: 1000000, output: 1000000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	flags := []string{"--data", filepath.Join(dir, "data"), "--definitions", defs, "--llm-base-url", mock.URL,
		"--llm-model", "mock", "--concurrency", "1", "--format", "json"}
	first := filepath.Join(dir, "first.json")
	if err := run(context.Background(), append([]string{"run", "--max-cost", "0.5", "--output", first}, flags...), io.Discard, io.Discard); err == nil {
		t.Fatal("a run stopped at its budget passed the gate")
	}
	info := jsonReportInfo(t, first)
	if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "budget") || info.DoneTests != 1 || info.CostUSD == nil || *info.CostUSD < 1 {
		t.Fatalf("run with --max-cost 0.5: %+v", info)
	}
	if err := run(context.Background(), append([]string{"run", "--max-cost", "-1"}, flags...), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--max-cost") {
		t.Errorf("--max-cost -1: %v", err)
	}
	second := filepath.Join(dir, "second.json")
	err := run(context.Background(), append([]string{"run", "--resume", info.RunID, "--max-cost", "1e9", "--output", second}, flags...), io.Discard, io.Discard)
	resumed := jsonReportInfo(t, second)
	if resumed.Status != runs.StatusCompleted || resumed.DoneTests != 12 || resumed.CostUSD == nil || *resumed.CostUSD <= *info.CostUSD {
		t.Fatalf("resumed with --max-cost 1e9: %+v (err %v)", resumed, err)
	}
}

// TestValidatePricing: gauntlet validate checks pricing.yaml as it checks
// every definitions file: a typo at its line with a suggestion, exit 1.
func TestValidatePricing(t *testing.T) {
	dir := exampleDefs(t)
	writeDef(t, dir, "pricing.yaml", "models:\n  openai/gpt-4o:\n    input: 2.5\n    ouput: 10\n")
	var out strings.Builder
	err := run(context.Background(), []string{"validate", "--definitions", dir, "--plugins", filepath.Join(t.TempDir(), "none")}, &out, io.Discard)
	if !errors.Is(err, errInvalidDefinitions) {
		t.Fatalf("err = %v, want errInvalidDefinitions", err)
	}
	want := filepath.Join(dir, "pricing.yaml") + `:4: unknown key "ouput" (did you mean "output"?)`
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "of 18 files") {
		t.Errorf("output %q; want %q first, 18 files", out.String(), want)
	}
}
