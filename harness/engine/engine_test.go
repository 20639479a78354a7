package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// fixture is an engine over a real catalog and store (SQLite in a
// temporary directory), answering from an llmtest endpoint on loopback.
type fixture struct {
	dir    string
	db     *store.DB
	cat    *catalog.Catalog
	runs   *runs.Store
	eng    *engine.Engine
	mock   *llmtest.Server
	client *llm.Client
	logDir string
	events chan engine.Event
}

type fixtureOpts struct {
	llm         llmtest.Options
	concurrency int
	// defs is a directory of definitions to copy; "" with a nil snap means
	// the examples.
	defs string
	// snap, when set, is imported into an empty definitions directory.
	snap *harness.Snapshot
	// timeout, maxRetries and retryBase configure the model client
	// (defaults 5 s, 2, 10 ms).
	timeout    time.Duration
	maxRetries int
	retryBase  time.Duration
	// model, when set, wraps the llm client.
	model         func(harness.ChatModel) harness.ChatModel
	registry      *harness.Registry
	logQueue      int
	maxToolRounds int
	// onEvent replaces the fixture's event channel.
	onEvent func(engine.Event)
	// agents, when set, gives the engine its agents, once the stores are
	// open.
	agents func(f *fixture) engine.Agents
	// anyDB: the database is dbtest's (PostgreSQL when the tests run
	// against it) rather than a SQLite file.
	anyDB bool
	// queue, when set, makes the engine's runs queued (Options.Queue).
	queue engine.Queue
	// client, when set, completes the llm client's options.
	client func(*llm.Options)
	// maxResponseBytes is the engine's (a black-box target's reply limit).
	maxResponseBytes int64
}

// openStores opens a database in dir with a catalog over dir/definitions
// (the examples, a copy of defs, or snap imported) and a runs store.
// A registry, when given, is the catalog's (for evaluator types of tests).
func openStores(tb testing.TB, dir, defs string, snap *harness.Snapshot, reg ...*harness.Registry) (*store.DB, *catalog.Catalog, *runs.Store) {
	tb.Helper()
	ctx := context.Background()
	defsDir := filepath.Join(dir, "definitions")
	switch {
	case snap != nil:
	case defs == "":
		defs = "../../examples/definitions"
		fallthrough
	default:
		if _, err := os.Stat(defsDir); errors.Is(err, os.ErrNotExist) {
			if err := os.CopyFS(defsDir, os.DirFS(defs)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	db, err := store.Open(ctx, databaseOf(tb, dir))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return openStoresIn(tb, db, defsDir, snap, reg...)
}

// openStoresIn opens a catalog over defsDir and a runs store in db.
func openStoresIn(tb testing.TB, db *store.DB, defsDir string, snap *harness.Snapshot, reg ...*harness.Registry) (*store.DB, *catalog.Catalog, *runs.Store) {
	tb.Helper()
	ctx := context.Background()
	var registry *harness.Registry
	if len(reg) > 0 {
		registry = reg[0]
	}
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: defsDir, DB: db, Registry: registry})
	if err != nil || len(res.Errors) > 0 {
		tb.Fatalf("catalog: %v %+v", err, res)
	}
	if snap != nil {
		if _, err := cat.Import(ctx, snap, false); err != nil {
			tb.Fatalf("import definitions: %v", err)
		}
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		tb.Fatal(err)
	}
	return db, cat, rs
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{dir: t.TempDir(), events: make(chan engine.Event, 100000)}
	if o.anyDB {
		f.db, f.cat, f.runs = openStoresIn(t, dbtest.Open(t), filepath.Join(f.dir, "definitions"), o.snap, o.registry)
	} else {
		f.db, f.cat, f.runs = openStores(t, f.dir, o.defs, o.snap, o.registry)
	}
	f.mock = llmtest.NewServer(o.llm)
	t.Cleanup(f.mock.Close)
	if o.timeout == 0 {
		o.timeout = 5 * time.Second
	}
	if o.maxRetries == 0 {
		o.maxRetries = 2
	}
	if o.retryBase == 0 {
		o.retryBase = 10 * time.Millisecond
	}
	var err error
	lo := llm.Options{BaseURL: f.mock.URL, Model: "test-model", Timeout: o.timeout,
		MaxRetries: o.maxRetries, RetryBaseDelay: o.retryBase}
	if o.client != nil {
		o.client(&lo)
	}
	f.client, err = llm.New(lo)
	if err != nil {
		t.Fatal(err)
	}
	var model harness.ChatModel = f.client
	if o.model != nil {
		model = o.model(model)
	}
	f.logDir = filepath.Join(f.dir, "logs")
	opts := engine.Options{
		Definitions: f.cat, Runs: f.runs, Client: model, Model: "test-model",
		Timeout: o.timeout, Retries: o.maxRetries, BaseURL: f.mock.URL, Version: "test",
		Concurrency: o.concurrency, LogDir: f.logDir, Registry: o.registry,
		LogQueue: o.logQueue, MaxToolRounds: o.maxToolRounds, Queue: o.queue, MaxResponseBytes: o.maxResponseBytes,
		OnEvent: func(ev engine.Event) { f.events <- ev },
	}
	if o.onEvent != nil {
		opts.OnEvent = o.onEvent
	}
	if o.agents != nil {
		opts.Agents = o.agents(f)
	}
	work := queueRuns(t, f, o, &opts) // on PostgreSQL, River's queue as the server wires it
	f.eng, err = engine.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	work(f.eng)
	return f
}

// start starts a run and fails the test on error.
func (f *fixture) start(t testing.TB, req engine.StartRequest) string {
	t.Helper()
	id, err := f.eng.Start(context.Background(), req)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return id
}

// wait returns the run's final info and the events of the run it saw.
func (f *fixture) wait(t testing.TB, runID string) (runs.Info, []engine.Event) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	var seen []engine.Event
	for {
		select {
		case ev := <-f.events:
			if ev.RunID != runID {
				continue
			}
			seen = append(seen, ev)
			if ev.Kind == engine.EventRunFinished {
				return *ev.Info, seen
			}
		case <-timeout:
			t.Fatal("run did not finish")
		}
	}
}

