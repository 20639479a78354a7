package engine

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// cell is the live state of one domain × level cell. Guarded by run.mu.
type cell struct {
	domain    string
	level     int
	threshold float64
	tests     int
	done      int
	passed    int
	scoreSum  float64
	status    string
	first     time.Time
	last      time.Time
}

func (c *cell) state() runs.Cell {
	out := runs.Cell{Status: c.status, Tests: c.tests, Done: c.done, Passed: c.passed}
	if c.done > 0 && (c.status == runs.CellPassed || c.status == runs.CellFailed) {
		score := c.scoreSum / float64(c.done)
		ms := c.last.Sub(c.first).Milliseconds()
		out.Score, out.DurationMS = &score, &ms
	}
	return out
}

// settle gives a cell whose tests all finished (or that the run left) its
// final status: passed when the mean score reaches the threshold, skipped
// when none of its tests finished.
func (c *cell) settle() {
	if c.done == 0 {
		c.status = runs.CellSkipped
		return
	}
	if c.scoreSum/float64(c.done) >= c.threshold {
		c.status = runs.CellPassed
	} else {
		c.status = runs.CellFailed
	}
}

type cellKey struct {
	domain string
	level  int
}

// run is one evaluation in progress.
type run struct {
	e       *Engine
	info    runs.Info
	started time.Time
	jobs    []job
	ctx     context.Context
	cancel  context.CancelFunc
	done_   chan struct{}
	logFile *os.File
	logBuf  *bufio.Writer // buffers logFile; flushed after each batch and at the end

	mu            sync.Mutex
	cells         []*cell
	cellOf        map[cellKey]*cell
	done          int
	tokens        int
	scoreSum      float64
	currentDomain string
	currentLevel  int
	endStatus     string // set by stop: stopped or aborted
	logClosed     bool

	endMu sync.Mutex // serialises end
}

func (r *run) stop(status string) {
	r.mu.Lock()
	if r.endStatus == "" {
		r.endStatus = status
	}
	r.mu.Unlock()
	r.cancel()
}

// logf writes a line "[<domain>][L<level>] text" to the poll queue and
// the run's log file.
func (r *run) logf(domain string, level int, format string, args ...any) {
	r.line("[" + domain + "][L" + strconv.Itoa(level) + "] " + fmt.Sprintf(format, args...))
}

func (r *run) line(s string) {
	if r.write(s, false) {
		r.e.emit(Event{Kind: EventLog, RunID: r.info.RunID, Line: s})
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
		r.e.emit(Event{Kind: EventLog, RunID: r.info.RunID, Line: EvalComplete})
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
	defer close(r.done_)
	results := make(chan runs.Result, r.e.opts.Concurrency*2)
	written := make(chan struct{})
	go r.writer(results, written)

	sem := make(chan struct{}, r.e.opts.Concurrency)
	var wg sync.WaitGroup
dispatch:
	for i := range r.jobs {
		j := &r.jobs[i]
		select {
		case sem <- struct{}{}:
		case <-r.ctx.Done():
			break dispatch
		}
		if r.ctx.Err() != nil {
			<-sem
			break
		}
		r.mu.Lock()
		if j.cell.status == runs.CellPending {
			j.cell.status = runs.CellRunning
			j.cell.first = time.Now()
		}
		r.currentDomain, r.currentLevel = j.cell.domain, j.cell.level
		r.mu.Unlock()
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, finished := r.runTest(j)
			if finished {
				results <- res
			}
		}()
	}
	wg.Wait()
	close(results)
	<-written
	r.finish()
}

