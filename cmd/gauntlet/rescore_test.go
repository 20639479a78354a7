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

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// jsonReport reads run_info and the results of a JSON report.
func jsonReport(t *testing.T, path string) (runs.Info, map[string]runs.Result) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunInfo     runs.Info     `json:"run_info"`
		TestResults []runs.Result `json:"test_results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	byTest := map[string]runs.Result{}
	for _, r := range doc.TestResults {
		byTest[r.TestID] = r
	}
	return doc.RunInfo, byTest
}

// TestRunCacheAndRescore: gauntlet run --cache answers a second run from
// the cache, asking the endpoint nothing; gauntlet rescore scores the
// first run again with a changed expected answer into a new run, asking
// the endpoint nothing either; its usage errors.
func TestRunCacheAndRescore(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	flags := []string{"--data", filepath.Join(dir, "data"), "--definitions", defs, "--llm-base-url", mock.URL, "--llm-model", "mock"}
	ctx := context.Background()
	runJSON := func(name string, args ...string) (runs.Info, map[string]runs.Result) {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		var errOut strings.Builder
		if err := run(ctx, append(append(args, "--format", "json", "--output", out), flags...), io.Discard, &errOut); err != nil {
			t.Fatalf("%s: %v\n%s", args, err, errOut.String())
		}
		return jsonReport(t, out)
	}

	first, _ := runJSON("first", "run", "--domains", "arithmetic", "--cache")
	asked := mock.Stats().ChatCompletions
	if first.CacheHits != 0 || first.Config == nil || !first.Config.Cache || asked == 0 {
		t.Fatalf("first cached run = %+v (%d requests)", first, asked)
	}
	second, _ := runJSON("second", "run", "--cache", "--domains", "arithmetic")
	if got := mock.Stats().ChatCompletions - asked; got != 0 || int64(second.CacheHits) != asked || !second.Complete {
		t.Errorf("second cached run: %d requests, cache_hits %d; want 0 and %d", got, second.CacheHits, asked)
	}

	// Today the small sum expects 6.
	level := filepath.Join(defs, "domains", "arithmetic", "level-1.yaml")
	b, err := os.ReadFile(level)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(level, []byte(strings.Replace(string(b), "answer: '5'", "answer: '6'", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	info, res := runJSON("rescored", "rescore", first.RunID, "--model-name", "again")
	if got := mock.Stats().ChatCompletions - asked; got != 0 {
		t.Errorf("rescore asked the endpoint %d times", got)
	}
	if info.RescoredFrom != first.RunID || info.RunID == first.RunID || info.ModelName != "again" || info.TotalTests != first.TotalTests ||
		info.Failed != 1 || res["add-small"].Status != runs.TestFailed {
		t.Errorf("rescore = %+v; add-small %+v", info, res["add-small"])
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rescore"}, ""},
		{[]string{"rescore", "a", "b"}, ""},
		{[]string{"rescore", "no-such-run"}, "not found"},
		{[]string{"rescore", first.RunID, "--format", "xml"}, "--format"},
	} {
		err := run(ctx, append(c.args, flags...), io.Discard, io.Discard)
		if c.want == "" && !errors.Is(err, errUsage) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: err = %v; want %q", c.args, err, c.want)
		}
	}
	if err := run(ctx, append([]string{"run", "--resume", first.RunID, "--cache"}, flags...), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "--cache") {
		t.Errorf("--resume with --cache: %v", err)
	}
}
