package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// A test sample runs as an exchange between a target and a dialogue,
// then the evaluators (see the package documentation, "How a test
// runs"):
//
//   - the target is what the run evaluates: it opens a test's
//     conversation (system message, model, tools) and answers each user
//     turn. modelTarget is the run's model, agentTarget an agent's
//     pipeline. A run has one target, chosen by targetOf.
//   - the dialogue is what the test says: it writes the user's turns,
//     has the target answer each, and asks the test's evaluator to score
//     what it should. onePrompt is a test's prompt. A test has one
//     dialogue, chosen by dialogueOf.
//
// The code that schedules, stores and counts tests calls testIn and
// knows nothing of either.

// target is the system a run evaluates.
type target interface {
	// open begins the conversation of job j, whose first user message is
	// first: it returns what the target is asked with (the system
	// message, the model, the tools and the messages so far: the system
	// message, if any, and first).
	open(ctx context.Context, r *run, j *job, first string) prompt
	// reply answers the conversation so far, msgs (it ends with a user
	// message), recording its model calls with x's recorder. Its result
	// says what the target did: its answer, the messages it added to the
	// conversation, its tool calls and usage.
	reply(ctx context.Context, x *exchange, msgs []harness.Message) (*harness.ToolLoopResult, error)
}

// dialogue is the user's side of a test: it plays the conversation with
// x's target (x.open, then x.say for each user turn) and returns the
// test's verdict, from the test's evaluator (x.evaluate). An error makes
// the test an error.
type dialogue interface {
	play(ctx context.Context, x *exchange) (*harness.EvalResult, error)
}

// targetOf is the run's target: its agent's pipeline, else its model.
func (r *run) targetOf() target {
	if r.box != nil {
		return blackBox{r.box}
	}
	if r.agent != nil {
		return agentTarget{r.agent}
	}
	return modelTarget{}
}

// dialogueOf is a test's dialogue: its turns, its simulated user, else
// its prompt.
func dialogueOf(t *harness.Test) dialogue {
	switch {
	case len(t.Turns) > 0:
		return scripted{}
	case t.SimulatedUser != nil:
		return simulated{}
	}
	return onePrompt{}
}

// exchange is one test sample as it runs: the result it makes, what its
// target was asked with, the conversation so far and what it cost.
type exchange struct {
	r      *run
	j      *job
	tgt    target
	start  time.Time
	res    runs.Result
	p      prompt            // what the target was opened with
	rec    recorder          // the sample's model calls and second passes
	model  harness.ChatModel // the run's client, through the response cache when on
	cached *cachedModel      // the response cache's client, nil without one
	loop   loopModel         // the tool loop's client, reused turn after turn
	conv   []harness.Message // the conversation so far
	usage  harness.Usage     // tokens of every model call made so far
	calls  []map[string]any  // details.tool_calls of the turns so far
	failed error             // the target's error, for the endpoint's health
	evalM  evalModel         // the evaluator's client
	// measured is details.retrieval, the engine's: what an evaluator
	// says under that key is replaced by it.
	measured map[string]any
}

// testIn runs one sample: its dialogue with the run's target, scored by
// its evaluator. finished is false when the run was cancelled before the
// sample finished: such a sample leaves no result.
func (r *run) testIn(ctx context.Context, j *job) (runs.Result, bool) {
	if j.stored != nil {
		return r.rescoreTest(j)
	}
	x := &exchange{r: r, j: j, tgt: r.targetOf(), start: time.Now()}
	x.res = runs.Result{
		RunID: r.info.RunID, TestID: j.test.ID, Repeat: j.repeat, Domain: j.test.DomainID, Level: j.test.Level, Name: j.test.Name,
		Prompt: j.test.Prompt, Expected: j.test.Expected, ModelName: r.info.ModelName,
		Details: map[string]any{},
	}
	x.rec = recorder{start: x.start, model: r.info.Model, over: r.overBudget}
	x.model, x.cached = r.modelFor(j)
	verdict, err := dialogueOf(&j.test).play(ctx, x)
	if err != nil {
		res, finished := x.fail(ctx, err)
		// The result is made before the endpoint's health is noted: the
		// error that stops the run is still this test's result.
		if finished && x.failed != nil {
			r.noteModel(x.failed)
		}
		return res, finished
	}
	return x.finish(verdict), true
}

