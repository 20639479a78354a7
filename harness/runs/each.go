package runs

import (
	"context"
	"fmt"
)

// EachResultByCell calls fn with every result of a run in the order
// Results returns them (by domain, level, then the order they finished
// in), reading a few hundred rows at a time along the (run, domain,
// level, id) index, so that memory stays flat however large the run. It
// stops at fn's first error and returns it; an unknown run is an error
// wrapping harness.ErrNotFound.
func (s *Store) EachResultByCell(ctx context.Context, runID string, fn func(Result) error) error {
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
		if !first {
			q = q.Where("(domain, level, id) > (?, ?, ?)", domain, level, id)
		}
		if err := q.Order("domain", "level", "id").Limit(exportPage).Scan(ctx); err != nil {
			return fmt.Errorf("read results of %q: %w", runID, err)
		}
		for i := range rows {
			if err := fn(rows[i].result()); err != nil {
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
