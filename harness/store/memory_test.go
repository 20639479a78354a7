package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestOpenMemory: an in-memory database works for a store as a file does,
// from many goroutines at once, keeps its data when the pool closes every
// idle connection, is private to its DB, and is gone after Close.
func TestOpenMemory(t *testing.T) {
	dbtest.SkipOnPostgres(t, "an in-memory database is SQLite's")
	ctx := context.Background()
	db, err := store.OpenMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := store.OpenMemory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	rsOther, err := runs.Open(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	// The pool keeps no idle connection: only the DB's own one keeps the
	// database alive between calls.
	sqldb.Bun(db).SetMaxIdleConns(0)

	info := runs.Info{RunID: "r1", StartedAt: runs.Now(), ModelName: "m", Status: runs.StatusRunning, TotalTests: 80}
	if err := rs.CreateRun(ctx, info, []runs.CellKey{{Domain: "d", Level: 1, Tests: 80}}); err != nil {
		t.Fatal(err)
	}
	// Writers and readers at once, as an engine and a dashboard are.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				res := runs.Result{RunID: "r1", TestID: fmt.Sprintf("t%d-%d", w, i), Domain: "d", Level: 1,
					Status: runs.TestPassed, Score: 1, Details: map[string]any{}, CreatedAt: runs.Now(),
					Expected: harness.Expected{Answer: "1", Type: "exact"}}
				if err := rs.SaveResult(ctx, res); err != nil {
					t.Errorf("save: %v", err)
					return
				}
				if _, err := rs.Results(ctx, "r1"); err != nil {
					t.Errorf("read: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	results, err := rs.Results(ctx, "r1")
	if err != nil || len(results) != 80 {
		t.Fatalf("results: %d, %v; want 80", len(results), err)
	}
	if _, err := rsOther.Run(ctx, "r1"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("the other in-memory database sees run r1: %v", err)
	}
	if v, err := store.Version(ctx, db, "runs"); err != nil || v == 0 {
		t.Errorf("schema version %d, %v", v, err)
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Run(ctx, "r1"); err == nil {
		t.Error("a closed in-memory database still answers")
	}
}

// TestOpenMemoryURL: ":memory:" opens an in-memory database, not a file
// of that name in the working directory.
func TestOpenMemoryURL(t *testing.T) {
	dbtest.SkipOnPostgres(t, "an in-memory database is SQLite's")
	t.Chdir(t.TempDir())
	ctx := context.Background()
	for _, u := range []string{":memory:", "sqlite://:memory:"} {
		db, err := store.Open(ctx, u)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if _, err := runs.Open(ctx, db); err != nil {
			t.Errorf("%s: %v", u, err)
		}
		db.Close()
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("opening :memory: made %s", e.Name())
	}
}
