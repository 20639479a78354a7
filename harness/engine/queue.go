package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// Queue is how a run's tests leave the process that started the run: a
// job queue in the database (harness/engine/riverexec) that worker
// processes, on this machine or others, take jobs from and hand to
// Engine.Work. With Options.Queue set, Start enqueues every sample of a
// new run in the transaction that creates it, and the run then follows
// its progress in the database (the results and counters the workers
// store) instead of executing the tests itself. Without one (the
// default), the engine executes its runs in process.
type Queue interface {
	// Enqueue adds jobs inside tx, the transaction that creates their
	// run: they exist if and only if the run does.
	Enqueue(ctx context.Context, tx bun.Tx, jobs []QueuedJob) error
	// Cancel cancels the run's jobs that no worker has finished: those
	// waiting at once, and the tests of those being executed (a test
	// that finished before is still stored, one cancelled in flight
	// stores nothing). The jobs being executed end soon after; State
	// says when none is open.
	Cancel(ctx context.Context, runID string) error
	// State says how many of the run's jobs may still store a result and
	// why the others that stored none ended (see QueueState).
	State(ctx context.Context, runID string) (QueueState, error)
}

// QueueState is where a run's jobs stand in the queue.
type QueueState struct {
	// Open counts the jobs that may still store a result: waiting,
	// running, or to be tried again.
	Open int
	// Errors are the last errors of the jobs the queue gave up (after
	// their last attempt) or cancelled, the most frequent first, each
	// with its count; at most a few.
	Errors []JobError
}

// JobError is an error some of a run's jobs ended with.
type JobError struct {
	Error string
	Jobs  int
}

// QueuedJob names one sample of a run: the run's stored definitions give
// the rest. Schema is the runs schema version the run was created with
// (runs.SchemaVersion): an older worker refuses the job.
type QueuedJob struct {
	RunID  string `json:"run_id"`
	TestID string `json:"test_id"`
	Repeat int    `json:"repeat"`
	Schema int    `json:"schema"`
	// Domain and Level are the test's, for the run's live status (the
	// domain and level of the test started last, see QueueCurrent);
	// a worker reads the test from the run's definitions.
	Domain string `json:"domain,omitempty"`
	Level  int    `json:"level,omitempty"`
	// Local: only the process that started the run executes the job (the
	// run evaluates an agent, whose knowledge-base files and tools are
	// that process's), never a worker.
	Local bool `json:"local,omitempty"`
}

// enqueuePage is how many jobs go to the queue in one statement.
const enqueuePage = 1000

// followPoll is how often a queued run reads its progress.
const followPoll = 200 * time.Millisecond

// stallCheck is how often a queued run asks the queue whether jobs are
// still open while results are missing.
const stallCheck = 2 * time.Second

// gapWindow is how long a result row id below the highest one read may
// still appear: row ids are taken when a worker inserts a result and
// become visible when it commits, so a later id can be read first.
const gapWindow = 3 * time.Second

// cursor follows a run's stored results by row id, reading each once
// although ids become visible out of order (gapWindow).
type cursor struct {
	floor   int64              // every id at or below is read or never will be
	seen    map[int64]struct{} // ids above floor read already
	highest int64
	marks   []mark
}

type mark struct {
	at      time.Time
	highest int64
}

// follow is a queued run's execution in the process that started it: it
// reads the run's progress from the database until every sample has a
// result or the run is stopped. Workers execute the tests.
func (r *run) follow() {
	defer close(r.done_)
	cur := &cursor{seen: map[int64]struct{}{}}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	// The jobs start in plan order: the first is the first cell's, until
	// the queue says which started last.
	r.mu.Lock()
	if r.currentDomain == "" {
		r.currentDomain, r.currentLevel = r.first.domain, r.first.level
	}
	r.mu.Unlock()
	failing := 0
	checked := time.Now()
	for {
		select {
		case <-r.ctx.Done():
			r.drain(cur)
		case <-tick.C:
			r.pollCurrent()
			if err := r.poll(cur); err != nil {
				failing++
				if failing == 1 || failing%25 == 0 {
					r.e.log.Warn("read the run's progress", slog.String("run", r.info.RunID), slog.Int("attempts", failing), slog.Any("error", err))
				}
				continue
			}
			failing = 0
			r.mu.Lock()
			done := r.total.done >= r.info.TotalTests
			r.mu.Unlock()
			if !done {
				if time.Since(checked) >= stallCheck {
					checked = time.Now()
					r.checkStall(cur)
				}
				continue
			}
		}
		break
	}
	r.fenced = cur
	r.finish()
}

