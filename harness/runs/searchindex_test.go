package runs

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// indexRows counts the rows the search index holds (SQLite).
func indexRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.NewSelect().TableExpr(`"run_results_search"`).ColumnExpr("COUNT(*)").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// saveNumbered stores results t<from>…t<to-1> of run id, each answering
// "answer <i>".
func saveNumbered(t *testing.T, s *Store, id string, from, to int) {
	t.Helper()
	var batch []Result
	for i := from; i < to; i++ {
		batch = append(batch, Result{RunID: id, TestID: fmt.Sprintf("t%d", i), Domain: "d", Level: 1, Prompt: "question",
			Response: fmt.Sprintf("answer %d", i), Status: TestPassed, Score: 1})
	}
	if err := s.SaveResults(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
}

// TestSearchIndexLags: results are stored without touching the search
// index. Until the indexer has run, a search still finds every one of them
// (by reading the run's results) and says how many are pending; results
// changed or deleted before they were indexed are indexed as they are
// then, or not at all; afterwards the same searches go through the index.
// On PostgreSQL nothing is ever pending.
func TestSearchIndexLags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, Info{RunID: "lag", StartedAt: "2026-01-02 03:04:05", Status: StatusRunning, TotalTests: 40}, nil); err != nil {
		t.Fatal(err)
	}
	saveNumbered(t, s, "lag", 0, 30)
	if _, err := s.db.ExecContext(ctx, `UPDATE "run_results" SET "response" = 'changed' WHERE "run_id" = 'lag' AND "test_id" = 't5'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM "run_results" WHERE "run_id" = 'lag' AND "test_id" = 't7'`); err != nil {
		t.Fatal(err)
	}
	search := func(q string, want, pending int) {
		t.Helper()
		for _, sort := range []string{"id", "-score"} {
			p, err := s.QueryResults(ctx, "lag", ResultQuery{Search: q, Sort: sort})
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != want || len(p.Results) != want || p.SearchIndex == nil || p.SearchIndex.Pending != pending {
				t.Errorf("search %q, sort %s: total %d, %d results, index %+v; want %d results, %d pending",
					q, sort, p.Total, len(p.Results), p.SearchIndex, want, pending)
			}
		}
	}
	pg := dbtest.Postgres()
	pending := 29
	if pg {
		pending = 0
	}
	search("answer 1", 11, pending) // 1, 10-19
	search("changed", 1, pending)
	search("answer 7", 0, pending)
	if p, err := s.QueryResults(ctx, "lag", ResultQuery{}); err != nil || p.SearchIndex != nil {
		t.Errorf("a page without a search: index %+v, %v; want none", p.SearchIndex, err)
	}

	n, err := s.IndexSearch(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if pg {
		if n != 0 {
			t.Errorf("the indexer indexed %d results on PostgreSQL; want none", n)
		}
		return
	}
	if n != 29 || indexRows(t, s) != 29 {
		t.Fatalf("indexed %d, the index holds %d; want the 29 results left", n, indexRows(t, s))
	}
	if n, err := s.IndexSearch(ctx, 1000); n != 0 || err != nil {
		t.Fatalf("a second pass indexed %d, %v; want none", n, err)
	}
	search("answer 1", 11, 0)
	search("changed", 1, 0)
	search("answer 5", 0, 0)
	search("answer 7", 0, 0)
	if _, sel, indexed, err := s.countSearch(ctx, "lag", ResultQuery{Search: "changed"}, Info{TotalTests: 40}, true); err != nil || !indexed || !sel.search {
		t.Errorf("once indexed, the search is counted through the index: indexed %v, %+v, %v", indexed, sel, err)
	}

	// Results stored after: pending again, found all the same; the index
	// is not used for the run until it holds them.
	saveNumbered(t, s, "lag", 30, 40)
	search("answer 3", 11, 10) // 3, 30-39
	if n, _, indexed, err := s.countSearch(ctx, "lag", ResultQuery{Search: "answer 3"}, Info{TotalTests: 40}, true); err != nil || !indexed || n != 11 {
		t.Errorf("with some results pending, the index counts those it holds and the rest are read: %d, indexed %v, %v", n, indexed, err)
	}
	if n, err := s.IndexSearch(ctx, 1000); n != 10 || err != nil {
		t.Fatalf("indexed %d, %v; want the 10 new ones", n, err)
	}
	search("answer 3", 11, 0)
}

// TestSearchIndexersTogether: indexers of two processes (two connections
// to one database file) at once index each result exactly once.
func TestSearchIndexersTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	var stores []*Store
	for range 2 {
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	if err := stores[0].CreateRun(ctx, Info{RunID: "two", StartedAt: "2026-01-02 03:04:05", Status: StatusRunning, TotalTests: 500}, nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	total := make([]int, 2)
	for i, s := range stores {
		wg.Go(func() {
			for round := 0; round < 100; round++ {
				n, err := s.IndexSearch(ctx, 7)
				if err != nil {
					t.Error(err)
					return
				}
				total[i] += n
			}
		})
	}
	for k := range 10 {
		saveNumbered(t, stores[k%2], "two", k*50, (k+1)*50)
	}
	wg.Wait()
	for {
		n, err := stores[0].IndexSearch(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total[0] += n
	}
	if total[0]+total[1] != 500 || indexRows(t, stores[0]) != 500 {
		t.Fatalf("indexed %v, the index holds %d rows; want each of the 500 results once", total, indexRows(t, stores[0]))
	}
}

// TestKeepSearchIndexed: the background indexer catches up with what is
// stored, in chunks, and its stop waits for it.
func TestKeepSearchIndexed(t *testing.T) {
	t.Parallel()
	dbtest.SkipOnPostgres(t, "PostgreSQL indexes rows as they are written")
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, Info{RunID: "bg", StartedAt: "2026-01-02 03:04:05", Status: StatusRunning, TotalTests: 5000}, nil); err != nil {
		t.Fatal(err)
	}
	saveNumbered(t, s, "bg", 0, SearchIndexChunk+500) // more than one chunk
	stop := s.KeepSearchIndexed(ctx, nil)
	defer stop()
	caughtUp := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			pending, err := s.pendingOf(ctx, "bg")
			if err != nil {
				t.Fatal(err)
			}
			if pending == 0 && indexRows(t, s) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after a minute %d results are pending, the index holds %d; want %d", pending, indexRows(t, s), want)
			}
		}
	}
	caughtUp(SearchIndexChunk + 500)
	saveNumbered(t, s, "bg", SearchIndexChunk+500, SearchIndexChunk+600)
	caughtUp(SearchIndexChunk + 600)
	stop()
	saveNumbered(t, s, "bg", SearchIndexChunk+600, SearchIndexChunk+610)
	time.Sleep(2 * searchIndexEvery)
	if pending, err := s.pendingOf(ctx, "bg"); err != nil || pending != 10 {
		t.Errorf("after stop: %d pending, %v; want the 10 stored since", pending, err)
	}
}