// open opens the conversation with the target, first being the user's
// first message: the result records the system message and, for an
// agent, what its retrieval found.
func (x *exchange) open(ctx context.Context, first string) {
	x.p = x.tgt.open(ctx, x.r, x.j, first)
	x.rec.model = x.p.model
	x.res.SystemPrompt = x.p.system
	x.conv = x.p.msgs
	// The retrieval is measured as soon as it ran: a result that ends in
	// error later still says what was retrieved (its cell does not count
	// it).
	if m := x.r.measure(x.j, x.p); m != nil {
		x.measured = m
		x.res.Details["retrieval"] = m
	}
}

// say sends the user's next message (none for the first turn, which
// open put in the conversation) and returns the target's answer; the
// conversation then holds both.
func (x *exchange) say(ctx context.Context, user string, first bool) (*harness.ToolLoopResult, error) {
	msgs := x.conv
	if !first {
		msgs = append(slices.Clip(msgs), harness.Message{Role: harness.RoleUser, Content: user})
		x.conv = msgs
	}
	loop, err := x.tgt.reply(ctx, x, msgs)
	if loop != nil {
		x.usage = x.usage.Add(loop.Usage)
		x.conv = loop.Transcript
		if slices.ContainsFunc(loop.Requests, func(q harness.ModelRequest) bool { return q.Err == nil }) {
			x.r.noteModel(nil)
		}
		if loop.RoundsExceeded {
			x.res.Details["tool_rounds_exceeded"] = true
		}
		if len(loop.ToolCalls) > 0 {
			x.calls = append(x.calls, loop.DetailsOfCalls()...)
		}
	}
	if err != nil {
		x.failed = err
		return nil, err
	}
	x.res.Response = loop.Response
	return loop, nil
}

// evaluate scores an answer with the test's evaluator: test (the test,
// or what of it one turn is scored by), the answer (the target's last
// turn), the tool calls to score (calls) and the conversation up to it.
func (x *exchange) evaluate(ctx context.Context, test *harness.Test, loop *harness.ToolLoopResult, calls []harness.ToolCall) (*harness.EvalResult, error) {
	ev, ok := x.r.e.evaluatorFor(x.j.evaluator.Type)
	if !ok {
		return nil, fmt.Errorf("evaluator type %q is not available", x.j.evaluator.Type)
	}
	x.evalM = evalModel{rec: &x.rec, own: x.model, judge: x.r.e.opts.Client, transcript: x.conv}
	verdict, err := ev.Evaluate(ctx, &harness.EvalRequest{
		Test: *test, Evaluator: x.j.evaluator, SystemPrompt: x.p.system, Response: loop.Response,
		Messages: contentOnly(x.conv), ToolCalls: calls, Model: x.p.model, Retrieval: x.p.retrieval,
		Client: &x.evalM,
	})
	if err != nil {
		return nil, fmt.Errorf("evaluator: %w", err)
	}
	x.usage = x.usage.Add(verdict.Usage)
	return verdict, nil
}

// fail makes the sample's error result, saying why; finished is false
// when the run was cancelled or its budget spent (no result).
func (x *exchange) fail(ctx context.Context, err error) (runs.Result, bool) {
	res := &x.res
	if ctx.Err() != nil || errors.Is(err, ErrBudgetSpent) {
		return *res, false
	}
	res.Transcript, res.Calls = x.rec.result(x.conv)
	res.Status = runs.TestError
	res.Details["error"] = err.Error()
	res.DurationMS = time.Since(x.start).Milliseconds()
	res.PromptTokens, res.CompletionTokens = x.usage.PromptTokens, x.usage.CompletionTokens
	res.CreatedAt = runs.Now()
	return *res, true
}

// finish completes the sample's result from its verdict.
func (x *exchange) finish(verdict *harness.EvalResult) runs.Result {
	res := &x.res
	for k, v := range verdict.Details {
		res.Details[k] = v
	}
	if x.measured != nil {
		res.Details["retrieval"] = x.measured // the engine's, whatever an evaluator said
	}
	if len(x.calls) > 0 {
		res.Details["tool_calls"] = x.calls
	}
	if x.cached != nil && x.cached.hits > 0 {
		res.Details["cache_hits"] = x.cached.hits
	}
	scored(res, verdict, x.usage, x.start)
	res.Transcript, res.Calls = x.rec.result(x.conv)
	return *res
}

