package server_test

import (
	"context"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// queueRuns wires a test server's engine as "gauntlet serve" wires it:
// on PostgreSQL its runs are jobs of River's queue (riverexec), which
// the server itself works, as many at once as the engine's concurrency;
// on SQLite the engine executes its runs in process. Set eo up with it
// before engine.New, and call the function it returns with the engine.
func (e *testEnv) queueRuns(db *store.DB, eo *engine.Options) func(*engine.Engine) {
	t := e.t
	t.Helper()
	if !dbtest.Postgres() {
		return func(*engine.Engine) {}
	}
	q, err := riverexec.Open(context.Background(), riverexec.Options{URL: databaseURL(t, e.dataDir), DB: db,
		Concurrency: max(eo.Concurrency, 1), Server: true, Logger: eo.Logger})
	if err != nil {
		t.Fatalf("riverexec.Open: %v", err)
	}
	t.Cleanup(func() { q.Close() })
	eo.Queue = q
	return func(eng *engine.Engine) {
		if err := q.Work(context.Background(), eng); err != nil {
			t.Fatalf("work the queue: %v", err)
		}
	}
}
