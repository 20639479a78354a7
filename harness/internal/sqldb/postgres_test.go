package sqldb_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestOpenPostgresErrorsHideThePassword: a failure to connect names the
// server, never the password, whether the URL is malformed or the server
// is not there.
func TestOpenPostgresErrorsHideThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ name, url, want string }{
		{"no server", "postgres://alice:s3cr%21t-pw@127.0.0.1:1/gauntlet?connect_timeout=5", "127.0.0.1:1"},
		{"no server, postgresql scheme", "postgresql://alice:s3cr%21t-pw@127.0.0.1:1/gauntlet", "127.0.0.1"},
		{"password as a parameter", "postgres://alice@127.0.0.1:1/gauntlet?password=s3cr!t-pw", "127.0.0.1"},
		{"bad port", "postgres://alice:s3cr%21t-pw@localhost:notaport/gauntlet", "postgres://"},
		{"unknown parameter value", "postgres://alice:s3cr%21t-pw@127.0.0.1:1/gauntlet?sslmode=sometimes", "postgres://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sqldb.Open(ctx, tc.url)
			if err == nil {
				db.Close()
				t.Fatal("opened a database with no server")
			}
			msg := err.Error()
			if strings.Contains(msg, "s3cr") {
				t.Errorf("the error shows the password: %s", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error = %s, want it to name %q", msg, tc.want)
			}
		})
	}
}

// TestPostgresReconnectsAfterARestart: the pool's connections die with the
// server; the next query after it is back gets a new one.
func TestPostgresReconnectsAfterARestart(t *testing.T) {
	srv, url := dbtest.PrivateServer(t)
	ctx := context.Background()
	db, err := sqldb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := sqldb.Bun(db)
	if _, err := b.ExecContext(ctx, `CREATE TABLE kept (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExecContext(ctx, `INSERT INTO kept VALUES ('yes')`); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var x string
	if err := b.QueryRowContext(ctx, `SELECT x FROM kept`).Scan(&x); err != nil || x != "yes" {
		t.Fatalf("first query after the restart: %q, %v", x, err)
	}
}

// TestPostgresStaleConnectionsAreRetried: connections used a moment
// before PostgreSQL ended them (a restart, an administrator's
// pg_terminate_backend) sit in the pool, dead, and the driver does not
// ping them again so soon; the first query, transaction and prepared
// statement after that each still succeed, on a new connection.
func TestPostgresStaleConnectionsAreRetried(t *testing.T) {
	_, url := dbtest.PrivateServer(t)
	ctx := context.Background()
	admin, err := sqldb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := sqldb.Bun(admin).ExecContext(ctx, `CREATE TABLE kept (x TEXT); INSERT INTO kept VALUES ('yes')`); err != nil {
		t.Fatal(err)
	}
	ops := []struct {
		name string
		do   func(b *bun.DB) error
	}{
		{"query", func(b *bun.DB) error {
			var x string
			return b.QueryRowContext(ctx, `SELECT x FROM kept`).Scan(&x)
		}},
		{"transaction", func(b *bun.DB) error {
			tx, err := b.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			var x string
			return tx.QueryRowContext(ctx, `SELECT x FROM kept`).Scan(&x)
		}},
		{"prepared statement", func(b *bun.DB) error {
			st, err := b.PrepareContext(ctx, `SELECT x FROM kept`)
			if err != nil {
				return err
			}
			return st.Close()
		}},
	}
	for _, op := range ops {
		db, err := sqldb.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		b := sqldb.Bun(db)
		// Four connections, all taken from the pool just now (the driver
		// checks a connection it has not checked for a second), all idle.
		conns := make([]*sql.Conn, 4)
		for range 2 {
			for i := range conns {
				if conns[i], err = b.DB.Conn(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range conns {
				c.Close()
			}
		}
		var ended int
		if err := sqldb.Bun(admin).QueryRowContext(ctx, `SELECT count(*) FROM (
			SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()) t`).Scan(&ended); err != nil {
			t.Fatal(err)
		}
		if ended < len(conns) {
			t.Fatalf("%d connections ended, want %d", ended, len(conns))
		}
		// Once the backends have exited, their sockets are closed, as
		// after a restart.
		for deadline := time.Now().Add(10 * time.Second); ; {
			var left int
			if err := sqldb.Bun(admin).QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d backends still there", left)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := op.do(b); err != nil {
			t.Errorf("first %s after its connections ended: %v", op.name, err)
		}
		db.Close()
	}
}
