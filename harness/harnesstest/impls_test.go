package harnesstest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Implementations for the kits' own tests: good ones the kits must pass,
// broken ones each kit check must catch.

// exact is a good evaluator: 1 for the exact expected answer.
type exact struct{}

func (exact) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("nil request: %w", harness.ErrInvalid)
	}
	if req.Test.Expected.Answer == "" {
		return nil, harness.Invalid("expected.answer", "is required")
	}
	ok := strings.TrimSpace(req.Response) == req.Test.Expected.Answer
	res := &harness.EvalResult{Details: map[string]any{"extracted_answer": strings.TrimSpace(req.Response)}}
	if ok {
		res.Score, res.Passed = 1, true
	}
	return res, nil
}

func (exact) ValidateConfig(cfg harness.EvaluatorConfig) error {
	if _, ok := cfg.Config["unknown"]; ok {
		return harness.Invalid("config.unknown", "is not a setting")
	}
	return nil
}

// judge is a good evaluator that asks the model and honours its context.
type judge struct{}

func (judge) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil || req.Client == nil {
		return nil, fmt.Errorf("judge needs a request and a model: %w", harness.ErrInvalid)
	}
	resp, err := req.Client.Chat(ctx, &harness.ChatRequest{Model: req.Model, Messages: []harness.Message{{Role: harness.RoleUser, Content: req.Response}}})
	if err != nil {
		return nil, fmt.Errorf("judge: %w", err)
	}
	passed := strings.Contains(resp.Message.Content, "Score: 1")
	res := &harness.EvalResult{Usage: resp.Usage, Details: map[string]any{"reasoning": resp.Message.Content}}
	if passed {
		res.Score, res.Passed = 1, true
	}
	return res, nil
}

// Broken evaluators.

type scoreOutOfRange struct{ exact }

func (scoreOutOfRange) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	return &harness.EvalResult{Score: 1.5, Passed: true}, nil
}

type passedWithZero struct{ exact }

func (passedWithZero) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	return &harness.EvalResult{Score: 0, Passed: true}, nil
}

type badDetails struct{}

func (badDetails) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	return &harness.EvalResult{Details: map[string]any{"callback": func() {}}}, nil
}

type panicsOnNil struct{}

func (panicsOnNil) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	return &harness.EvalResult{Details: map[string]any{"response": req.Response}}, nil
}

type nilResult struct{}

func (nilResult) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	return nil, nil
}

// ignoresContext calls the model with a context of its own.
type ignoresContext struct{}

func (ignoresContext) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	if req.Client != nil {
		own, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := req.Client.Chat(own, &harness.ChatRequest{}); err != nil {
			return nil, err
		}
	}
	return &harness.EvalResult{}, nil
}

// racy counts its calls without a lock.
type racy struct{ n *int }

func (r racy) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	*r.n++
	return &harness.EvalResult{Details: map[string]any{"calls": *r.n}}, nil
}

type mutatesRequest struct{}

func (mutatesRequest) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	req.Response += " (evaluated)"
	return &harness.EvalResult{}, nil
}

// refusesEverything rejects every config, with a plain error.
type refusesEverything struct{ exact }

func (refusesEverything) ValidateConfig(harness.EvaluatorConfig) error {
	return errors.New("no")
}

// Channels.

// pushChannel is a good channel: it waits for its context and relays
// pushed messages to the host.
type pushChannel struct{}

func (pushChannel) Run(ctx context.Context, run *harness.ChannelRun) error {
	if run == nil {
		return fmt.Errorf("nil run: %w", harness.ErrInvalid)
	}
	<-ctx.Done()
	return nil
}

func (pushChannel) ValidateChannelConfig(config map[string]any) error {
	if v, ok := config["prefix"]; ok {
		if _, isString := v.(string); !isString {
			return harness.Invalid("config.prefix", "must be a string")
		}
	}
	return nil
}

