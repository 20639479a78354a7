package riverexec_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// TestQueuedRunKeepsCounters runs the example definitions as River jobs
// on PostgreSQL, worked by two queues at once (two workers' worth of
// concurrent transactions), some tests ending in error: the run's cells'
// counters are its results' counts by cell and status, and its totals
// from the cells those of its rows.
func TestQueuedRunKeepsCounters(t *testing.T) {
	if !dbtest.Postgres() {
		t.Skipf("River needs PostgreSQL (%s=postgres)", dbtest.EnvVar)
	}
	ctx := context.Background()
	url := dbtest.URL(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	defs := filepath.Join(t.TempDir(), "definitions")
	if err := os.CopyFS(defs, os.DirFS("../../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: defs, DB: db})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("catalog: %v %+v", err, res)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// Every third request fails: those tests end in error.
	var n atomic.Int64
	mock := llmtest.NewServer(llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
		if n.Add(1)%3 == 0 {
			return &llmtest.Reply{Status: 400, Content: "refused"}
		}
		return nil
	}})
	t.Cleanup(mock.Close)
	client, err := llm.New(llm.Options{BaseURL: mock.URL, Model: "test-model", Timeout: 5 * time.Second, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	open := func(server bool) *riverexec.Queue {
		q, err := riverexec.Open(ctx, riverexec.Options{URL: url, DB: db, Concurrency: 4, Server: server})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		return q
	}
	q := open(true)
	finished := make(chan runs.Info, 1)
	eng, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: client, Model: "test-model",
		Concurrency: 4, Queue: q, OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventRunFinished {
				finished <- *ev.Info
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: client, Model: "test-model",
		Concurrency: 4, Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Work(ctx, eng); err != nil {
		t.Fatal(err)
	}
	if err := open(false).Work(ctx, worker); err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, engine.StartRequest{Repeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	var info runs.Info
	select {
	case info = <-finished:
	case <-time.After(2 * time.Minute):
		t.Fatal("the queued run did not finish")
	}
	if info.RunID != id || info.DoneTests != info.TotalTests || info.Errors == 0 || info.Passed+info.Failed == 0 {
		t.Errorf("run = %+v; want every test done, some in error", info)
	}
	runstest.CheckCounters(t, db, id)
	for _, q := range []runs.ResultQuery{{}, {Status: runs.TestError}, {Status: runs.TestPassed}, {Domain: info.Domains[0]}} {
		p, err := rs.QueryResults(ctx, id, q)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		err = rs.EachResult(ctx, id, q, func(runs.Result) error { want++; return nil })
		if err != nil || p.Total != want {
			t.Errorf("%+v: total %d; %d results, %v", q, p.Total, want, err)
		}
	}
}
