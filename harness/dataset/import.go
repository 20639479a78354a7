package dataset

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// Store is what Import writes through: a *catalog.Catalog.
type Store interface {
	Validator() harness.Validator
	Tests(ctx context.Context, f catalog.TestFilter) ([]harness.Test, error)
	Import(ctx context.Context, in *harness.Snapshot, merge bool) (*catalog.ImportResult, error)
}

var _ Store = (*catalog.Catalog)(nil)

// Report is what Import did.
type Report struct {
	// Written is true when the accepted rows were stored: no row was
	// refused, or SkipInvalid was set.
	Written bool
	// Total counts the data rows read.
	Total int
	// Created counts new tests, Updated tests of the level that had the
	// same id (a re-import); both are 0 when nothing was written.
	Created, Updated int
	// Skipped counts the rows not stored: the refused ones, or every row
	// when nothing was written.
	Skipped int
	// Errors lists the refused rows.
	Errors []RowError
}

// Import parses a dataset from r (see Parse) and stores its tests in the
// level opts names, through store, in one write. A row whose id names a
// test of another domain or level is refused (an import never moves a
// test); a test of the same level with the same id is replaced. When a
// row is refused, nothing is written unless opts.SkipInvalid is set. The
// error is Parse's, or the store's; refused rows are in the report.
func Import(ctx context.Context, store Store, r io.Reader, opts Options) (*Report, error) {
	opts.Validator = store.Validator()
	res, err := Parse(r, opts)
	if err != nil {
		return nil, err
	}
	existing, err := store.Tests(ctx, catalog.TestFilter{})
	if err != nil {
		return nil, err
	}
	where := make(map[string]harness.Test, len(existing))
	for _, t := range existing {
		where[t.ID] = t
	}
	rep := &Report{Total: res.Total}
	var keep []Row
	updated := 0
	for _, row := range res.Rows {
		old, ok := where[row.Test.ID]
		switch {
		case !ok:
		case old.DomainID != opts.DomainID || old.Level != opts.Level:
			res.Errors = append(res.Errors, RowError{Row: row.Row, Line: row.Line, Column: idColumn(opts),
				Message: fmt.Sprintf("test %q already exists in domain %q level %d", row.Test.ID, old.DomainID, old.Level)})
			continue
		default:
			updated++
		}
		keep = append(keep, row)
	}
	sortErrors(res.Errors)
	rep.Errors = res.Errors
	if len(rep.Errors) > 0 && !opts.SkipInvalid {
		rep.Skipped = rep.Total
		return rep, nil
	}
	rep.Written = true
	rep.Skipped = len(rep.Errors)
	if len(keep) == 0 {
		return rep, nil
	}
	tests := make([]harness.Test, len(keep))
	for i, row := range keep {
		tests[i] = row.Test
	}
	if _, err := store.Import(ctx, &harness.Snapshot{Tests: tests}, true); err != nil {
		return nil, fmt.Errorf("store the tests: %w", err)
	}
	rep.Created, rep.Updated = len(keep)-updated, updated
	return rep, nil
}

// idColumn names the column a conflicting id came from, as well as the
// report can: the mapped one, else "id".
func idColumn(opts Options) string {
	if opts.Mapping.ID != "" {
		return opts.Mapping.ID
	}
	return "id"
}

// sortErrors orders row errors by row, keeping the order within a row.
func sortErrors(errs []RowError) {
	slices.SortStableFunc(errs, func(a, b RowError) int { return cmp.Compare(a.Row, b.Row) })
}
