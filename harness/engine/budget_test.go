package engine_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// testCost is what one test of budgetDefs costs: usageOf's 1,000 prompt
// and 300 completion tokens at $1,000 a million each.
const testCost = 1.3

// budgetDefs are n priced tests over a few cells.
func budgetDefs(n int) *defs {
	d := newDefs()
	for _, dom := range []string{"a", "b"} {
		for lvl := 1; lvl <= 2; lvl++ {
			d.sums(dom, lvl, n/4, 0)
		}
		d.domain(dom, "", true)
	}
	d.s.Pricing = &harness.Pricing{Models: map[string]harness.Price{"m1": {Input: 1000, Output: 1000}}}
	return d
}

// addWorker adds to a fixture whose runs are queued (PostgreSQL) a worker
// process of its own, with concurrency slots, working the fixture's
// queue against the fixture's model endpoint; it returns the slots added
// (0 on SQLite, where runs are executed in process).
func addWorker(t *testing.T, f *fixture, concurrency int) int {
	t.Helper()
	url, ok := databases.Load(f.dir)
	if !dbtest.Postgres() || !ok {
		return 0
	}
	ctx := context.Background()
	q, err := riverexec.Open(ctx, riverexec.Options{URL: url.(string), DB: f.db, Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	w, err := engine.New(ctx, engine.Options{Definitions: f.cat, Runs: f.runs, Client: f.client, Model: "test-model",
		Timeout: 5 * time.Second, Retries: 2, Concurrency: concurrency, Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Work(ctx, w); err != nil {
		t.Fatal(err)
	}
	return concurrency
}

// TestBudgetBoundsTheSpendOfWorkers: a run with many tests in flight at
// once (on PostgreSQL a queued run, worked by the server's own worker and
// another worker process) and a budget a few tests reach: each worker
// stops sending requests once the recorded spend, with what it spent and
// has not stored yet, reaches the budget, so the run's spend, recorded
// and as the endpoint counts requests, passes the budget by at most the
// tests that were in flight. The run ends stopped, its error naming the
// budget, its tests not done left not done; its config records the
// budget. Resumed with a higher budget, it goes on and stops again at
// that one (the config records it); resumed without one, it has none and
// completes.
func TestBudgetBoundsTheSpendOfWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tests, slots = 240, 8
	f := newFixture(t, fixtureOpts{snap: budgetDefs(tests).snap(), concurrency: slots,
		llm: llmtest.Options{Respond: usageOf}})
	inFlight := slots + addWorker(t, f, slots)
	const budget = 5.0 // reached by the fourth test
	bound := func(max float64) float64 { return max + float64(inFlight)*testCost }

	info, _ := f.wait(t, f.start(t, engine.StartRequest{Model: "m1", MaxCostUSD: budget}))
	sent := f.mock.Stats().ChatCompletions
	t.Logf("budget $%v: %d tests done, $%v recorded, %d requests sent, %d tests in flight at most",
		budget, info.DoneTests, *info.CostUSD, sent, inFlight)
	if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "budget") {
		t.Fatalf("run: %s %q; want stopped, the error naming the budget", info.Status, info.Error)
	}
	if info.CostUSD == nil || *info.CostUSD < budget || *info.CostUSD > bound(budget) {
		t.Errorf("recorded cost $%v; want from the budget $%v to $%v (%d tests in flight at $%v)",
			costOf(info), budget, bound(budget), inFlight, testCost)
	}
	if spent := float64(sent) * testCost; spent > bound(budget) {
		t.Errorf("%d requests sent ($%v); want at most $%v", sent, spent, bound(budget))
	}
	if info.DoneTests >= info.TotalTests || math.Abs(*info.CostUSD-float64(info.DoneTests)*testCost) > 1e-6 {
		t.Errorf("run %d/%d tests done, $%v; want some left not done, each done one's cost recorded", info.DoneTests, info.TotalTests, *info.CostUSD)
	}
	stored, err := f.runs.Run(ctx, info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Config.MaxCostUSD != budget || stored.Errors != 0 {
		t.Errorf("stored config's max_cost_usd %v, %d errors; want %v and none", stored.Config.MaxCostUSD, stored.Errors, budget)
	}

	// Resumed with a higher budget: it goes on, and stops at that one.
	higher := *info.CostUSD + 10
	if err := f.eng.ResumeWith(ctx, info.RunID, engine.ResumeOptions{MaxCostUSD: higher}); err != nil {
		t.Fatal(err)
	}
	resumed, _ := f.wait(t, info.RunID)
	if resumed.Status != runs.StatusStopped || !strings.Contains(resumed.Error, "budget") || resumed.CostUSD == nil ||
		*resumed.CostUSD < higher || *resumed.CostUSD > bound(higher) || resumed.DoneTests <= info.DoneTests {
		t.Errorf("resumed with $%v: %s %q, %d tests, $%v; want stopped at the new budget (at most $%v)",
			higher, resumed.Status, resumed.Error, resumed.DoneTests, costOf(resumed), bound(higher))
	}
	if resumed.Config == nil || resumed.Config.MaxCostUSD != higher {
		t.Errorf("resumed run's config %+v; want max_cost_usd %v", resumed.Config, higher)
	}

	// Resumed without a budget: it has none, and completes.
	if err := f.eng.Resume(ctx, info.RunID); err != nil {
		t.Fatal(err)
	}
	last, _ := f.wait(t, info.RunID)
	if last.Status != runs.StatusCompleted || last.DoneTests != last.TotalTests ||
		math.Abs(*last.CostUSD-float64(tests)*testCost) > 1e-6 || last.Config.MaxCostUSD != 0 {
		t.Errorf("resumed without a budget: %s, %d/%d tests, $%v, config budget %v; want completed, every test, no budget",
			last.Status, last.DoneTests, last.TotalTests, costOf(last), last.Config.MaxCostUSD)
	}
}

// costOf is a run's recorded cost, -1 for none.
func costOf(in runs.Info) float64 {
	if in.CostUSD == nil {
		return -1
	}
	return *in.CostUSD
}

// TestWorkersStopAtTheBudget: the jobs of a queued run with a budget are
// handed straight to two worker engines, several at once each, by a
// queue that never cancels them (the process following the run is not
// what stops them): each worker stops sending requests once the run's
// recorded spend, with what it spent and has not stored yet, reaches
// the budget, so the requests sent pass the budget by at most the tests
// in flight; the jobs left end with ErrBudgetSpent, storing nothing, and
// the run ends stopped, its error naming the budget.
func TestWorkersStopAtTheBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const tests, perWorker = 100, 4
	q := &inlineQueue{}
	f := newFixture(t, fixtureOpts{snap: budgetDefs(tests).snap(), concurrency: perWorker, anyDB: true, queue: q,
		llm: llmtest.Options{Respond: usageOf}})
	worker, err := engine.New(ctx, engine.Options{Definitions: f.cat, Runs: f.runs, Client: f.client, Model: "test-model",
		Timeout: 5 * time.Second, Retries: 2, Concurrency: perWorker, Worker: true})
	if err != nil {
		t.Fatal(err)
	}
	const budget = 5.0 // reached by the fourth test
	id := f.start(t, engine.StartRequest{Model: "m1", MaxCostUSD: budget})
	var jobs []engine.QueuedJob
	for deadline := time.Now().Add(time.Minute); len(jobs) < tests; {
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs enqueued; want %d", len(jobs), tests)
		}
		time.Sleep(10 * time.Millisecond)
		q.mu.Lock()
		jobs = append(jobs, q.jobs...)
		q.jobs = nil
		q.mu.Unlock()
	}
	// The test's queue hands jobs out as they are enqueued, inside the
	// transaction that records the run's plan, where a real queue makes
	// them visible when it commits: wait for the plan, which a worker
	// reads first.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if info, err := f.runs.Run(ctx, id); err == nil && info.Config != nil && info.Config.DefinitionsHash != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run's plan was not recorded")
		}
	}
	next := make(chan engine.QueuedJob, len(jobs))
	for _, j := range jobs {
		next <- j
	}
	close(next)
	var refused atomic.Int64
	var wg sync.WaitGroup
	for _, eng := range []*engine.Engine{f.eng, worker} {
		for range perWorker {
			wg.Go(func() {
				for j := range next {
					switch err := eng.Work(ctx, j); {
					case errors.Is(err, engine.ErrBudgetSpent):
						refused.Add(1)
					case err != nil:
						t.Errorf("work %s: %v", j.TestID, err)
					}
					q.mu.Lock()
					q.open--
					q.mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	info, _ := f.wait(t, id)
	sent := f.mock.Stats().ChatCompletions
	inFlight := 2 * perWorker
	bound := budget + float64(inFlight)*testCost
	t.Logf("budget $%v: %d requests sent, %d jobs refused, %d tests done, $%v recorded", budget, sent, refused.Load(), info.DoneTests, costOf(info))
	if spent := float64(sent) * testCost; spent > bound || costOf(info) > bound || costOf(info) < budget {
		t.Errorf("%d requests sent ($%v), $%v recorded; want from $%v to $%v (%d tests in flight at $%v)",
			sent, spent, costOf(info), budget, bound, inFlight, testCost)
	}
	if int(refused.Load())+info.DoneTests != tests || int64(info.DoneTests) != sent {
		t.Errorf("%d jobs refused, %d tests done, %d requests; want every job refused or done, one request a test done",
			refused.Load(), info.DoneTests, sent)
	}
	if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "budget") {
		t.Errorf("run: %s %q; want stopped, the error naming the budget", info.Status, info.Error)
	}
}
