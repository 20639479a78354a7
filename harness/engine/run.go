package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
	httptarget "github.com/gauntlet-eval/gauntlet/harness/target"
)

// counts are the finished tests of a cell or a run: done = passed +
// failed + errors. Only passed and failed tests are scored: an error (the
// model call, a plugin or the evaluator failed) says nothing about the
// model, so it never weighs on a score.
type counts struct {
	done, passed, failed, errors int
	scoreSum                     float64    // over the scored tests
	spend                        runs.Spend // cost and tokens, every result's
}

func (c *counts) add(res *runs.Result) {
	c.done++
	c.spend.Add(runs.SpendOf(res))
	switch res.Status {
	case runs.TestPassed:
		c.passed++
		c.scoreSum += res.Score
	case runs.TestFailed:
		c.failed++
		c.scoreSum += res.Score
	default:
		c.errors++
	}
}

func (c *counts) scored() int { return c.passed + c.failed }

// score is the mean over the scored tests, nil when none was scored.
func (c *counts) score() *float64 {
	if n := c.scored(); n > 0 {
		s := c.scoreSum / float64(n)
		return &s
	}
	return nil
}

// cell is the live state of one domain × level cell. Guarded by run.mu.
type cell struct {
	counts
	ret       runs.RetrievalTally // the retrieval figures of its scored results
	samples   []stats.Sample      // every finished sample, for the cell's interval
	stderr    *float64            // set by settle and leave when a sample was scored
	ci95      *stats.Interval
	lat       cellLatency // durations until measured, then the figures
	domain    string
	level     int
	threshold float64
	tests     int
	status    string
	first     time.Time
	last      time.Time
}

// add counts a finished sample of the cell.
func (c *cell) add(res *runs.Result) {
	c.counts.add(res)
	c.ret.Add(res)
	c.samples = append(c.samples, res.Sample())
	c.lat.add(res)
}

// measure computes the uncertainty of the cell's score from its samples,
// once, when the cell's status becomes final: none when nothing was
// scored. The bootstrap's seed is fixed, so a cell's interval depends on
// its results only. A final cell takes no more samples, so they are let
// go: a long run holds the samples of its unfinished cells only.
func (c *cell) measure() {
	c.stderr, c.ci95 = nil, nil
	sum := stats.Cell(c.samples, stats.Options{Seed: 1})
	c.samples = nil
	c.lat.measure()
	if sum.Tests == 0 {
		return
	}
	se, ci := sum.StdErr, sum.CI95
	c.stderr, c.ci95 = &se, &ci
}

func (c *cell) state() runs.Cell {
	out := runs.Cell{Status: c.status, Tests: c.tests, Done: c.done, Passed: c.passed, Failed: c.failed, Errors: c.errors,
		StdErr: c.stderr, CI95: c.ci95, Retrieval: c.ret.Cell()}
	setSpend(c.spend, &out.CostUSD, &out.JudgeCostUSD, &out.Tokens)
	out.LatencyP50MS, out.LatencyP95MS, out.TTFTP50MS = c.lat.P50MS, c.lat.P95MS, c.lat.TTFTP50MS
	switch c.status {
	case runs.CellPassed, runs.CellFailed, runs.CellError, runs.CellPartial:
		out.Score = c.score()
		if c.done > 0 && !c.first.IsZero() {
			ms := c.last.Sub(c.first).Milliseconds()
			out.DurationMS = &ms
		}
	}
	return out
}

// settle gives a cell whose tests all finished its final status: error
// when every one ended in error, else passed when the mean score of the
// scored tests reaches the threshold, failed otherwise.
func (c *cell) settle() {
	c.measure()
	switch s := c.score(); {
	case s == nil:
		c.status = runs.CellError
	case *s >= c.threshold:
		c.status = runs.CellPassed
	default:
		c.status = runs.CellFailed
	}
}

// leave gives a cell the run leaves before all its tests finished its
// final status: partial when some finished, skipped when none did.
func (c *cell) leave() {
	c.measure()
	if c.done == 0 {
		c.status = runs.CellSkipped
	} else {
		c.status = runs.CellPartial
	}
}

type cellKey struct {
	domain string
	level  int
}

// Thresholds of the run's safety stops.
const (
	// unreachableStop is how many tests in a row must find the endpoint
	// unreachable, with none answered, before the run stops.
	unreachableStop = 10
	// storeAttempts is how often a result that could not be stored with
	// its batch is tried alone.
	storeAttempts = 3
	// storeStop is how many batches in a row may lose a result to the
	// database before the run stops.
	storeStop = 3
)

