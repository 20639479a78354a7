package engine_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// databases maps a test's data directory to its PostgreSQL database, so
// that an engine opened again over the same directory finds its runs.
var databases sync.Map

// databaseOf is the database of a test's data directory: the SQLite file
// g.db in it, or, when the tests run against PostgreSQL
// (GAUNTLET_TEST_DATABASE=postgres), a fresh PostgreSQL database made
// for it on first use. The engine's tests thus run on both databases
// through the same code.
func databaseOf(tb testing.TB, dir string) string {
	tb.Helper()
	if !dbtest.Postgres() {
		return filepath.Join(dir, "g.db")
	}
	if u, ok := databases.Load(dir); ok {
		return u.(string)
	}
	u, _ := databases.LoadOrStore(dir, dbtest.URL(tb))
	return u.(string)
}
