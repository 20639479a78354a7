package runs

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// EachResultByCell calls fn with every result of a run in the order
// Results returns them (by domain, level, then the order they finished
// in), reading a few hundred rows at a time along the (run, domain,
// level, id) index, so that memory stays flat however large the run. It
// stops at fn's first error and returns it; an unknown run is an error
// wrapping harness.ErrNotFound.
func (s *Store) EachResultByCell(ctx context.Context, runID string, fn func(Result) error) error {
	return s.eachByCell(ctx, runID, nil, fn)
}

// sampleColumns are the columns EachSampleByCell reads.
var sampleColumns = []string{"id", "run_id", "test_id", "repeat", "domain", "level", "name", "score", "status", "duration_ms"}

// EachSampleByCell is EachResultByCell reading only what counts and
// aggregates need: each result's test id, repeat, domain, level, name,
// score, status and duration; its other fields are empty. It is several
// times cheaper than reading whole results.
func (s *Store) EachSampleByCell(ctx context.Context, runID string, fn func(Result) error) error {
	return s.eachByCell(ctx, runID, sampleColumns, fn)
}

func (s *Store) eachByCell(ctx context.Context, runID string, columns []string, fn func(Result) error) error {
	if _, err := s.Run(ctx, runID); err != nil {
		return err
	}
	var (
		domain string
		level  int
		id     int64
		first  = true
	)
	for {
		var rows []resultRow
		q := s.db.NewSelect().Model(&rows).Where("run_id = ?", runID)
		if columns != nil {
			q = q.Column(columns...)
		}
		if !first {
			q = q.Where("(domain, level, id) > (?, ?, ?)", domain, level, id)
		}
		if err := q.Order("domain", "level", "id").Limit(exportPage).Scan(ctx); err != nil {
			return fmt.Errorf("read results of %q: %w", runID, err)
		}
		for i := range rows {
			r := &rows[i]
			var res Result
			if columns == nil {
				res = r.result()
			} else {
				res = Result{RunID: r.RunID, TestID: r.TestID, Repeat: r.Repeat, Domain: r.Domain, Level: r.Level, Name: r.Name,
					Score: r.Score, Status: r.Status, DurationMS: r.DurationMS, Details: map[string]any{}}
			}
			if err := fn(res); err != nil {
				return err
			}
		}
		if len(rows) < exportPage {
			return nil
		}
		last := &rows[len(rows)-1]
		domain, level, id, first = last.Domain, last.Level, last.ID, false
	}
}

// ResultCells returns, for each cell of a run that holds results, how
// many results it holds (CellKey.Tests), in the order EachResultByCell
// reads them: by domain, then level.
func (s *Store) ResultCells(ctx context.Context, runID string) ([]CellKey, error) {
	var rows []struct {
		Domain string `bun:"domain"`
		Level  int    `bun:"level"`
		N      int    `bun:"n"`
	}
	if err := s.db.NewSelect().Model((*resultRow)(nil)).Column("domain", "level").ColumnExpr("COUNT(*) AS n").
		Where("run_id = ?", runID).Group("domain", "level").Order("domain", "level").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read results of %q: %w", runID, err)
	}
	out := make([]CellKey, len(rows))
	for i, r := range rows {
		out[i] = CellKey{Domain: r.Domain, Level: r.Level, Tests: r.N}
	}
	return out, nil
}

// CellProblems returns the first limit results of one cell of a run
// (by id: the order they were stored) that failed or ended in error,
// whole. A report that lists a run's first failures reads them through
// the index of a cell's results by status, not by reading every result.
func (s *Store) CellProblems(ctx context.Context, runID, domain string, level, limit int) ([]Result, error) {
	if limit <= 0 {
		return nil, nil
	}
	var rows []resultRow
	if err := s.db.NewSelect().Model(&rows).
		Where("run_id = ? AND domain = ? AND level = ?", runID, domain, level).
		Where("status IN (?)", bun.List([]string{TestFailed, TestError})).
		Order("id").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the failures of %s/%d of %q: %w", domain, level, runID, err)
	}
	out := make([]Result, len(rows))
	for i := range rows {
		out[i] = rows[i].result()
	}
	return out, nil
}
