// Package store opens Gauntlet's database, which the catalog's cache,
// stored runs and agents share: SQLite (pure Go, no cgo needed), in WAL
// mode with a busy timeout, so that readers never block the single writer
// and a crash loses nothing committed; or PostgreSQL (a "postgres://" URL),
// for a team that shares one history or runs beyond one machine. Every
// store keeps the same data, and reads it back alike, on both.
//
// Open it once and hand the *DB to catalog.Open, runs.Open and agent.Open;
// each brings its own tables to the newest schema version when it opens
// (numbered migrations, applied in order, each whole or not at all), so a
// database written by an older Gauntlet opens and keeps its data, and one
// written by a newer Gauntlet is refused with ErrSchemaTooNew rather than
// misread. Close the DB when every store on it is done.
//
// OpenMemory (or Open with ":memory:") gives a private database that lives
// in memory until Close, for a program or a test that wants a run's score
// and no file.
package store

import (
	"context"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// DB is an open Gauntlet database. The stores that keep data in it take
// it in their options; callers only Ping and Close it.
type DB = sqldb.DB

// BusyTimeoutMS is how long a connection waits for a lock before failing.
const BusyTimeoutMS = sqldb.BusyTimeoutMS

// ErrSchemaTooNew is returned when opening a store on a database that a
// newer Gauntlet migrated: its data may not be understood, so it is not
// touched.
var ErrSchemaTooNew = sqldb.ErrSchemaTooNew

// Open opens the database named by a URL: "sqlite:///abs/path.db",
// "sqlite://relative/path.db", or a bare file path. The file's directory
// is created if needed. ":memory:" (also "sqlite://:memory:") opens a
// fresh in-memory database, as OpenMemory does, rather than a file of
// that name.
//
// "postgres://user:password@host:port/database?sslmode=…" (or
// "postgresql://…"; every parameter libpq knows, as pgx reads them) opens
// a PostgreSQL database, which must exist; the stores create their tables
// in it. Its errors name the server and the database, never the password.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	return sqldb.Open(ctx, rawURL)
}

// OpenMemory opens a fresh, private database that lives in memory until
// Close, for a program that wants a run's score and no file: every store
// works on it as on a file database, concurrent use included. Each call
// gives a database of its own.
//
//	db, err := store.OpenMemory(ctx)
//	...
//	defer db.Close()
//	history, err := runs.Open(ctx, db)
func OpenMemory(ctx context.Context) (*DB, error) {
	return sqldb.OpenMemory(ctx)
}

// Version returns the schema version of a component ("catalog", "runs",
// "agent") recorded in db: 0 when none was recorded.
func Version(ctx context.Context, db *DB, component string) (int, error) {
	return sqldb.Version(ctx, sqldb.Bun(db), component)
}
