package sqldb_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
