package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	httptarget "github.com/gauntlet-eval/gauntlet/harness/target"
)

// TargetSource is what Options.Definitions implements when it holds
// black-box targets (the catalog does): a run started with
// StartRequest.TargetID reads its target there.
type TargetSource interface {
	Target(ctx context.Context, id string) (harness.TargetDefinition, error)
}

// startTarget returns the black-box target a run request names, nil for
// a run of a model or an agent: its definition as the catalog holds it,
// and a client that sends to it. An unknown target, one given with an
// agent or a model, or one whose environment variables are not set is an
// error wrapping harness.ErrInvalid naming target_id.
func (e *Engine) startTarget(ctx context.Context, req StartRequest) (*harness.TargetDefinition, *httptarget.Client, error) {
	if req.TargetID == "" {
		return nil, nil, nil
	}
	if req.AgentID != "" {
		return nil, nil, harness.Invalid("target_id", "cannot be given with agent_id: a run evaluates one system")
	}
	if req.Model != "" {
		return nil, nil, harness.Invalid("model", "cannot be given with target_id: the target decides its model")
	}
	src, ok := e.opts.Definitions.(TargetSource)
	if !ok {
		return nil, nil, harness.Invalid("target_id", "this engine's definitions hold no targets")
	}
	def, err := src.Target(ctx, req.TargetID)
	if errors.Is(err, harness.ErrNotFound) {
		return nil, nil, harness.Invalid("target_id", "unknown target %q", req.TargetID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("target %s: %w", req.TargetID, err)
	}
	c, err := e.targetClient(def)
	if err != nil {
		return nil, nil, err
	}
	return &def, c, nil
}

// targetClient returns a client of a target's definition, reading the
// environment variables it names now: one not set, or a definition that
// is not valid, is an error wrapping harness.ErrInvalid naming target_id.
func (e *Engine) targetClient(def harness.TargetDefinition) (*httptarget.Client, error) {
	c, err := httptarget.New(def, httptarget.Options{Timeout: e.opts.Timeout, MaxRetries: e.opts.Retries,
		MaxResponseBytes: e.opts.MaxResponseBytes})
	if err != nil {
		if errors.Is(err, harness.ErrEnvNotSet) || errors.Is(err, harness.ErrInvalid) {
			return nil, harness.Invalid("target_id", "%v", err)
		}
		return nil, err
	}
	return c, nil
}

// resumeBox returns a client of the black-box target a run being resumed
// evaluated, as the run stored it (its environment variables read now),
// nil for a run of a model or an agent.
func (e *Engine) resumeBox(info runs.Info) (*httptarget.Client, error) {
	if c := info.Config; c != nil && c.Target != nil {
		return e.targetClient(*c.Target)
	}
	return nil, nil
}

// blackBox is a black-box target: a system reachable over HTTP only.
// Each user turn goes to it with the conversation so far; it decides its
// own system prompt, model and tools, so the level's are not used, and
// the tool calls it reports are recorded as it made them (no tool of the
// run answers them). The sources it reports are the test's retrieval.
type blackBox struct{ c *httptarget.Client }

func (blackBox) open(_ context.Context, r *run, _ *job, first string) prompt {
	return prompt{model: r.info.Model, msgs: opening("", first)}
}

func (b blackBox) reply(ctx context.Context, x *exchange, msgs []harness.Message) (*harness.ToolLoopResult, error) {
	r := x.r
	retries := r.retries
	req := harness.ChatRequest{Model: x.p.model, Messages: msgs, Timeout: r.timeout, MaxRetries: &retries}
	call := &targetCall{c: b.c, conv: httptarget.ConversationID(r.info.RunID, x.j.test.ID, x.j.repeat)}
	resp, err := x.rec.ask(ctx, call, &req, runs.CallTest, 0)
	out := &harness.ToolLoopResult{Transcript: msgs}
	q := harness.ModelRequest{Err: err}
	if resp != nil {
		q.Usage, q.Model = resp.Usage, resp.Model
	}
	out.Requests = []harness.ModelRequest{q}
	if err != nil {
		return out, err
	}
	answer := resp.Message
	out.Response, out.Usage = answer.Content, resp.Usage
	out.Messages = []harness.Message{answer}
	out.Transcript = append(slices.Clip(msgs), answer)
	for _, tc := range answer.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, harness.ToolCallRecord{Call: tc})
	}
	if call.got != nil && call.got.Sources != nil {
		x.p.retrieval = &harness.Retrieval{Sources: call.got.Sources}
		if m := r.measure(x.j, x.p); m != nil {
			x.measured = m
			x.res.Details["retrieval"] = m
		}
	}
	return out, nil
}

// targetCall asks a black-box target as a model is asked: the request's
// messages are the conversation so far, its bounds the turn's, and its
// attempts reported as a model's. The reply's answer and tool calls make
// the assistant message; got is the target's whole reply.
type targetCall struct {
	c    *httptarget.Client
	conv string
	got  *httptarget.Reply
}

func (t *targetCall) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	rep, err := t.c.Send(ctx, &httptarget.Turn{ConversationID: t.conv, Messages: req.Messages,
		Timeout: req.Timeout, MaxRetries: req.MaxRetries, OnAttempt: req.OnAttempt})
	if err != nil {
		return nil, err
	}
	t.got = rep
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: rep.Answer, ToolCalls: rep.ToolCalls}}, nil
}