// count returns the number of rows of a table for a run.
func (f *fixture) count(t testing.TB, table, runID string) int {
	t.Helper()
	n, err := sqldb.Bun(f.db).NewSelect().Table(table).Where("run_id = ?", runID).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// ----- generated definitions -----

// defs builds a snapshot of definitions for a test. It always holds the
// evaluator "number", which extracts the last integer of a response.
type defs struct{ s harness.Snapshot }

func newDefs() *defs {
	return &defs{s: harness.Snapshot{Evaluators: []harness.EvaluatorConfig{
		{ID: "number", Name: "Last number", Type: harness.EvaluatorTypeRegex, ExtractionRegex: `(?<answer>-?\d+)`},
	}}}
}

func (d *defs) domain(id, systemPrompt string, enabled bool) *defs {
	d.s.Domains = append(d.s.Domains, harness.Domain{ID: id, Name: "Domain " + id, EvaluatorID: "number",
		Enabled: enabled, SystemPrompt: systemPrompt})
	return d
}

func (d *defs) level(domain string, level int, prompt string, mode harness.PromptMode, threshold float64, tools ...string) *defs {
	d.s.Levels = append(d.s.Levels, harness.LevelConfig{DomainID: domain, Level: level, SystemPrompt: prompt,
		SystemPromptMode: mode, PassThreshold: threshold, Tools: tools})
	return d
}

// sums adds n tests "What is i + level?" to a level; the last wrong of them
// expect a wrong answer, so they fail.
func (d *defs) sums(domain string, level, n, wrong int) *defs {
	if !slices.ContainsFunc(d.s.Levels, func(l harness.LevelConfig) bool { return l.DomainID == domain && l.Level == level }) {
		d.level(domain, level, "", harness.PromptAppend, harness.DefaultPassThreshold)
	}
	for i := range n {
		id := fmt.Sprintf("%s-l%d-t%d", domain, level, i)
		want := i + level
		if i >= n-wrong {
			want++
		}
		d.s.Tests = append(d.s.Tests, harness.Test{ID: id, DomainID: domain, Level: level, Name: "Sum " + id,
			Prompt:   fmt.Sprintf("[%s] What is %d + %d?", id, i, level),
			Expected: harness.Expected{Answer: fmt.Sprint(want), Type: "numeric"}})
	}
	return d
}

func (d *defs) test(t harness.Test) *defs {
	d.s.Tests = append(d.s.Tests, t)
	return d
}

func (d *defs) snap() *harness.Snapshot { return &d.s }

// promptID returns the test id a "[id] ..." prompt starts with.
var promptIDRE = regexp.MustCompile(`^\[([^\]]+)\]`)

func promptID(prompt string) string {
	if m := promptIDRE.FindStringSubmatch(prompt); m != nil {
		return m[1]
	}
	return ""
}

// requestLog records what llmtest received, by test id.
type requestLog struct {
	mu   sync.Mutex
	reqs map[string][]*llmtest.Request
}

func (l *requestLog) respond(req *llmtest.Request) *llmtest.Reply {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reqs == nil {
		l.reqs = map[string][]*llmtest.Request{}
	}
	id := ""
	for _, m := range req.Messages {
		if m.Role == harness.RoleUser {
			id = promptID(m.Content)
			break
		}
	}
	l.reqs[id] = append(l.reqs[id], req)
	return nil
}

func (l *requestLog) get(id string) []*llmtest.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reqs[id]
}

