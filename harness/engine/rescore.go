package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// Rescore scores the stored responses of a finished run again, with
// today's evaluators and expected answers, into a new run, and returns
// the new run's id at once; the run goes on in the background as any run
// does (events, log, live matrix, EVAL_COMPLETE). It is Start with
// StartRequest.RescoreFrom; Run with it waits for the end.
//
// Every stored result (every test and repeat) is scored again:
//
//   - The test's expected answer and evaluator are today's definitions
//     when the test still exists; else those the source run stored; else
//     (a run stored before definitions were kept) the expected answer of
//     the result itself, with the built-in evaluator. The response, the
//     prompt it answered and the system prompt are the source's.
//   - No model is asked, but a judge: an evaluator gets the run's client
//     as EvalRequest.Client for its own requests, except that a request
//     continuing the test's conversation (the regex evaluator's second
//     pass) is answered with the second-pass answer the source stored,
//     or fails when there is none.
//   - Tool calls are those the source recorded (details.tool_calls).
//   - A result that ended in error with no response is copied as an
//     error, saying so: there is nothing to score.
//   - Retrieval is not run again. In a rescore of a run that targeted an
//     agent, a result whose source measured retrieval (details.retrieval)
//     is measured again from the files the source retrieved, against
//     today's expected sources (none when the test lists none today);
//     an evaluator is given the knowledge-base text the source's system
//     message held as EvalRequest.Retrieval.Text (a faithfulness judge
//     grades against it).
//
// Errors: harness.ErrConflict while any run is active (the engine runs
// one at a time) or while the source is running in another process;
// harness.ErrNotFound for an unknown run; harness.ErrInvalid when the
// source has no results.
func (e *Engine) Rescore(ctx context.Context, runID string) (string, error) {
	return e.Start(ctx, StartRequest{RescoreFrom: runID})
}

// defsIndex finds the definitions of a snapshot by id.
type defsIndex struct {
	tests      map[string]harness.Test
	domains    map[string]harness.Domain
	levels     map[string]harness.LevelConfig
	evaluators map[string]harness.EvaluatorConfig
}

func indexDefs(snap *harness.Snapshot) *defsIndex {
	x := &defsIndex{tests: map[string]harness.Test{}, domains: map[string]harness.Domain{},
		levels: map[string]harness.LevelConfig{}, evaluators: map[string]harness.EvaluatorConfig{}}
	if snap == nil {
		return x
	}
	for _, t := range snap.Tests {
		x.tests[t.ID] = t
	}
	for _, d := range snap.Domains {
		x.domains[d.ID] = d
	}
	for _, l := range snap.Levels {
		x.levels[levelKey(l.DomainID, l.Level)] = l
	}
	for _, ev := range snap.Evaluators {
		x.evaluators[ev.ID] = ev
	}
	return x
}

func levelKey(domain string, level int) string { return domain + "\x00" + strconv.Itoa(level) }

// evaluator resolves a test's evaluator as a run does: the test's, else
// its domain's, else the built-in regex evaluator.
func (x *defsIndex) evaluator(t harness.Test) harness.EvaluatorConfig {
	id := t.EvaluatorID
	if id == "" {
		id = x.domains[t.DomainID].EvaluatorID
	}
	if ev, ok := x.evaluators[id]; ok {
		return ev
	}
	return harness.EvaluatorConfig{Type: harness.EvaluatorTypeRegex}
}

// threshold is a cell's pass threshold, from the first index that has
// its level.
func threshold(domain string, level int, idx ...*defsIndex) float64 {
	for _, x := range idx {
		if l, ok := x.levels[levelKey(domain, level)]; ok {
			return l.PassThreshold
		}
	}
	return harness.DefaultPassThreshold
}

