package sqldb_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMigrateNeedsTheDialectsForm: a migration with no form for the
// database's dialect is refused before anything is applied, rather than
// skipped.
func TestMigrateNeedsTheDialectsForm(t *testing.T) {
	ctx := context.Background()
	b := sqldb.Bun(dbtest.Open(t))
	create := func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx, `CREATE TABLE one (x TEXT)`)
	}
	ms := []sqldb.Migration{
		{Version: 1, Name: "one", Up: create, Postgres: create},
		{Version: 2, Name: "half", Postgres: sqldb.AlreadyInBaseline}, // none for SQLite
	}
	if dbtest.Postgres() {
		ms[1] = sqldb.Migration{Version: 2, Name: "half", Up: sqldb.AlreadyInBaseline}
	}
	err := sqldb.Migrate(ctx, b, "test", ms)
	if err == nil || !strings.Contains(err.Error(), "migration 2 (half) has no") {
		t.Fatalf("err = %v, want migration 2 refused", err)
	}
	if ok, err := sqldb.HasTable(ctx, b, "one"); err != nil || ok {
		t.Fatalf("table one exists: %v, %v", ok, err)
	}
}

// TestMigrateConcurrently: processes that open one database at once
// apply each migration once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	var mu sync.Mutex
	applied := 0
	create := func(ctx context.Context, tx bun.Tx) error {
		mu.Lock()
		applied++
		mu.Unlock()
		return sqldb.ExecAll(ctx, tx, `CREATE TABLE one (x TEXT)`)
	}
	ms := []sqldb.Migration{{Version: 1, Name: "one", Up: create, Postgres: create}}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			db, err := sqldb.Open(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = sqldb.Migrate(ctx, sqldb.Bun(db), "test", ms)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if applied != 1 {
		t.Fatalf("migration applied %d times", applied)
	}
}
