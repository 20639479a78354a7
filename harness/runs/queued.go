package runs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// ErrRunEnded is returned by RecordResult when the result's run is no
// longer running (stopped, aborted, finished): the result is not stored.
var ErrRunEnded = errors.New("the run is no longer running")

// SchemaVersion is the version of the runs tables this code writes: a
// queued job records it, so that a worker of an older version refuses the
// jobs of a run it may not understand.
func SchemaVersion() int { return len(migrations) }

// Sample is what a cell's final state is computed from: one stored result
// of the cell, without its texts.
type Sample struct {
	TestID    string  `bun:"test_id"`
	Repeat    int     `bun:"repeat"`
	Score     float64 `bun:"score"`
	Status    string  `bun:"status"`
	CreatedAt string  `bun:"created_at"`
	// DurationMS and TTFTMS are the result's, for the cell's latency.
	DurationMS int64  `bun:"duration_ms"`
	TTFTMS     *int64 `bun:"ttft_ms"`
}

// settleColumns are the columns of a result a Sample reads.
var settleColumns = []string{"test_id", "repeat", "score", "status", "created_at", "duration_ms", "ttft_ms"}

// RecordResult stores the result of a queued job, once: when the run
// already has a result for the same test and repeat (a job executed again
// after its worker was lost), nothing changes and inserted is false.
// Otherwise, in the same transaction, the result's cell and run counters
// move by one (a status other than passed, failed or error counts as an
// error, and makes the run uncounted: see SaveBatch) (done, passed, failed or errors, tokens; the cell's
// retrieval sums when the result measured retrieval, see
// RetrievalTally); when the result is
// its cell's last, settle is given the cell's samples and returns the
// cell's final state, which is stored. A run that is no longer running
// takes no result: ErrRunEnded, nothing stored.
//
// The run's row is updated last, and a run's end (FenceRun) updates it
// first: results committed before the end are counted in it, none after.
func (s *Store) RecordResult(ctx context.Context, r Result, settle func([]Sample) Cell) (inserted bool, err error) {
	row := toResultRow(r)
	// A status no counter says (the engine stores none) is counted as an
	// error, and its run's counters no longer say its results by status.
	var t tally
	known := t.add(&r)
	var ret RetrievalTally
	ret.Add(&r)
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		inserted = false
		n, err := sqldb.InsertNew(ctx, tx, []*resultRow{row}, `"run_id", "test_id", "repeat"`)
		if err != nil {
			return fmt.Errorf("save result %s: %w", r.TestID, err)
		}
		if n == 0 {
			return nil // a result is already stored: a no-op
		}
		var done, tests int
		var cellRet RetrievalTally
		err = tx.NewUpdate().Model((*cellRow)(nil)).
			Set("done = done + 1").Set("passed = passed + ?", t.passed).Set("failed = failed + ?", t.failed).
			Set("errors = errors + ?", t.errs).Set("score_sum = score_sum + ?", t.scoreSum).
			Set("retrieval_tests = retrieval_tests + ?", ret.Tests).
			Set("retrieval_recall = retrieval_recall + ?", ret.RecallSum).
			Set("retrieval_hits = retrieval_hits + ?", ret.Hits).
			Apply(func(q *bun.UpdateQuery) *bun.UpdateQuery { return moveSpend(q, t.spend) }).
			Set("status = CASE WHEN status = ? THEN ? ELSE status END", CellPending, CellRunning).
			Where("run_id = ? AND domain = ? AND level = ?", r.RunID, r.Domain, r.Level).
			Returning("done, tests, retrieval_tests, retrieval_recall, retrieval_hits").
			Scan(ctx, &done, &tests, &cellRet.Tests, &cellRet.RecallSum, &cellRet.Hits)
		if err != nil {
			return fmt.Errorf("count result %s in its cell: %w", r.TestID, err)
		}
		var counted bool
		err = tx.NewUpdate().Model((*runRow)(nil)).
			Set("done_tests = done_tests + 1").Set("passed = passed + ?", t.passed).Set("failed = failed + ?", t.failed).
			Set("errors = errors + ?", t.errs).Set("total_tokens = total_tokens + ?", r.PromptTokens+r.CompletionTokens).
			Set("cache_hits = cache_hits + ?", cacheHitsOf(r)).Set("counted = counted AND ?", known).
			Apply(func(q *bun.UpdateQuery) *bun.UpdateQuery { return moveSpend(q, t.spend) }).
			Where("run_id = ? AND status = ?", r.RunID, StatusRunning).Returning("counted").Scan(ctx, &counted)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrRunEnded
		}
		if err != nil {
			return fmt.Errorf("count result %s in its run: %w", r.TestID, err)
		}
		if done == tests && settle != nil {
			var samples []Sample
			if err := tx.NewSelect().Model((*resultRow)(nil)).Column(settleColumns...).
				Where("run_id = ? AND domain = ? AND level = ?", r.RunID, r.Domain, r.Level).
				Order("id").Scan(ctx, &samples); err != nil {
				return fmt.Errorf("read the samples of cell %s/%d: %w", r.Domain, r.Level, err)
			}
			// The samples carry no details: the cell's retrieval figures
			// are its counters'.
			final := settle(samples)
			final.Retrieval = cellRet.Cell()
			if err := saveCell(ctx, tx, r.RunID, r.Domain, r.Level, final, counted); err != nil {
				return err
			}
		}
		inserted = true
		return nil
	})
	if err != nil {
		inserted = false
	}
	return inserted, err
}

