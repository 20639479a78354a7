package riverexec_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// queued is a server engine whose runs are River jobs, and the queue.
type queued struct {
	db       *store.DB
	url      string
	eng      *engine.Engine
	queue    *riverexec.Queue
	finished chan runs.Info
}

// newQueued opens a database with the example definitions, a queue with
// opts (URL and DB filled in) and a server engine over both answering
// from llm; the queue is not worked yet.
func newQueued(t *testing.T, llmOpts llmtest.Options, opts riverexec.Options) *queued {
	t.Helper()
	if !dbtest.Postgres() {
		t.Skipf("River needs PostgreSQL (%s=postgres)", dbtest.EnvVar)
	}
	ctx := context.Background()
	f := &queued{url: dbtest.URL(t), finished: make(chan runs.Info, 1)}
	var err error
	if f.db, err = store.Open(ctx, f.url); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.db.Close() })
	defs := filepath.Join(t.TempDir(), "definitions")
	if err := os.CopyFS(defs, os.DirFS("../../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: defs, DB: f.db})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("catalog: %v %+v", err, res)
	}
	rs, err := runs.Open(ctx, f.db)
	if err != nil {
		t.Fatal(err)
	}
	mock := llmtest.NewServer(llmOpts)
	t.Cleanup(mock.Close)
	client, err := llm.New(llm.Options{BaseURL: mock.URL, Model: "test-model", Timeout: time.Minute, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	opts.URL, opts.DB, opts.Server = f.url, f.db, true
	if f.queue, err = riverexec.Open(ctx, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.queue.Close() })
	f.eng, err = engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: client, Model: "test-model",
		Concurrency: 4, Queue: f.queue, OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventRunFinished {
				f.finished <- *ev.Info
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// wait returns the run's final info.
func (f *queued) wait(t *testing.T, within time.Duration) runs.Info {
	t.Helper()
	select {
	case info := <-f.finished:
		return info
	case <-time.After(within):
		t.Fatalf("the queued run did not finish in %v", within)
	}
	return runs.Info{}
}

// TestDeadWorkersJobsRunAgain: the jobs a worker was executing when it
// died (running, started 30 s ago, never marked alive since) are run
// again by a live process with the default settings, long before
// RescueAfter (15 minutes), and the run completes with each result once.
func TestDeadWorkersJobsRunAgain(t *testing.T) {
	f := newQueued(t, llmtest.Options{}, riverexec.Options{Concurrency: 4})
	ctx := context.Background()
	id, err := f.eng.Start(ctx, engine.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The run is accepted at once; its jobs are queued as it is prepared.
	harnesstest.Eventually(t, time.Minute, "the run's preparation", func() bool { return !f.eng.Status().Preparing })
	// A worker took every job, then died.
	res, err := sqldb.Bun(f.db).ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = 1,
		attempted_at = now() - interval '30 seconds', attempted_by = ARRAY['gauntlet-dead-1-1']
		WHERE args->>'run_id' = ?`, id)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("the run has no job")
	}
	start := time.Now()
	if err := f.queue.Work(ctx, f.eng); err != nil {
		t.Fatal(err)
	}
	info := f.wait(t, 3*time.Minute)
	t.Logf("the dead worker's jobs ran again and the run ended in %v", time.Since(start))
	if info.RunID != id || info.Status != runs.StatusCompleted || info.DoneTests != info.TotalTests {
		t.Fatalf("run = %+v; want it completed", info)
	}
	runstest.CheckCounters(t, f.db, id)
	var rescued, errs int
	if err := sqldb.Bun(f.db).QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE (metadata->>'river:rescue_count')::int = 1),
		count(*) FILTER (WHERE cardinality(errors) = 1) FROM river_job WHERE args->>'run_id' = ?`, id).Scan(&rescued, &errs); err != nil {
		t.Fatal(err)
	}
	if rescued != info.TotalTests || errs != info.TotalTests {
		t.Errorf("%d jobs counted rescued once, %d with one error; want %d", rescued, errs, info.TotalTests)
	}
}

// TestLiveWorkersLongTestKept: a test that takes many times the dead
// bound is never taken from the live process executing it: its job is
// marked alive all along, executed once.
func TestLiveWorkersLongTestKept(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{}, 100)
	f := newQueued(t, llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
		if r.N == 1 {
			held <- struct{}{}
			<-release
		}
		return nil
	}}, riverexec.Options{Concurrency: 4, Heartbeat: 100 * time.Millisecond, DeadAfter: time.Second})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	ctx := context.Background()
	if err := f.queue.Work(ctx, f.eng); err != nil {
		t.Fatal(err)
	}
	id, err := f.eng.Start(ctx, engine.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	<-held
	// The held test's job outlives its dead bound twice over, its
	// heartbeat renewed: wait for 20 renewals.
	var first string
	for renewals := 0; renewals < 20; {
		var beat *string
		if err := sqldb.Bun(f.db).QueryRowContext(ctx, `SELECT metadata->>'gauntlet:heartbeat' FROM river_job
			WHERE args->>'run_id' = ? AND state = 'running' ORDER BY id LIMIT 1`, id).Scan(&beat); err != nil {
			t.Fatal(err)
		}
		if beat != nil && *beat != first {
			first = *beat
			renewals++
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	info := f.wait(t, 2*time.Minute)
	if info.Status != runs.StatusCompleted || info.DoneTests != info.TotalTests {
		t.Fatalf("run = %+v; want it completed", info)
	}
	var again int
	if err := sqldb.Bun(f.db).QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE args->>'run_id' = ? AND attempt > 1`, id).Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again > 0 {
		t.Errorf("%d jobs executed again, although their process was alive", again)
	}
}
