package main

import (
	"context"
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
