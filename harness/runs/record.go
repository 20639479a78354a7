package runs

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// errRaced is the error of a batch whose insert found fewer new results
// than its own read promised: another transaction stored one of them in
// between. The batch is rolled back and each result recorded alone.
var errRaced = errors.New("a result of the batch was stored by another transaction meanwhile")

// RecordResults records results of one run as RecordResult records each,
// all in one transaction: each result is stored once (inserted[i] is
// false for one whose run already had a result of its test and repeat,
// or that repeats an earlier one of the batch), each cell touched and the
// run move by the sums of the results inserted, and settle is given the
// samples of every cell whose last result is among them. A run that is no
// longer running takes none of them: ErrRunEnded, nothing stored. On any
// other failure of the batch (a row the database refuses, a result stored
// by another transaction at the same moment) each result is recorded
// alone with RecordResult, so that one bad result fails only itself: errs
// then holds each one's error. A worker that stores the results finished
// together this way saves a transaction and three statements a result.
func (s *Store) RecordResults(ctx context.Context, results []Result, settle func(domain string, level int, samples []Sample) Cell) (inserted []bool, errs []error) {
	inserted = make([]bool, len(results))
	errs = make([]error, len(results))
	if len(results) == 0 {
		return inserted, errs
	}
	err := s.recordBatch(ctx, results, settle, inserted)
	if err == nil {
		return inserted, errs
	}
	clear(inserted)
	if errors.Is(err, ErrRunEnded) || ctx.Err() != nil {
		for i := range errs {
			errs[i] = err
		}
		return inserted, errs
	}
	for i, r := range results {
		var one func([]Sample) Cell
		if settle != nil {
			one = func(samples []Sample) Cell { return settle(r.Domain, r.Level, samples) }
		}
		inserted[i], errs[i] = s.RecordResult(ctx, r, one)
	}
	return inserted, errs
}