// run is one evaluation in progress.
type run struct {
	budget  budget // the run's spending limit, when it has one
	e       *Engine
	info    runs.Info
	started time.Time
	priorMS int64    // duration of the earlier sessions of a resumed run
	produce producer // the run's jobs, made as the workers take them
	ctx     context.Context
	cancel  context.CancelFunc
	done_   chan struct{}
	logFile *os.File
	logBuf  *bufio.Writer        // buffers logFile; flushed after each batch and at the end
	timeout time.Duration        // bounds each model request
	retries int                  // retries of a failed model request
	stream  bool                 // answers are asked for as streams
	params  harness.Params       // the run's sampling parameters, over each level's
	agent   *harness.AgentTarget // the agent under test; nil: the bare model
	box     *httptarget.Client   // the black-box target under test; nil: none
	// simulator is the model reference that plays simulated users of
	// tests that name none; "": the run's model.
	simulator string
	cache     *responseCache // the response cache's state; nil when the run does not use it
	first     cellKey        // the first cell: run-level log lines name it
	// stopWatch stops the watch of the model's rate limits (ratelimit.go);
	// nil until the run executes.
	stopWatch func()

	mu            sync.Mutex
	cells         []*cell
	cellOf        map[cellKey]*cell
	total         counts
	tokens        int
	currentDomain string
	currentLevel  int
	endStatus     string // set by stop: stopped or aborted
	endError      string // why the run was stopped, when not by a user
	logClosed     bool
	unreachable   int  // tests in a row that found the endpoint unreachable
	answered      bool // the endpoint answered at least once
	storeFailures int  // batches in a row that lost a result
	reported      int  // tests finished and reported: the Done of events
	ending        bool // every job is done: a stop no longer changes the status
	ctxStopped    bool // the caller's context stopped the run

	// queued: the run's tests are jobs of Options.Queue, which workers
	// execute; the run follows them (follow). fenced is its cursor of
	// results once it stopped following.
	queued    bool
	fenced    *cursor
	currentAt time.Time // when the queue was last asked for the job started last

	endMu sync.Mutex // serialises end

	// prepare, when set, prepares the run before it executes (a run
	// Start accepted: see prepare.go); preparing is true until it is
	// done (guarded by mu). startedOnce sends EventRunStarted once.
	prepare     func(ctx context.Context) error
	preparing   bool
	startedOnce sync.Once

	// untie stops the caller's context from stopping the run (launch).
	untie func() bool
	// own is the subscriber of StartRequest.OnEvent, nil without one;
	// delivered is closed when it has handled the run's last event (at
	// once without one). Guarded by e.eventMu: announced, set when
	// EventRunFinished is sent, after which the run sends nothing.
	own       *subscriber
	delivered chan struct{}
	announced bool
	// over is closed once the run's end is recorded and announced; final
	// is the run's info then.
	over     chan struct{}
	overOnce sync.Once
	final    runs.Info
}

func (r *run) stop(status string) { r.stopWith(status, "") }

// stopWith cancels the run; the first stop decides its final status and
// error.
func (r *run) stopWith(status, why string) {
	r.mu.Lock()
	if r.endStatus == "" {
		r.endStatus, r.endError = status, why
	}
	r.mu.Unlock()
	r.cancel()
}

// launch ties the run to the caller's context (cancelling it stops the
// run, as Stop does) and starts executing it.
func (r *run) launch(ctx context.Context) {
	r.untie = context.AfterFunc(ctx, func() {
		r.mu.Lock()
		if r.endStatus == "" && !r.ending {
			r.endStatus, r.ctxStopped = runs.StatusStopped, true
		}
		r.mu.Unlock()
		r.cancel()
	})
	r.e.running.Add(1)
	go func() {
		defer r.e.running.Done()
		if r.runPrepare() {
			r.execute()
		}
	}()
}

// emit sends an event of the run.
func (r *run) emit(ev Event) { r.e.emit(r, ev) }

// announce sends the run's last event, EventRunFinished with its final
// info, once, and lets Run return.
func (r *run) announce(info runs.Info) {
	r.overOnce.Do(func() {
		if r.prepare != nil {
			r.sendStarted() // a run that ended while it was being prepared
		}
		r.final = info
		r.emit(Event{Kind: EventRunFinished, Info: &info})
		close(r.over)
	})
}