// checkStall ends a run whose jobs are all final while results are
// missing: the queue gave some up after their last attempt (or they were
// cancelled), and the run would otherwise wait for them forever. The run
// stops with an error naming how many tests were lost and the errors
// their jobs ended with.
func (r *run) checkStall(cur *cursor) {
	st, err := r.e.opts.Queue.State(r.ctx, r.info.RunID)
	if err != nil {
		if r.ctx.Err() == nil {
			r.e.log.Warn("read the run's jobs", slog.String("run", r.info.RunID), slog.Any("error", err))
		}
		return
	}
	if st.Open > 0 {
		return
	}
	// Every job is final, so every result a job stored is committed: the
	// counters read now are the run's last.
	if err := r.poll(cur); err != nil {
		return
	}
	r.mu.Lock()
	lost := r.info.TotalTests - r.total.done
	r.mu.Unlock()
	if lost <= 0 {
		return
	}
	why := fmt.Sprintf("%d of %d tests were lost: their jobs ended without a result", lost, r.info.TotalTests)
	if len(st.Errors) > 0 {
		parts := make([]string, len(st.Errors))
		for i, e := range st.Errors {
			parts[i] = fmt.Sprintf("%q (%d jobs)", e.Error, e.Jobs)
		}
		why += ", last errors: " + strings.Join(parts, "; ")
	}
	r.e.log.Error("run stalled", slog.String("run", r.info.RunID), slog.String("error", why))
	r.stopWith(runs.StatusStopped, why)
}

// poll reads the run's new results (logged and reported as the writer
// does for a run executed here) and its cells' counters.
func (r *run) poll(cur *cursor) error {
	ctx := r.ctx
	if r.ctx.Err() != nil {
		ctx = context.Background() // the last poll, after a stop
	}
	after := cur.floor
	for {
		page, err := r.e.opts.Runs.ResultsAfter(ctx, r.info.RunID, after, 1000)
		if err != nil {
			return err
		}
		for i := range page {
			s := &page[i]
			if _, ok := cur.seen[s.ID]; ok {
				continue
			}
			cur.seen[s.ID] = struct{}{}
			cur.highest = max(cur.highest, s.ID)
			r.report(&s.Result, nil)
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].ID
		if len(cur.seen) > 100000 {
			break // the rest on the next poll
		}
	}
	now := time.Now()
	cur.marks = append(cur.marks, mark{now, cur.highest})
	for len(cur.marks) > 0 && now.Sub(cur.marks[0].at) > gapWindow {
		cur.floor = max(cur.floor, cur.marks[0].highest)
		cur.marks = cur.marks[1:]
	}
	for id := range cur.seen {
		if id <= cur.floor {
			delete(cur.seen, id)
		}
	}
	return r.pollCells(ctx)
}