// recordBatch is RecordResults' transaction; it sets inserted.
func (s *Store) recordBatch(ctx context.Context, results []Result, settle func(string, int, []Sample) Cell, inserted []bool) error {
	runID := results[0].RunID
	type key struct {
		test   string
		repeat int
	}
	type cellKey struct {
		domain string
		level  int
	}
	type counts struct {
		tally
		tokens, cacheHits int
		retrieval         RetrievalTally
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		clear(inserted)
		// Which of the batch the run holds already: those are no-ops.
		var tests []string
		for _, r := range results {
			if r.RunID != runID {
				return fmt.Errorf("record results: results of runs %s and %s in one batch", runID, r.RunID)
			}
			tests = append(tests, r.TestID)
		}
		var stored []struct {
			TestID string `bun:"test_id"`
			Repeat int    `bun:"repeat"`
		}
		if err := tx.NewSelect().Model((*resultRow)(nil)).Column("test_id", "repeat").Where("run_id = ?", runID).
			Where("test_id IN (?)", bun.List(tests)).Scan(ctx, &stored); err != nil {
			return fmt.Errorf("record results: %w", err)
		}
		have := make(map[key]bool, len(stored)+len(results))
		for _, st := range stored {
			have[key{st.TestID, st.Repeat}] = true
		}
		var rows []*resultRow
		var order []int
		for i, r := range results {
			k := key{r.TestID, r.Repeat}
			if have[k] {
				continue
			}
			have[k] = true
			inserted[i] = true
			order = append(order, i)
		}
		if len(order) == 0 {
			return nil
		}
		// In key order, as every batch: two transactions inserting the
		// same keys wait for each other in turn, never both.
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(results[a].TestID, results[b].TestID), cmp.Compare(results[a].Repeat, results[b].Repeat))
		})
		cells := map[cellKey]*counts{}
		var run counts
		known := true // every status is one a counter says (RecordResult)
		for _, i := range order {
			r := results[i]
			rows = append(rows, toResultRow(r))
			c := cells[cellKey{r.Domain, r.Level}]
			if c == nil {
				c = &counts{}
				cells[cellKey{r.Domain, r.Level}] = c
			}
			for _, n := range []*counts{c, &run} {
				known = n.add(&r) && known
				n.tokens += r.PromptTokens + r.CompletionTokens
				n.cacheHits += cacheHitsOf(r)
			}
			c.retrieval.Add(&r)
		}
		n, err := sqldb.InsertNew(ctx, tx, rows, `"run_id", "test_id", "repeat"`)
		if err != nil {
			return fmt.Errorf("save results: %w", err)
		}
		if n != int64(len(rows)) {
			return errRaced
		}
		// Cells in key order, then the run's row last (a run's end
		// updates it first: results committed before the end are
		// counted in it, none after).
		keys := make([]cellKey, 0, len(cells))
		for k := range cells {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b cellKey) int {
			return cmp.Or(cmp.Compare(a.domain, b.domain), cmp.Compare(a.level, b.level))
		})
		var full []cellKey
		cellRet := map[cellKey]RetrievalTally{}
		for _, k := range keys {
			c := cells[k]
			var done, tests int
			var ret RetrievalTally
			if err := tx.NewUpdate().Model((*cellRow)(nil)).
				Set("done = done + ?", c.done).Set("passed = passed + ?", c.passed).Set("failed = failed + ?", c.failed).
				Set("errors = errors + ?", c.errs).Set("score_sum = score_sum + ?", c.scoreSum).
				Set("retrieval_tests = retrieval_tests + ?", c.retrieval.Tests).
				Set("retrieval_recall = retrieval_recall + ?", c.retrieval.RecallSum).
				Set("retrieval_hits = retrieval_hits + ?", c.retrieval.Hits).
				Apply(func(q *bun.UpdateQuery) *bun.UpdateQuery { return moveSpend(q, c.spend) }).
				Set("status = CASE WHEN status = ? THEN ? ELSE status END", CellPending, CellRunning).
				Where("run_id = ? AND domain = ? AND level = ?", runID, k.domain, k.level).
				Returning("done, tests, retrieval_tests, retrieval_recall, retrieval_hits").
				Scan(ctx, &done, &tests, &ret.Tests, &ret.RecallSum, &ret.Hits); err != nil {
				return fmt.Errorf("count results in cell %s/%d: %w", k.domain, k.level, err)
			}
			if done == tests {
				full = append(full, k)
				cellRet[k] = ret
			}
		}
		var counted bool
		err = tx.NewUpdate().Model((*runRow)(nil)).
			Set("done_tests = done_tests + ?", run.done).Set("passed = passed + ?", run.passed).
			Set("failed = failed + ?", run.failed).Set("errors = errors + ?", run.errs).
			Set("total_tokens = total_tokens + ?", run.tokens).Set("cache_hits = cache_hits + ?", run.cacheHits).
			Set("counted = counted AND ?", known).
			Apply(func(q *bun.UpdateQuery) *bun.UpdateQuery { return moveSpend(q, run.spend) }).
			Where("run_id = ? AND status = ?", runID, StatusRunning).Returning("counted").Scan(ctx, &counted)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrRunEnded
		}
		if err != nil {
			return fmt.Errorf("count results in run %s: %w", runID, err)
		}
		if settle == nil {
			return nil
		}
		for _, k := range full {
			var samples []Sample
			if err := tx.NewSelect().Model((*resultRow)(nil)).Column(settleColumns...).
				Where("run_id = ? AND domain = ? AND level = ?", runID, k.domain, k.level).
				Order("id").Scan(ctx, &samples); err != nil {
				return fmt.Errorf("read the samples of cell %s/%d: %w", k.domain, k.level, err)
			}
			// The samples carry no details: the cell's retrieval figures
			// are its counters'.
			final := settle(k.domain, k.level, samples)
			final.Retrieval = cellRet[k].Cell()
			if err := saveCell(ctx, tx, runID, k.domain, k.level, final, counted); err != nil {
				return err
			}
		}
		return nil
	})
}
