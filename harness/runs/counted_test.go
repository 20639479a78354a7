package runs

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// countQueries are the filters whose totals are compared: every domain,
// level and status of the run and one of each it does not have, alone
// and together, and searches over them.
func countQueries(domains []string, levels []int) []ResultQuery {
	var out []ResultQuery
	lv := []*int{nil}
	for _, l := range append(levels, 9) {
		lv = append(lv, &l)
	}
	for _, d := range append([]string{"", "nope"}, domains...) {
		for _, l := range lv {
			for _, st := range []string{"", TestPassed, TestFailed, TestError} {
				for _, search := range []string{"", "prompt 1", "t", "zzz"} {
					out = append(out, ResultQuery{Domain: d, Level: l, Status: st, Search: search})
				}
			}
		}
	}
	return out
}

// everyNth keeps every nth of qs, the first included.
func everyNth(qs []ResultQuery, n int) []ResultQuery {
	var out []ResultQuery
	for i := 0; i < len(qs); i += n {
		out = append(out, qs[i])
	}
	return out
}

// answer is what a query gives: its total, how selective it was found,
// and the ids of its first page.
type answer struct {
	total int
	sel   selectivity
	page  []string
}

// answers runs every query on run id.
func answers(t *testing.T, s *Store, id string, qs []ResultQuery) []answer {
	t.Helper()
	ctx := context.Background()
	row, err := s.run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]answer, len(qs))
	for i, q := range qs {
		q.Limit = 7
		p, err := s.QueryResults(ctx, id, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		n, sel, err := s.count(ctx, id, q, row.info(), row.Counted)
		if err != nil || n != p.Total {
			t.Fatalf("%+v: count %d, %v; the page's total %d", q, n, err, p.Total)
		}
		out[i] = answer{total: p.Total, sel: sel}
		for _, r := range p.Results {
			out[i].page = append(out[i].page, r.TestID+"#"+fmt.Sprint(r.Repeat))
		}
	}
	return out
}

