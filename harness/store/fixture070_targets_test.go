package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixture070Targets: the catalog's migration from the 0.7.0 schema
// (catalog 4) adds the cache of black-box targets, and a target file
// goes through the migrated cache with its ${VAR} references as written.
func TestFixture070Targets(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.7.0.db")
	if v, err := store.Version(ctx, db, "catalog"); v != 4 || err != nil {
		t.Fatalf("the fixture's catalog schema version = %d, %v; want 4", v, err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "targets"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := "url: http://127.0.0.1:9/api/chat\nheaders:\n  Authorization: Bearer ${SUPPORT_TOKEN}\nbody:\n  q: '{{prompt}}'\nresponse: /answer\n"
	if err := os.WriteFile(filepath.Join(dir, "targets", "support.yaml"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	c, res, err := catalog.Open(ctx, catalog.Options{Dir: dir, DB: db})
	if err != nil {
		t.Fatalf("catalog on the 0.7.0 database: %v", err)
	}
	if res.Loaded.Targets != 1 || len(res.Errors) != 0 {
		t.Fatalf("sync = %+v", res)
	}
	got, err := c.Target(ctx, "support")
	if err != nil || got.Headers["Authorization"] != "Bearer ${SUPPORT_TOKEN}" || got.Response.Answer != "/answer" || got.Method != "POST" {
		t.Errorf("target = %+v, %v", got, err)
	}
	if v, err := store.Version(ctx, db, "catalog"); v != currentVersions["catalog"] || err != nil {
		t.Errorf("catalog schema version after opening = %d, %v; want %d", v, err, currentVersions["catalog"])
	}
}

// migrateCatalog brings the catalog's tables of db to today's schema, as
// a process that opens its definitions does, for the tests that open
// runs only and check every component's version.
func migrateCatalog(t *testing.T, db *store.DB) {
	t.Helper()
	if err := catalog.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
}