var logLineRE = regexp.MustCompile(`^\[[^\]]+\]\[L\d+\] \S`)

// ----- tests -----

func TestRunExamples(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{ModelName: "smoke"})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.TotalTests != 12 {
		t.Fatalf("info = %+v", info)
	}
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 12 {
		t.Fatalf("%d results, want 12", len(results))
	}
	// llmtest answers arithmetic and calls tools it is asked for by name;
	// other questions are echoed, so only those domains must pass.
	for _, r := range results {
		if r.Status == runs.TestError || (r.Domain == "arithmetic" && r.Status != runs.TestPassed) {
			t.Errorf("%s/%d %s %s score=%v resp=%q details=%v", r.Domain, r.Level, r.TestID, r.Status, r.Score, r.Response, r.Details)
		}
	}
	lines, running := f.eng.PollLogs()
	if running || len(lines) == 0 || lines[len(lines)-1] != engine.EvalComplete {
		t.Fatalf("logs: running=%v %q", running, lines)
	}
	for _, l := range lines[:len(lines)-1] {
		if !logLineRE.MatchString(l) {
			t.Errorf("log line %q is not [domain][Ln] text", l)
		}
	}
}

// TestRunGenerated runs generated definitions and checks everything a run
// records: effective system prompts, results, cells, totals, logs, the log
// file, and the deletion of it all.
func TestRunGenerated(t *testing.T) {
	t.Parallel()
	var seen requestLog
	d := newDefs().
		domain("alpha", "You are alpha.", true).
		level("alpha", 1, "Level one rules.", harness.PromptAppend, 0.5).
		level("alpha", 2, "Level two rules.", harness.PromptPrepend, 0.5).
		level("alpha", 3, "Level three only.", harness.PromptReplace, 0.75).
		level("alpha", 4, "", harness.PromptAppend, 0.6).
		sums("alpha", 1, 4, 0).sums("alpha", 2, 4, 2).sums("alpha", 3, 4, 2).sums("alpha", 4, 2, 1).
		domain("beta", "", true).
		level("beta", 1, "Beta level.", harness.PromptAppend, 0.5).
		level("beta", 2, "", harness.PromptReplace, 0.5).
		sums("beta", 1, 2, 0).sums("beta", 2, 2, 0).
		domain("gamma", "Disabled.", false).sums("gamma", 1, 1, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 4,
		llm: llmtest.Options{Latency: 10 * time.Millisecond, Respond: seen.respond}})
	ctx := context.Background()

	id := f.start(t, engine.StartRequest{ModelName: "generated"})
	// Poll the logs while the run goes, as the dashboard does.
	var lines []string
	for {
		batch, running := f.eng.PollLogs()
		if len(batch) > engine.MaxPoll {
			t.Fatalf("PollLogs returned %d lines", len(batch))
		}
		lines = append(lines, batch...)
		if len(lines) > 0 && lines[len(lines)-1] == engine.EvalComplete {
			if running {
				t.Error("PollLogs reports running after EVAL_COMPLETE")
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	info, events := f.wait(t, id)

	// The run.
	const total, passed = 18, 13
	if info.Status != runs.StatusCompleted || info.TotalTests != total || info.ModelName != "generated" || info.Model != "test-model" {
		t.Fatalf("info = %+v", info)
	}
	if !slices.Equal(info.Domains, []string{"alpha", "beta"}) {
		t.Errorf("domains = %v, want the enabled ones [alpha beta]", info.Domains)
	}
	stored, err := f.runs.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if stored.OverallScore == nil || *stored.OverallScore != float64(passed)/total {
		t.Errorf("overall score = %v, want %v", stored.OverallScore, float64(passed)/total)
	}
	if stored.CompletedAt == nil || stored.Status != runs.StatusCompleted || stored.TotalDurationMS < 10 {
		t.Errorf("stored run = %+v", stored)
	}

	// Every result, with its effective system prompt as the model saw it.
	wantPrompt := map[string]string{
		"alpha/1": "You are alpha.\n\nLevel one rules.",
		"alpha/2": "Level two rules.\n\nYou are alpha.",
		"alpha/3": "Level three only.",
		"alpha/4": "You are alpha.",
		"beta/1":  "Beta level.",
		"beta/2":  "",
	}
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != total {
		t.Fatalf("%d results, want %d", len(results), total)
	}
	tokens, nPassed := 0, 0
	for _, r := range results {
		key := fmt.Sprintf("%s/%d", r.Domain, r.Level)
		if r.SystemPrompt != wantPrompt[key] {
			t.Errorf("%s: system_prompt %q, want %q", r.TestID, r.SystemPrompt, wantPrompt[key])
		}
		reqs := seen.get(r.TestID)
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests, want 1", r.TestID, len(reqs))
		}
		var sys []string
		for _, m := range reqs[0].Messages {
			if m.Role == harness.RoleSystem {
				sys = append(sys, m.Content)
			}
		}
		switch {
		case wantPrompt[key] == "" && len(sys) != 0:
			t.Errorf("%s: model got system messages %q, want none", r.TestID, sys)
		case wantPrompt[key] != "" && !slices.Equal(sys, []string{wantPrompt[key]}):
			t.Errorf("%s: model got system messages %q, want %q", r.TestID, sys, wantPrompt[key])
		}
		if reqs[0].Model != "test-model" {
			t.Errorf("%s: model %q", r.TestID, reqs[0].Model)
		}
		if r.PromptTokens <= 0 || r.CompletionTokens <= 0 || r.DurationMS < 10 || r.CreatedAt == "" {
			t.Errorf("%s: tokens %d+%d, duration %d ms, created %q", r.TestID, r.PromptTokens, r.CompletionTokens, r.DurationMS, r.CreatedAt)
		}
		if r.ModelName != "generated" || r.RunID != id || r.Prompt == "" || r.Response == "" {
			t.Errorf("%s: result %+v", r.TestID, r)
		}
		wrong := r.Expected.Answer != fmt.Sprint(atoiSuffix(r.TestID)+r.Level)
		switch {
		case wrong && (r.Status != runs.TestFailed || r.Score != 0):
			t.Errorf("%s: %s %v, want failed", r.TestID, r.Status, r.Score)
		case !wrong && (r.Status != runs.TestPassed || r.Score != 1):
			t.Errorf("%s: %s %v, want passed; details %v", r.TestID, r.Status, r.Score, r.Details)
		}
		if _, ok := r.Details["extracted_answer"]; !ok {
			t.Errorf("%s: details %v lack extracted_answer", r.TestID, r.Details)
		}
		if r.Details["pass2_used"] != false {
			t.Errorf("%s: pass2_used = %v", r.TestID, r.Details["pass2_used"])
		}
		tokens += r.PromptTokens + r.CompletionTokens
		if r.Status == runs.TestPassed {
			nPassed++
		}
	}
	if nPassed != passed || stored.TotalTokens != tokens || info.TotalTokens != tokens {
		t.Errorf("passed %d (want %d); total_tokens %d/%d, want %d", nPassed, passed, stored.TotalTokens, info.TotalTokens, tokens)
	}
	if len(seen.get("gamma-l1-t0")) != 0 {
		t.Error("the disabled domain was run")
	}

	// Cells: mean scores against pass_threshold.
	type cellWant struct {
		status        string
		score         float64
		tests, passed int
	}
	wantCells := map[string]map[string]cellWant{
		"alpha": {"1": {runs.CellPassed, 1, 4, 4}, "2": {runs.CellPassed, 0.5, 4, 2}, "3": {runs.CellFailed, 0.5, 4, 2}, "4": {runs.CellFailed, 0.5, 2, 1}},
		"beta":  {"1": {runs.CellPassed, 1, 2, 2}, "2": {runs.CellPassed, 1, 2, 2}},
	}
	m, err := f.runs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	live, err := f.eng.Matrix(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if live.Status != runs.StatusCompleted || live.RunID == nil || *live.RunID != id {
		t.Errorf("live matrix after the run: %+v", live)
	}
	for _, mm := range []runs.Matrix{m, live.Domains} {
		if len(mm) != len(wantCells) {
			t.Errorf("matrix domains %v", mm)
		}
		for dom, levels := range wantCells {
			if len(mm[dom]) != len(levels) {
				t.Errorf("%s: matrix levels %v", dom, mm[dom])
			}
			for lvl, w := range levels {
				c := mm[dom][lvl]
				if c.Status != w.status || c.Score == nil || *c.Score != w.score || c.Tests != w.tests || c.Done != w.tests || c.Passed != w.passed || c.DurationMS == nil {
					t.Errorf("cell %s/%s = %+v (score %v), want %+v", dom, lvl, c, ptr(c.Score), w)
				}
			}
		}
	}

	// Events: one per result and per cell, run started first, finished last.
	var nTest, nCell, nLog int
	for _, ev := range events {
		switch ev.Kind {
		case engine.EventTestFinished:
			nTest++
		case engine.EventCellFinished:
			nCell++
		case engine.EventLog:
			nLog++
		}
	}
	if events[0].Kind != engine.EventRunStarted || nTest != total || nCell != 6 || nLog != len(lines) {
		t.Errorf("events: first %s, %d tests, %d cells, %d logs (polled %d lines)", events[0].Kind, nTest, nCell, nLog, len(lines))
	}

	// Logs: "[<domain>][L<level>] text", a line per result, EVAL_COMPLETE last.
	if lines[len(lines)-1] != engine.EvalComplete || slices.Index(lines, engine.EvalComplete) != len(lines)-1 {
		t.Errorf("EVAL_COMPLETE is not last, once: %q", lines)
	}
	for _, l := range lines[:len(lines)-1] {
		if !logLineRE.MatchString(l) {
			t.Errorf("log line %q is not [domain][Ln] text", l)
		}
	}
	for _, r := range results {
		prefix := fmt.Sprintf("[%s][L%d] %s %s", r.Domain, r.Level, r.TestID, r.Status)
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) }) {
			t.Errorf("no log line %q", prefix)
		}
	}
	if more, running := f.eng.PollLogs(); len(more) != 0 || running {
		t.Errorf("after EVAL_COMPLETE: %q running=%v", more, running)
	}

	// The log file holds the same lines.
	path := f.eng.LogFile(id)
	if filepath.Dir(path) != f.logDir {
		t.Errorf("log file %s is not under %s", path, f.logDir)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fileLines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(fileLines) != len(lines) || !strings.HasSuffix(fileLines[len(fileLines)-1], " "+engine.EvalComplete) {
		t.Errorf("log file has %d lines (polled %d), last %q", len(fileLines), len(lines), fileLines[len(fileLines)-1])
	}

	// Status: idle, with the last run.
	st := f.eng.Status()
	if st.Status != "idle" || st.RunID != nil || st.LastRunID == nil || *st.LastRunID != id || f.eng.Running() {
		t.Errorf("status after the run: %+v", st)
	}

	// Delete: the run, its results, cells and log file.
	if err := f.eng.DeleteRun(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runs.Run(ctx, id); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("run after delete: %v", err)
	}
	if _, err := f.runs.Matrix(ctx, id); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("matrix after delete: %v", err)
	}
	if n, c := f.count(t, "run_results", id), f.count(t, "run_cells", id); n != 0 || c != 0 {
		t.Errorf("after delete: %d results, %d cells", n, c)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log file after delete: %v", err)
	}
	if st := f.eng.Status(); st.LastRunID != nil {
		t.Errorf("last run after deleting the only run: %v", *st.LastRunID)
	}
	if err := f.eng.DeleteRun(ctx, id); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}

