package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// scripted is the dialogue of a multi-turn test (harness.Test.Turns):
// each turn's user message is sent with the conversation so far, and
// each turn with an expected answer is scored by the test's evaluator
// against it, seeing the conversation up to that answer. The test's
// score is the mean of its scored turns; it passes when every scored
// turn passes. details.turns lists {turn, status, score} per turn, from
// 1, status and score null for a turn that is not scored (with the
// evaluator's details of a scored turn); the transcript holds every turn,
// each followed by its second pass when it had one. A turn that fails
// (the target, or its evaluator) makes the test an error naming the turn.
type scripted struct{}

func (scripted) play(ctx context.Context, x *exchange) (*harness.EvalResult, error) {
	turns := x.j.test.Turns
	x.res.Prompt = turns[0].User
	x.open(ctx, turns[0].User)
	tally := newTurnTally(len(turns))
	for i, turn := range turns {
		loop, err := x.say(ctx, turn.User, i == 0)
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
		if turn.Expected != nil {
			t := turnTest(&x.j.test, turn)
			v, err := x.evaluate(ctx, &t, loop, loop.Calls())
			if err != nil {
				return nil, fmt.Errorf("turn %d: %w", i+1, err)
			}
			tally.add(i, v)
		}
		x.rec.turnDone(x.conv)
	}
	return tally.verdict()
}

// turnTest is what of a multi-turn test one turn is scored by: the turn's
// message as the prompt, its expected answer.
func turnTest(t *harness.Test, turn harness.Turn) harness.Test {
	out := *t
	out.Prompt, out.Expected, out.Turns = turn.User, *turn.Expected, nil
	return out
}

// turnTally makes a multi-turn test's verdict from its turns'.
type turnTally struct {
	rows []any
	out  *harness.EvalResult
	sum  float64
	n    int
}

func newTurnTally(turns int) *turnTally {
	rows := make([]any, turns)
	for i := range rows {
		rows[i] = map[string]any{"turn": i + 1, "status": nil, "score": nil}
	}
	return &turnTally{rows: rows, out: &harness.EvalResult{Passed: true, Details: map[string]any{"turns": rows}}}
}

// add counts turn i's verdict; the last scored turn's extracted answer
// is the test's.
func (t *turnTally) add(i int, v *harness.EvalResult) {
	score := min(max(v.Score, 0), 1)
	row := t.rows[i].(map[string]any)
	row["status"], row["score"] = runs.TestFailed, score
	if v.Passed {
		row["status"] = runs.TestPassed
	}
	if len(v.Details) > 0 {
		row["details"] = v.Details
	}
	t.sum += score
	t.n++
	t.out.Passed = t.out.Passed && v.Passed
	for _, k := range []string{"extracted_answer", "pass2_used"} {
		if val, ok := v.Details[k]; ok {
			t.out.Details[k] = val
		}
	}
}

// verdict is the test's: the mean of its scored turns, passed when every
// one passed.
func (t *turnTally) verdict() (*harness.EvalResult, error) {
	if t.n == 0 {
		// Validation refuses such a test; one stored before is an error.
		return nil, errors.New("no turn of this multi-turn test has an expected answer: nothing to score")
	}
	t.out.Score = t.sum / float64(t.n)
	return t.out, nil
}

// simulated is the dialogue of a test with a simulated user
// (harness.Test.SimulatedUser): a model (the test's model, else the run's
// simulator model, else the run's model) plays the user, with the test's
// persona and goal, writing each user turn from the conversation so far,
// until it writes harness.DoneMarker (that message is not sent) or
// max_turns user turns were answered. The test's evaluator then scores
// the whole conversation, with the target's last answer as the response.
// details.simulated_user says how it went: {turns, ended: done or
// max_turns, model}. The simulator's calls are recorded with purpose
// simulator and accounted as a judge's are: their tokens count in the
// result's, their cost in cost_usd and judge_cost_usd.
type simulated struct{}