// startRescore begins a rescore run (StartRequest.RescoreFrom).
func (e *Engine) startRescore(ctx context.Context, req StartRequest) (*run, error) {
	ve := &harness.ValidationError{}
	for _, f := range []struct {
		name string
		set  bool
	}{{"model", req.Model != ""}, {"domains", req.Domains != nil}, {"repeats", req.Repeats != 0},
		{"params", req.Params != (harness.Params{})}, {"timeout_s", req.Timeout != 0}, {"retries", req.Retries != nil},
		{"cache", req.Cache}, {"stream", req.Stream}} {
		if f.set {
			ve.Add(f.name, "a rescore takes the source run's %s; leave it unset", f.name)
		}
	}
	if err := ve.Err(); err != nil {
		return nil, err
	}
	srcID := req.RescoreFrom
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current != nil {
		return nil, fmt.Errorf("run %s is active; stop it first: %w", e.current.info.RunID, harness.ErrConflict)
	}
	src, err := e.opts.Runs.Run(ctx, srcID)
	if err != nil {
		return nil, err
	}
	if src.Status == runs.StatusRunning {
		return nil, fmt.Errorf("run %s is running in another process; rescore it once it has ended: %w", srcID, harness.ErrConflict)
	}
	counts, err := e.opts.Runs.ResultCells(ctx, srcID)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, c := range counts {
		total += c.Tests
	}
	if total == 0 {
		return nil, harness.Invalid("run_id", "run %s has no results to rescore", srcID)
	}
	// Today's definitions are stored with the new run, as any run's are,
	// by its preparation (prepareRescore); until then the run shows its
	// cells with today's thresholds as the catalog has them.
	acc, err := e.readOutline(ctx)
	if err != nil {
		return nil, err
	}
	now := indexDefs(acc.outline)
	cells := make([]*cell, len(counts))
	cellOf := map[cellKey]*cell{}
	for i, k := range counts {
		cells[i] = &cell{domain: k.Domain, level: k.Level, threshold: threshold(k.Domain, k.Level, now), tests: k.Tests, status: runs.CellPending}
		cellOf[cellKey{k.Domain, k.Level}] = cells[i]
	}

	label := req.ModelName
	if label == "" {
		label = src.ModelName
	}
	cfg := runs.Config{Model: src.Model, Repeats: 1}
	if src.Config != nil {
		cfg = *src.Config
	}
	cfg.Concurrency, cfg.DefinitionsHash, cfg.GauntletVersion, cfg.Cache = e.opts.Concurrency, "", e.opts.Version, false
	started := time.Now()
	info := runs.Info{
		RunID: newRunID(started), StartedAt: started.UTC().Format(harness.TimeLayout), ModelName: label, Model: src.Model,
		Status: runs.StatusRunning, Domains: src.Domains, Config: &cfg, RescoredFrom: srcID,
	}
	// Recorded with no tests and no cells until it is prepared.
	if err := e.opts.Runs.CreateRun(ctx, info, nil); err != nil {
		return nil, err
	}
	timeout := time.Duration(cfg.TimeoutS * float64(time.Second))
	if timeout <= 0 {
		timeout = e.opts.Timeout
	}
	r := e.newRun(ctx, info, started, cells, nil, timeout, cfg.Retries)
	r.info.TotalTests, r.cellOf = total, cellOf
	r.preparing = true
	r.prepare = func(ctx context.Context) error { return e.prepareRescore(ctx, r, acc, src, counts, total) }
	e.begin(r, req.OnEvent)
	r.launch(ctx)
	return r, nil
}

// prepareRescore is the preparation of a rescore Start accepted: today's
// definitions stored with it, its cells' thresholds from them and from
// the source's, its jobs' producer, and its number of tests, config and
// cells recorded.
func (e *Engine) prepareRescore(ctx context.Context, r *run, acc *accepted, src runs.Info, counts []runs.CellKey, total int) error {
	// The tests of today's set and of the source's are looked up a page
	// of results at a time.
	hash, err := e.saveDefinitions(ctx, acc)
	if err != nil {
		return err
	}
	todayOutline, _, err := e.opts.Runs.DefinitionsOutline(ctx, hash)
	if err != nil {
		return fmt.Errorf("read the run's definitions: %w", err)
	}
	storedHash := ""
	var storedOutline *harness.Snapshot
	if c := src.Config; c != nil && c.DefinitionsHash != "" {
		storedOutline, _, err = e.opts.Runs.DefinitionsOutline(ctx, c.DefinitionsHash)
		switch {
		case err == nil:
			storedHash = c.DefinitionsHash
		case !errors.Is(err, harness.ErrNotFound):
			return err
		}
	}
	today, stored := indexDefs(todayOutline), indexDefs(storedOutline)
	cells := make([]*cell, len(counts))
	cellOf := map[cellKey]*cell{}
	keys := make([]runs.CellKey, len(counts))
	for i, k := range counts {
		cells[i] = &cell{domain: k.Domain, level: k.Level, threshold: threshold(k.Domain, k.Level, today, stored),
			tests: k.Tests, status: runs.CellPending}
		cellOf[cellKey{k.Domain, k.Level}] = cells[i]
		keys[i] = runs.CellKey{Domain: k.Domain, Level: k.Level, Tests: k.Tests}
	}
	r.mu.Lock()
	cfg := *r.info.Config
	r.mu.Unlock()
	cfg.DefinitionsHash = hash
	if err := e.opts.Runs.PrepareRunThen(ctx, r.info.RunID, total, &cfg, keys, nil); err != nil {
		return err
	}
	r.mu.Lock()
	r.info.Config = &cfg
	r.cells, r.cellOf = cells, cellOf
	r.produce = e.rescoreJobs(src.RunID, hash, storedHash, cellOf, today, stored)
	r.preparing = false
	r.mu.Unlock()
	r.logRun("run %s started: rescoring the %d results of run %s in %d cells with today's evaluators, label %q",
		r.info.RunID, total, src.RunID, len(cells), r.info.ModelName)
	return nil
}

