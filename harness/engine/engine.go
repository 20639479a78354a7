package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/regexeval"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// EvalComplete is the log line that ends every run.
const EvalComplete = "EVAL_COMPLETE"

// MaxPoll is the most log lines one PollLogs returns.
const MaxPoll = 100

// Defaults of the model request bounds.
const (
	DefaultTimeout = 120 * time.Second
	DefaultRetries = 2
	// MaxTimeout and MaxRetries bound what a run may ask for.
	MaxTimeout = time.Hour
	MaxRetries = 10
	// MaxRepeats bounds how many times a run may ask each test.
	MaxRepeats = 100
)

// ErrNotRunning is returned by Stop when no run is active.
var ErrNotRunning = errors.New("no evaluation is running")

// Definitions gives the engine the definitions a run is made of. The
// catalog implements it.
type Definitions interface {
	Export(ctx context.Context) (*harness.Snapshot, error)
}

// TestSource is what Definitions also implements when its tests are too
// many to hold in memory at once (the catalog implements it): the engine
// then never asks for the whole snapshot, but for the definitions without
// their tests and then the tests, a page at a time, which it stores with
// the run as they come.
type TestSource interface {
	// Outline returns every definition but the tests (Tests is nil).
	Outline(ctx context.Context) (*harness.Snapshot, error)
	// EachTest calls fn with every test of a domain ("" for all) ordered
	// by domain, level and order in the level's file, and stops at fn's
	// first error, which it returns. fn may block: the source holds no
	// query open while it runs.
	EachTest(ctx context.Context, domainID string, fn func(harness.Test) error) error
}

// Agents gives the engine the agents a run may target (StartRequest.AgentID).
// *agent.Service implements it; the engine needs nothing else of the
// agent service.
type Agents interface {
	// EvalTarget returns an agent as an evaluation runs it, or an error
	// wrapping harness.ErrNotFound for an unknown agent.
	EvalTarget(ctx context.Context, agentID string) (*harness.AgentTarget, error)
}

// Options configure an Engine.
type Options struct {
	// Definitions and Runs are required.
	Definitions Definitions
	Runs        *runs.Store
	// Client answers the tests. Required.
	Client harness.ChatModel
	// Model is the endpoint model used when a run does not name one.
	Model string
	// BaseURL is the model endpoint's address, recorded in each run's
	// config with any credentials taken out.
	BaseURL string
	// Timeout bounds each model request of a run that sets none (default
	// DefaultTimeout); Retries is the number of retries of a failed model
	// request (default DefaultRetries; negative: none). Both are sent with
	// every request and recorded in the run's config.
	Timeout time.Duration
	Retries int
	// Version is the program's version, recorded in each run's config.
	Version string
	// Registry provides evaluator types and tool implementations; nil
	// means harness.NewRegistry(). The built-in regex evaluator is used
	// when the registry has none of that type.
	Registry *harness.Registry
	// Concurrency bounds the tests in flight within a run (default 8).
	Concurrency int
	// LogDir receives one log file per run, <run_id>.log; empty: none.
	LogDir string
	// MaxToolRounds bounds the tool-call rounds of one test (default 5).
	MaxToolRounds int
	// MaxResponseBytes is the largest reply a black-box target may send
	// (StartRequest.TargetID): that of a model's answer, for the same
	// reasons (default: the target client's, 4 MiB; negative: none).
	MaxResponseBytes int64
	// LogQueue is how many log lines wait for a poll before the oldest are
	// dropped (default 10,000).
	LogQueue int
	// OnEvent, when set, is called for every event of every run, from the
	// engine's goroutines, one event at a time, before the event goes to
	// subscribers; the run waits for it, sometimes with the engine's lock
	// held. It must return quickly and must not call the Engine's methods.
	// Subscribe, and a run's StartRequest.OnEvent, have neither limit.
	OnEvent func(Event)
	// Logger receives operational errors; nil means slog.Default().
	Logger *slog.Logger
	// Agents are the agents a run may evaluate; nil means none (a
	// StartRequest naming one is refused).
	Agents Agents
	// Queue, when set, sends the tests of each new run to worker processes
	// (see Queue); nil executes them in this process.
	Queue Queue
	// NoLocalWork, with Queue, says that this process executes no job:
	// runs that evaluate an agent, whose jobs only the process that
	// started them executes (QueuedJob.Local), are then refused.
	NoLocalWork bool
	// SimulatorModel is the model reference that plays simulated users
	// in runs that name none (StartRequest.SimulatorModel); empty: the
	// run's model.
	SimulatorModel string
	// Worker makes an engine that only executes the queued jobs of runs
	// another process started (Work): New leaves runs marked running as
	// they are, since their server is alive.
	Worker bool
}