// logRun writes a run-level line. It names the run's first cell, so that
// every line has the form [<domain>][L<level>] text with a real domain
// and level.
func (r *run) logRun(format string, args ...any) {
	r.logf(r.first.domain, r.first.level, format, args...)
}

// logf writes a line "[<domain>][L<level>] text" to the poll queue and
// the run's log file.
func (r *run) logf(domain string, level int, format string, args ...any) {
	r.line("[" + domain + "][L" + strconv.Itoa(level) + "] " + fmt.Sprintf(format, args...))
}

func (r *run) line(s string) {
	if r.prepare != nil {
		r.sendStarted() // no event of a run comes before it
	}
	if r.write(s, false) {
		r.emit(Event{Kind: EventLog, Line: s})
	}
}

// write appends a line to the log file and the poll queue, unless the log
// is closed; last closes it after the line. Both happen under r.mu, so
// that no line of the run can follow its EVAL_COMPLETE.
func (r *run) write(s string, last bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.logClosed {
		return false
	}
	if r.logFile != nil {
		if r.logBuf == nil {
			r.logBuf = bufio.NewWriter(r.logFile)
		}
		r.logBuf.WriteString(time.Now().UTC().Format(time.RFC3339Nano))
		r.logBuf.WriteByte(' ')
		r.logBuf.WriteString(s)
		r.logBuf.WriteByte('\n')
	}
	r.e.logs.push(s)
	if last {
		r.logClosed = true
		if r.logBuf != nil {
			r.logBuf.Flush()
		}
		if r.logFile != nil {
			r.logFile.Close()
		}
	}
	return true
}

// finishLog sends EVAL_COMPLETE once and closes the log file.
func (r *run) finishLog() {
	if r.write(EvalComplete, true) {
		r.emit(Event{Kind: EventLog, Line: EvalComplete})
	}
}

// flushLog writes the buffered log lines to the run's log file.
func (r *run) flushLog() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.logClosed && r.logBuf != nil {
		r.logBuf.Flush()
	}
}

func (r *run) matrix() LiveMatrix {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := runs.Matrix{}
	for _, c := range r.cells {
		if m[c.domain] == nil {
			m[c.domain] = map[string]runs.Cell{}
		}
		m[c.domain][strconv.Itoa(c.level)] = c.state()
	}
	id, label := r.info.RunID, r.info.ModelName
	return LiveMatrix{Domains: m, RunID: &id, ModelName: &label, Status: runs.StatusRunning}
}

// execute runs every job with at most Concurrency in flight, in plan
// order, with no barrier between cells so a slow cell never idles the
// workers. One writer goroutine stores results as they come, in batches
// of whatever is waiting (group commit).
func (r *run) execute() {
	r.stopWatch = r.watchRateLimits()
	if r.queued {
		r.follow()
		return
	}
	defer close(r.done_)
	results := make(chan runs.Result, r.e.opts.Concurrency*2)
	written := make(chan struct{})
	go r.writer(results, written)

	sem := make(chan struct{}, r.e.opts.Concurrency)
	var wg sync.WaitGroup
	err := r.produce(r.ctx, func(j *job) bool {
		select {
		case sem <- struct{}{}:
		case <-r.ctx.Done():
			return false
		}
		if r.ctx.Err() != nil || r.budget.reached.Load() {
			<-sem
			return false
		}
		r.mu.Lock()
		if j.cell.status == runs.CellPending {
			j.cell.status = runs.CellRunning
			if j.cell.first.IsZero() {
				j.cell.first = time.Now()
			}
		}
		r.currentDomain, r.currentLevel = j.cell.domain, j.cell.level
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, finished := r.runTest(j)
			if finished {
				r.noteSpend(&res)
				results <- res
			}
		}()
		return true
	})
	if err != nil && r.ctx.Err() == nil {
		r.e.log.Error("read the run's tests", slog.String("run", r.info.RunID), slog.Any("error", err))
		r.stopWith(runs.StatusStopped, fmt.Sprintf("the run's tests could not be read: %v", err))
	}
	wg.Wait()
	close(results)
	<-written
	r.finish()
}

// commitWindow is how long the writer waits for more results after the
// first of a batch: at thousands of results a second, a batch of what
// arrives in 5 ms makes several times fewer commits (each a write of
// the database's log) than one of what happens to be waiting, at no
// cost a user sees.
const commitWindow = 5 * time.Millisecond