func atoiSuffix(id string) int {
	var n int
	fmt.Sscanf(id[strings.LastIndex(id, "-t")+2:], "%d", &n)
	return n
}

func ptr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestStartErrors covers the requests Start, Stop and DeleteRun refuse.
func TestStartErrors(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("slow", "", true).sums("slow", 1, 4, 0).domain("empty", "", true).level("empty", 1, "x", harness.PromptAppend, 0.5)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 1, llm: llmtest.Options{Latency: 100 * time.Millisecond}})
	ctx := context.Background()

	if _, err := f.eng.Stop(time.Second); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("stop when idle: %v, want ErrNotRunning", err)
	}
	for _, tc := range []struct {
		name    string
		domains []string
	}{
		{"unknown domain", []string{"slow", "nope"}},
		{"zero tests", []string{"empty"}},
		{"empty list", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.eng.Start(ctx, engine.StartRequest{Domains: tc.domains})
			if !errors.Is(err, harness.ErrInvalid) {
				t.Errorf("start %v: %v, want ErrInvalid", tc.domains, err)
			}
			if f.eng.Running() {
				t.Error("a refused start left a run active")
			}
		})
	}
	if list, total, err := f.runs.List(ctx, 10, 0); err != nil || total != 0 {
		t.Errorf("refused starts stored runs: %v %d %v", list, total, err)
	}

	id := f.start(t, engine.StartRequest{Domains: []string{"slow", "slow"}})
	if _, err := f.eng.Start(ctx, engine.StartRequest{}); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("start while running: %v, want ErrConflict", err)
	}
	if err := f.eng.DeleteRun(ctx, id); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("delete the active run: %v, want ErrConflict", err)
	}
	st := f.eng.Status()
	if st.Status != "running" || st.RunID == nil || *st.RunID != id || st.TotalTests != 4 || st.ModelName == nil || *st.ModelName != "default" {
		t.Errorf("status while running: %+v", st)
	}
	harnesstest.Eventually(t, 5*time.Second, "a test in flight", func() bool { return f.mock.Stats().InFlight > 0 })
	// A queued run's cell reaches the status from its worker's job, a
	// moment after the test is sent.
	if !harnesstest.Within(10*time.Second, func() bool {
		st := f.eng.Status()
		return st.CurrentDomain != nil && *st.CurrentDomain == "slow" && st.CurrentLevel != nil && *st.CurrentLevel == 1
	}) {
		st := f.eng.Status()
		t.Errorf("status current cell: %v %v", ptr(st.CurrentDomain), ptr(st.CurrentLevel))
	}
	live, err := f.eng.Matrix(ctx)
	if err != nil || live.Status != runs.StatusRunning || live.Domains["slow"]["1"].Tests != 4 {
		t.Errorf("live matrix: %+v %v", live, err)
	}
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || !slices.Equal(info.Domains, []string{"slow"}) || info.TotalTests != 4 {
		t.Errorf("run with a repeated domain: %+v", info)
	}
	if _, err := f.eng.Stop(time.Second); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("stop after the run: %v, want ErrNotRunning", err)
	}
}

