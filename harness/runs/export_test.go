package runs

import (
	"context"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// RawTranscripts returns the stored transcript column of a run's results,
// in the order they were stored ("<null>" for NULL), for the tests to
// check the stored form.
func RawTranscripts(ctx context.Context, db *store.DB, runID string) ([]string, error) {
	var out []string
	err := sqldb.Bun(db).NewSelect().Model((*resultRow)(nil)).ColumnExpr(`COALESCE("transcript", '<null>')`).
		Where("run_id = ?", runID).Order("id").Scan(ctx, &out)
	return out, err
}

// RunSeqs returns the numbers of the stored runs, in order.
func RunSeqs(ctx context.Context, db *store.DB) ([]int64, error) {
	var out []int64
	err := sqldb.Bun(db).NewSelect().Model((*runRow)(nil)).Column("seq").Order("seq").Scan(ctx, &out)
	return out, err
}
