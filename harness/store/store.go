// Package store opens Gauntlet's database: SQLite through uptrace/bun with
// the pure-Go driver (sqliteshim picks modernc.org/sqlite), in WAL mode
// with a busy timeout, so that readers never block the single writer and a
// crash loses nothing committed.
//
// The packages that keep data in it (the catalog's cache, runs, agents)
// create their own tables with CreateTables.
package store

import (
	"context"
	"database/sql"
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

// Open opens the database named by a URL: "sqlite:///abs/path.db",
// "sqlite://relative/path.db", or a bare file path. The file's directory is
// created if needed.
func Open(ctx context.Context, rawURL string) (*bun.DB, error) {
	path, err := sqlitePath(rawURL)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(" + fmt.Sprint(BusyTimeoutMS) +
		")&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	sqldb, err := sql.Open(sqliteshim.ShimName, dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return db, nil
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
		return "", fmt.Errorf("open database: unsupported scheme %q (only sqlite:// is supported)", u.Scheme)
	}
	path := u.Host + u.Path
	if path == "" {
		return "", fmt.Errorf("open database: %q names no file", rawURL)
	}
	return path, nil
}

// CreateTables creates the tables of the given models if they do not exist,
// with the indexes given as "table(col, col)" expressions.
func CreateTables(ctx context.Context, db bun.IDB, models ...any) error {
	for _, m := range models {
		if _, err := db.NewCreateTable().Model(m).IfNotExists().Exec(ctx); err != nil {
			return fmt.Errorf("create table for %T: %w", m, err)
		}
	}
	return nil
}

// CreateIndex creates an index if it does not exist.
func CreateIndex(ctx context.Context, db bun.IDB, name, table string, columns ...string) error {
	_, err := db.NewCreateIndex().IfNotExists().Index(name).Table(table).Column(columns...).Exec(ctx)
	if err != nil {
		return fmt.Errorf("create index %s: %w", name, err)
	}
	return nil
}
