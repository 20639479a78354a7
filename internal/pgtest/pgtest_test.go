package pgtest_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/gauntlet-eval/gauntlet/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestDatabasesAreFreshAndSurviveARestart: each test gets an empty
// database of its own, and a stopped server starts again with its data.
func TestDatabasesAreFreshAndSurviveARestart(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	db, err := sql.Open("pgx", a)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (x TEXT); INSERT INTO t VALUES ('kept')`); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("pgx", b)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var n int
	if err := other.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a fresh database has %d tables (%v)", n, err)
	}
	if _, err := other.ExecContext(ctx, `CREATE TABLE t (y INTEGER)`); err != nil {
		t.Fatalf("a table of the same name in another database: %v", err)
	}
	whole, err := pgtest.Shared(t).CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wdb, err := sql.Open("pgx", whole)
	if err != nil {
		t.Fatal(err)
	}
	defer wdb.Close()
	if err := wdb.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a new database has %d tables (%v)", n, err)
	}

	s := pgtest.Shared(t)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("a stopped server answered")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	var x string
	if err := db.QueryRowContext(ctx, `SELECT x FROM t`).Scan(&x); err != nil || x != "kept" {
		t.Fatalf("after a restart: %q, %v\n%s", x, err, s.Log())
	}
}