// StartRequest starts a run.
type StartRequest struct {
	// ModelName labels the run (default "default").
	ModelName string
	// Model overrides the endpoint model for this run (Options.Model).
	Model string
	// AgentID, when set, makes the run evaluate that agent (of
	// Options.Agents) instead of the bare model: each test's prompt goes
	// through the agent's pipeline, as a chat with it would (its system
	// prompt with the knowledge-base text retrieved for the prompt, its
	// tools before the test's own, its model), in a conversation of its
	// own that is not stored. The domain's and level's system prompts are
	// not used: the agent's is what is under test. The level's sampling
	// parameters and the test's evaluator apply as usual. The label
	// defaults to the agent's name, and the run's config records the agent
	// id and its definition. An unknown agent, or Model set too (the agent
	// decides its model), is an error wrapping harness.ErrInvalid naming
	// agent_id or model.
	AgentID string
	// TargetID, when set, makes the run evaluate that black-box target
	// (a definition of Options.Definitions, which must implement
	// TargetSource) instead of a model: every user turn of every test
	// (multi-turn and simulated ones included) is sent to its URL with
	// the conversation so far, and its reply's answer is scored. The
	// level's system prompts and tools are not used; the run's model
	// still plays judges and simulated users. The label defaults to the
	// target's id, and the run's config records the target's id and its
	// definition (${VAR} references as written). An unknown target, one
	// whose environment variables are not set, or AgentID, Model or
	// Cache set too, is an error wrapping harness.ErrInvalid naming the
	// field.
	TargetID string
	// Domains to run; nil means every enabled domain.
	Domains []string
	// Timeout bounds each model request of this run (0: Options.Timeout).
	Timeout time.Duration
	// Retries, when not nil, is the number of retries of a failed model
	// request in this run (default Options.Retries).
	Retries *int
	// Params are the sampling parameters of every model request of this
	// run. They override a level's defaults (LevelConfig.Params) field by
	// field, and are recorded in the run's configuration. Out of range:
	// an error wrapping harness.ErrInvalid naming params.<field>.
	Params harness.Params
	// Repeats is how many times each test is asked (1 to MaxRepeats; 0
	// means 1). Each asking is a sample with a result of its own, numbered
	// by runs.Result.Repeat from 0; the run's and the cells' counts
	// (TotalTests, DoneTests, Cell.Tests, Cell.Done…) count samples, tests
	// × repeats, so that done = passed + failed + errors holds. Out of
	// range: an error wrapping harness.ErrInvalid naming repeats.
	Repeats int
	// Stream asks for every model request's answer as a stream, so that
	// each result records the time to its first token (ttft_ms).
	Stream bool
	// Cache answers each model request of the run's tests that is
	// identical to one made before (same endpoint, model, messages, tools,
	// sampling parameters and repeat) from the response cache in the runs
	// store, and stores each new successful answer there. runs.Info's
	// CacheHits counts the requests so answered. A judge is never cached.
	Cache bool
	// RescoreFrom, when set, makes the run a rescore of that stored run:
	// no model is asked (but a judge, through EvalRequest.Client); the
	// source's stored responses are scored again with today's evaluators
	// and expected answers, into a new run whose runs.Info.RescoredFrom
	// names the source. The model, domains, repeats and sampling
	// parameters are the source's: Model, Domains, Repeats, Params,
	// Timeout, Retries and Cache must be left unset (harness.ErrInvalid
	// otherwise); ModelName labels the new run (default the source's
	// label). See Engine.Rescore.
	RescoreFrom string
	// MaxCostUSD, when positive, is the run's budget in US dollars: once
	// the cost of its stored results (CostUSD of runs.Info, judges'
	// calls included) reaches it, no new model request is sent, the
	// tests in flight finish or are left not done, and the run ends
	// stopped with runs.Info.Error naming the budget. Only priced calls
	// count (see runs.Config.Pricing). Negative: harness.ErrInvalid.
	MaxCostUSD float64
	// SimulatorModel is the model reference that plays the simulated
	// users (harness.Test.SimulatedUser) of tests that name none
	// (default Options.SimulatorModel, else the run's model). It is
	// recorded in the run's config, so that a resume and the workers use
	// it too.
	SimulatorModel string
	// OnEvent, when set, receives this run's events, from EventRunStarted
	// to EventRunFinished, in order, on a goroutine of its own: a slow
	// OnEvent never holds up the run. When it falls more than
	// DefaultEventBuffer events behind, the oldest waiting ones are
	// discarded (see Subscribe); the last, EventRunFinished, always comes.
	// Run returns after OnEvent has handled it.
	OnEvent func(Event)
}

// Engine runs one evaluation at a time.
type Engine struct {
	opts  Options
	log   *slog.Logger
	regex harness.Evaluator
	logs  *logQueue
	// eventMu serialises events and guards subs.
	eventMu sync.Mutex
	subs    map[*subscriber]struct{}
	// running counts the runs whose goroutines have not returned: after a
	// Reset, a run's calls may outlive it.
	running sync.WaitGroup

	mu      sync.Mutex
	current *run
	lastRun string

	work workRuns // the runs whose queued jobs this engine executes
}

// New returns an engine and marks runs left "running" by a process that
// died as "interrupted".
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Definitions == nil || opts.Runs == nil || opts.Client == nil {
		return nil, errors.New("engine: Definitions, Runs and Client are required")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.MaxToolRounds <= 0 {
		opts.MaxToolRounds = 5
	}
	if opts.LogQueue <= 0 {
		opts.LogQueue = 10000
	}
	if opts.Registry == nil {
		opts.Registry = harness.NewRegistry()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Retries == 0 {
		opts.Retries = DefaultRetries
	}
	opts.Retries = max(opts.Retries, 0)
	opts.BaseURL = harness.RedactURL(opts.BaseURL)
	e := &Engine{opts: opts, log: opts.Logger, regex: regexeval.New(regexeval.Options{}), logs: newLogQueue(opts.LogQueue)}
	if e.log == nil {
		e.log = slog.Default()
	}
	if opts.Worker {
		return e, nil
	}
	ids, err := opts.Runs.MarkInterruptedRuns(ctx)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		e.log.Warn("runs left running by a previous process marked interrupted", slog.Int("runs", len(ids)))
		e.noteInterrupted(ctx, ids)
	}
	if opts.Queue != nil {
		// Their jobs would otherwise stay in the queue for workers to
		// execute, each result refused (the run has ended).
		for _, id := range ids {
			if err := opts.Queue.Cancel(ctx, id); err != nil {
				return nil, fmt.Errorf("cancel the jobs of interrupted run %s: %w", id, err)
			}
		}
	}
	if last, err := opts.Runs.Last(ctx); err == nil {
		e.lastRun = last.RunID
	}
	return e, nil
}

