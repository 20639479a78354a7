package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// Starting a run answers at once, whatever the size of its suite: what
// can be refused (bounds, unknown domains, no test at all, another run
// active) is checked from the definitions' outline, the run is recorded
// running with no cells, and the rest (storing its definitions test by
// test, its plan, its cells and, with a queue, its jobs) is its
// preparation, done by the run's own goroutine before it executes its
// first test. Meanwhile Status says Preparing; a stop or reset ends the
// run as usual (nothing ran, nothing is lost); a failure ends it stopped
// with the reason in runs.Info.Error. A process that dies meanwhile
// leaves a run that ran nothing (runs.Unprepared), which Resume refuses.

// TestCounter is what Definitions may also implement (the catalog
// does): how many tests each level of each domain holds, by domain id and
// level, read without the tests. A run being prepared then shows its
// size and cells at once.
type TestCounter interface {
	CountTests(ctx context.Context) (map[string]map[int]int, error)
}

// accepted is what a run's start checked before accepting it.
type accepted struct {
	outline *harness.Snapshot // the definitions without their tests
	snap    *harness.Snapshot // the whole definitions, when they are not a TestSource
	asked   []string          // the domains the request gave (nil: every enabled one)
	domains []string          // the run's domains, in order
	first   cellKey           // the run's first cell: its first domain with tests, that domain's lowest level
	// plan is the run's plan from the definitions as they are now, nil
	// when their tests cannot be counted without reading them: the run
	// shows it while it is prepared.
	plan *planned
}

// errFound ends a walk of the tests at the first one.
var errFound = errors.New("found")

// accept reads the definitions' outline and checks a run's domains: an
// unknown one, or none with a test, is an error wrapping
// harness.ErrInvalid. From a TestSource, it reads the tests' counts
// (TestCounter) or else no more than one test per domain.
func (e *Engine) accept(ctx context.Context, domains []string, repeats int) (*accepted, error) {
	a, err := e.readOutline(ctx)
	if err != nil {
		return nil, err
	}
	a.asked = domains
	src, _ := e.opts.Definitions.(TestSource)
	if a.domains, err = selectDomains(a.outline, domains); err != nil {
		return nil, err
	}
	var counts map[string]map[int]int
	switch counter, ok := e.opts.Definitions.(TestCounter); {
	case a.snap != nil:
		counts = map[string]map[int]int{}
		for _, t := range a.snap.Tests {
			if counts[t.DomainID] == nil {
				counts[t.DomainID] = map[int]int{}
			}
			counts[t.DomainID][t.Level]++
		}
	case ok:
		if counts, err = counter.CountTests(ctx); err != nil {
			return nil, fmt.Errorf("count the tests: %w", err)
		}
	}
	found := false
	if counts != nil {
		if a.plan, err = plan(a.outline, counts, a.asked, repeats); err != nil {
			return nil, err
		}
		if len(a.plan.cells) > 0 {
			c := a.plan.cells[0]
			a.first, found = cellKey{c.domain, c.level}, true
		}
	} else {
		for _, d := range a.domains {
			err := src.EachTest(ctx, d, func(t harness.Test) error {
				a.first, found = cellKey{t.DomainID, t.Level}, true
				return errFound
			})
			if err != nil && !errors.Is(err, errFound) {
				return nil, fmt.Errorf("read the tests of domain %s: %w", d, err)
			}
			if found {
				break
			}
		}
	}
	if !found {
		return nil, harness.Invalid("domains", "the selected domains have no tests")
	}
	return a, nil
}

// readOutline reads the definitions' outline: from a TestSource, without
// its tests; else the whole snapshot too.
func (e *Engine) readOutline(ctx context.Context) (*accepted, error) {
	a := &accepted{}
	var err error
	if src, ok := e.opts.Definitions.(TestSource); ok {
		a.outline, err = src.Outline(ctx)
	} else if a.snap, err = e.opts.Definitions.Export(ctx); err == nil {
		bare := *a.snap
		bare.Tests = nil
		a.outline = &bare
	}
	if err != nil {
		return nil, err
	}
	return a, nil
}

