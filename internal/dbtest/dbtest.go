// Package dbtest gives each test a fresh Gauntlet database of the kind the
// test run asks for: a SQLite file in the test's temporary directory by
// default, or a fresh database on a real PostgreSQL server (started once
// per test process by internal/pgtest) when the environment variable
// GAUNTLET_TEST_DATABASE is "postgres". The same tests thus cover both
// databases:
//
//	GAUNTLET_TEST_DATABASE=postgres go test ./harness/runs/
//
// A package whose tests use it stops the PostgreSQL server at the end
// from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }
package dbtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/pgtest"
)

// EnvVar names the database the tests run against: "" or "sqlite" for a
// SQLite file, "postgres" for PostgreSQL.
const EnvVar = "GAUNTLET_TEST_DATABASE"

// Postgres reports whether the tests run against PostgreSQL. Any value of
// EnvVar other than "", "sqlite" and "postgres" stops the test process:
// a misspelt name must not quietly test SQLite.
func Postgres() bool {
	switch v := os.Getenv(EnvVar); v {
	case "", "sqlite":
		return false
	case "postgres":
		return true
	default:
		panic(fmt.Sprintf("%s=%q: want sqlite or postgres", EnvVar, v))
	}
}

// URL returns the URL of a fresh, empty database for t: a SQLite file in
// t's temporary directory, or a new PostgreSQL database. Opening it again
// opens the same database.
func URL(t testing.TB) string {
	t.Helper()
	if Postgres() {
		return pgtest.NewDatabase(t)
	}
	return "sqlite://" + filepath.Join(t.TempDir(), "gauntlet.db")
}

// Open opens a fresh database for t (see URL), closed when t ends.
func Open(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// SkipOnPostgres skips t when the tests run against PostgreSQL: for what
// only SQLite has (its files, WAL, fixtures made by old releases).
func SkipOnPostgres(t testing.TB, why string) {
	t.Helper()
	if Postgres() {
		t.Skipf("SQLite only: %s", why)
	}
}

// Server returns the test process's PostgreSQL server, for a test that
// stops and starts it; t is skipped when the tests run against SQLite.
func Server(t testing.TB) *pgtest.Server {
	t.Helper()
	if !Postgres() {
		t.Skipf("PostgreSQL only (%s=postgres)", EnvVar)
	}
	return pgtest.Shared(t)
}

// PrivateServer starts a PostgreSQL server of t's own, stopped and removed
// when t ends, for a test that stops and starts it while other tests use
// the shared one; t is skipped when the tests run against SQLite. It
// returns the server and the URL of a fresh database on it.
func PrivateServer(t testing.TB) (*pgtest.Server, string) {
	t.Helper()
	Server(t) // skips on SQLite, and without the binaries
	s, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := s.CreateSchema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s, u
}

// Main runs a package's tests, then stops the PostgreSQL server if one was
// started; it returns the exit code for os.Exit.
func Main(m *testing.M) int { return pgtest.Main(m) }

// OpenFixture copies name, a fixture database of harness/store/testdata
// (a SQLite file made by an old release, never opened in place: it
// stands for what users' disks hold), into t's temporary directory, opens
// the copy, and returns it with its path; the database is closed when t
// ends.
func OpenFixture(t testing.TB, name string) (*store.DB, string) {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("dbtest: cannot locate the fixtures")
	}
	src, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "harness", "store", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gauntlet.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}