// Status is the engine's state, as GET /api/status reports it.
type Status struct {
	Status        string  `json:"status"` // idle, running
	RunID         *string `json:"run_id"`
	CurrentDomain *string `json:"current_domain"`
	CurrentLevel  *int    `json:"current_level"`
	Progress      int     `json:"progress"` // Tests finished.
	TotalTests    int     `json:"total_tests"`
	ModelName     *string `json:"model_name"`
	LastRunID     *string `json:"last_run_id"` // The most recent run, running or finished.
	// Preparing: the run is being prepared (its definitions stored, its
	// cells and jobs recorded) and has not started its first test;
	// TotalTests is 0 until it is prepared.
	Preparing bool `json:"preparing"`
	// RateLimit is the rate-limit state toward each provider of the
	// model client, by provider name; nil when the client reports none
	// (harness.RateLimitReporter). It is the client's, so it is there
	// when idle too.
	RateLimit map[string]harness.RateLimitState `json:"rate_limit"`
}

// Status reports what the engine is doing.
func (e *Engine) Status() Status {
	e.mu.Lock()
	r, last := e.current, e.lastRun
	e.mu.Unlock()
	st := Status{Status: "idle", RateLimit: e.rateLimits()}
	if last != "" {
		st.LastRunID = &last
	}
	if r == nil {
		return st
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, label := r.info.RunID, r.info.ModelName
	st.Status, st.RunID, st.ModelName = "running", &id, &label
	st.Progress, st.TotalTests, st.Preparing = r.total.done, r.info.TotalTests, r.preparing
	if r.currentDomain != "" {
		d, l := r.currentDomain, r.currentLevel
		st.CurrentDomain, st.CurrentLevel = &d, &l
	}
	return st
}

// LiveMatrix is the matrix of the current run, or of the last run when
// the engine is idle.
type LiveMatrix struct {
	Domains   runs.Matrix `json:"domains"`
	RunID     *string     `json:"run_id"`
	ModelName *string     `json:"model_name"`
	Status    string      `json:"status"` // The run's status, or idle when there has been no run.
}

// Matrix returns the live matrix.
func (e *Engine) Matrix(ctx context.Context) (LiveMatrix, error) {
	e.mu.Lock()
	r, last := e.current, e.lastRun
	e.mu.Unlock()
	if r != nil {
		return r.matrix(), nil
	}
	if last == "" {
		return LiveMatrix{Domains: runs.Matrix{}, Status: "idle"}, nil
	}
	info, err := e.opts.Runs.Run(ctx, last)
	if errors.Is(err, harness.ErrNotFound) {
		return LiveMatrix{Domains: runs.Matrix{}, Status: "idle"}, nil
	}
	if err != nil {
		return LiveMatrix{}, err
	}
	m, err := e.opts.Runs.Matrix(ctx, last)
	if err != nil {
		return LiveMatrix{}, err
	}
	return LiveMatrix{Domains: m, RunID: &info.RunID, ModelName: &info.ModelName, Status: info.Status}, nil
}

// PollLogs drains up to MaxPoll pending log lines and reports whether a
// run is active.
func (e *Engine) PollLogs() (lines []string, running bool) {
	return e.logs.drain(MaxPoll), e.Running()
}

// ReadLogs returns up to MaxPoll log lines of the current (or last) run
// that come after the line numbered after, without taking them from
// other readers, and the number of the last line returned: the after of
// the next call. Start with 0. Each reader that follows the log this way
// sees every line, however many there are; a reader that falls more than
// Options.LogQueue lines behind gets a line saying how many it missed.
func (e *Engine) ReadLogs(after uint64) (lines []string, cursor uint64, running bool) {
	lines, cursor = e.logs.read(after, MaxPoll)
	return lines, cursor, e.Running()
}

// ReadLogTail is ReadLogs for a reader that wants the recent end of the
// log rather than all of it: when more than n lines follow after, it
// skips to the newest n, preceded by one line saying how many it left
// out (that line has the form of the others). It returns at most n+1
// lines and the cursor of the last one. A reader opening a long log
// catches up in one call.
func (e *Engine) ReadLogTail(after uint64, n int) (lines []string, cursor uint64, running bool) {
	lines, cursor = e.logs.tail(after, n)
	return lines, cursor, e.Running()
}

// Running reports whether a run is active.
func (e *Engine) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current != nil
}

func newRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// job is one asking of one test of a run (one sample), with what it
// needs to run.
type job struct {
	test         harness.Test
	repeat       int // which asking of the test, from 0
	cell         *cell
	systemPrompt string
	tools        []harness.ToolDefinition
	evaluator    harness.EvaluatorConfig
	params       harness.Params // the level's default sampling parameters
	stored       *runs.Result   // a rescore's source result: scored again, no model asked
}

