package server_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestPostgresRestartWhileServing: while PostgreSQL is down, a request
// that needs the database fails at once with a server error; once it is
// back, the next request succeeds and finds everything stored before.
// (GAUNTLET_TEST_DATABASE=postgres only, on a server of its own.)
func TestPostgresRestartWhileServing(t *testing.T) {
	t.Parallel()
	pg, url := dbtest.PrivateServer(t)
	root := t.TempDir()
	pgDatabases.Store(filepath.Join(root, "data"), url)
	e := newEngineEnvIn(t, root, engineConfig{})
	id := e.runToEnd(map[string]any{"domains": []string{"arithmetic"}})

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := e.try(http.MethodGet, "/api/run/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with the database down: %d %s", r.status, r.body)
	if r.status < 500 {
		t.Errorf("with the database down: %d %s, want a server error", r.status, r.body)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("with the database down the request took %v", d)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	if r := e.get("/api/run/" + id); r.status != http.StatusOK {
		t.Fatalf("first request after the restart: %d %s\n%s", r.status, r.body, e.logs.String())
	}
	if r := e.get("/api/history"); r.status != http.StatusOK {
		t.Fatalf("list runs after the restart: %d %s", r.status, r.body)
	}
}