// saveDefinitions stores the definitions a run accepted from, test by
// test when they are a TestSource (they are then never whole in memory),
// and returns the set's hash.
func (e *Engine) saveDefinitions(ctx context.Context, a *accepted) (string, error) {
	var hash string
	var err error
	if a.snap != nil {
		hash, err = e.opts.Runs.SaveDefinitions(ctx, a.snap)
	} else {
		src := e.opts.Definitions.(TestSource)
		hash, err = e.opts.Runs.SaveDefinitionsFrom(ctx, a.outline, func(fn func(harness.Test) error) error {
			return src.EachTest(ctx, "", fn)
		})
	}
	if err != nil {
		return "", fmt.Errorf("store the run's definitions: %w", err)
	}
	return hash, nil
}

// prepareStart is the preparation of a run Start accepted: its
// definitions stored, its plan made from them, and its number of tests,
// config and cells recorded (with a queue, its jobs enqueued in the same
// transaction). The run then holds its plan.
func (e *Engine) prepareStart(ctx context.Context, r *run, a *accepted, repeats int) error {
	hash, err := e.saveDefinitions(ctx, a)
	if err != nil {
		return err
	}
	outline, sizes, err := e.opts.Runs.DefinitionsOutline(ctx, hash)
	if err != nil {
		return fmt.Errorf("read the run's definitions: %w", err)
	}
	p, err := plan(outline, sizes, a.asked, repeats)
	if err != nil {
		return err
	}
	if p.samples == 0 {
		return errors.New("the selected domains have no tests (they were removed while the run was being prepared)")
	}
	keys := make([]runs.CellKey, len(p.cells))
	for i, c := range p.cells {
		keys[i] = runs.CellKey{Domain: c.domain, Level: c.level, Tests: c.tests}
	}
	r.mu.Lock()
	cfg := *r.info.Config
	r.mu.Unlock()
	cfg.DefinitionsHash = hash
	defs := a.snap
	if defs == nil {
		defs = a.outline
	}
	cfg.Pricing = runPricing(defs, r.info.Model, r.simulator)
	jobs := p.produce(e.opts.Runs, hash, nil)
	if err := e.recordPlan(ctx, r.info.RunID, p.samples, &cfg, keys, jobs); err != nil {
		return err
	}
	r.mu.Lock()
	r.info.TotalTests, r.info.Config = p.samples, &cfg
	r.cells, r.cellOf, r.produce = p.cells, p.cellOf, jobs
	r.preparing = false
	r.mu.Unlock()
	if repeats > 1 {
		r.logRun("run %s started: %d tests × %d repeats = %d samples in %d cells, model %s, label %q",
			r.info.RunID, p.samples/repeats, repeats, p.samples, len(p.cells), r.info.Model, r.info.ModelName)
	} else {
		r.logRun("run %s started: %d tests in %d cells, model %s, label %q",
			r.info.RunID, p.samples, len(p.cells), r.info.Model, r.info.ModelName)
	}
	if t := r.agent; t != nil {
		r.logRun("run %s evaluates agent %s: its system prompt, %d knowledge-base files, %d tools",
			r.info.RunID, t.Definition.ID, len(t.Definition.KnowledgeBase), len(t.Tools))
	}
	return nil
}

// runPrepare runs the run's preparation, if it has one, and reports
// whether the run goes on to execute its tests. A run stopped or reset
// meanwhile, or whose preparation failed, is finished here: a failure
// stops it with the reason as its error.
func (r *run) runPrepare() bool {
	if r.prepare == nil {
		return true
	}
	err := r.prepare(r.ctx)
	if err == nil && r.ctx.Err() == nil {
		r.sendStarted()
		return true
	}
	if err != nil && r.ctx.Err() == nil {
		r.e.log.Error("prepare the run", slog.String("run", r.info.RunID), slog.Any("error", err))
		r.stopWith(runs.StatusStopped, fmt.Sprintf("the run could not be prepared: %v", err))
	}
	close(r.done_)
	r.finish()
	return false
}

// sendStarted sends the run's EventRunStarted, once: when its
// preparation is over (its TotalTests known), or before any other event
// of a run that ends before that.
func (r *run) sendStarted() {
	r.startedOnce.Do(func() {
		r.mu.Lock()
		info := r.info
		r.mu.Unlock()
		r.e.emit(r, Event{Kind: EventRunStarted, Info: &info})
	})
}