// producer gives a run its jobs in order, one at a time: it calls yield
// with each, and stops (returning nil) when yield returns false. A run's
// jobs are never all in memory: they are made as the workers take them.
type producer func(ctx context.Context, yield func(*job) bool) error

// errStopped ends a producer's walk of the tests when yield said stop.
var errStopped = errors.New("the run took no more jobs")

// planned is a run's plan: the selected domains in order, the cells
// (levels ascending in each domain) with how many samples each holds, and
// what a test's job needs besides the test. The tests themselves are read
// as the run goes (produce).
type planned struct {
	domains    []string
	cells      []*cell
	cellOf     map[cellKey]*cell
	byID       map[string]harness.Domain
	levels     map[cellKey]harness.LevelConfig
	evaluators map[string]harness.EvaluatorConfig
	tools      map[string]harness.ToolDefinition
	repeats    int
	samples    int // tests × repeats over every cell
}

// selectDomains returns the domains a run covers: those given, in the
// given order without repeats (an unknown one is an error naming
// domains[i]), or every enabled domain by id when nil.
func selectDomains(outline *harness.Snapshot, domains []string) ([]string, error) {
	known := map[string]bool{}
	for _, d := range outline.Domains {
		known[d.ID] = true
	}
	if domains == nil {
		for _, d := range outline.Domains {
			if d.Enabled {
				domains = append(domains, d.ID)
			}
		}
		return domains, nil
	}
	ve := &harness.ValidationError{}
	seen := map[string]bool{}
	var uniq []string
	for i, id := range domains {
		if !known[id] {
			ve.Add("domains["+strconv.Itoa(i)+"]", "unknown domain %q", id)
		}
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	if err := ve.Err(); err != nil {
		return nil, err
	}
	return uniq, nil
}

// plan makes the plan of a run from its definitions without their tests
// (outline) and how many tests each level holds: the selected domains in
// the given order (all enabled ones by id when nil), levels ascending,
// tests in file order, each test's repeats (at least 1) one after
// another. A cell's tests count samples: its tests × repeats.
func plan(outline *harness.Snapshot, counts map[string]map[int]int, domains []string, repeats int) (*planned, error) {
	repeats = max(repeats, 1)
	domains, err := selectDomains(outline, domains)
	if err != nil {
		return nil, err
	}
	p := &planned{domains: domains, cellOf: map[cellKey]*cell{}, byID: map[string]harness.Domain{},
		levels: map[cellKey]harness.LevelConfig{}, evaluators: map[string]harness.EvaluatorConfig{},
		tools: map[string]harness.ToolDefinition{}, repeats: repeats}
	for _, d := range outline.Domains {
		p.byID[d.ID] = d
	}
	for _, l := range outline.Levels {
		p.levels[cellKey{l.DomainID, l.Level}] = l
	}
	for _, ev := range outline.Evaluators {
		p.evaluators[ev.ID] = ev
	}
	for _, t := range outline.Tools {
		p.tools[t.ID] = t
	}
	for _, id := range domains {
		lvls := slices.Sorted(maps.Keys(counts[id]))
		for _, l := range lvls {
			k := cellKey{id, l}
			lc, ok := p.levels[k]
			if !ok {
				lc = harness.LevelConfig{DomainID: id, Level: l, SystemPromptMode: harness.PromptAppend, PassThreshold: harness.DefaultPassThreshold}
				p.levels[k] = lc
			}
			c := &cell{domain: id, level: l, threshold: lc.PassThreshold, tests: counts[id][l] * repeats, status: runs.CellPending}
			p.cells = append(p.cells, c)
			p.cellOf[k] = c
			p.samples += c.tests
		}
	}
	return p, nil
}

// job returns the job of a test of the plan (repeat 0).
func (p *planned) job(t harness.Test, c *cell) job {
	d := p.byID[t.DomainID]
	lc := p.levels[cellKey{t.DomainID, t.Level}]
	j := job{test: t, cell: c, systemPrompt: harness.EffectiveSystemPrompt(d.SystemPrompt, lc)}
	if lc.Params != nil {
		j.params = *lc.Params
	}
	for _, tid := range append(slices.Clone(lc.Tools), t.Tools...) {
		if td, ok := p.tools[tid]; ok && !slices.ContainsFunc(j.tools, func(x harness.ToolDefinition) bool { return x.ID == tid }) {
			j.tools = append(j.tools, td)
		}
	}
	evID := t.EvaluatorID
	if evID == "" {
		evID = d.EvaluatorID
	}
	if ev, ok := p.evaluators[evID]; ok {
		j.evaluator = ev
	} else {
		j.evaluator = harness.EvaluatorConfig{Type: harness.EvaluatorTypeRegex}
	}
	return j
}

// produce returns the producer of the plan's jobs, reading the tests of
// the stored definitions set hash domain by domain, a page at a time.
// done, when not nil, is asked once per cell, as the run reaches it, for
// the samples that already have a result (a resumed run): those are
// skipped.
func (p *planned) produce(rs *runs.Store, hash string, done func(ctx context.Context, c *cell) (map[runs.ResultKey]bool, error)) producer {
	return func(ctx context.Context, yield func(*job) bool) error {
		for _, d := range p.domains {
			var cur *cell
			var skip map[runs.ResultKey]bool
			err := rs.EachDefinitionTest(ctx, hash, d, func(t harness.Test) error {
				c := p.cellOf[cellKey{t.DomainID, t.Level}]
				if c == nil {
					return nil
				}
				if c != cur && done != nil {
					var err error
					if skip, err = done(ctx, c); err != nil {
						return err
					}
				}
				cur = c
				base := p.job(t, c)
				for k := range p.repeats {
					if skip[runs.ResultKey{TestID: t.ID, Repeat: k}] {
						continue
					}
					j := base
					j.repeat = k
					if !yield(&j) {
						return errStopped
					}
				}
				return nil
			})
			if errors.Is(err, errStopped) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// Start begins a run and returns its id at once; the run goes on in the
// background. A run already active is an error wrapping
// harness.ErrConflict; unknown domains, a run with no tests or bounds out
// of range wrap harness.ErrInvalid.
//
// The run lives until it ends, Stop or Reset ends it, or ctx is done:
// cancelling ctx stops the run as Stop does (status stopped, finished
// results kept). A caller whose ctx ends before the run should (an HTTP
// handler's request context, say) passes context.WithoutCancel(ctx) or a
// context of the program's lifetime. The run's calls see ctx's values.
//
// The definitions the run uses are stored with it (once per distinct
// content), so that the run can be understood and resumed after the
// files change. Storing them, with the run's cells and (with a queue) its
// jobs, is the run's preparation, which its own goroutine does after
// Start returned: Start reads no more of the definitions than their
// outline and their tests' counts (TestCounter), so it answers at once
// whatever the size of the suite. The run is active from the moment
// Start accepts it: Status says Preparing until its first test, a stop
// or reset ends it as usual, and a failure to prepare it stops it with
// the reason in runs.Info.Error. EventRunStarted comes once it is
// prepared (with its TotalTests), or just before the end of a run that
// ended first.
func (e *Engine) Start(ctx context.Context, req StartRequest) (string, error) {
	r, err := e.start(ctx, req)
	if err != nil {
		return "", err
	}
	return r.info.RunID, nil
}

// Run starts a run as Start does and waits for it to end. It returns the
// run's final info: its status, counts and score (see runs.Info; Complete
// says whether every test finished with none in error, Error why a run
// that the caller did not stop was stopped).
//
// Cancelling ctx stops the run as Stop does: requests in flight are
// cancelled and leave no result, finished results are kept, the status is
// stopped. Run then returns the final info with ctx.Err(). The error is
// otherwise nil whenever the run started, however it ended (completed,
// stopped by Stop or by a failing endpoint, aborted by Reset): read
// info.Status and info.Complete. An error with an empty info means the
// run did not start, for the reasons Start gives.
//
// With req.OnEvent set, Run returns after OnEvent has handled the run's
// EventRunFinished.
func (e *Engine) Run(ctx context.Context, req StartRequest) (runs.Info, error) {
	r, err := e.start(ctx, req)
	if err != nil {
		return runs.Info{}, err
	}
	<-r.over
	<-r.delivered
	r.mu.Lock()
	byCtx := r.ctxStopped
	r.mu.Unlock()
	if byCtx {
		return r.final, ctx.Err()
	}
	return r.final, nil
}

// start begins a run and returns it.
func (e *Engine) start(ctx context.Context, req StartRequest) (*run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.RescoreFrom != "" {
		return e.startRescore(ctx, req)
	}
	timeout, retries, err := e.bounds(req.Timeout, req.Retries, req.Params, req.Repeats)
	if err != nil {
		return nil, err
	}
	if req.MaxCostUSD < 0 || math.IsNaN(req.MaxCostUSD) {
		return nil, harness.Invalid("max_cost_usd", "must be 0 (no budget) or more; got %v", req.MaxCostUSD)
	}
	repeats := max(req.Repeats, 1)
	target, err := e.agentTarget(ctx, req)
	if err != nil {
		return nil, err
	}
	boxDef, box, err := e.startTarget(ctx, req)
	if err != nil {
		return nil, err
	}
	if box != nil && req.Cache {
		return nil, harness.Invalid("cache", "a black-box target's answers are not cached: it may answer the same request differently")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current != nil {
		return nil, fmt.Errorf("run %s is active; stop it first: %w", e.current.info.RunID, harness.ErrConflict)
	}
	// What can be refused is checked now; the definitions are stored
	// with the run by its preparation (prepare.go), and the run then
	// reads its tests from there, a page at a time, so that what it runs
	// is what it stored whatever happens to the files meanwhile.
	acc, err := e.accept(ctx, req.Domains, repeats)
	if err != nil {
		return nil, err
	}
	label := req.ModelName
	model := req.Model
	if target != nil {
		model = target.Model
		if label == "" {
			label = target.Definition.Name
		}
		if label == "" {
			label = target.Definition.ID
		}
	}
	if boxDef != nil && label == "" {
		label = boxDef.ID
	}
	if label == "" {
		label = "default"
	}
	if model == "" {
		model = e.opts.Model
	}
	var provider, kind, baseURL string
	if boxDef != nil {
		// The target is what answers; the run's model (judges, simulated
		// users) is the engine's.
		baseURL = boxDef.URL
	} else {
		provider, kind, baseURL = e.endpoint(model)
		if mr, ok := e.opts.Client.(harness.ModelRouter); ok {
			if err := mr.Check(model); err != nil {
				return nil, harness.Invalid("model", "%v", err)
			}
		}
	}
	simulator, err := e.simulatorModel(req.SimulatorModel)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	info := runs.Info{
		RunID: newRunID(now), StartedAt: now.UTC().Format(harness.TimeLayout), ModelName: label, Model: model,
		Status: runs.StatusRunning, Domains: acc.domains,
		Config: &runs.Config{
			Model: model, BaseURL: baseURL, Provider: provider, ProviderKind: kind, Concurrency: e.opts.Concurrency,
			TimeoutS: timeout.Seconds(), Retries: retries, Repeats: repeats, Params: req.Params.Map(),
			GauntletVersion: e.opts.Version, Cache: req.Cache, Stream: req.Stream, MaxCostUSD: req.MaxCostUSD,
			SimulatorModel: simulator,
		},
	}
	if target != nil {
		def := target.Definition
		info.Config.AgentID, info.Config.Agent = def.ID, &def
	}
	if boxDef != nil {
		info.Config.TargetID, info.Config.Target = boxDef.ID, boxDef
	}
	// Recorded with no tests and no cells until it is prepared.
	if err := e.opts.Runs.CreateRun(ctx, info, nil); err != nil {
		return nil, err
	}
	r := e.newRun(ctx, info, now, nil, nil, timeout, retries)
	r.first = acc.first
	if p := acc.plan; p != nil {
		// Shown while the run is prepared: its size and cells as the
		// definitions are now.
		r.info.TotalTests, r.cells, r.cellOf = p.samples, p.cells, p.cellOf
	}
	r.queued = e.opts.Queue != nil
	r.params = req.Params
	r.stream = req.Stream
	r.budget.max = req.MaxCostUSD
	r.agent = target
	r.box = box
	r.simulator = simulator
	if req.Cache {
		r.cache = &responseCache{}
	}
	r.preparing = true
	r.prepare = func(ctx context.Context) error { return e.prepareStart(ctx, r, acc, repeats) }
	e.begin(r, req.OnEvent)
	r.launch(ctx)
	return r, nil
}

// agentTarget returns the agent a run request targets, nil for a run of
// the bare model.
func (e *Engine) agentTarget(ctx context.Context, req StartRequest) (*harness.AgentTarget, error) {
	if req.AgentID == "" {
		return nil, nil
	}
	if req.Model != "" {
		return nil, harness.Invalid("model", "cannot be given with agent_id: the agent decides its model")
	}
	if e.opts.Agents == nil {
		return nil, harness.Invalid("agent_id", "this engine has no agents to evaluate")
	}
	if e.opts.Queue != nil && e.opts.NoLocalWork {
		return nil, harness.Invalid("agent_id", "a run that evaluates an agent is executed by the server itself "+
			"(its knowledge base and tools are the server's), and this server executes no test (--no-local-worker)")
	}
	t, err := e.opts.Agents.EvalTarget(ctx, req.AgentID)
	if errors.Is(err, harness.ErrNotFound) {
		return nil, harness.Invalid("agent_id", "unknown agent %q", req.AgentID)
	}
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", req.AgentID, err)
	}
	return t, nil
}

// bounds checks a run's request bounds, sampling parameters and repeats,
// and fills in the defaults.
func (e *Engine) bounds(timeout time.Duration, retries *int, params harness.Params, repeats int) (time.Duration, int, error) {
	ve := &harness.ValidationError{}
	if repeats < 0 || repeats > MaxRepeats {
		ve.Add("repeats", "must be between 1 and %d", MaxRepeats)
	}
	ve.Merge("params", params.Validate())
	if timeout < 0 || timeout > MaxTimeout {
		ve.Add("timeout_s", "must be between 0 and %v seconds", MaxTimeout.Seconds())
	}
	if timeout == 0 {
		timeout = e.opts.Timeout
	}
	n := e.opts.Retries
	if retries != nil {
		if *retries < 0 || *retries > MaxRetries {
			ve.Add("retries", "must be between 0 and %d", MaxRetries)
		}
		n = *retries
	}
	return timeout, n, ve.Err()
}

// newRun builds a run's live state. Its calls see the values of ctx, not
// its cancellation: launch ties the two.
func (e *Engine) newRun(ctx context.Context, info runs.Info, now time.Time, cells []*cell, jobs producer, timeout time.Duration, retries int) *run {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &run{
		e: e, info: info, started: now, cells: cells, produce: jobs, ctx: runCtx, cancel: cancel,
		done_: make(chan struct{}), over: make(chan struct{}), delivered: make(chan struct{}),
		cellOf: map[cellKey]*cell{}, timeout: timeout, retries: retries,
	}
	for _, c := range cells {
		r.cellOf[cellKey{c.domain, c.level}] = c
	}
	if len(cells) > 0 {
		r.first = cellKey{cells[0].domain, cells[0].level}
	}
	return r
}

// begin makes r the current run: its log file is opened (appended to, for
// a resumed run), the poll queue cleared, onEvent (the request's, may be
// nil) subscribed to its events, and EventRunStarted sent, unless the
// run is being prepared (its preparation sends it). e.mu must be held.
func (e *Engine) begin(r *run, onEvent func(Event)) {
	if e.opts.LogDir != "" {
		if err := os.MkdirAll(e.opts.LogDir, 0o755); err == nil {
			r.logFile, _ = os.OpenFile(e.logPath(r.info.RunID), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		}
	}
	e.current, e.lastRun = r, r.info.RunID
	e.logs.clear()
	r.reported = r.total.done
	if onEvent != nil {
		r.own = e.subscribe(r.info.RunID, 0)
		go deliver(r.own, onEvent, r.delivered)
	} else {
		close(r.delivered)
	}
	if !r.preparing {
		r.sendStarted()
	}
}

// Resume runs again, into the same run and with the definitions and
// repeats the run stored when it started, every sample (test and repeat)
// of a finished run that has no result or ended in error: a stopped, interrupted or aborted run, or one whose
// endpoint failed. The errors' results are replaced; passed and failed
// results are kept, never duplicated. The run is running again and ends
// as any run does; as with Start, it lives until then, Stop or Reset, or
// until ctx is done (which stops it). Subscribe with the run's id to get
// its events.
//
// Errors: harness.ErrConflict while a run is active, harness.ErrNotFound
// for an unknown run, harness.ErrInvalid when nothing is left to run or
// the run stored no definitions (it was made by an older version).
func (e *Engine) Resume(ctx context.Context, runID string) error {
	return e.ResumeWith(ctx, runID, ResumeOptions{})
}

// ResumeWith is Resume with options: a new budget.
func (e *Engine) ResumeWith(ctx context.Context, runID string, opts ResumeOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if opts.MaxCostUSD < 0 || math.IsNaN(opts.MaxCostUSD) {
		return harness.Invalid("max_cost_usd", "must be 0 (no budget) or more; got %v", opts.MaxCostUSD)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current != nil {
		return fmt.Errorf("run %s is active; stop it first: %w", e.current.info.RunID, harness.ErrConflict)
	}
	info, err := e.opts.Runs.Run(ctx, runID)
	if err != nil {
		return err
	}
	if info.Status == runs.StatusRunning {
		return fmt.Errorf("run %s is running in another process: %w", runID, harness.ErrConflict)
	}
	if info.RescoredFrom != "" {
		return harness.Invalid("run_id", "run %s is a rescore of run %s, which asks no model: rescore %s again instead", runID, info.RescoredFrom, info.RescoredFrom)
	}
	if runs.Unprepared(info) {
		return harness.Invalid("run_id", "run %s ended (%s) before its tests were prepared: it ran none, so there is nothing to resume; start a new run", runID, info.Status)
	}
	if info.Config == nil || info.Config.DefinitionsHash == "" {
		return harness.Invalid("run_id", "run %s recorded no definitions (it was made by an older version), so it cannot be resumed", runID)
	}
	hash := info.Config.DefinitionsHash
	outline, sizes, err := e.opts.Runs.DefinitionsOutline(ctx, hash)
	if errors.Is(err, harness.ErrNotFound) {
		return harness.Invalid("run_id", "run %s recorded no definitions (it was made by an older version), so it cannot be resumed", runID)
	}
	if err != nil {
		return err
	}
	repeats := max(info.Config.Repeats, 1)
	p, err := plan(outline, sizes, info.Domains, repeats)
	if err != nil {
		return fmt.Errorf("resume run %s: %w", runID, err)
	}
	// What is kept is counted by the store: every result that is not an
	// error (a resumed run deletes those and runs them again).
	st, err := e.opts.Runs.Stats(ctx, runID)
	if err != nil {
		return err
	}
	left := p.samples - st.StatusCounts[runs.TestPassed] - st.StatusCounts[runs.TestFailed]
	if left <= 0 {
		return harness.Invalid("run_id", "run %s has nothing left to run: every test has a result that is not an error", runID)
	}
	timeout, retries := e.opts.Timeout, e.opts.Retries
	var params harness.Params
	if c := info.Config; c != nil {
		timeout, retries = time.Duration(c.TimeoutS*float64(time.Second)), c.Retries
		if params, err = harness.ParamsFromMap(c.Params); err != nil {
			return fmt.Errorf("resume run %s: %w", runID, err)
		}
	}
	target, changed, err := e.resumeTarget(ctx, info)
	if err != nil {
		return err
	}
	box, err := e.resumeBox(info)
	if err != nil {
		return err
	}
	// Jobs a stop left running would write into the reopened run.
	if err := e.quietJobs(ctx, runID); err != nil {
		return err
	}
	// The resume's budget replaces the run's (none without one).
	if err := e.opts.Runs.SetMaxCost(ctx, runID, opts.MaxCostUSD); err != nil {
		return err
	}
	reopened, err := e.opts.Runs.ReopenRun(ctx, runID)
	if err != nil {
		return err
	}
	now := time.Now()
	done := func(ctx context.Context, c *cell) (map[runs.ResultKey]bool, error) {
		keys, err := e.opts.Runs.ResultKeys(ctx, runID, c.domain, c.level)
		if err != nil {
			return nil, err
		}
		set := make(map[runs.ResultKey]bool, len(keys))
		for _, k := range keys {
			set[k] = true
		}
		return set, nil
	}
	r := e.newRun(ctx, reopened, now, p.cells, p.produce(e.opts.Runs, hash, done), timeout, retries)
	r.params = params
	r.agent = target
	r.box = box
	r.stream = info.Config != nil && info.Config.Stream
	if c := info.Config; c != nil {
		r.simulator = c.SimulatorModel
	}
	r.budget.max = opts.MaxCostUSD
	if c := info.Config; c != nil && c.Cache {
		r.cache = &responseCache{}
	}
	r.priorMS = info.TotalDurationMS
	// Until its preparation read the results kept, the run shows their
	// number.
	passed, failed := st.StatusCounts[runs.TestPassed], st.StatusCounts[runs.TestFailed]
	r.total = counts{done: passed + failed, passed: passed, failed: failed}
	r.preparing = true
	note := fmt.Sprintf("resume %d, after it ended %s%s", reopened.Resumed.Count, info.Status, errorNote(info.Error))
	r.prepare = func(ctx context.Context) error { return e.prepareResume(ctx, r, note, left, p.samples, changed) }
	e.begin(r, nil)
	r.launch(ctx)
	return nil
}

// resumeTarget returns the agent a run being resumed evaluated (nil for a
// run of the bare model), as it is now, and what changed in it since the
// run started. An agent deleted since is an error wrapping
// harness.ErrInvalid naming run_id.
func (e *Engine) resumeTarget(ctx context.Context, info runs.Info) (*harness.AgentTarget, []string, error) {
	c := info.Config
	if c == nil || c.AgentID == "" {
		return nil, nil, nil
	}
	if e.opts.Agents == nil {
		return nil, nil, harness.Invalid("run_id", "run %s evaluated agent %s, and this engine has no agents", info.RunID, c.AgentID)
	}
	t, err := e.opts.Agents.EvalTarget(ctx, c.AgentID)
	if errors.Is(err, harness.ErrNotFound) {
		return nil, nil, harness.Invalid("run_id", "run %s evaluated agent %s, which no longer exists", info.RunID, c.AgentID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("resume run %s: agent %s: %w", info.RunID, c.AgentID, err)
	}
	var changed []string
	if c.Agent != nil {
		changed = c.Agent.Changes(t.Definition)
	}
	return t, changed, nil
}

func (e *Engine) logPath(runID string) string { return filepath.Join(e.opts.LogDir, runID+".log") }

// Stop cancels the active run: requests in flight are cancelled, finished
// results are kept, cells not reached are skipped. It waits (up to wait)
// for the run to wind down. With no active run it returns ErrNotRunning.
func (e *Engine) Stop(wait time.Duration) (string, error) {
	e.mu.Lock()
	r := e.current
	e.mu.Unlock()
	if r == nil {
		return "", ErrNotRunning
	}
	r.stop(runs.StatusStopped)
	select {
	case <-r.done_:
	case <-time.After(wait):
	}
	return r.info.RunID, nil
}

// Reset puts the engine back to idle at once, whatever it was doing. An
// active run is cancelled and recorded as aborted; its finished results
// are kept. It returns the aborted run's id, if any.
func (e *Engine) Reset() string {
	e.mu.Lock()
	r := e.current
	e.current = nil
	e.mu.Unlock()
	if r == nil {
		return ""
	}
	r.stop(runs.StatusAborted)
	r.untie()
	// Record and announce the abort now: the run's goroutines record it
	// again when they return, but a call that ignores cancellation may
	// never return.
	info := r.end()
	r.logRun("engine reset: run %s aborted", r.info.RunID)
	r.finishLog()
	r.announce(info)
	return r.info.RunID
}

// DeleteRun deletes a stored run, its results, cells and log file. The
// active run cannot be deleted (harness.ErrConflict).
func (e *Engine) DeleteRun(ctx context.Context, id string) error {
	e.mu.Lock()
	if e.current != nil && e.current.info.RunID == id {
		e.mu.Unlock()
		return fmt.Errorf("run %s is active; stop it first: %w", id, harness.ErrConflict)
	}
	e.mu.Unlock()
	if err := e.opts.Runs.Delete(ctx, id); err != nil {
		return err
	}
	if e.opts.LogDir != "" {
		if err := os.Remove(e.logPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			e.log.Warn("remove run log", slog.String("run", id), slog.Any("error", err))
		}
	}
	e.mu.Lock()
	if e.lastRun == id {
		e.lastRun = ""
		if last, err := e.opts.Runs.Last(ctx); err == nil {
			e.lastRun = last.RunID
		}
	}
	e.mu.Unlock()
	return nil
}

// LogFile returns the path of a run's log file ("" without a LogDir).
func (e *Engine) LogFile(runID string) string {
	if e.opts.LogDir == "" {
		return ""
	}
	return e.logPath(runID)
}

// evaluatorFor returns the implementation of an evaluator type.
func (e *Engine) evaluatorFor(typ string) (harness.Evaluator, bool) {
	if ev, ok := e.opts.Registry.Evaluator(typ); ok {
		return ev, true
	}
	if typ == harness.EvaluatorTypeRegex || typ == "" {
		return e.regex, true
	}
	return nil, false
}

// endpoint returns where the client sends a model reference: the
// provider's name, kind and base URL when the client routes references
// (harness.ModelRouter), else no provider and the engine's BaseURL.
func (e *Engine) endpoint(model string) (provider, kind, baseURL string) {
	if mr, ok := e.opts.Client.(harness.ModelRouter); ok {
		provider, kind, baseURL = mr.Endpoint(model)
		if provider == "" {
			// The default endpoint: as the engine was told, so that the
			// runs and cache keys made before providers stay the same.
			kind, baseURL = "", e.opts.BaseURL
		}
		return provider, kind, harness.RedactURL(baseURL)
	}
	return "", "", e.opts.BaseURL
}