// writer stores results as they come, in batches of what arrives within
// commitWindow of the first, up to 256 (group commit): each batch's
// results and the cells they changed go to the store in one
// transaction, then are logged and reported. A batch the
// store refuses is stored again result by result, each with its cell in
// one transaction, so that one result that cannot be stored never takes
// the others with it; only stored results count, so the matrix's done
// always equals the results stored.
func (r *run) writer(in <-chan runs.Result, written chan<- struct{}) {
	defer close(written)
	batch := make([]runs.Result, 0, 256)
	window := time.NewTimer(0)
	<-window.C
	for res := range in {
		batch = append(batch[:0], res)
		window.Reset(commitWindow)
	more:
		for len(batch) < cap(batch) {
			select {
			case next, ok := <-in:
				if !ok {
					break more
				}
				batch = append(batch, next)
			case <-window.C:
				break more
			}
		}
		window.Stop()
		r.store(batch)
		r.flushCache()
		r.flushLog()
	}
	r.flushCache()
}

// store saves one batch and counts what was saved.
func (r *run) store(batch []runs.Result) {
	ctx := context.Background()
	undo := r.snapshot(batch)
	cells, settled := r.tally(batch)
	err := r.e.opts.Runs.SaveBatch(ctx, batch, cells)
	if err == nil {
		r.mu.Lock()
		r.storeFailures = 0
		r.mu.Unlock()
		for i := range batch {
			r.report(&batch[i], settled[i])
		}
		return
	}
	// The batch as a whole was refused: uncount it, then store and count
	// each result alone.
	undo()
	r.e.log.Warn("a batch of results could not be stored; storing them one by one",
		slog.String("run", r.info.RunID), slog.Int("results", len(batch)), slog.Any("error", err))
	lost := 0
	for i := range batch {
		res := &batch[i]
		settled, err := r.saveAlone(ctx, res)
		if err != nil {
			lost++
			r.e.log.Error("result lost: it could not be stored", slog.String("run", r.info.RunID),
				slog.String("test", res.TestID), slog.Any("error", err))
			r.logf(res.Domain, res.Level, "%s could not be stored: %v", res.TestID, err)
			continue
		}
		r.report(res, settled)
	}
	r.mu.Lock()
	if lost > 0 {
		r.storeFailures++
	} else {
		r.storeFailures = 0
	}
	failing := r.storeFailures >= storeStop
	r.mu.Unlock()
	if failing {
		r.stopWith(runs.StatusStopped, keepsRefusing(err))
	}
}

// saveAlone stores one result and the state of its cell in one
// transaction, trying a few times; when the result itself cannot be
// stored, it stores in its place an error result saying why (the test
// then counts as an error, never as lost), with its cell counting that.
// Each attempt counts the result in the live state and, refused, uncounts
// it. It returns the cell's final state when the result was its last,
// and an error only when nothing could be stored.
func (r *run) saveAlone(ctx context.Context, res *runs.Result) (*runs.Cell, error) {
	one := func(res runs.Result) (*runs.Cell, error) {
		batch := []runs.Result{res}
		undo := r.snapshot(batch)
		cells, settled := r.tally(batch)
		if err := r.e.opts.Runs.SaveBatch(ctx, batch, cells); err != nil {
			undo()
			return nil, err
		}
		return settled[0], nil
	}
	var err error
	for attempt := range storeAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
		}
		var settled *runs.Cell
		if settled, err = one(*res); err == nil {
			return settled, nil
		}
	}
	stand := standIn(*res, err)
	settled, err2 := one(stand)
	if err2 != nil {
		return nil, err
	}
	*res = stand
	return settled, nil
}

// standIn is the error result stored in place of a result the database
// refused (err): the test counts as an error saying why, never as lost.
func standIn(res runs.Result, err error) runs.Result {
	res.Status, res.Score, res.Response = runs.TestError, 0, ""
	res.Transcript, res.Calls = nil, nil
	res.Details = map[string]any{"error": "the result could not be stored: " + err.Error(), "extracted_answer": "", "pass2_used": false}
	return res
}

// snapshot returns a function that puts back the live counts of the run
// and of the cells a batch touches as they are now.
func (r *run) snapshot(batch []runs.Result) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	saved := map[*cell]cell{}
	for i := range batch {
		c := r.cellOf[cellKey{batch[i].Domain, batch[i].Level}]
		if _, ok := saved[c]; !ok {
			saved[c] = *c
		}
	}
	total, tokens := r.total, r.tokens
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for c, v := range saved {
			*c = v
		}
		r.total, r.tokens = total, tokens
	}
}