// setCounted sets a run's flag straight in the database.
func setCounted(t *testing.T, db *store.DB, id string, counted bool) {
	t.Helper()
	if _, err := sqldb.Bun(db).NewUpdate().Model((*runRow)(nil)).Set("counted = ?", counted).Where("run_id = ?", id).
		Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// compareCounted checks that run id is counted, that its cells' counters
// are its results' counts, and that every query gives the same total,
// selectivity and first page from the cells as from the rows (the flag
// cleared for a moment).
func compareCounted(t *testing.T, db *store.DB, s *Store, id string, qs []ResultQuery) {
	t.Helper()
	runstest.CheckCounters(t, db, id)
	ctx := context.Background()
	fromCells := answers(t, s, id, qs)
	statsCells, err := s.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	setCounted(t, db, id, false)
	fromRows := answers(t, s, id, qs)
	statsRows, err := s.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	setCounted(t, db, id, true)
	for i, q := range qs {
		if !reflect.DeepEqual(fromCells[i], fromRows[i]) {
			t.Errorf("%s %+v: from the cells %+v, from the rows %+v", id, q, fromCells[i], fromRows[i])
		}
	}
	// The mean score is a sum of the same scores in another order: equal
	// up to the rounding of float64 additions.
	if !reflect.DeepEqual(statsCells.StatusCounts, statsRows.StatusCounts) || statsCells.TotalTests != statsRows.TotalTests ||
		math.Abs(statsCells.AvgScore-statsRows.AvgScore) > 1e-12 {
		t.Errorf("%s stats: from the cells %+v, from the rows %+v", id, statsCells, statsRows)
	}
}

// TestCountedTotalsMatchRows fills two counted runs, one through SaveBatch
// (the engine's writer) and one through RecordResults (the queue's
// workers), and after each batch (the runs live, some cells half done,
// some not started) compares every total answered from the cells with the
// same total counted from the rows.
func TestCountedTotalsMatchRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	domains, levels := []string{"d0", "d1", "d2"}, []int{1, 2, 3}
	const perCell = 12
	var keys []CellKey
	for _, d := range domains {
		for _, l := range levels {
			keys = append(keys, CellKey{Domain: d, Level: l, Tests: perCell})
		}
	}
	for _, id := range []string{"engine", "queued"} {
		in := Info{RunID: id, StartedAt: "2026-01-02 03:04:05", ModelName: "m", Model: "m", Status: StatusRunning,
			TotalTests: len(keys) * perCell, Domains: domains}
		if err := s.CreateRun(ctx, in, keys); err != nil {
			t.Fatal(err)
		}
	}
	// Results in batches of 20, cell after cell, the last two cells
	// never reached: every batch leaves a cell half done.
	var all []Result
	rng := rand.New(rand.NewPCG(11, 0))
	for _, k := range keys[:len(keys)-2] {
		for j := range perCell {
			st := []string{TestPassed, TestPassed, TestPassed, TestFailed, TestError}[rng.IntN(5)]
			score := map[string]float64{TestPassed: 1, TestFailed: 0.25, TestError: 0}[st]
			all = append(all, Result{TestID: fmt.Sprintf("%s-%d-t%d", k.Domain, k.Level, j), Domain: k.Domain, Level: k.Level,
				Name: "n", Prompt: fmt.Sprintf("prompt %d", j), Response: "r", Score: score, Status: st,
				DurationMS: int64(j * 7 % 5), ModelName: "m", CreatedAt: "2026-01-02 03:04:06"})
		}
	}
	qs := countQueries(domains, levels)
	if testing.Short() {
		// Every seventh of the ~400 queries (7 is prime to each loop's
		// size, so every domain, level, status and search still comes
		// up); make test's exhaustive pass compares them all.
		qs = everyNth(qs, 7)
	}
	for from := 0; from < len(all); from += 20 {
		batch := all[from:min(from+20, len(all))]
		engine, queued := make([]Result, len(batch)), make([]Result, len(batch))
		for i, r := range batch {
			r.RunID = "engine"
			engine[i] = r
			r.RunID = "queued"
			queued[i] = r
		}
		if err := s.SaveBatch(ctx, engine, nil); err != nil {
			t.Fatal(err)
		}
		if _, errs := s.RecordResults(ctx, queued, nil); errs[0] != nil {
			t.Fatal(errs[0])
		}
		// A few points of the fill are enough: each compares ~1,000 queries.
		if from == 0 || from == 60 || from+20 >= len(all) {
			compareCounted(t, db, s, "engine", qs)
			compareCounted(t, db, s, "queued", qs)
		}
	}

	// The totals of a counted run are the cells' indeed: a counter moved
	// by hand moves them (and is back before the end of the test).
	q := ResultQuery{Domain: "d0", Status: TestPassed}
	before, err := s.QueryResults(ctx, "engine", q)
	if err != nil {
		t.Fatal(err)
	}
	b := sqldb.Bun(db)
	if _, err := b.ExecContext(ctx, `UPDATE run_cells SET passed = passed + 1000 WHERE run_id = 'engine' AND domain = 'd0' AND level = 1`); err != nil {
		t.Fatal(err)
	}
	if p, err := s.QueryResults(ctx, "engine", q); err != nil || p.Total != before.Total+1000 {
		t.Errorf("total after moving a counter = %d, %v; want %d: not read from the cells", p.Total, err, before.Total+1000)
	}
	if _, err := b.ExecContext(ctx, `UPDATE run_cells SET passed = passed - 1000 WHERE run_id = 'engine' AND domain = 'd0' AND level = 1`); err != nil {
		t.Fatal(err)
	}
}

// TestOddResultsUncountRun: a result no counter can say (of a cell the
// run was not created with, or of an unknown status) is stored as before
// but makes its run uncounted, in the same transaction: its totals are
// then the rows', and stay exact.
func TestOddResultsUncountRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	res := func(run, domain, test, status string) Result {
		return Result{RunID: run, TestID: test, Domain: domain, Level: 1, Name: "n", Prompt: "p", Response: "r",
			Status: status, ModelName: "m", CreatedAt: "2026-01-02 03:04:06"}
	}
	counted := func(id string) bool {
		row, err := s.run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return row.Counted
	}
	cases := []struct {
		name  string
		store func(id string) error
	}{
		{"a cell the run does not have", func(id string) error {
			return s.SaveResults(ctx, []Result{res(id, "d", "a", TestPassed), res(id, "other", "b", TestPassed)})
		}},
		{"an unknown status", func(id string) error {
			return s.SaveResults(ctx, []Result{res(id, "d", "a", TestPassed), res(id, "d", "b", "skipped")})
		}},
		{"an unknown status, queued", func(id string) error {
			_, err := s.RecordResult(ctx, res(id, "d", "b", "skipped"), nil)
			return err
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("odd%d", i)
			in := Info{RunID: id, StartedAt: "2026-01-02 03:04:05", ModelName: "m", Model: "m", Status: StatusRunning,
				TotalTests: 2, Domains: []string{"d"}}
			if err := s.CreateRun(ctx, in, []CellKey{{Domain: "d", Level: 1, Tests: 2}}); err != nil {
				t.Fatal(err)
			}
			if !counted(id) {
				t.Fatal("a new run is not counted")
			}
			if err := c.store(id); err != nil {
				t.Fatal(err)
			}
			if counted(id) {
				t.Error("the run is still counted")
			}
			all, err := s.Results(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []ResultQuery{{}, {Domain: "d"}, {Status: TestPassed}, {Status: TestError}} {
				want := 0
				for _, r := range all {
					if (q.Domain == "" || r.Domain == q.Domain) && (q.Status == "" || r.Status == q.Status) {
						want++
					}
				}
				if p, err := s.QueryResults(ctx, id, q); err != nil || p.Total != want {
					t.Errorf("%+v: total %d, %v; want %d", q, p.Total, err, want)
				}
			}
		})
	}
}

