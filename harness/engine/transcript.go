package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// A test's transcript and calls (runs.Result.Transcript, Calls) are
// recorded by wrapping the clients the test uses: the tool loop's
// (loopModel: its n-th request is round n) and the evaluator's
// (evalModel: a request that continues the test's conversation is the
// second pass, any other a judge's). Each request gets an
// harness.ChatRequest.OnAttempt that records every attempt the client
// reports; a client that reports none (one brought by an embedder) is
// recorded as one attempt measured around its Chat. A judge with a client
// of its own, not the run's, is not seen.

// recorder keeps what one test exchanged with models: every attempt of
// every request, and the second pass's messages. Safe for concurrent use
// (a plugin evaluator may ask from several goroutines).
type recorder struct {
	start time.Time
	// model is the reference a call is recorded with when its request
	// names none: the run's model.
	model string
	// over, when set, reports that the run's budget is spent: a request
	// is then not sent (ErrBudgetSpent).
	over  func() bool
	mu    sync.Mutex
	calls []runs.Call
	pass2 []runs.Message
	// done is the transcript of the turns a multi-turn conversation
	// finished (turnDone), each followed by its second passes; they are
	// the first shown messages of the conversation.
	done  []runs.Message
	shown int
}

// turnDone closes a turn of a multi-turn conversation, conv being the
// conversation so far: the transcript holds conv, then the second passes
// of the turn, before the next turn's messages.
func (rec *recorder) turnDone(conv []harness.Message) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range conv[min(rec.shown, len(conv)):] {
		rec.done = append(rec.done, runs.Message{Message: m})
	}
	rec.shown = max(rec.shown, len(conv))
	rec.done = append(rec.done, rec.pass2...)
	rec.pass2 = nil
}

func newRecorder(start time.Time, model string) *recorder {
	return &recorder{start: start, model: model}
}

// ask sends req to model, recording its attempts as calls of purpose and
// round.
func (rec *recorder) ask(ctx context.Context, model harness.ChatModel, req *harness.ChatRequest, purpose string, round int) (*harness.ChatResponse, error) {
	if rec.over != nil && rec.over() {
		return nil, ErrBudgetSpent
	}
	r := *req
	seen := 0
	outer := req.OnAttempt
	r.OnAttempt = func(a harness.Attempt) {
		rec.add(purpose, round, req.Model, a)
		rec.mu.Lock()
		seen++
		rec.mu.Unlock()
		if outer != nil {
			outer(a)
		}
	}
	start := time.Now()
	resp, err := model.Chat(ctx, &r)
	rec.mu.Lock()
	none := seen == 0
	rec.mu.Unlock()
	if none {
		a := harness.Attempt{N: 1, Start: start, Duration: time.Since(start), Err: err}
		if err == nil && resp != nil {
			a.Usage, a.TTFT = resp.Usage, resp.TTFT
		}
		rec.add(purpose, round, req.Model, a)
	}
	return resp, err
}

func (rec *recorder) add(purpose string, round int, model string, a harness.Attempt) {
	if model == "" {
		model = rec.model
	}
	c := runs.Call{Purpose: purpose, Round: round, Attempt: a.N, StartMS: a.Start.Sub(rec.start).Milliseconds(),
		DurationMS: a.Duration.Milliseconds(), Model: model,
		PromptTokens: a.Usage.PromptTokens, CompletionTokens: a.Usage.CompletionTokens,
		CachedTokens: a.Usage.CachedTokens, ReasoningTokens: a.Usage.ReasoningTokens,
		Status: a.Status, HTTPStatus: a.HTTPStatus, TTFTMS: ttftMS(a.TTFT)}
	if a.Err != nil {
		c.Error = a.Err.Error()
	}
	if c.Status == "" {
		c.Status, c.HTTPStatus = harness.AttemptStatusOf(a.Err)
	}
	rec.mu.Lock()
	rec.calls = append(rec.calls, c)
	rec.mu.Unlock()
}

// result returns the calls recorded, in the order they started, and the
// transcript: the turns done (turnDone), the rest of conv, then the
// second pass's messages.
func (rec *recorder) result(conv []harness.Message) ([]runs.Message, []runs.Call) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	calls := slices.Clone(rec.calls)
	slices.SortStableFunc(calls, func(a, b runs.Call) int { return int(a.StartMS - b.StartMS) })
	if calls == nil {
		calls = []runs.Call{}
	}
	rest := conv[min(rec.shown, len(conv)):]
	msgs := make([]runs.Message, 0, len(rec.done)+len(rest)+len(rec.pass2))
	msgs = append(msgs, rec.done...)
	for _, m := range rest {
		msgs = append(msgs, runs.Message{Message: m})
	}
	return append(msgs, rec.pass2...), calls
}

// loopModel is the tool loop's client: its n-th request (from 0) opens
// round n.
type loopModel struct {
	rec   *recorder
	next  harness.ChatModel
	round int
}

func (m *loopModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	purpose, round := runs.CallTest, m.round
	if round > 0 {
		purpose = runs.CallToolRound
	}
	m.round++
	return m.rec.ask(ctx, m.next, req, purpose, round)
}

// evalModel is the evaluator's client (EvalRequest.Client). A request
// that continues the test's conversation (it starts with every message of
// it, as the regex evaluator's second pass does) is the model under
// test's: it goes to own (with the cache on, through the cache), and its
// messages join the transcript. Any other request is a judge's: it goes
// to judge, recorded as calls only (the judge's exchange is not the
// model's conversation). With replay (a rescore) own answers from the
// source run, whose transcript already holds the second pass: nothing of
// it is recorded.
type evalModel struct {
	rec        *recorder
	own, judge harness.ChatModel
	transcript []harness.Message
	replay     bool
}

func (m *evalModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	if !continues(req.Messages, m.transcript) {
		return m.rec.ask(ctx, m.judge, req, runs.CallJudge, 0)
	}
	if m.replay {
		return m.own.Chat(ctx, req)
	}
	resp, err := m.rec.ask(ctx, m.own, req, runs.CallPass2, 0)
	m.rec.mu.Lock()
	defer m.rec.mu.Unlock()
	for _, msg := range req.Messages[len(m.transcript):] {
		m.rec.pass2 = append(m.rec.pass2, runs.Message{Message: msg, Pass2: true})
	}
	if err == nil && resp != nil {
		answer := resp.Message
		answer.Role, answer.ToolCallID = harness.RoleAssistant, ""
		m.rec.pass2 = append(m.rec.pass2, runs.Message{Message: answer, Pass2: true})
	}
	return resp, err
}

// continues reports whether msgs is conv followed by more messages.
func continues(msgs, conv []harness.Message) bool {
	if len(conv) == 0 || len(msgs) <= len(conv) {
		return false
	}
	for i := range conv {
		a, b := msgs[i], conv[i]
		if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) {
			return false
		}
		for k := range a.ToolCalls {
			if a.ToolCalls[k] != b.ToolCalls[k] {
				return false
			}
		}
	}
	return true
}

// chatFunc is a function as a harness.ChatModel.
type chatFunc func(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error)

func (f chatFunc) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	return f(ctx, req)
}

// ttftMS is d in whole milliseconds, at least 1 when d is not zero: a
// time to first token under a millisecond reads 1, so that a streamed call
// always shows one (0 would read as "not streamed").
func ttftMS(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}
