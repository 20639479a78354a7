package runs

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMigrateRepeats writes results with the schema before repeats, then
// opens the store: every result is still there, byte for byte, as repeat
// 0, and (run, test, repeat) is what must be unique from then on.
func TestMigrateRepeats(t *testing.T) {
	t.Parallel()
	dbtest.SkipOnPostgres(t, "replays SQLite's schema history; PostgreSQL starts at the schema of version 6")
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := sqldb.Bun(db)
	if err := sqldb.Migrate(ctx, b, "runs", migrations[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, `INSERT INTO "runs" ("run_id", "seq", "started_at", "model_name", "model", "status", "total_tokens", "total_duration_ms", "total_tests", "domains")
		VALUES ('old', 1, '2026-01-02 03:04:05', 'label', 'm', 'completed', 0, 0, 2, '["math"]')`); err != nil {
		t.Fatal(err)
	}
	odd := "ok\x00\xff\xfe end"
	for i, test := range []string{"t1", "t2"} {
		if _, err := b.DB.ExecContext(ctx, `INSERT INTO "run_results" ("run_id", "test_id", "domain", "level", "name", "prompt", "response", "score", "status", "duration_ms", "model_name", "system_prompt", "prompt_tokens", "completion_tokens", "created_at")
			VALUES ('old', ?, 'math', 1, 'n', 'p', ?, 1, 'passed', ?, 'label', '', 1, 2, '2026-01-02 03:04:06')`, test, odd, i); err != nil {
			t.Fatal(err)
		}
	}
	// The old schema refused a second result of one test.
	if _, err := b.DB.ExecContext(ctx, `INSERT INTO "run_results" ("run_id", "test_id", "domain", "level", "name", "prompt", "response", "score", "status", "duration_ms", "model_name", "system_prompt", "prompt_tokens", "completion_tokens", "created_at")
		VALUES ('old', 't1', 'math', 1, 'n', 'p', '', 1, 'passed', 0, 'label', '', 1, 2, '2026-01-02 03:04:06')`); err == nil {
		t.Fatal("the schema before repeats stored two results of one test")
	}

	s, err := Open(ctx, db)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if v, err := sqldb.Version(ctx, b, "runs"); err != nil || v != len(migrations) {
		t.Fatalf("version = %d, %v", v, err)
	}
	got, err := s.Results(ctx, "old")
	if err != nil || len(got) != 2 {
		t.Fatalf("results = %+v, %v", got, err)
	}
	for i, r := range got {
		if r.Repeat != 0 || r.Response != odd || r.DurationMS != int64(i) || r.TestID != []string{"t1", "t2"}[i] {
			t.Errorf("result %d after the migration = %+v", i, r)
		}
	}
	// A second repeat of a test is stored; the same repeat twice is not.
	r2 := got[0]
	r2.Repeat = 1
	if err := s.SaveResult(ctx, r2); err != nil {
		t.Fatalf("repeat 1: %v", err)
	}
	if err := s.SaveResult(ctx, got[0]); err == nil {
		t.Error("a second result for (run, test, repeat 0) was stored")
	}
	got, _ = s.Results(ctx, "old")
	if len(got) != 3 || got[2].Repeat != 1 || got[2].TestID != "t1" {
		t.Errorf("results = %+v", got)
	}
}

// TestMigrateCache stores a run with the schema before the response
// cache, then opens the store: the run reads as before, with no cache
// hits and rescored from nothing, and the cache and the new columns work.
func TestMigrateCache(t *testing.T) {
	t.Parallel()
	dbtest.SkipOnPostgres(t, "replays SQLite's schema history; PostgreSQL starts at the schema of version 6")
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := sqldb.Bun(db)
	if err := sqldb.Migrate(ctx, b, "runs", migrations[:4]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, `INSERT INTO "runs" ("run_id", "seq", "started_at", "completed_at", "model_name", "model", "status", "overall_score", "total_tokens", "total_duration_ms", "total_tests", "domains", "done_tests", "passed", "config")
		VALUES ('old', 1, '2026-01-02 03:04:05', '2026-01-02 03:04:09', 'label', 'm', 'completed', 1, 30, 4000, 1, '["math"]', 1, 1, '{"model":"m","repeats":1}')`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	in, err := s.Run(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if in.CacheHits != 0 || in.RescoredFrom != "" || in.Config == nil || in.Config.Cache || in.Passed != 1 || in.TotalTokens != 30 {
		t.Errorf("the old run after the migration = %+v, config %+v", in, in.Config)
	}
	in.CacheHits = 7
	if _, err := s.FinishRun(ctx, in); err != nil {
		t.Fatal(err)
	}
	if in, _ = s.Run(ctx, "old"); in.CacheHits != 7 {
		t.Errorf("cache_hits after FinishRun = %d", in.CacheHits)
	}
	if n, err := s.CacheSize(ctx); err != nil || n != 0 {
		t.Errorf("cache size = %d, %v", n, err)
	}
}