// tally adds a batch of results to the live state. It returns the new
// states of the cells the batch changed, and for each result the final
// state of its cell when that result was the cell's last test.
func (r *run) tally(batch []runs.Result) ([]runs.CellUpdate, []*runs.Cell) {
	r.mu.Lock()
	defer r.mu.Unlock()
	settled := make([]*runs.Cell, len(batch))
	var touched []*cell
	now := time.Now()
	for i := range batch {
		res := &batch[i]
		c := r.cellOf[cellKey{res.Domain, res.Level}]
		r.total.add(res)
		r.tokens += res.PromptTokens + res.CompletionTokens
		c.add(res)
		c.last = now
		if c.done == c.tests {
			c.settle()
			state := c.state()
			settled[i] = &state
		}
		if !slices.Contains(touched, c) {
			touched = append(touched, c)
		}
	}
	cells := make([]runs.CellUpdate, len(touched))
	for i, c := range touched {
		cells[i] = runs.CellUpdate{RunID: r.info.RunID, Domain: c.domain, Level: c.level, Cell: c.state()}
	}
	return cells, settled
}

// report logs a stored result and sends its event, and its cell's when
// settled is the cell's final state.
func (r *run) report(res *runs.Result, settled *runs.Cell) {
	r.mu.Lock()
	r.reported++
	r.mu.Unlock()
	detail := ""
	if msg, ok := res.Details["error"].(string); ok && res.Status == runs.TestError {
		detail = ": " + msg
	}
	name := res.TestID
	if c := r.info.Config; c != nil && c.Repeats > 1 {
		name += "#" + strconv.Itoa(res.Repeat)
	}
	r.logf(res.Domain, res.Level, "%s %s (score %.2f, %d ms)%s", name, res.Status, res.Score, res.DurationMS, detail)
	// The writer reuses its batch: the event gets its own copy.
	out := *res
	r.emit(Event{Kind: EventTestFinished, Domain: res.Domain, Level: res.Level, Result: &out})
	if settled != nil {
		r.logf(res.Domain, res.Level, "level %s: %s, %d passed, %d failed, %d errors of %d",
			settled.Status, scoreText(settled.Score), settled.Passed, settled.Failed, settled.Errors, settled.Tests)
		r.emit(Event{Kind: EventCellFinished, Domain: res.Domain, Level: res.Level, Cell: settled})
	}
}

// scoreText prints a score, or says that nothing was scored.
func scoreText(s *float64) string {
	if s == nil {
		return "no score (nothing scored)"
	}
	return fmt.Sprintf("score %.2f", *s)
}

// finish records the run's end and puts the engine back to idle.
func (r *run) finish() {
	if r.stopWatch != nil {
		r.stopWatch() // its last lines come before the run's end
	}
	r.mu.Lock()
	r.ending = true
	r.mu.Unlock()
	r.untie()
	info := r.end()
	verdict := "complete"
	if !info.Complete {
		verdict = "INCOMPLETE"
	}
	r.logRun("run %s %s: %d/%d tests done (%d passed, %d failed, %d errors), %s, %d tokens, %d ms; %s",
		info.RunID, info.Status, info.DoneTests, info.TotalTests, info.Passed, info.Failed, info.Errors,
		scoreText(info.OverallScore), info.TotalTokens, info.TotalDurationMS, verdict)
	if info.Error != "" {
		r.logRun("run %s stopped: %s", info.RunID, info.Error)
	}

	r.e.mu.Lock()
	if r.e.current == r {
		r.e.current = nil
	}
	r.e.mu.Unlock()
	r.finishLog()
	r.announce(info)
}

