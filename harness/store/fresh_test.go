package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// openStores opens every store on db, as the server does.
func openStores(t *testing.T, ctx context.Context, db *store.DB) {
	t.Helper()
	if _, _, err := catalog.Open(ctx, catalog.Options{Dir: t.TempDir(), DB: db}); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Open(ctx, agent.Options{DB: db, DataDir: t.TempDir(), Registry: harness.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
}

// TestFreshDatabase: every store creates its tables in an empty database
// (a SQLite file, or PostgreSQL with GAUNTLET_TEST_DATABASE=postgres) at
// today's versions; opening again changes nothing; a newer schema is
// refused.
func TestFreshDatabase(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	openStores(t, ctx, db)
	checkCurrentVersions(t, db)

	again, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	openStores(t, ctx, again)
	var n int
	if err := sqldb.Bun(again).QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, v := range currentVersions {
		want += v
	}
	if n != want {
		t.Errorf("migrations recorded = %d, want %d", n, want)
	}

	if _, err := sqldb.Bun(db).ExecContext(ctx, `INSERT INTO schema_migrations (component, version, name, applied_at) VALUES ('agent', 99, 'future', '')`); err != nil {
		t.Fatal(err)
	}
	_, err = agent.Open(ctx, agent.Options{DB: db, DataDir: t.TempDir(), Registry: harness.NewRegistry()})
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") {
		t.Errorf("open a newer database: %v", err)
	}
}

// TestMigrationFailsWholeOnEitherDatabase: a migration that fails leaves
// the database as it was, and its version unrecorded.
func TestMigrationFailsWholeOnEitherDatabase(t *testing.T) {
	ctx := context.Background()
	db := dbtest.Open(t)
	one := func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx, `CREATE TABLE t1 (x INTEGER)`)
	}
	two := func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx, `CREATE TABLE t2 (x INTEGER)`, `INSERT INTO nowhere VALUES (1)`)
	}
	ms := []sqldb.Migration{
		{Version: 1, Name: "one", Up: one, Postgres: one},
		{Version: 2, Name: "two", Up: two, Postgres: two},
	}
	if err := sqldb.Migrate(ctx, sqldb.Bun(db), "test", ms); err == nil || !strings.Contains(err.Error(), "two") {
		t.Fatalf("failing migration: %v", err)
	}
	if v, _ := store.Version(ctx, db, "test"); v != 1 {
		t.Errorf("version after a failed migration = %d, want 1", v)
	}
	if ok, _ := sqldb.HasTable(ctx, sqldb.Bun(db), "t2"); ok {
		t.Error("the failed migration left its table")
	}
	if ok, _ := sqldb.HasTable(ctx, sqldb.Bun(db), "t1"); !ok {
		t.Error("the first migration was not kept")
	}
}