// rescoreJobs returns the producer of a rescore's jobs: one per stored
// result of the source run, in the store's order (by cell), read a page
// at a time. A result's test is today's (set todayHash) when it still
// exists, else the one the source stored (set storedHash, "" for none),
// else one made of the result itself.
func (e *Engine) rescoreJobs(srcID, todayHash, storedHash string, cellOf map[cellKey]*cell, today, stored *defsIndex) producer {
	const page = 500
	return func(ctx context.Context, yield func(*job) bool) error {
		batch := make([]runs.Result, 0, page)
		flush := func() (bool, error) {
			ids := make([]string, len(batch))
			for i := range batch {
				ids[i] = batch[i].TestID
			}
			now, err := e.opts.Runs.DefinitionTests(ctx, todayHash, ids)
			if err != nil {
				return false, err
			}
			then := map[string]harness.Test{}
			if storedHash != "" {
				if then, err = e.opts.Runs.DefinitionTests(ctx, storedHash, ids); err != nil {
					return false, err
				}
			}
			for i := range batch {
				res := batch[i]
				j := job{repeat: res.Repeat, cell: cellOf[cellKey{res.Domain, res.Level}], systemPrompt: res.SystemPrompt, stored: &res}
				if t, ok := now[res.TestID]; ok {
					j.test, j.evaluator = t, today.evaluator(t)
				} else if t, ok := then[res.TestID]; ok {
					j.test, j.evaluator = t, stored.evaluator(t)
				} else {
					j.test = harness.Test{ID: res.TestID, DomainID: res.Domain, Level: res.Level, Name: res.Name, Expected: res.Expected}
					j.evaluator = harness.EvaluatorConfig{Type: harness.EvaluatorTypeRegex}
				}
				// The response answered the prompt the source asked.
				j.test.Prompt = res.Prompt
				if j.cell == nil || !yield(&j) {
					return false, nil
				}
			}
			batch = batch[:0]
			return true, nil
		}
		err := e.opts.Runs.EachResultByCell(ctx, srcID, func(res runs.Result) error {
			batch = append(batch, res)
			if len(batch) < page {
				return nil
			}
			more, err := flush()
			if err == nil && !more {
				err = errStopped
			}
			return err
		})
		if errors.Is(err, errStopped) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(batch) > 0 {
			_, err = flush()
		}
		return err
	}
}

// errNoSecondPass fails a rescore's second-pass request that the source
// run never made: a rescore asks no model but a judge.
var errNoSecondPass = errors.New("a rescore asks no model but a judge, and the source run made no second pass for this test")

