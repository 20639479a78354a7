package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// DefaultMaxToolRounds is the round limit of RunToolLoop when the request
// sets none.
const DefaultMaxToolRounds = 8

// ToolLoopRequest is what RunToolLoop needs: a model, a conversation, the
// tools offered and how to answer them.
type ToolLoopRequest struct {
	// Client performs the chat completions. Required.
	Client ChatModel
	// Chat is the base request: model name, the conversation so far,
	// sampling parameters, per-request timeout and retries. Each request
	// of the loop is a copy of it whose Messages are the transcript so far
	// and whose Tools are those of Tools (none on a last, tool-less
	// request); Chat.Tools itself is ignored. Chat.Messages is not
	// modified.
	Chat ChatRequest
	// Tools are the tool records offered to the model. A call is answered
	// with AnswerToolCall: the Tool of Registry registered under the
	// function's name, else the record's mock_response.
	Tools []ToolDefinition
	// Registry holds the real tool implementations; nil means mock
	// responses only.
	Registry *Registry
	// MaxRounds bounds the rounds of tool calls answered (a round is one
	// model answer that calls tools, and the answers to all its calls);
	// zero or less means DefaultMaxToolRounds.
	MaxRounds int
	// Call is given to every tool: AgentID and UserID of a chat (empty in
	// an evaluation). Its CallID and Arguments are set from each call.
	Call ToolCallRequest
}

// ToolLoopResult is what a tool loop exchanged and produced.
type ToolLoopResult struct {
	// Response is the final answer: the content of the last assistant
	// message.
	Response string
	// Transcript is the whole conversation: the request's Chat.Messages,
	// then Messages.
	Transcript []Message
	// Messages are the messages the loop exchanged, in order: each
	// assistant message that called tools, directly followed by one tool
	// message per call (ToolCallID naming it, in the order of the calls),
	// and last the final assistant message, which calls no tools. It is
	// the tail of Transcript and shares its array.
	Messages []Message
	// ToolCalls are the tool calls answered, in order, with their outputs.
	ToolCalls []ToolCallRecord
	// Usage sums the tokens of every model request.
	Usage Usage
	// Requests describes each model request, in order, the failed one
	// included.
	Requests []ModelRequest
	// RoundsExceeded reports that the model still called tools after
	// MaxRounds rounds, so that it was asked once more, without tools, for
	// its answer.
	RoundsExceeded bool
	// Dropped are tool calls in the final answer, made although no tools
	// were offered (the model's last, tool-less request, or a loop with no
	// tools): they were not answered and are not in the transcript, whose
	// final message keeps only its text.
	Dropped []ToolCall
}

// ToolCallRecord is one tool call answered by a tool loop.
type ToolCallRecord struct {
	// Round is the round of the call, from 0.
	Round int
	// Call is the call as it stands in the transcript: with a generated ID
	// when the model gave none.
	Call ToolCall
	// Output is the answer the model got (JSON).
	Output string
	// Error says why the call failed (the function was not offered, or
	// its Tool returned an error); Output is then {"error": "..."}. Empty
	// when the call succeeded.
	Error string
	// Duration is the time the answer took.
	Duration time.Duration
}

// ModelRequest describes one model request of a tool loop.
type ModelRequest struct {
	// Round is the round the request opens, from 0. A request made
	// because the rounds ran out has Round = MaxRounds.
	Round int
	// Tools is the number of tools offered (0 on a tool-less request).
	Tools int
	// Duration is the time the request took, retries included.
	Duration time.Duration
	// Usage counts the request's tokens.
	Usage Usage
	// Model and FinishReason are those of the response.
	Model        string
	FinishReason string
	// Err is the failure; nil when the model answered.
	Err error
}

// DetailsOfCalls lists the tool calls of a result as evaluation results
// and chat replies show them: {name, arguments, output} each, arguments
// and output as JSON when they are JSON, else as text. It is never nil.
func (r *ToolLoopResult) DetailsOfCalls() []map[string]any {
	out := make([]map[string]any, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		out[i] = map[string]any{"name": c.Call.Name, "arguments": JSONOrText(c.Call.Arguments), "output": JSONOrText(c.Output)}
	}
	return out
}

// Calls returns the calls of ToolCalls, as an evaluator gets them.
func (r *ToolLoopResult) Calls() []ToolCall {
	out := make([]ToolCall, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		out[i] = c.Call
	}
	return out
}

