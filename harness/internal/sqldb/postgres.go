package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Pool settings of a PostgreSQL database: enough connections for a
// server's concurrent requests and run writers, few enough that several
// Gauntlet processes fit under PostgreSQL's default max_connections
// (100). An idle connection is closed after a while, and every connection
// is renewed now and then, so that a pool follows a failover or a
// restarted server.
const (
	pgMaxOpenConns    = 20
	pgMaxIdleConns    = 10
	pgConnMaxIdleTime = 5 * time.Minute
	pgConnMaxLifetime = time.Hour
)

// IsPostgres reports whether a database URL names PostgreSQL:
// "postgres://…" or "postgresql://…".
func IsPostgres(rawURL string) bool {
	return strings.HasPrefix(rawURL, "postgres://") || strings.HasPrefix(rawURL, "postgresql://")
}

// IsPG reports whether db is a PostgreSQL database.
func IsPG(db bun.IDB) bool { return db.Dialect().Name() == dialect.PG }

// openPostgres opens a PostgreSQL database through pgx's database/sql
// driver and bun's pgdialect. Errors name the server and the database,
// never the password.
func openPostgres(ctx context.Context, rawURL string) (*DB, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %s", redactURL(rawURL), hidePassword(err.Error(), rawURL))
	}
	where := fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	conn := sql.OpenDB(textConnector{stdlib.GetConnector(*cfg)})
	conn.SetMaxOpenConns(pgMaxOpenConns)
	conn.SetMaxIdleConns(pgMaxIdleConns)
	conn.SetConnMaxIdleTime(pgConnMaxIdleTime)
	conn.SetConnMaxLifetime(pgConnMaxLifetime)
	db := bun.NewDB(conn, pgdialect.New())
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %s", where, hidePassword(err.Error(), rawURL))
	}
	return Wrap(db), nil
}

// redactURL is a database URL with its password, if any, hidden.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unparsable postgres:// URL)"
	}
	return u.Redacted()
}

// hidePassword replaces the URL's password in a message by "xxxxx": the
// driver's messages quote the connection string.
func hidePassword(msg, rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		// Nothing to find the password by: keep the message's first line
		// only, which names the fault, not the URL.
		return "invalid URL"
	}
	if p, ok := u.User.Password(); ok && p != "" {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
		if esc := url.QueryEscape(p); esc != p {
			msg = strings.ReplaceAll(msg, esc, "xxxxx")
		}
	}
	if p := u.Query().Get("password"); p != "" {
		msg = strings.ReplaceAll(msg, p, "xxxxx")
	}
	return msg
}

// LockTx serialises the transactions that take the same named lock, until
// they end: on PostgreSQL a transaction-scoped advisory lock (of the
// schema: Gauntlets in other schemas of the database are not held up),
// for the read-then-write steps (the next run number, a migration) that
// SQLite's single writer serialises anyway; nothing on SQLite.
func LockTx(ctx context.Context, tx bun.Tx, name string) error {
	if !IsPG(tx) {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ?))`, " gauntlet "+name)
	return err
}
