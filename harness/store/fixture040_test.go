package store_test

import (
	"context"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureDatabase040 opens a database made before process leases and
// a definitions cache per directory (runs schema 11, catalog 3): its runs
// and results are intact; runs have no owner and were never resumed; the
// run a killed server left running is closed as interrupted with the 3
// results it kept, and the cache is rebuilt for the directory opened.
func TestFixtureDatabase040(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.4.0.db")

	for _, c := range []struct {
		component string
		want      int
	}{{"catalog", 3}, {"runs", 11}, {"agent", 3}} {
		if v, err := store.Version(ctx, db, c.component); v != c.want || err != nil {
			t.Fatalf("the fixture's %s schema version = %d, %v; want %d", c.component, v, err, c.want)
		}
	}

	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: "../../examples/definitions", DB: db})
	if err != nil {
		t.Fatalf("catalog on the 0.4.0 database: %v", err)
	}
	if res.Loaded.Domains != 3 || res.Loaded.Tests != 12 {
		t.Errorf("loaded %+v; want examples' 3 domains and 12 tests", res.Loaded)
	}
	if tests, err := cat.Tests(ctx, catalog.TestFilter{}); err != nil || len(tests) != 12 {
		t.Errorf("cached tests = %d, %v", len(tests), err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the 0.4.0 database: %v", err)
	}
	list, total, err := rs.List(ctx, 100, 0)
	if err != nil || total != 4 {
		t.Fatalf("runs = %d, %v; want the fixture's 4", total, err)
	}
	byName := byLabel(t, list)
	for name, want := range map[string]struct {
		status       string
		done, passed int
	}{
		"fixture-complete": {runs.StatusCompleted, 12, 7},
		"fixture-arith":    {runs.StatusCompleted, 6, 6},
		"fixture-stopped":  {runs.StatusStopped, 2, 2},
		"fixture-crashed":  {runs.StatusRunning, 0, 0},
	} {
		in := byName[name]
		if in.Status != want.status || in.DoneTests != want.done || in.Passed != want.passed || in.TotalTests != 12 && name != "fixture-arith" {
			t.Errorf("%s = %+v; want %+v", name, in, want)
		}
		if in.Resumed.Count != 0 || len(in.Resumed.At) != 0 {
			t.Errorf("%s resumed = %+v; want never", name, in.Resumed)
		}
	}

	// The run a killed server left running has no owner: the next process
	// closes it, with the results it kept.
	ids, err := rs.MarkInterruptedRuns(ctx)
	if err != nil || len(ids) != 1 || ids[0] != byName["fixture-crashed"].RunID {
		t.Fatalf("marked %v, %v; want fixture-crashed", ids, err)
	}
	crashed, err := rs.Run(ctx, ids[0])
	if err != nil || crashed.Status != runs.StatusInterrupted || crashed.DoneTests != 3 || crashed.CompletedAt == nil {
		t.Errorf("fixture-crashed after = %+v, %v", crashed, err)
	}
	if results, err := rs.Results(ctx, byName["fixture-complete"].RunID); err != nil || len(results) != 12 {
		t.Errorf("fixture-complete results = %d, %v", len(results), err)
	}
	checkCurrentVersions(t, db)
}