func (pushChannel) Receive(ctx context.Context, run *harness.ChannelRun, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	if run == nil || run.Host == nil || req == nil {
		return nil, fmt.Errorf("nil run or request: %w", harness.ErrInvalid)
	}
	var msg struct{ User, Text string }
	if err := json.Unmarshal(req.Body, &msg); err != nil {
		return nil, harness.Invalid("body", "is not JSON")
	}
	reply, err := run.Host.Chat(ctx, &harness.InboundMessage{UserID: "push:" + msg.User, Text: msg.Text})
	if err != nil {
		return nil, err
	}
	return &harness.InboundResponse{Body: map[string]string{"reply": reply.Text}}, nil
}

// Broken channels.

// keepsRunning ignores cancellation for a while: it returns 3 s after its
// context is done, past the kit's 2 s limit however late the cancellation
// comes. (The sleep is the bug it plays, not a wait of the test's.)
type keepsRunning struct{}

func (keepsRunning) Run(ctx context.Context, run *harness.ChannelRun) error {
	if run == nil {
		return harness.ErrInvalid
	}
	<-ctx.Done()
	time.Sleep(3 * time.Second)
	return nil
}

// errOnCancel returns its context's error when stopped.
type errOnCancel struct{}

func (errOnCancel) Run(ctx context.Context, run *harness.ChannelRun) error {
	if run == nil {
		return harness.ErrInvalid
	}
	<-ctx.Done()
	return ctx.Err()
}

// channelPanicsOnNil reads the run without checking it.
type channelPanicsOnNil struct{}

func (channelPanicsOnNil) Run(ctx context.Context, run *harness.ChannelRun) error {
	_ = run.Channel.ID
	<-ctx.Done()
	return nil
}

// deaf never passes a message on.
type deaf struct{ pushChannel }

func (deaf) Receive(ctx context.Context, run *harness.ChannelRun, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	if run == nil || req == nil {
		return nil, harness.ErrInvalid
	}
	return &harness.InboundResponse{}, nil
}

// Tools.

// add is a good tool.
type add struct{}

func (add) Definition() harness.FunctionDef {
	return harness.FunctionDef{Name: "add", Description: "Adds two numbers.", Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}},
		"required":   []any{"a", "b"},
	}}
}

func (add) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, fmt.Errorf("nil request: %w", harness.ErrInvalid)
	}
	var args struct{ A, B *float64 }
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return nil, harness.Invalid("arguments", "%v", err)
	}
	if args.A == nil || args.B == nil {
		return nil, harness.Invalid("arguments", "a and b are required")
	}
	out, _ := json.Marshal(map[string]float64{"sum": *args.A + *args.B})
	return &harness.ToolResult{Output: out}, nil
}

// Broken tools.

type badName struct{ add }

func (badName) Definition() harness.FunctionDef { return harness.FunctionDef{Name: "add numbers!"} }

type badRequired struct{ add }

func (badRequired) Definition() harness.FunctionDef {
	return harness.FunctionDef{Name: "add", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"a": "number"}, "required": []any{"a", "c"},
	}}
}

type textOutput struct{ add }

func (textOutput) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	return &harness.ToolResult{Output: []byte("the sum is 4")}, nil
}

type toolPanicsOnNil struct{ add }

func (toolPanicsOnNil) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	return &harness.ToolResult{Output: req.Arguments}, nil
}

// slow ignores its context: once it is done, it keeps retrying its
// backend for a while, 3 s, past the kit's 2 s limit. (The sleep is the
// bug it plays, not a wait of the test's.)
type slow struct{ add }

func (slow) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	if ctx.Err() != nil {
		time.Sleep(3 * time.Second)
	}
	return &harness.ToolResult{Output: []byte("{}")}, nil
}

// refusesRepeats does its work once per call id, and fails a repeat
// instead of answering it again.
type refusesRepeats struct {
	add
	done *sync.Map
}

func (r refusesRepeats) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	if _, seen := r.done.LoadOrStore(req.CallID, true); seen {
		return nil, fmt.Errorf("call %s: already done", req.CallID)
	}
	return r.add.Call(ctx, req)
}

// acceptsAnything never fails, even for calls that must.
type acceptsAnything struct{ add }

func (acceptsAnything) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, harness.ErrInvalid
	}
	return &harness.ToolResult{Output: []byte(`{"sum":0}`)}, nil
}