func (simulated) play(ctx context.Context, x *exchange) (*harness.EvalResult, error) {
	su := x.j.test.SimulatedUser
	ref := x.simulatorModel(su)
	var loop *harness.ToolLoopResult
	turns, ended := 0, "max_turns"
	for turns < su.MaxTurns {
		msg, done, err := x.simulate(ctx, su, ref, turns == 0)
		if err != nil {
			return nil, fmt.Errorf("simulated user, turn %d: %w", turns+1, err)
		}
		if done {
			ended = "done"
			break
		}
		if turns == 0 {
			x.res.Prompt = msg
			x.open(ctx, msg)
		}
		if loop, err = x.say(ctx, msg, turns == 0); err != nil {
			return nil, fmt.Errorf("turn %d: %w", turns+1, err)
		}
		turns++
	}
	if turns == 0 {
		return nil, fmt.Errorf("the simulated user (model %s) ended the conversation (%s) before its first message", ref, harness.DoneMarker)
	}
	verdict, err := x.evaluate(ctx, &x.j.test, loop, callsOf(x.conv))
	if err != nil {
		return nil, err
	}
	if verdict.Details == nil {
		verdict.Details = map[string]any{}
	}
	verdict.Details["simulated_user"] = map[string]any{"turns": turns, "ended": ended, "model": ref}
	return verdict, nil
}

// simulatorModel is the model reference that plays a simulated user.
func (x *exchange) simulatorModel(su *harness.SimulatedUser) string {
	switch {
	case su.Model != "":
		return su.Model
	case x.r.simulator != "":
		return x.r.simulator
	}
	return x.r.info.Model
}

// SimulatorPrompt is the system message of a simulated user's requests;
// %s are the persona and the goal.
const SimulatorPrompt = `You are playing the part of a user talking to an AI assistant, in a test of that assistant. Stay in character: write only the user's next message, with no quotes, labels or commentary.
Who you are:
<persona>
%s
</persona>
What you want from the conversation:
<goal>
%s
</goal>
Pursue the goal as this user would. When the goal has been met, or the assistant clearly cannot meet it, write only ` + harness.DoneMarker + ` to end the conversation.`

// SimulatorOpening is the last message of a simulated user's first
// request: the conversation has not begun.
const SimulatorOpening = "Write your first message to the assistant."

// simulate asks the simulated user for its next message: the
// conversation so far seen from the user's side (the target's answers as
// the user's interlocutor's, tool exchanges and the target's system
// message left out). done reports that it ended the conversation.
func (x *exchange) simulate(ctx context.Context, su *harness.SimulatedUser, ref string, first bool) (string, bool, error) {
	msgs := make([]harness.Message, 0, len(x.conv)+2)
	msgs = append(msgs, harness.Message{Role: harness.RoleSystem, Content: fmt.Sprintf(SimulatorPrompt, su.Persona, su.Goal)})
	if !first {
		for _, m := range x.conv {
			switch {
			case m.Role == harness.RoleUser:
				msgs = append(msgs, harness.Message{Role: harness.RoleAssistant, Content: m.Content})
			case m.Role == harness.RoleAssistant && m.Content != "":
				msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: m.Content})
			}
		}
	}
	if first || msgs[len(msgs)-1].Role != harness.RoleUser {
		msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: SimulatorOpening})
	}
	r := x.r
	retries := r.retries
	req := harness.ChatRequest{Model: ref, Messages: msgs, Timeout: r.timeout, MaxRetries: &retries}
	resp, err := x.rec.ask(ctx, r.e.opts.Client, &req, runs.CallSimulator, 0)
	if err != nil {
		return "", false, err
	}
	x.usage = x.usage.Add(resp.Usage)
	text := strings.TrimSpace(resp.Message.Content)
	if strings.Contains(text, harness.DoneMarker) {
		return "", true, nil
	}
	if text == "" {
		return "", false, errors.New("the simulator answered nothing")
	}
	return text, false, nil
}

// simulatorModel is a run's simulator model: the request's, else the
// engine's; one the client cannot route is an error naming
// simulator_model.
func (e *Engine) simulatorModel(ref string) (string, error) {
	if ref == "" {
		ref = e.opts.SimulatorModel
	}
	if ref == "" {
		return "", nil
	}
	if mr, ok := e.opts.Client.(harness.ModelRouter); ok {
		if err := mr.Check(ref); err != nil {
			return "", harness.Invalid("simulator_model", "%v", err)
		}
	}
	return ref, nil
}

// callsOf is every tool call of a conversation's assistant messages, in
// order.
func callsOf(conv []harness.Message) []harness.ToolCall {
	var calls []harness.ToolCall
	for _, m := range conv {
		if m.Role == harness.RoleAssistant {
			calls = append(calls, m.ToolCalls...)
		}
	}
	return calls
}