// TestConcurrencyHonoured checks that the tests in flight reach the
// concurrency setting and never pass it.
func TestConcurrencyHonoured(t *testing.T) {
	for _, n := range []int{1, 3, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			d := newDefs().domain("d", "", true).sums("d", 1, 2*n, 0).sums("d", 2, 2*n, 0)
			// The first n requests are held until all n are in flight, so
			// the peak shows the bound however slowly a loaded machine
			// starts them (a 100 ms latency alone did not, at load 25);
			// a bound that is not reached fails after the wait.
			var arrived atomic.Int64
			all := make(chan struct{})
			respond := func(*llmtest.Request) *llmtest.Reply {
				switch k := arrived.Add(1); {
				case k < int64(n):
					select {
					case <-all:
					case <-time.After(20 * time.Second):
					}
				case k == int64(n):
					close(all)
				}
				return nil
			}
			f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: n, llm: llmtest.Options{Latency: 10 * time.Millisecond, Respond: respond}})
			id := f.start(t, engine.StartRequest{})
			info, _ := f.wait(t, id)
			if info.Status != runs.StatusCompleted {
				t.Fatalf("info = %+v", info)
			}
			st := f.mock.Stats()
			if st.PeakInFlight != int64(n) || st.ChatCompletions != int64(4*n) {
				t.Errorf("peak in flight %d, want %d; %d requests", st.PeakInFlight, n, st.ChatCompletions)
			}
		})
	}
}