// end stores the run's end: its status, counts and totals so far, and the
// final state of the cells it left. It returns the run's info. Reset calls
// it at once, so that a run whose calls never return is still recorded
// aborted; finish calls it again with the final totals. endMu orders the
// two, so the later write has the later totals.
func (r *run) end() runs.Info {
	r.endMu.Lock()
	defer r.endMu.Unlock()
	if r.queued {
		r.fence()
	}
	ctx := context.Background()
	r.mu.Lock()
	status := r.endStatus
	if status == "" || r.budget.stopped && r.total.done >= r.info.TotalTests {
		// A budget reached by the last tests stops nothing.
		status, r.endError = runs.StatusCompleted, ""
	}
	var left []runs.CellUpdate
	for _, c := range r.cells {
		if c.status == runs.CellRunning || c.status == runs.CellPending {
			if c.done == c.tests {
				c.settle()
			} else {
				c.leave()
			}
			left = append(left, runs.CellUpdate{RunID: r.info.RunID, Domain: c.domain, Level: c.level, Cell: c.state()})
		}
	}
	info := r.info
	info.Status, info.Error = status, r.endError
	now := time.Now().UTC().Format(harness.TimeLayout)
	info.CompletedAt = &now
	info.DoneTests, info.Passed, info.Failed, info.Errors = r.total.done, r.total.passed, r.total.failed, r.total.errors
	info.OverallScore = r.total.score()
	info.TotalTokens = r.tokens
	setSpend(r.total.spend, &info.CostUSD, &info.JudgeCostUSD, &info.Tokens)
	info.CacheHits = r.cacheHits()
	info.TotalDurationMS = r.priorMS + time.Since(r.started).Milliseconds()
	info.Complete = status == runs.StatusCompleted && info.DoneTests == info.TotalTests && info.Errors == 0
	r.mu.Unlock()

	if err := r.e.opts.Runs.SaveCells(ctx, left); err != nil {
		r.e.log.Error("save cells", slog.String("run", info.RunID), slog.Any("error", err))
	}
	// The final event carries the latency FinishRun measured over the
	// stored results, as History shows it.
	if lat, err := r.e.opts.Runs.FinishRun(ctx, info); err != nil {
		r.e.log.Error("finish run", slog.String("run", info.RunID), slog.Any("error", err))
	} else {
		info.LatencyP50MS, info.LatencyP95MS, info.TTFTP50MS = lat.P50MS, lat.P95MS, lat.TTFTP50MS
	}
	return info
}

// noteModel follows the endpoint's health: when tests in a row find it
// unreachable (connection refused, no such host) and it never answered,
// the endpoint is down and the run stops at once instead of retrying
// every remaining test.
func (r *run) noteModel(err error) {
	r.mu.Lock()
	var stop bool
	switch {
	case err == nil:
		r.answered, r.unreachable = true, 0
	case errors.Is(err, harness.ErrUnreachable):
		r.unreachable++
		stop = !r.answered && r.unreachable >= unreachableStop
	default:
		r.unreachable = 0
	}
	r.mu.Unlock()
	if stop {
		r.stopWith(runs.StatusStopped, fmt.Sprintf("the model endpoint is unreachable (%d tests in a row, none answered): %v", unreachableStop, err))
	}
}

// runTest runs a sample (testIn) and prices its result. finished is
// false when the run was cancelled before the test finished: such a test
// leaves no result.
func (r *run) runTest(j *job) (runs.Result, bool) { return r.runTestIn(r.ctx, j) }

// scored completes a result from its evaluator's verdict: the details
// every result carries (extracted_answer, pass2_used), the score clamped
// to [0, 1], the status, the duration since start, the tokens and the
// time.
func scored(res *runs.Result, verdict *harness.EvalResult, usage harness.Usage, start time.Time) {
	if _, ok := res.Details["extracted_answer"]; !ok {
		res.Details["extracted_answer"] = ""
	}
	if _, ok := res.Details["pass2_used"]; !ok {
		res.Details["pass2_used"] = false
	}
	res.Score = min(max(verdict.Score, 0), 1)
	res.Status = runs.TestFailed
	if verdict.Passed {
		res.Status = runs.TestPassed
	}
	res.DurationMS = time.Since(start).Milliseconds()
	res.PromptTokens, res.CompletionTokens = usage.PromptTokens, usage.CompletionTokens
	res.CreatedAt = runs.Now()
}

// prompt is what a target is asked with (target.open).
type prompt struct {
	system string // the system message, "" for none
	model  string
	msgs   []harness.Message
	tools  []harness.ToolDefinition
	call   harness.ToolCallRequest // passed to registered tools
	// retrieval is what the agent's knowledge base gave, for an agent;
	// nil otherwise.
	retrieval *harness.Retrieval
}

// measure is details.retrieval of a job (see runs.Retrieval): for a run
// that targets an agent, when the test lists expected sources and the
// agent's retrieval ran; nil otherwise. In a run of the bare model,
// expected sources are ignored.
func (r *run) measure(j *job, p prompt) map[string]any {
	if p.retrieval == nil {
		return nil
	}
	if m := runs.MeasureRetrieval(j.test.Expected.Sources, p.retrieval); m != nil {
		return m.Details()
	}
	return nil
}
