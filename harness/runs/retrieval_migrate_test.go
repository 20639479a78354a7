package runs

import (
	"context"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMigrateRetrieval stores a run with the schema before cells had
// retrieval figures (version 8), then opens the store: the cell reads as
// before, with no figures, and figures saved from then on are read back.
// On SQLite and on PostgreSQL, each with its own form of the migration.
func TestMigrateRetrieval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	b := sqldb.Bun(db)
	if err := sqldb.Migrate(ctx, b, "runs", migrations[:8]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, `INSERT INTO "runs" ("run_id", "seq", "started_at", "completed_at", "model_name", "model", "status", "overall_score", "total_tokens", "total_duration_ms", "total_tests", "domains", "done_tests", "passed")
		VALUES ('old', 1, '2026-01-02 03:04:05', '2026-01-02 03:04:09', 'label', 'm', 'completed', 1, 30, 4000, 1, '["kb"]', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, `INSERT INTO "run_cells" ("run_id", "domain", "level", "position", "status", "score", "duration_ms", "tests", "done", "passed")
		VALUES ('old', 'kb', 1, 0, 'passed', 1, 10, 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if v, err := sqldb.Version(ctx, b, "runs"); err != nil || v != len(migrations) || v < 9 {
		t.Fatalf("version = %d, %v", v, err)
	}
	m, err := s.Matrix(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	c := m["kb"]["1"]
	if c.Status != CellPassed || c.Score == nil || *c.Score != 1 || c.Retrieval != nil {
		t.Errorf("the old cell after the migration = %+v (retrieval %+v)", c, c.Retrieval)
	}
	c.Retrieval = &CellRetrieval{RecallAtK: 1, HitRate: 1, Tests: 1}
	if err := s.SaveCell(ctx, "old", "kb", 1, c); err != nil {
		t.Fatal(err)
	}
	m, _ = s.Matrix(ctx, "old")
	if got := m["kb"]["1"].Retrieval; !reflect.DeepEqual(got, c.Retrieval) {
		t.Errorf("retrieval after saving = %+v", got)
	}
}