// TestRunBeforeCountersCountsFromRows opens the database 0.3.0 made (runs
// schema 6): its runs are not counted, so their totals are counted from
// their results as before, even with cells whose counters say otherwise;
// a run resumed (ReopenRun) has its cells recounted and is counted from
// then on.
func TestRunBeforeCountersCountsFromRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := dbtest.OpenFixture(t, "gauntlet-0.3.0.db")
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := s.List(ctx, 100, 0)
	if err != nil || len(list) == 0 {
		t.Fatalf("runs = %d, %v", len(list), err)
	}
	b := sqldb.Bun(db)
	// The cells' counters of every old run are made wrong: an old run
	// made no promise about them.
	if _, err := b.ExecContext(ctx, `UPDATE run_cells SET done = done + 7, passed = passed + 3, failed = failed + 2, errors = errors + 2`); err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		row, err := s.run(ctx, in.RunID)
		if err != nil || row.Counted {
			t.Fatalf("%s: counted %v, %v; want an old run not counted", in.ModelName, row.Counted, err)
		}
		var domains []string
		var levels []int
		if err := b.NewSelect().Model((*resultRow)(nil)).Distinct().Column("domain").Where("run_id = ?", in.RunID).Scan(ctx, &domains); err != nil {
			t.Fatal(err)
		}
		if err := b.NewSelect().Model((*resultRow)(nil)).Distinct().Column("level").Where("run_id = ?", in.RunID).Scan(ctx, &levels); err != nil {
			t.Fatal(err)
		}
		for _, q := range countQueries(domains, levels) {
			if q.Search != "" {
				continue
			}
			p, err := s.QueryResults(ctx, in.RunID, q)
			if err != nil {
				t.Fatal(err)
			}
			sel := b.NewSelect().Model((*resultRow)(nil)).Where("run_id = ?", in.RunID)
			want, err := filterFields(sel, q, "").Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if int64(p.Total) != want {
				t.Errorf("%s %+v: total %d; its rows %d", in.ModelName, q, p.Total, want)
			}
		}
	}
	// Resumed, a run's cells are recounted and it is counted.
	id := list[0].RunID
	if _, err := b.ExecContext(ctx, `UPDATE runs SET status = 'stopped' WHERE run_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReopenRun(ctx, id); err != nil {
		t.Fatal(err)
	}
	runstest.CheckCounters(t, db, id)
}

// TestMarkInterruptedFinishesWhatItFenced: a run MarkInterrupted fenced
// (status interrupted) but did not close, its process ending in between,
// is closed by the next MarkInterrupted: cells recounted and closed, the
// end recorded.
func TestMarkInterruptedFinishesWhatItFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	in := Info{RunID: "fenced", StartedAt: "2026-01-02 03:04:05", ModelName: "m", Model: "m", Status: StatusRunning,
		TotalTests: 2, Domains: []string{"d"}}
	if err := s.CreateRun(ctx, in, []CellKey{{Domain: "d", Level: 1, Tests: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveResults(ctx, []Result{{RunID: "fenced", TestID: "a", Domain: "d", Level: 1, Status: TestPassed, Score: 1,
		CreatedAt: "2026-01-02 03:04:09"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqldb.Bun(db).ExecContext(ctx, `UPDATE runs SET status = 'interrupted' WHERE run_id = 'fenced'`); err != nil {
		t.Fatal(err)
	}
	ids, err := s.MarkInterruptedRuns(ctx)
	if err != nil || !reflect.DeepEqual(ids, []string{"fenced"}) {
		t.Fatalf("marked %v, %v", ids, err)
	}
	got, err := s.Run(ctx, "fenced")
	if err != nil || got.Status != StatusInterrupted || got.CompletedAt == nil || got.DoneTests != 1 || got.Passed != 1 {
		t.Errorf("run = %+v, %v", got, err)
	}
	m, _ := s.Matrix(ctx, "fenced")
	if c := m["d"]["1"]; c.Status != CellPartial || c.Done != 1 || c.Passed != 1 {
		t.Errorf("cell = %+v", c)
	}
	runstest.CheckCounters(t, db, "fenced")
	if ids, err := s.MarkInterruptedRuns(ctx); err != nil || len(ids) != 0 {
		t.Errorf("marked again: %v, %v", ids, err)
	}
}
