package server_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// sqliteTemplate is a SQLite database whose components' tables are at
// the newest schema, made once per test process: a test server's new
// database starts as a copy of it (seedDatabase), rather than running
// every migration again. What the copy holds is what store.Open and the
// components' Open make of an empty file: the tables and their schema
// versions, no data.
var sqliteTemplate struct {
	once sync.Once
	dir  string
	data []byte
	err  error
}

// seedDatabase copies the template database into dataDir when it has no
// database yet and the tests run on SQLite; otherwise it does nothing,
// and the server's stores migrate what they find as always.
func seedDatabase(t testing.TB, dataDir string) {
	t.Helper()
	if dbtest.Postgres() {
		return
	}
	path := filepath.Join(dataDir, "gauntlet.db")
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	tpl := &sqliteTemplate
	tpl.once.Do(func() { tpl.data, tpl.err = makeSQLiteTemplate() })
	if tpl.err != nil {
		t.Fatalf("the template database: %v", tpl.err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, tpl.data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// makeSQLiteTemplate migrates a new database as "gauntlet migrate" does
// and returns its file's bytes.
func makeSQLiteTemplate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "gauntlet-server-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "gauntlet.db")
	db, err := store.Open(ctx, "sqlite://"+path)
	if err != nil {
		return nil, err
	}
	for _, migrate := range []func(context.Context, *store.DB) error{catalog.Migrate, runs.Migrate, agent.Migrate} {
		if err := migrate(ctx, db); err != nil {
			db.Close()
			return nil, err
		}
	}
	// Closing the last connection checkpoints the write-ahead log into
	// the file and removes it: the file alone is the database.
	if err := db.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, errors.New("the write-ahead log outlived the database's close")
	}
	return os.ReadFile(path)
}