// FenceRun ends a running run's intake of queued results: it sets the
// run's status (stopped, aborted, completed) when it is still running, so
// that no RecordResult commits after it. It reports whether it changed
// the run.
func (s *Store) FenceRun(ctx context.Context, runID, status, why string) (bool, error) {
	res, err := s.db.NewUpdate().Model((*runRow)(nil)).Set("status = ?", status).Set("error = ?", cleanText(why)).
		Where("run_id = ? AND status = ?", runID, StatusRunning).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("end run %s: %w", runID, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Stored is a result as a run's progress reads it: its row id, and what
// its log line and event say.
type Stored struct {
	ID int64 `bun:"id"`
	Result
}

// ResultsAfter returns up to limit results of a run whose row id is above
// after, by id, without their transcripts and calls. A server follows
// the results its workers store this way.
func (s *Store) ResultsAfter(ctx context.Context, runID string, after int64, limit int) ([]Stored, error) {
	var rows []resultRow
	err := s.db.NewSelect().Model(&rows).ExcludeColumn("transcript", "calls", "prompt", "system_prompt").
		Where("run_id = ? AND id > ?", runID, after).Order("id").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("results of run %s: %w", runID, err)
	}
	out := make([]Stored, len(rows))
	for i := range rows {
		out[i] = Stored{ID: rows[i].ID, Result: rows[i].result()}
	}
	return out, nil
}

// ScoreSums returns the sum of the scores of each cell's scored results
// (passed and failed) of a run, by domain and level.
func (s *Store) ScoreSums(ctx context.Context, runID string) (map[string]map[int]float64, error) {
	var rows []struct {
		Domain string  `bun:"domain"`
		Level  int     `bun:"level"`
		Sum    float64 `bun:"total"`
	}
	err := s.db.NewSelect().Model((*resultRow)(nil)).Column("domain", "level").ColumnExpr("SUM(score) AS total").
		Where("run_id = ? AND status IN (?)", runID, bun.List([]string{TestPassed, TestFailed})).
		Group("domain", "level").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("score sums of run %s: %w", runID, err)
	}
	out := map[string]map[int]float64{}
	for _, r := range rows {
		if out[r.Domain] == nil {
			out[r.Domain] = map[int]float64{}
		}
		out[r.Domain][r.Level] = r.Sum
	}
	return out, nil
}

// cacheHitsOf is a result's model requests answered from the response
// cache (its "cache_hits" detail).
func cacheHitsOf(r Result) int {
	switch n := r.Details["cache_hits"].(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}