// onePrompt is the dialogue of a test with a prompt: the prompt, the
// target's answer, the answer scored.
type onePrompt struct{}

func (onePrompt) play(ctx context.Context, x *exchange) (*harness.EvalResult, error) {
	x.open(ctx, x.j.test.Prompt)
	loop, err := x.say(ctx, x.j.test.Prompt, true)
	if err != nil {
		return nil, err
	}
	return x.evaluate(ctx, &x.j.test, loop, loop.Calls())
}

// modelTarget is the run's model, asked through the tool loop.
type modelTarget struct{}

// open: the level's effective system prompt, the first message, the
// run's model and the level's and test's tools.
func (modelTarget) open(_ context.Context, r *run, j *job, first string) prompt {
	p := prompt{system: j.systemPrompt, model: r.info.Model, tools: j.tools}
	p.msgs = opening(p.system, first)
	return p
}

func (modelTarget) reply(ctx context.Context, x *exchange, msgs []harness.Message) (*harness.ToolLoopResult, error) {
	return x.toolLoop(ctx, msgs)
}

// agentTarget is an agent's pipeline: the system message of the agent's
// pipeline for the first message (its system prompt and the
// knowledge-base text retrieved for it; the domain's and level's prompts
// are not used), the agent's model, the agent's tools and then the
// test's own (a tool of the same id or function name is offered once,
// the agent's), and tool calls made on the agent's behalf, each sample a
// user of its own: a fresh conversation.
type agentTarget struct{ a *harness.AgentTarget }

func (t agentTarget) open(ctx context.Context, r *run, j *job, first string) prompt {
	a := t.a
	p := prompt{model: a.Model}
	if a.System != nil {
		var got harness.Retrieval
		p.system, got = a.System(ctx, first)
		p.retrieval = &got
	}
	p.tools = slices.Clone(a.Tools)
	for _, t := range j.tools {
		if !slices.ContainsFunc(p.tools, func(x harness.ToolDefinition) bool {
			return x.ID == t.ID || x.Function.Name == t.Function.Name
		}) {
			p.tools = append(p.tools, t)
		}
	}
	p.call = harness.ToolCallRequest{AgentID: a.Definition.ID,
		UserID: "eval/" + r.info.RunID + "/" + j.test.ID + "/" + strconv.Itoa(j.repeat)}
	p.msgs = opening(p.system, first)
	return p
}

func (agentTarget) reply(ctx context.Context, x *exchange, msgs []harness.Message) (*harness.ToolLoopResult, error) {
	return x.toolLoop(ctx, msgs)
}

// opening is a conversation's first messages: the system message, when
// there is one, and the user's first.
func opening(system, first string) []harness.Message {
	if system == "" {
		return []harness.Message{{Role: harness.RoleUser, Content: first}}
	}
	return []harness.Message{{Role: harness.RoleSystem, Content: system}, {Role: harness.RoleUser, Content: first}}
}

// toolLoop answers msgs with the model x was opened with, answering its
// tool calls in a bounded loop: the requests of the model and agent
// targets, recorded as the test's calls (the first of each turn purpose
// test, later ones tool_round).
func (x *exchange) toolLoop(ctx context.Context, msgs []harness.Message) (*harness.ToolLoopResult, error) {
	r := x.r
	retries := r.retries
	chat := harness.ChatRequest{Model: x.p.model, Messages: msgs, Timeout: r.timeout, MaxRetries: &retries}
	x.j.params.Merge(r.params).Apply(&chat)
	chat.Stream = r.stream
	x.loop = loopModel{rec: &x.rec, next: x.model}
	return harness.RunToolLoop(ctx, &harness.ToolLoopRequest{
		Client:    &x.loop,
		Chat:      chat,
		Tools:     x.p.tools,
		Registry:  r.e.opts.Registry,
		MaxRounds: r.e.opts.MaxToolRounds,
		Call:      x.p.call,
	})
}