// TestLogPolling checks that a poll returns at most MaxPoll lines and that
// successive polls return every line once, in order.
func TestLogPolling(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 150, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 8})
	id := f.start(t, engine.StartRequest{})
	_, events := f.wait(t, id)
	var want []string
	for _, ev := range events {
		if ev.Kind == engine.EventLog {
			want = append(want, ev.Line)
		}
	}
	if len(want) < 150 {
		t.Fatalf("only %d log events", len(want))
	}
	var got []string
	for {
		lines, running := f.eng.PollLogs()
		if running {
			t.Error("running after the run finished")
		}
		if len(lines) > engine.MaxPoll {
			t.Fatalf("a poll returned %d lines", len(lines))
		}
		if len(lines) == 0 {
			break
		}
		if len(got) == 0 && len(lines) != engine.MaxPoll {
			t.Errorf("first poll returned %d lines of %d, want %d", len(lines), len(want), engine.MaxPoll)
		}
		got = append(got, lines...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("polled %d lines, want the %d lines of the run in order", len(got), len(want))
	}
}

// TestLogQueueBounded checks that the queue keeps only the newest lines
// when nobody polls, and says how many it dropped.
func TestLogQueueBounded(t *testing.T) {
	t.Parallel()
	const queue = 20
	d := newDefs().domain("d", "", true).sums("d", 1, 60, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 4, logQueue: queue})
	id := f.start(t, engine.StartRequest{})
	_, events := f.wait(t, id)
	var all []string
	for _, ev := range events {
		if ev.Kind == engine.EventLog {
			all = append(all, ev.Line)
		}
	}
	lines, _ := f.eng.PollLogs()
	if more, _ := f.eng.PollLogs(); len(more) != 0 {
		t.Errorf("second poll: %q", more)
	}
	if len(lines) != queue+1 {
		t.Fatalf("poll returned %d lines, want %d and a marker: %q", len(lines), queue, lines)
	}
	// The marker has the domain and level of the first line kept.
	prefix := lines[1][:strings.Index(lines[1], "] ")+1]
	marker := fmt.Sprintf("%s %d older lines were dropped because nobody polled", prefix, len(all)-queue)
	if lines[0] != marker {
		t.Errorf("first line %q, want %q", lines[0], marker)
	}
	if !logLineRE.MatchString(lines[0]) {
		t.Errorf("marker %q is not a [domain][Ln] line", lines[0])
	}
	if !slices.Equal(lines[1:], all[len(all)-queue:]) || lines[len(lines)-1] != engine.EvalComplete {
		t.Errorf("kept %q, want the newest %d lines ending with EVAL_COMPLETE", lines[1:], queue)
	}
	// The file keeps every line.
	data, err := os.ReadFile(f.eng.LogFile(id))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != len(all) {
		t.Errorf("log file has %d lines, want %d", n, len(all))
	}
}