// recordPlan records a prepared run's plan (runs.Store.PrepareRunThen);
// with a queue, its jobs are enqueued in the same transaction, read from
// the run's stored tests.
func (e *Engine) recordPlan(ctx context.Context, runID string, total int, cfg *runs.Config, keys []runs.CellKey, jobs producer) error {
	if e.opts.Queue == nil {
		return e.opts.Runs.PrepareRunThen(ctx, runID, total, cfg, keys, nil)
	}
	schema := runs.SchemaVersion()
	// An agent's knowledge base and tools, and a target's ${VAR}
	// secrets, are this process's.
	local := cfg.AgentID != "" || cfg.TargetID != ""
	return e.opts.Runs.PrepareRunThen(ctx, runID, total, cfg, keys, func(ctx context.Context, tx bun.Tx) error {
		page := make([]QueuedJob, 0, enqueuePage)
		var err error
		werr := jobs(ctx, func(j *job) bool {
			page = append(page, QueuedJob{RunID: runID, TestID: j.test.ID, Repeat: j.repeat, Schema: schema, Local: local,
				Domain: j.test.DomainID, Level: j.test.Level})
			if len(page) == enqueuePage {
				err = e.opts.Queue.Enqueue(ctx, tx, page)
				page = page[:0]
			}
			return err == nil
		})
		if err == nil && werr == nil && len(page) > 0 {
			err = e.opts.Queue.Enqueue(ctx, tx, page)
		}
		if err = errors.Join(werr, err); err != nil {
			return fmt.Errorf("enqueue the run's tests: %w", err)
		}
		return nil
	})
}

// prepareResume is the preparation of a run Resume accepted: its live
// state (the cells' and the run's counts, the cells' samples, its
// tokens) made from the results it kept (those that are not errors),
// read a cell at a time: a finished cell's samples are let go at once.
// note says which resume this is and how the run had ended, left and
// samples are what is left to run of how many, changed what changed in
// its agent since it started.
func (e *Engine) prepareResume(ctx context.Context, r *run, note string, left, samples int, changed []string) error {
	var total counts
	var tokens int
	for _, c := range r.cells {
		r.mu.Lock()
		tmp := &cell{domain: c.domain, level: c.level, threshold: c.threshold, tests: c.tests, status: c.status}
		r.mu.Unlock()
		lvl := c.level
		err := e.opts.Runs.EachResult(ctx, r.info.RunID, runs.ResultQuery{Domain: c.domain, Level: &lvl}, func(res runs.Result) error {
			if res.Status == runs.TestError {
				return nil
			}
			tmp.add(&res)
			total.add(&res)
			tokens += res.PromptTokens + res.CompletionTokens
			return nil
		})
		if err != nil {
			return fmt.Errorf("resume run %s: %w", r.info.RunID, err)
		}
		if tmp.done == tmp.tests {
			tmp.settle()
		}
		r.mu.Lock()
		*c = *tmp
		r.mu.Unlock()
	}
	// What the run spent is what its cells and its row counted, the
	// results deleted for the resume included.
	if m, err := e.opts.Runs.Matrix(ctx, r.info.RunID); err == nil {
		for _, c := range r.cells {
			if s, ok := m[c.domain][strconv.Itoa(c.level)]; ok {
				r.mu.Lock()
				c.spend = spendOfCell(s)
				r.mu.Unlock()
			}
		}
	}
	if in, err := e.opts.Runs.Run(ctx, r.info.RunID); err == nil {
		total.spend = spendOfRun(in)
	}
	r.mu.Lock()
	r.total, r.tokens, r.reported = total, tokens, total.done
	r.preparing = false
	r.mu.Unlock()
	r.checkBudget()
	r.logRun("run %s resumed (%s): %d of %d samples left to run", r.info.RunID, note, left, samples)
	if len(changed) > 0 {
		r.logRun("run %s: agent %s changed since the run started (%s); the rest runs against the agent as it is now",
			r.info.RunID, r.agent.Definition.ID, strings.Join(changed, ", "))
	}
	return nil
}
