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

// FillRun stores n results of run runID straight through SQL, laid out as
// the engine stores the scale benchmark's suite: 10 domains × 10 levels ×
// n/100 tests, domain by domain, level by level, every result passed with
// score 1 and a short prompt and answer. For the benchmarks of a million
// results: quicker than storing them through the store.
func FillRun(ctx context.Context, db *store.DB, runID string, n int) error {
	per := n / 100
	_, err := sqldb.Bun(db).ExecContext(ctx, `INSERT INTO "run_results" ("run_id", "test_id", "domain", "level", "name",
		"prompt", "response", "expected", "score", "status", "details", "duration_ms", "model_name", "system_prompt",
		"prompt_tokens", "completion_tokens", "created_at", "repeat")
		WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
		SELECT ?, printf('d%02d-l%d-t%d', i / (10 * ?), i / ? % 10 + 1, i % ?), printf('d%02d', i / (10 * ?)), i / ? % 10 + 1,
			'Sum', printf('[t%d] What is %d + %d', i, i % ?, i / ? % 10 + 1) || char(63), 'The answer is 42.',
			'{"answer":"42","type":"numeric"}', 1, 'passed', '{"extracted_answer":"42"}', (i * 37) % 1009,
			'bench', 'Answer with the number only.', 12, 5, '2026-01-02 03:04:07', 0 FROM seq`,
		n-1, runID, per, per, per, per, per, per, per)
	return err
}

// CountRun sets the counters of run runID's cells from its results and
// makes it counted: for a run filled straight through SQL (FillRun),
// which moved no counter.
func CountRun(ctx context.Context, db *store.DB, runID string) error {
	b := sqldb.Bun(db)
	if err := recountCounters(ctx, b, runID); err != nil {
		return err
	}
	return SetCounted(ctx, db, runID, true)
}

// SetCounted sets run runID's flag: false makes its totals counted from
// its results, as a run's stored before the flag.
func SetCounted(ctx context.Context, db *store.DB, runID string, counted bool) error {
	_, err := sqldb.Bun(db).NewUpdate().Model((*runRow)(nil)).Set("counted = ?", counted).Where("run_id = ?", runID).Exec(ctx)
	return err
}