// writer stores results as they come, in batches of whatever is waiting
// (group commit): each batch's results and the cells they changed go to
// the store in one transaction, then are logged and reported.
func (r *run) writer(in <-chan runs.Result, written chan<- struct{}) {
	defer close(written)
	ctx := context.Background()
	batch := make([]runs.Result, 0, 256)
	for res := range in {
		batch = append(batch[:0], res)
	more:
		for len(batch) < cap(batch) {
			select {
			case next, ok := <-in:
				if !ok {
					break more
				}
				batch = append(batch, next)
			default:
				break more
			}
		}
		cells, settled := r.tally(batch)
		if err := r.e.opts.Runs.SaveBatch(ctx, batch, cells); err != nil {
			r.e.log.Error("save results", slog.String("run", r.info.RunID), slog.Any("error", err))
		}
		for i := range batch {
			r.report(&batch[i], settled[i])
		}
		r.flushLog()
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
		r.done++
		r.tokens += res.PromptTokens + res.CompletionTokens
		r.scoreSum += res.Score
		c.done++
		c.scoreSum += res.Score
		if res.Status == runs.TestPassed {
			c.passed++
		}
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
	detail := ""
	if msg, ok := res.Details["error"].(string); ok && res.Status == runs.TestError {
		detail = ": " + msg
	}
	r.logf(res.Domain, res.Level, "%s %s (score %.2f, %d ms)%s", res.TestID, res.Status, res.Score, res.DurationMS, detail)
	// The writer reuses its batch: the event gets its own copy.
	out := *res
	r.e.emit(Event{Kind: EventTestFinished, RunID: r.info.RunID, Domain: res.Domain, Level: res.Level, Result: &out})
	if settled != nil {
		r.logf(res.Domain, res.Level, "level %s: score %.2f, %d/%d passed", settled.Status, *settled.Score, settled.Passed, settled.Tests)
		r.e.emit(Event{Kind: EventCellFinished, RunID: r.info.RunID, Domain: res.Domain, Level: res.Level, Cell: settled})
	}
}

// finish records the run's end and puts the engine back to idle.
func (r *run) finish() {
	info, done := r.end()
	score := 0.0
	if info.OverallScore != nil {
		score = *info.OverallScore
	}
	r.logf("run", 0, "run %s %s: %d/%d tests, score %.2f, %d tokens, %d ms",
		info.RunID, info.Status, done, info.TotalTests, score, info.TotalTokens, info.TotalDurationMS)

	r.e.mu.Lock()
	if r.e.current == r {
		r.e.current = nil
	}
	r.e.mu.Unlock()
	r.finishLog()
	r.e.emit(Event{Kind: EventRunFinished, RunID: info.RunID, Info: &info})
}

// end stores the run's end: its status, totals so far, and the final
// state of the cells it left. It returns the run's info and the number of
// tests finished. Reset calls it at once, so that a run whose calls never
// return is still recorded aborted; finish calls it again with the final
// totals. endMu orders the two, so the later write has the later totals.
func (r *run) end() (runs.Info, int) {
	r.endMu.Lock()
	defer r.endMu.Unlock()
	ctx := context.Background()
	r.mu.Lock()
	status := r.endStatus
	if status == "" {
		status = runs.StatusCompleted
	}
	var partial []*cell
	for _, c := range r.cells {
		if c.status == runs.CellRunning || (c.status == runs.CellPending && c.done > 0) {
			c.settle()
			partial = append(partial, c)
		}
	}
	info := r.info
	info.Status = status
	now := time.Now().UTC().Format(harness.TimeLayout)
	info.CompletedAt = &now
	if r.done > 0 {
		avg := r.scoreSum / float64(r.done)
		info.OverallScore = &avg
	}
	info.TotalTokens = r.tokens
	info.TotalDurationMS = time.Since(r.started).Milliseconds()
	states := make([]runs.Cell, len(partial))
	for i, c := range partial {
		states[i] = c.state()
	}
	done := r.done
	r.mu.Unlock()

	for i, c := range partial {
		if err := r.e.opts.Runs.SaveCell(ctx, info.RunID, c.domain, c.level, states[i]); err != nil {
			r.e.log.Error("save cell", slog.String("run", info.RunID), slog.Any("error", err))
		}
	}
	if err := r.e.opts.Runs.FinishRun(ctx, info); err != nil {
		r.e.log.Error("finish run", slog.String("run", info.RunID), slog.Any("error", err))
	}
	return info, done
}

// runTest asks the model, answers its tool calls, and scores the final
// response. finished is false when the run was cancelled before the test
// finished: such a test leaves no result.
func (r *run) runTest(j *job) (runs.Result, bool) {
	e := r.e
	ctx := r.ctx
	start := time.Now()
	res := runs.Result{
		RunID: r.info.RunID, TestID: j.test.ID, Domain: j.test.DomainID, Level: j.test.Level, Name: j.test.Name,
		Prompt: j.test.Prompt, Expected: j.test.Expected, ModelName: r.info.ModelName, SystemPrompt: j.systemPrompt,
		Details: map[string]any{},
	}
	var msgs []harness.Message
	if j.systemPrompt != "" {
		msgs = append(msgs, harness.Message{Role: harness.RoleSystem, Content: j.systemPrompt})
	}
	msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: j.test.Prompt})
	defs := make([]harness.FunctionDef, len(j.tools))
	for i, t := range j.tools {
		defs[i] = t.Function
	}
	var usage harness.Usage
	var calls []harness.ToolCall
	var callLog []map[string]any
	fail := func(err error) (runs.Result, bool) {
		if ctx.Err() != nil {
			return res, false
		}
		res.Status = runs.TestError
		res.Details["error"] = err.Error()
		res.DurationMS = time.Since(start).Milliseconds()
		res.PromptTokens, res.CompletionTokens = usage.PromptTokens, usage.CompletionTokens
		res.CreatedAt = runs.Now()
		return res, true
	}
	final := ""
	for round := 0; ; round++ {
		resp, err := e.opts.Model.Chat(ctx, &harness.ChatRequest{Model: r.info.Model, Messages: msgs, Tools: defs})
		if err != nil {
			return fail(fmt.Errorf("model: %w", err))
		}
		usage = usage.Add(resp.Usage)
		msgs = append(msgs, resp.Message)
		final = resp.Message.Content
		if len(resp.Message.ToolCalls) == 0 || len(defs) == 0 {
			break
		}
		if round >= e.opts.MaxToolRounds {
			res.Details["tool_rounds_exceeded"] = true
			break
		}
		for _, call := range resp.Message.ToolCalls {
			calls = append(calls, call)
			out := harness.AnswerToolCall(ctx, e.opts.Registry, j.tools, call, harness.ToolCallRequest{})
			callLog = append(callLog, map[string]any{"name": call.Name, "arguments": harness.JSONOrText(call.Arguments), "output": harness.JSONOrText(out)})
			msgs = append(msgs, harness.Message{Role: harness.RoleTool, Content: out, ToolCallID: call.ID})
		}
	}
	res.Response = final
	ev, ok := e.evaluatorFor(j.evaluator.Type)
	if !ok {
		return fail(fmt.Errorf("evaluator type %q is not available", j.evaluator.Type))
	}
	verdict, err := ev.Evaluate(ctx, &harness.EvalRequest{
		Test: j.test, Evaluator: j.evaluator, SystemPrompt: j.systemPrompt, Response: final,
		Messages: msgs, ToolCalls: calls, Model: e.opts.Model, ModelName: r.info.Model,
	})
	if err != nil {
		return fail(fmt.Errorf("evaluator: %w", err))
	}
	usage = usage.Add(verdict.Usage)
	for k, v := range verdict.Details {
		res.Details[k] = v
	}
	if len(callLog) > 0 {
		res.Details["tool_calls"] = callLog
	}
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
	return res, true
}