// pollCells copies the cells' and the run's stored counters into the
// live state, and reports each cell that became final.
func (r *run) pollCells(ctx context.Context) error {
	m, err := r.e.opts.Runs.Matrix(ctx, r.info.RunID)
	if err != nil {
		return err
	}
	info, err := r.e.opts.Runs.Run(ctx, r.info.RunID)
	if err != nil {
		return err
	}
	var settled []*cell
	r.mu.Lock()
	var total counts
	total.scoreSum = r.total.scoreSum
	for _, c := range r.cells {
		s, ok := m[c.domain][strconv.Itoa(c.level)]
		if !ok {
			continue
		}
		c.done, c.passed, c.failed, c.errors = s.Done, s.Passed, s.Failed, s.Errors
		c.ret = runs.TallyOf(s.Retrieval)
		c.spend = spendOfCell(s)
		if s.Done > 0 && c.first.IsZero() {
			c.first = time.Now()
		}
		if c.status == runs.CellPending && s.Done > 0 {
			c.status = runs.CellRunning
		}
		switch s.Status {
		case runs.CellPassed, runs.CellFailed, runs.CellError:
			if c.status != s.Status {
				c.status, c.stderr, c.ci95 = s.Status, s.StdErr, s.CI95
				c.lat = cellLatency{Latency: runs.Latency{P50MS: s.LatencyP50MS, P95MS: s.LatencyP95MS, TTFTP50MS: s.TTFTP50MS}}
				c.scoreSum = 0
				if s.Score != nil {
					c.scoreSum = *s.Score * float64(c.scored())
				}
				c.last = time.Now()
				settled = append(settled, c)
			}
		}
		total.done += c.done
		total.passed += c.passed
		total.failed += c.failed
		total.errors += c.errors
	}
	total.spend = spendOfRun(info)
	r.total = total
	r.tokens = info.TotalTokens
	r.info.CacheHits = info.CacheHits // the workers' hits
	// A worker ended the run (the database kept refusing its results),
	// or another process did: the run stops with the stored status and
	// error.
	elsewhere := info.Status != runs.StatusRunning && !r.ending && r.endStatus == ""
	r.mu.Unlock()
	r.checkBudget()
	if elsewhere {
		r.e.log.Warn("the run was ended by another process", slog.String("run", r.info.RunID),
			slog.String("status", info.Status), slog.String("error", info.Error))
		r.stopWith(info.Status, info.Error)
	}
	for _, c := range settled {
		st := c.state()
		r.logf(c.domain, c.level, "level %s: %s, %d passed, %d failed, %d errors of %d",
			st.Status, scoreText(st.Score), st.Passed, st.Failed, st.Errors, st.Tests)
		r.emit(Event{Kind: EventCellFinished, Domain: c.domain, Level: c.level, Cell: &st})
	}
	return nil
}

