package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// databases maps a test's data directory to its PostgreSQL database, so
// that an engine opened again over the same directory finds its runs.
var databases sync.Map

// databaseOf is the database of a test's data directory: the SQLite file
// g.db in it, or, when the tests run against PostgreSQL
// (GAUNTLET_TEST_DATABASE=postgres), a fresh PostgreSQL database made
// for it on first use. The engine's tests thus run on both databases
// through the same code.
func databaseOf(tb testing.TB, dir string) string {
	tb.Helper()
	if !dbtest.Postgres() {
		return filepath.Join(dir, "g.db")
	}
	if u, ok := databases.Load(dir); ok {
		return u.(string)
	}
	u, _ := databases.LoadOrStore(dir, dbtest.URL(tb))
	return u.(string)
}

// queueRuns wires a fixture's engine as "gauntlet serve" wires it: on
// PostgreSQL (unless the fixture brings its own queue, or uses no
// database of databaseOf) its runs are jobs of River's queue, which the
// engine itself works, as many at once as its concurrency; on SQLite it
// executes its runs in process. Call the function it returns with the
// engine.
func queueRuns(t testing.TB, f *fixture, o fixtureOpts, opts *engine.Options) func(*engine.Engine) {
	t.Helper()
	url, ok := databases.Load(f.dir)
	if !dbtest.Postgres() || o.queue != nil || !ok {
		return func(*engine.Engine) {}
	}
	top, _, _ := strings.Cut(t.Name(), "/")
	if why, ok := inProcessOnPostgres[top]; ok {
		t.Logf("executed in process on PostgreSQL too: %s", why)
		return func(*engine.Engine) {}
	}
	concurrency := opts.Concurrency
	if concurrency <= 0 {
		concurrency = 8 // the engine's default
	}
	q, err := riverexec.Open(context.Background(), riverexec.Options{URL: url.(string), DB: f.db,
		Concurrency: concurrency, Server: true, Logger: opts.Logger})
	if err != nil {
		t.Fatalf("riverexec.Open: %v", err)
	}
	t.Cleanup(func() { q.Close() })
	opts.Queue = q
	return func(eng *engine.Engine) {
		if err := q.Work(context.Background(), eng); err != nil {
			t.Fatalf("work the queue: %v", err)
		}
	}
}

// inProcessOnPostgres are the tests whose engine executes its runs in
// process on PostgreSQL too, by name, each with what a queued run does
// differently: behaviour the queue does not have yet, or a check that
// holds for a run executed in process only.
var inProcessOnPostgres = map[string]string{
	"TestConcurrencyHonoured": "a queue's workers fetch jobs as slots free, so the peak in flight may fall one short of the bound",
	"TestStopMidRun": "a stop reaches a worker's tests through the database; a test that finishes meanwhile " +
		"(50 ms here) is kept, so none may be left in flight",
	"TestEndpointDownStopsRun": "a worker whose endpoint is down gives its jobs back to the queue for another " +
		"worker instead of stopping the run (see docs/scale-out.md)",
}