// rescoreTest scores a stored response again (job.stored).
func (r *run) rescoreTest(j *job) (runs.Result, bool) {
	if j.test.Kind() != "prompt" {
		return r.rescoreConversation(j)
	}
	ctx := r.ctx
	src := j.stored
	start := time.Now()
	res := runs.Result{
		RunID: r.info.RunID, TestID: src.TestID, Repeat: src.Repeat, Domain: src.Domain, Level: src.Level, Name: j.test.Name,
		Prompt: src.Prompt, Response: src.Response, Expected: j.test.Expected, ModelName: r.info.ModelName,
		SystemPrompt: src.SystemPrompt, Details: map[string]any{},
	}
	var usage harness.Usage
	// The conversation is the source's; the calls are this run's own (a
	// judge's): the source's model calls were not made again.
	rec := newRecorder(start, r.info.Model)
	fail := func(err error) (runs.Result, bool) {
		if ctx.Err() != nil {
			return res, false
		}
		_, res.Calls = rec.result(nil)
		res.Transcript = slices.Clone(src.Transcript)
		res.Status, res.Score = runs.TestError, 0
		res.Details["error"] = err.Error()
		res.DurationMS = time.Since(start).Milliseconds()
		res.PromptTokens, res.CompletionTokens = usage.PromptTokens, usage.CompletionTokens
		res.CreatedAt = runs.Now()
		return res, true
	}
	storedCalls, hasCalls := src.Details["tool_calls"].([]any)
	if src.Status == runs.TestError && src.Response == "" && !hasCalls {
		why, _ := src.Details["error"].(string)
		if why == "" {
			why = "no reason recorded"
		}
		return fail(fmt.Errorf("not rescored: the source run's result is an error with no response (%s)", why))
	}
	calls := toolCallsOf(storedCalls)
	msgs := transcriptOf(src, calls, storedCalls)
	ev, ok := r.e.evaluatorFor(j.evaluator.Type)
	if !ok {
		return fail(fmt.Errorf("evaluator type %q is not available", j.evaluator.Type))
	}
	pass2, hasPass2 := src.Details["pass2_response"].(string)
	// The model under test is not asked: its second pass is the one the
	// source stored.
	stored := chatFunc(func(context.Context, *harness.ChatRequest) (*harness.ChatResponse, error) {
		if !hasPass2 {
			return nil, errNoSecondPass
		}
		return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: pass2}}, nil
	})
	verdict, err := ev.Evaluate(ctx, &harness.EvalRequest{
		Test: j.test, Evaluator: j.evaluator, SystemPrompt: src.SystemPrompt, Response: src.Response,
		Messages: contentOnly(msgs), ToolCalls: calls, Model: r.info.Model, Retrieval: r.storedRetrieval(src),
		Client: &evalModel{rec: rec, own: stored, judge: r.e.opts.Client, transcript: msgs, replay: true},
	})
	if err != nil {
		return fail(fmt.Errorf("evaluator: %w", err))
	}
	usage = usage.Add(verdict.Usage)
	for k, v := range verdict.Details {
		res.Details[k] = v
	}
	if hasCalls {
		res.Details["tool_calls"] = storedCalls
	}
	if v, ok := src.Details["tool_rounds_exceeded"]; ok {
		res.Details["tool_rounds_exceeded"] = v
	}
	// Retrieval is not run again: the files the source retrieved are
	// measured against today's expected sources.
	if was, ok := runs.RetrievalOf(src.Details); ok {
		if m := was.Remeasure(j.test.Expected.Sources); m != nil {
			res.Details["retrieval"] = m.Details()
		}
	}
	scored(&res, verdict, usage, start)
	_, res.Calls = rec.result(nil)
	res.Transcript = slices.Clone(src.Transcript)
	return res, true
}

// toolCallsOf rebuilds the calls of a stored details.tool_calls list
// ({name, arguments, output} each, arguments as JSON or text), with ids
// call_1, call_2… in order.
func toolCallsOf(stored []any) []harness.ToolCall {
	out := make([]harness.ToolCall, 0, len(stored))
	for i, x := range stored {
		m, _ := x.(map[string]any)
		name, _ := m["name"].(string)
		out = append(out, harness.ToolCall{ID: "call_" + strconv.Itoa(i+1), Name: name, Arguments: jsonText(m["arguments"])})
	}
	return out
}

// jsonText gives back the text of a value stored by harness.JSONOrText:
// a string as it is, anything else as JSON.
func jsonText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

// transcriptOf rebuilds the conversation of a stored result, as far as
// the result records it: the system prompt, the prompt, the tool calls
// (in one assistant message, each answered by its stored output), and the
// response.
func transcriptOf(src *runs.Result, calls []harness.ToolCall, stored []any) []harness.Message {
	msgs := make([]harness.Message, 0, 3+len(calls))
	if src.SystemPrompt != "" {
		msgs = append(msgs, harness.Message{Role: harness.RoleSystem, Content: src.SystemPrompt})
	}
	msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: src.Prompt})
	if len(calls) > 0 {
		msgs = append(msgs, harness.Message{Role: harness.RoleAssistant, ToolCalls: calls})
		for i, c := range calls {
			m, _ := stored[i].(map[string]any)
			msgs = append(msgs, harness.Message{Role: harness.RoleTool, Content: jsonText(m["output"]), ToolCallID: c.ID})
		}
	}
	return append(msgs, harness.Message{Role: harness.RoleAssistant, Content: src.Response})
}

// storedRetrieval is what an agent's retrieval gave a stored result, as
// far as the result records it, for the evaluator of a rescore: the
// knowledge-base text is the source's system message after the agent's
// system prompt (the pipeline joins the two), mode and fallback those of
// details.retrieval. Nil when the source run did not target an agent, or
// the system message does not begin with the agent's prompt (the agent
// changed while the run was resumed).
func (r *run) storedRetrieval(src *runs.Result) *harness.Retrieval {
	c := r.info.Config
	if c == nil || c.AgentID == "" || c.Agent == nil {
		return nil
	}
	prompt := strings.TrimSpace(c.Agent.SystemPrompt)
	if !strings.HasPrefix(src.SystemPrompt, prompt) {
		return nil
	}
	out := &harness.Retrieval{Sources: []harness.Source{}, Text: strings.TrimSpace(src.SystemPrompt[len(prompt):])}
	if was, ok := runs.RetrievalOf(src.Details); ok {
		out.Mode, out.Fallback = was.Mode, was.Fallback
	}
	return out
}