// fence ends a queued run's intake before its end is recorded: the run's
// status is set in the database (no worker's result commits after it),
// its jobs not yet done are cancelled, and the results and counters
// stored until then are read, so the run's final totals are exactly what
// is stored. end calls it, with r.endMu held.
func (r *run) fence() {
	ctx := context.Background()
	r.mu.Lock()
	status, why := r.endStatus, r.endError
	r.mu.Unlock()
	if status == "" {
		status = runs.StatusCompleted
	}
	if _, err := r.e.opts.Runs.FenceRun(ctx, r.info.RunID, status, why); err != nil {
		r.e.log.Error("end the run's intake of results", slog.String("run", r.info.RunID), slog.Any("error", err))
	}
	if status != runs.StatusCompleted {
		if err := r.e.opts.Queue.Cancel(ctx, r.info.RunID); err != nil {
			r.e.log.Error("cancel the run's jobs", slog.String("run", r.info.RunID), slog.Any("error", err))
		}
	}
	cur := r.fenced
	if cur == nil {
		cur = &cursor{seen: map[int64]struct{}{}, floor: 1<<63 - 1} // Reset: counters only
	}
	if err := r.poll(cur); err != nil {
		r.e.log.Error("read the run's progress", slog.String("run", r.info.RunID), slog.Any("error", err))
	}
	if err := r.leftSamples(ctx); err != nil {
		r.e.log.Error("read the run's samples", slog.String("run", r.info.RunID), slog.Any("error", err))
	}
	// The scores of the cells left unfinished and of the run, which the
	// counters do not hold.
	sums, err := r.e.opts.Runs.ScoreSums(ctx, r.info.RunID)
	if err != nil {
		r.e.log.Error("read the run's scores", slog.String("run", r.info.RunID), slog.Any("error", err))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total.scoreSum = 0
	for _, c := range r.cells {
		if c.status == runs.CellPending || c.status == runs.CellRunning {
			c.scoreSum = sums[c.domain][c.level]
		}
		r.total.scoreSum += sums[c.domain][c.level]
	}
}

// workRun is what a worker keeps of a run whose jobs it executes.
type workRun struct {
	run  *run
	plan *planned
	hash string
	// tests reads the run's tests, results stores its results, each
	// for the jobs that reach it at once (coalesce).
	tests   *coalescer[string, harness.Test]
	results *coalescer[runs.Result, bool]
	// budget is the run's budget as this worker sees it (queuebudget.go);
	// nil when the run has none.
	budget *workBudget

	mu        sync.Mutex
	stoppedAt time.Time // when Work first found the run stopped here
	// storeFailures counts the batches of results in a row that lost
	// some (record); ended is set once the worker ended the run for it.
	storeFailures int
	ended         bool
}

// workPause is how long a worker gives back the jobs of a run it stopped
// (its model endpoint found unreachable) before it tries them again.
const workPause = time.Minute

// stopped returns why this worker stopped its copy of the run (its
// model endpoint was found unreachable, tests in a row), nil while it
// runs: the job then goes back to the queue with that error, for another
// worker or a later attempt.
func (w *workRun) stopped() error {
	if w.run.ctx.Err() == nil {
		return nil
	}
	w.mu.Lock()
	if w.stoppedAt.IsZero() {
		w.stoppedAt = time.Now()
	}
	w.mu.Unlock()
	w.run.mu.Lock()
	why := w.run.endError
	w.run.mu.Unlock()
	if why == "" {
		why = "the run was stopped on this worker"
	}
	return fmt.Errorf("%s (on this worker)", why)
}

// workRuns caches the runs a worker executes jobs of, by id.
type workRuns struct {
	mu   sync.Mutex
	runs map[string]*workRun
}

// maxWorkRuns bounds the runs a worker keeps.
const maxWorkRuns = 16

// Work executes one queued job: the test's sample is asked and scored as
// in a run executed in process, with this engine's model client,
// registry and agents, and its result stored once with the counters of
// its cell and run (runs.Store.RecordResult). A result already stored
// (the job ran before, on a worker that was lost) is not stored again. A
// result the database refuses is handled as in a run executed in process:
// tried again alone, then replaced by an error result saying why, and
// when even that is refused the error wraps ErrResultLost (the queue
// gives the job up); batches in a row that lose results stop the run.
// A test whose request was not sent because the run's budget is spent
// (see queuebudget.go) stores nothing: the error wraps ErrBudgetSpent.
// It returns runs.ErrRunEnded when the run no longer takes results,
// ctx.Err() when ctx ended before the test did (nothing stored; a test
// that ignores the cancellation is left behind, see abandonAfter), and
// another error, for the queue to retry the job later, when the job
// could not be prepared.
func (e *Engine) Work(ctx context.Context, q QueuedJob) error {
	w, err := e.workRun(ctx, q.RunID)
	if err != nil {
		return err
	}
	if w.run.info.Status != runs.StatusRunning || w.isEnded() {
		return runs.ErrRunEnded
	}
	if err := w.stopped(); err != nil {
		return err
	}
	if w.budget.spentNow() {
		return w.budget.refusal()
	}
	t, err := w.tests.do(ctx, q.TestID)
	if err != nil {
		return fmt.Errorf("read test %s of run %s: %w", q.TestID, q.RunID, err)
	}
	c := w.plan.cellOf[cellKey{t.DomainID, t.Level}]
	if c == nil {
		return fmt.Errorf("run %s has no cell for test %s: %w", q.RunID, q.TestID, harness.ErrNotFound)
	}
	j := w.plan.job(t, c)
	j.repeat = q.Repeat
	w.budget.begin()
	res, finished := w.runTest(ctx, &j)
	if !finished {
		w.budget.end(0, false, false)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.run.ctx.Err(); err != nil || w.budget == nil {
			return err
		}
		return w.budget.refusal() // a request not sent: the budget is spent
	}
	cost := runs.SpendOf(&res).CostUSD
	w.budget.finished(cost)
	inserted, err := w.results.do(context.WithoutCancel(ctx), res)
	w.budget.end(cost, true, err == nil && inserted)
	w.run.flushCache()
	return err
}

// batchJobs is the most jobs of one run whose tests a worker reads in one
// query, or whose results it stores in one transaction.
const batchJobs = 100

// coalesce sets up the worker's batched reads of the run's tests and
// writes of its results: the jobs that reach either at once share one
// query or one transaction (see coalescer).
func (w *workRun) coalesce(rs *runs.Store) {
	w.tests = &coalescer[string, harness.Test]{max: batchJobs, fn: func(ctx context.Context, ids []string) ([]harness.Test, []error) {
		out, errs := make([]harness.Test, len(ids)), make([]error, len(ids))
		tests, err := rs.DefinitionTests(ctx, w.hash, ids)
		for i, id := range ids {
			t, ok := tests[id]
			switch {
			case err != nil:
				errs[i] = err
			case !ok:
				errs[i] = fmt.Errorf("run %s has no test %s: %w", w.run.info.RunID, id, harness.ErrNotFound)
			}
			out[i] = t
		}
		return out, errs
	}}
	w.results = &coalescer[runs.Result, bool]{max: batchJobs, fn: func(ctx context.Context, results []runs.Result) ([]bool, []error) {
		return w.record(ctx, rs, results)
	}}
}

// settleSamples is the final state of a cell whose samples are all
// stored, computed from them as a run executed in process computes it.
func settleSamples(plan *cell, samples []runs.Sample) runs.Cell {
	c := &cell{domain: plan.domain, level: plan.level, threshold: plan.threshold, tests: plan.tests}
	for _, s := range samples {
		c.add(&runs.Result{TestID: s.TestID, Repeat: s.Repeat, Score: s.Score, Status: s.Status,
			DurationMS: s.DurationMS, TTFTMS: s.TTFTMS})
		if t, err := time.Parse(harness.TimeLayout, s.CreatedAt); err == nil {
			if c.first.IsZero() || t.Before(c.first) {
				c.first = t
			}
			if t.After(c.last) {
				c.last = t
			}
		}
	}
	c.settle()
	return c.state()
}

// workRun returns the worker's state of a run, made on first use from
// the run's stored info and definitions.
func (e *Engine) workRun(ctx context.Context, runID string) (*workRun, error) {
	e.work.mu.Lock()
	defer e.work.mu.Unlock()
	if w, ok := e.work.runs[runID]; ok {
		w.mu.Lock()
		retry := !w.stoppedAt.IsZero() && time.Since(w.stoppedAt) >= workPause
		w.mu.Unlock()
		if !retry {
			return w, nil
		}
		delete(e.work.runs, runID) // stopped a while ago: try the endpoint again
	}
	info, err := e.opts.Runs.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	cfg := info.Config
	if cfg == nil || cfg.DefinitionsHash == "" {
		return nil, fmt.Errorf("run %s stored no definitions: %w", runID, harness.ErrInvalid)
	}
	outline, sizes, err := e.opts.Runs.DefinitionsOutline(ctx, cfg.DefinitionsHash)
	if err != nil {
		return nil, fmt.Errorf("read the definitions of run %s: %w", runID, err)
	}
	p, err := plan(outline, sizes, info.Domains, cfg.Repeats)
	if err != nil {
		return nil, err
	}
	params, err := harness.ParamsFromMap(cfg.Params)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	timeout := time.Duration(cfg.TimeoutS * float64(time.Second))
	if timeout <= 0 {
		timeout = e.opts.Timeout
	}
	r := e.newRun(context.Background(), info, time.Now(), p.cells, nil, timeout, cfg.Retries)
	r.params = params
	r.stream = cfg.Stream
	r.simulator = cfg.SimulatorModel
	if cfg.Cache {
		r.cache = &responseCache{} // shared through the database
	}
	if cfg.Target != nil {
		if r.box, err = e.targetClient(*cfg.Target); err != nil {
			return nil, fmt.Errorf("run %s: %w", runID, err)
		}
	}
	if cfg.AgentID != "" {
		if e.opts.Agents == nil {
			return nil, fmt.Errorf("run %s evaluates agent %s, and this worker has no agents", runID, cfg.AgentID)
		}
		if r.agent, err = e.opts.Agents.EvalTarget(ctx, cfg.AgentID); err != nil {
			return nil, fmt.Errorf("run %s: agent %s: %w", runID, cfg.AgentID, err)
		}
	}
	if e.work.runs == nil || len(e.work.runs) >= maxWorkRuns {
		e.work.runs = map[string]*workRun{}
	}
	w := &workRun{run: r, plan: p, hash: cfg.DefinitionsHash, budget: e.newWorkBudget(info)}
	if w.budget != nil {
		r.budget.max = cfg.MaxCostUSD
		r.budget.check = w.budget.over
	}
	w.coalesce(e.opts.Runs)
	e.work.runs[runID] = w
	return w, nil
}