// rescoreConversation scores a stored conversation again (a rescore of a
// multi-turn test, or of one with a simulated user), with today's turns,
// expected answers and evaluator: no model is asked but a judge. The
// stored transcript gives each turn's answer and the conversation up to
// it; a multi-turn test whose transcript holds another number of user
// turns than the test has today is an error saying so. A second pass is
// not asked again: an evaluator that wants one fails.
func (r *run) rescoreConversation(j *job) (runs.Result, bool) {
	ctx := r.ctx
	src := j.stored
	start := time.Now()
	res := runs.Result{
		RunID: r.info.RunID, TestID: src.TestID, Repeat: src.Repeat, Domain: src.Domain, Level: src.Level, Name: j.test.Name,
		Prompt: src.Prompt, Response: src.Response, Expected: j.test.Expected, ModelName: r.info.ModelName,
		SystemPrompt: src.SystemPrompt, Details: map[string]any{}, Transcript: slices.Clone(src.Transcript),
	}
	rec := newRecorder(start, r.info.Model)
	var usage harness.Usage
	fail := func(err error) (runs.Result, bool) {
		if ctx.Err() != nil {
			return res, false
		}
		_, res.Calls = rec.result(nil)
		res.Status, res.Score = runs.TestError, 0
		res.Details["error"] = err.Error()
		res.DurationMS = time.Since(start).Milliseconds()
		res.PromptTokens, res.CompletionTokens = usage.PromptTokens, usage.CompletionTokens
		res.CreatedAt = runs.Now()
		return res, true
	}
	if src.Status == runs.TestError && len(src.Transcript) == 0 {
		why, _ := src.Details["error"].(string)
		return fail(fmt.Errorf("not rescored: the source run's result is an error with no conversation (%s)", why))
	}
	ev, ok := r.e.evaluatorFor(j.evaluator.Type)
	if !ok {
		return fail(fmt.Errorf("evaluator type %q is not available", j.evaluator.Type))
	}
	var conv []harness.Message
	var users []int
	for _, m := range src.Transcript {
		if m.Pass2 {
			continue
		}
		if m.Role == harness.RoleUser {
			users = append(users, len(conv))
		}
		conv = append(conv, m.Message)
	}
	noPass2 := chatFunc(func(context.Context, *harness.ChatRequest) (*harness.ChatResponse, error) {
		return nil, errNoSecondPass
	})
	eval := func(t *harness.Test, msgs []harness.Message, response string, calls []harness.ToolCall) (*harness.EvalResult, error) {
		v, err := ev.Evaluate(ctx, &harness.EvalRequest{
			Test: *t, Evaluator: j.evaluator, SystemPrompt: src.SystemPrompt, Response: response,
			Messages: contentOnly(msgs), ToolCalls: calls, Model: r.info.Model,
			Client: &evalModel{rec: rec, own: noPass2, judge: r.e.opts.Client, transcript: msgs, replay: true},
		})
		if err != nil {
			return nil, fmt.Errorf("evaluator: %w", err)
		}
		usage = usage.Add(v.Usage)
		return v, nil
	}
	var verdict *harness.EvalResult
	if turns := j.test.Turns; len(turns) > 0 {
		if len(users) != len(turns) {
			return fail(fmt.Errorf("not rescored: the source's transcript holds %d user turns and the test has %d today", len(users), len(turns)))
		}
		tally := newTurnTally(len(turns))
		for i, turn := range turns {
			if turn.Expected == nil {
				continue
			}
			end := len(conv)
			if i+1 < len(users) {
				end = users[i+1]
			}
			answer := ""
			for _, m := range conv[users[i]:end] {
				if m.Role == harness.RoleAssistant && m.Content != "" {
					answer = m.Content
				}
			}
			t := turnTest(&j.test, turn)
			v, err := eval(&t, conv[:end], answer, callsOf(conv[users[i]:end]))
			if err != nil {
				return fail(fmt.Errorf("turn %d: %w", i+1, err))
			}
			tally.add(i, v)
		}
		v, err := tally.verdict()
		if err != nil {
			return fail(err)
		}
		verdict = v
	} else {
		v, err := eval(&j.test, conv, src.Response, callsOf(conv))
		if err != nil {
			return fail(err)
		}
		verdict = v
		if su, ok := src.Details["simulated_user"]; ok {
			if verdict.Details == nil {
				verdict.Details = map[string]any{}
			}
			verdict.Details["simulated_user"] = su
		}
	}
	for k, v := range verdict.Details {
		res.Details[k] = v
	}
	for _, k := range []string{"tool_calls", "tool_rounds_exceeded"} {
		if v, ok := src.Details[k]; ok {
			res.Details[k] = v
		}
	}
	scored(&res, verdict, usage, start)
	_, res.Calls = rec.result(nil)
	return res, true
}
