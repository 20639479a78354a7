package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestResumeRunStoredWhole: a run made by 0.3.0 stored its definitions
// whole; stopped with two samples in error, it resumes from them as a run
// made today does, and runs exactly those two again.
func TestResumeRunStoredWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, _ := dbtest.OpenFixture(t, "gauntlet-0.3.0.db")
	cat, _, err := catalog.Open(ctx, catalog.Options{Dir: filepath.Join(dir, "definitions"), DB: db})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := rs.List(ctx, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var run runs.Info
	for _, in := range list {
		if in.ModelName == "fixture-repeats" && in.RescoredFrom == "" {
			run = in
		}
	}
	if run.RunID == "" || run.Config == nil || run.Config.Cache {
		t.Fatalf("the fixture's run with repeats: %+v", run)
	}
	b := sqldb.Bun(db)
	if _, err := b.ExecContext(ctx, `UPDATE run_results SET status = 'error' WHERE id IN
		(SELECT id FROM run_results WHERE run_id = ? ORDER BY id LIMIT 2)`, run.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, `UPDATE runs SET status = 'stopped' WHERE run_id = ?`, run.RunID); err != nil {
		t.Fatal(err)
	}

	mock := llmtest.NewServer(llmtest.Options{})
	defer mock.Close()
	client, err := llm.New(llm.Options{BaseURL: mock.URL, Model: "test-model", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: client, Model: "test-model", Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Resume(ctx, run.RunID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for eng.Running() {
		if time.Now().After(deadline) {
			t.Fatal("the resumed run did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	engine.WaitRuns(eng)
	after, err := rs.Run(ctx, run.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != runs.StatusCompleted || after.DoneTests != run.TotalTests || after.TotalTests != run.TotalTests {
		t.Errorf("resumed run = %+v; want completed, %d tests done", after, run.TotalTests)
	}
	if n := mock.Stats().ChatCompletions; n < 2 {
		t.Errorf("the endpoint was asked %d times; want the two samples in error asked again", n)
	}
	page, err := rs.QueryResults(ctx, run.RunID, runs.ResultQuery{})
	if err != nil || page.Total != run.TotalTests {
		t.Errorf("results = %d, %v; want %d", page.Total, err, run.TotalTests)
	}
	// Stored by 0.3.0, the run was not counted; its resume recounted its
	// cells, and from then on they moved with its results.
	runstest.CheckCounters(t, db, run.RunID)
}