// TestStartOverrides checks the start request's model and label, and that
// a new run clears the log queue of the last one.
func TestStartOverrides(t *testing.T) {
	t.Parallel()
	var seen requestLog
	d := newDefs().domain("d", "", true).sums("d", 1, 2, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), llm: llmtest.Options{Respond: seen.respond}})
	ctx := context.Background()
	first := f.start(t, engine.StartRequest{})
	f.wait(t, first)
	id := f.start(t, engine.StartRequest{ModelName: "label", Model: "other-model"})
	info, _ := f.wait(t, id)
	if info.ModelName != "label" || info.Model != "other-model" {
		t.Errorf("info = %+v", info)
	}
	if reqs := seen.get("d-l1-t0"); len(reqs) != 2 || reqs[0].Model != "test-model" || reqs[1].Model != "other-model" {
		t.Errorf("models requested: %d requests", len(reqs))
	}
	lines, _ := f.eng.PollLogs()
	for _, l := range lines {
		if strings.Contains(l, first) {
			t.Errorf("the second run's logs hold the first run's line %q", l)
		}
	}
	list, total, err := f.runs.List(ctx, 10, 0)
	if err != nil || total != 2 || len(list) != 2 || list[0].RunID != id || list[1].RunID != first {
		t.Errorf("history: %d %v %v", total, list, err)
	}
}
