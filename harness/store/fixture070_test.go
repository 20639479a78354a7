package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureDatabase070 opens a database made while every result was
// indexed for search as it was stored (runs schema 14): what it holds
// stays indexed, its searches go through the index and find what they
// found, and results stored afterwards are found before the indexer has
// run (pending) and after.
func TestFixtureDatabase070(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.7.0.db")
	if v, err := store.Version(ctx, db, "runs"); v != 14 || err != nil {
		t.Fatalf("the fixture's runs schema version = %d, %v; want 14", v, err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the 0.7.0 database: %v", err)
	}
	list, total, err := rs.List(ctx, 100, 0)
	if err != nil || total != 5 {
		t.Fatalf("runs = %d, %v; want the fixture's 5", total, err)
	}
	complete := byLabel(t, list)["fixture-complete"].RunID
	if complete == "" {
		t.Fatal("no run fixture-complete")
	}
	if n, err := rs.IndexSearch(ctx, 1000); n != 0 || err != nil {
		t.Errorf("the indexer found %d results to index, %v; want none: the migration counts them indexed", n, err)
	}
	search := func(runID, q string, want, pending int) {
		t.Helper()
		p, err := rs.QueryResults(ctx, runID, runs.ResultQuery{Search: q})
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != want || len(p.Results) != want || p.SearchIndex == nil || p.SearchIndex.Pending != pending {
			t.Errorf("search %q in %s: total %d, %d results, index %+v; want %d, %d pending", q, runID, p.Total, len(p.Results), p.SearchIndex, want, pending)
		}
	}
	search(complete, "The answer is", 6, 0)
	search(complete, "Paris", 2, 0)
	search(complete, "100", 3, 0)

	// A run stored now: its results wait for the indexer, and are found
	// all the same.
	if err := rs.CreateRun(ctx, runs.Info{RunID: "after-070", StartedAt: runs.Now(), Status: runs.StatusCompleted, TotalTests: 3}, nil); err != nil {
		t.Fatal(err)
	}
	var batch []runs.Result
	for i := range 3 {
		batch = append(batch, runs.Result{RunID: "after-070", TestID: fmt.Sprintf("t%d", i), Domain: "d", Level: 1,
			Prompt: "Where is Paris?", Response: "In France.", Status: runs.TestPassed, Score: 1})
	}
	if err := rs.SaveResults(ctx, batch); err != nil {
		t.Fatal(err)
	}
	search("after-070", "paris", 3, 3)
	search(complete, "Paris", 2, 0) // the fixture's run is still indexed whole
	if n, err := rs.IndexSearch(ctx, 1000); n != 3 || err != nil {
		t.Fatalf("the indexer indexed %d, %v; want the 3 new results", n, err)
	}
	search("after-070", "paris", 3, 0)
	if err := rs.Delete(ctx, "after-070"); err != nil {
		t.Fatal(err)
	}
	search(complete, "Paris", 2, 0)
}
