// Package sqldb is the database layer behind harness/store: it opens
// SQLite through uptrace/bun with the pure-Go driver (sqliteshim picks
// modernc.org/sqlite), in WAL mode with a busy timeout, so that readers
// never block the single writer and a crash loses nothing committed; or
// PostgreSQL through bun's pgdialect and pgx's database/sql driver.
//
// The packages that keep data in it (the catalog's cache, runs, agents)
// own their tables and bring them to the newest schema with Migrate, one
// numbered migration at a time; rows that hold model output are written
// with Insert, whose bind parameters keep every byte.
//
// It is internal so that bun stays out of the library's public API: an
// embedder holds a *DB (as store.DB) and passes it on; only the harness
// packages reach the bun handle, through Bun.
package sqldb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// BusyTimeoutMS is how long a connection waits for a lock before failing.
const BusyTimeoutMS = 5000

// DB is an open database. Its bun handle is reachable only from inside
// the harness packages (Bun), so that bun is no part of the public API.
type DB struct {
	b *bun.DB
	// keep, for an in-memory database, is a connection held open for the
	// DB's life: the database lives as long as one connection to it does.
	keep *sql.Conn
}

// Wrap makes a DB of a bun handle.
func Wrap(b *bun.DB) *DB { return &DB{b: b} }

// Bun returns the bun handle of db.
func Bun(db *DB) *bun.DB { return db.b }

// Close closes the database; an in-memory one is gone after. Stores opened
// on it must not be used after.
func (db *DB) Close() error {
	if db.keep != nil {
		db.keep.Close()
	}
	return db.b.Close()
}

// Memory is the URL that names a fresh in-memory database.
const Memory = ":memory:"

// Ping checks that the database answers: an error after Close.
func (db *DB) Ping(ctx context.Context) error { return db.b.PingContext(ctx) }

// Open opens the database named by a URL: "sqlite:///abs/path.db",
// "sqlite://relative/path.db", or a bare file path. The file's directory is
// created if needed. Memory (":memory:", also "sqlite://:memory:") opens
// a fresh in-memory database, as OpenMemory does. "postgres://…" (or
// "postgresql://…") opens a PostgreSQL database.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	if IsPostgres(rawURL) {
		return openPostgres(ctx, rawURL)
	}
	if rawURL == Memory || rawURL == "sqlite://"+Memory {
		return OpenMemory(ctx)
	}
	path, err := sqlitePath(rawURL)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(" + fmt.Sprint(BusyTimeoutMS) +
		")&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	conn, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	db := bun.NewDB(conn, sqlitedialect.New())
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return Wrap(db), nil
}

func sqlitePath(rawURL string) (string, error) {
	if rawURL == "" {
		return "", fmt.Errorf("open database: empty URL")
	}
	if !strings.Contains(rawURL, "://") {
		return rawURL, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("open database: %w", err)
	}
	if u.Scheme != "sqlite" {
		return "", fmt.Errorf("open database: unsupported scheme %q (sqlite://, postgres:// or postgresql://)", u.Scheme)
	}
	path := u.Host + u.Path
	if path == "" {
		return "", fmt.Errorf("open database: %q names no file", rawURL)
	}
	return path, nil
}

// OpenMemory opens a fresh database that lives in memory, private to the
// returned DB, until Close. It behaves as a file database does for every
// store (several connections, transactions, a busy timeout; SQLite's
// memdb VFS), without WAL, which memory needs not.
func OpenMemory(ctx context.Context) (*DB, error) {
	var b [8]byte
	rand.Read(b[:])
	// A name starting with "/" makes memdb share the database between the
	// pool's connections; the random part keeps each DB its own.
	dsn := "file:/gauntlet-" + hex.EncodeToString(b[:]) + "?vfs=memdb&_pragma=busy_timeout(" + fmt.Sprint(BusyTimeoutMS) +
		")&_pragma=foreign_keys(1)&_txlock=immediate"
	conn, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open in-memory database: %w", err)
	}
	keep, err := conn.Conn(ctx)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open in-memory database: %w", err)
	}
	return &DB{b: bun.NewDB(conn, sqlitedialect.New()), keep: keep}, nil
}