// RunToolLoop asks the model, answers every tool call of its answer, and
// asks again with the answers, until the model answers without calling
// tools. It is the one loop behind evaluations (harness/engine) and agent
// chats (harness/agent), so both follow the same rules:
//
//   - Every tool call gets an answer: an assistant message that calls
//     tools is followed in the transcript by one tool message per call, in
//     the order of the calls, before anything else. No call is left
//     dangling, so the transcript can always be sent to a model again.
//   - Every call has an id no other call of the transcript has: the
//     model's, or, when the model sent none or one the transcript already
//     uses (an earlier call's, or a call's before it in the same answer),
//     a generated one, "call_<n>" (n counting from 1, skipping ids the
//     transcript already uses). It is set on the call in the assistant
//     message, on the tool message answering it, and on the
//     ToolCallRequest (CallID) the call's Tool gets.
//   - After MaxRounds rounds of tool calls, the model is asked once more,
//     with no tools offered, for its answer; RoundsExceeded records it.
//     Tool calls in an answer made with no tools offered are not answered:
//     they are listed in Dropped and left out of the transcript, whose
//     final message keeps only its text.
//   - A call's answer is that of AnswerToolCall: a registered Tool's
//     output, else the record's mock_response; a function that was not
//     offered, or a Tool that fails, gets {"error": "..."}, which the model
//     reads like any other output, and the loop goes on. A Tool whose
//     error wraps ErrToolUnavailable (its server could not answer at all)
//     ends the loop with that error instead: the round is left out.
//
// A model error ends the loop with an error wrapping the model's; so does
// ctx's end (checked before each request and after each tool call). On an
// error the result is still returned, holding the rounds completed before
// it (usage and requests included): a round cut short is left out whole,
// so that even a failed loop's transcript has no call without its answer.
func RunToolLoop(ctx context.Context, req *ToolLoopRequest) (*ToolLoopResult, error) {
	if req == nil || req.Client == nil {
		return nil, fmt.Errorf("tool loop: no model client: %w", ErrInvalid)
	}
	maxRounds := req.MaxRounds
	if maxRounds <= 0 {
		maxRounds = DefaultMaxToolRounds
	}
	defs := make([]FunctionDef, len(req.Tools))
	for i, t := range req.Tools {
		defs[i] = t.Function
	}
	base := len(req.Chat.Messages)
	res := &ToolLoopResult{Transcript: append(make([]Message, 0, base+4), req.Chat.Messages...)}
	ids := newCallIDs(req.Chat.Messages)
	done := func(err error) (*ToolLoopResult, error) {
		res.Messages = res.Transcript[base:]
		return res, err
	}
	for round := 0; ; round++ {
		if err := ctx.Err(); err != nil {
			return done(err)
		}
		chat := req.Chat
		chat.Messages = res.Transcript
		chat.Tools = nil
		offer := len(defs) > 0 && round < maxRounds
		if offer {
			chat.Tools = defs
		}
		start := time.Now()
		resp, err := req.Client.Chat(ctx, &chat)
		info := ModelRequest{Round: round, Tools: len(chat.Tools), Duration: time.Since(start), Err: err}
		if err == nil && resp == nil {
			err = errors.New("no response")
			info.Err = err
		}
		if err != nil {
			res.Requests = append(res.Requests, info)
			return done(fmt.Errorf("model: %w", err))
		}
		info.Usage, info.Model, info.FinishReason = resp.Usage, resp.Model, resp.FinishReason
		res.Requests = append(res.Requests, info)
		res.Usage = res.Usage.Add(resp.Usage)

		m := resp.Message
		m.Role, m.ToolCallID = RoleAssistant, ""
		if len(m.ToolCalls) == 0 || !offer {
			res.Dropped = append(res.Dropped, m.ToolCalls...)
			m.ToolCalls = nil
			res.RoundsExceeded = len(defs) > 0 && round >= maxRounds
			res.Transcript = append(res.Transcript, m)
			res.Response = m.Content
			return done(nil)
		}
		m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
		ids.assign(m.ToolCalls)
		// The round joins the transcript only once every call is answered.
		msgs := make([]Message, 0, len(m.ToolCalls)+1)
		msgs = append(msgs, m)
		calls := make([]ToolCallRecord, 0, len(m.ToolCalls))
		for _, call := range m.ToolCalls {
			start := time.Now()
			out, cerr := answerToolCall(ctx, req.Registry, req.Tools, call, req.Call)
			rec := ToolCallRecord{Round: round, Call: call, Output: out, Duration: time.Since(start)}
			if cerr != nil {
				rec.Error = cerr.Error()
			}
			if err := ctx.Err(); err != nil {
				return done(err)
			}
			if cerr != nil && errors.Is(cerr, ErrToolUnavailable) {
				return done(fmt.Errorf("tool call %s: %w", call.Name, cerr))
			}
			calls = append(calls, rec)
			msgs = append(msgs, Message{Role: RoleTool, Content: out, ToolCallID: call.ID})
		}
		res.Transcript = append(res.Transcript, msgs...)
		res.ToolCalls = append(res.ToolCalls, calls...)
	}
}

// callIDs generates the ids of tool calls sent without one.
type callIDs struct {
	used map[string]bool
	n    int
}

func newCallIDs(msgs []Message) *callIDs {
	c := &callIDs{used: map[string]bool{}}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			c.used[tc.ID] = true
		}
		if m.ToolCallID != "" {
			c.used[m.ToolCallID] = true
		}
	}
	return c
}

// assign gives the next free "call_<n>" to each call without an id, and to
// each whose id an earlier call (of the transcript, or of calls) has:
// an id must name one call, or the tool messages, and a tool keying its
// work on the id, would confuse two calls. The ids the model gave are
// reserved first, so that no generated id takes one a later call keeps.
func (c *callIDs) assign(calls []ToolCall) {
	keep := make([]bool, len(calls))
	for i, tc := range calls {
		if tc.ID != "" && !c.used[tc.ID] {
			keep[i] = true
			c.used[tc.ID] = true
		}
	}
	for i := range calls {
		if keep[i] {
			continue
		}
		for {
			c.n++
			id := "call_" + strconv.Itoa(c.n)
			if !c.used[id] {
				calls[i].ID = id
				c.used[id] = true
				break
			}
		}
	}
}
