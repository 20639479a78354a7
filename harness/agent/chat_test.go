package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func TestChatPerUserIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createAgent("a", "You are helpful.")
	ra := e.chat("a", "alice", "alice-secret-1")
	rb := e.chat("a", "bob", "bob-secret-1")
	e.chat("a", "alice", "alice-secret-2")
	e.chat("a", "bob", "bob-secret-2")

	if ra.SessionID == rb.SessionID || ra.SessionID != agent.SessionID("a", "alice") {
		t.Errorf("session ids %q and %q", ra.SessionID, rb.SessionID)
	}
	if ra.Response != "alice-secret-1" { // llmtest echoes
		t.Errorf("response = %q", ra.Response)
	}
	for _, req := range e.requests() {
		var all []string
		for _, m := range req.Messages {
			all = append(all, m.Content)
		}
		text := strings.Join(all, "\n")
		user := "alice"
		if strings.Contains(req.LastUser(), "bob") {
			user = "bob"
		}
		other := map[string]string{"alice": "bob", "bob": "alice"}[user]
		if strings.Contains(text, other) {
			t.Errorf("%s's request holds %s's messages:\n%s", user, other, text)
		}
		if systemOf(req) != "You are helpful." {
			t.Errorf("system message = %q", systemOf(req))
		}
		if req.Model != "test-model" {
			t.Errorf("model = %q, want the configured test-model", req.Model)
		}
	}
	last := e.lastRequest()
	if got := contents(last, harness.RoleUser); strings.Join(got, ",") != "bob-secret-1,bob-secret-2" {
		t.Errorf("bob's second request has user messages %v", got)
	}
	if got := contents(last, harness.RoleAssistant); strings.Join(got, ",") != "bob-secret-1" {
		t.Errorf("bob's second request has assistant messages %v", got)
	}
}

func TestChatValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createAgent("a", "")
	for _, tc := range []struct {
		name, agent, user, msg, field string
	}{
		{"empty message", "a", "u", "", "message"},
		{"blank message", "a", "u", "  \n", "message"},
		{"empty user", "a", "", "hi", "user_id"},
		{"long user", "a", strings.Repeat("u", 300), "hi", "user_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.Chat(e.ctx, tc.agent, tc.user, tc.msg)
			wantInvalid(t, err, tc.field)
		})
	}
	if _, err := e.svc.Chat(e.ctx, "nobody", "u", "hi"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown agent = %v", err)
	}
	wantInvalid(t, e.svc.Clear(e.ctx, "a", ""), "user_id")
	if err := e.svc.Clear(e.ctx, "nobody", "u"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("clear of unknown agent = %v", err)
	}
	if len(e.requests()) != 0 {
		t.Error("a refused chat reached the model")
	}
}

func TestChatModelOverride(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	model := "agent-model"
	if _, err := e.svc.Create(e.ctx, harness.Agent{ID: "a", Model: &model}); err != nil {
		t.Fatal(err)
	}
	e.chat("a", "u", "hi")
	if got := e.lastRequest().Model; got != model {
		t.Errorf("model = %q, want the agent's %q", got, model)
	}
}

func TestChatHistoryBound(t *testing.T) {
	t.Parallel()
	t.Run("messages", func(t *testing.T) {
		e := newEnv(t, withOptions(func(o *agent.Options) { o.MaxHistoryMessages = 5 }))
		e.createAgent("a", "sys")
		for i := range 8 {
			e.chat("a", "u", fmt.Sprintf("m%d", i))
		}
		req := e.lastRequest()
		if len(req.Messages) != 6 || systemOf(req) != "sys" {
			t.Fatalf("request has %d messages, want the system message and 5", len(req.Messages))
		}
		var got []string
		for _, m := range req.Messages[1:] {
			got = append(got, m.Role+":"+m.Content)
		}
		want := "user:m5,assistant:m5,user:m6,assistant:m6,user:m7"
		if strings.Join(got, ",") != want {
			t.Errorf("history = %v, want %s", got, want)
		}
		// Everything is stored all the same.
		if h, _ := e.svc.History(e.ctx, "a", "u"); len(h) != 16 {
			t.Errorf("stored %d messages, want 16", len(h))
		}
	})
	t.Run("tokens", func(t *testing.T) {
		e := newEnv(t, withOptions(func(o *agent.Options) { o.MaxHistoryTokens = 100 }))
		e.createAgent("a", "")
		long := strings.Repeat("x", 120) // 30 tokens
		for i := range 4 {
			e.chat("a", "u", fmt.Sprintf("%d%s", i, long))
		}
		req := e.lastRequest()
		// The new message (30) and the last exchange (60) fit; one more would not.
		if len(req.Messages) != 3 || !strings.HasPrefix(req.Messages[2].Content, "3") {
			t.Errorf("request has %d messages, want 3 ending with the new one", len(req.Messages))
		}
		// The newest message goes even when it alone exceeds the budget.
		e.chat("a", "u", strings.Repeat("y", 1000))
		if req := e.lastRequest(); len(req.Messages) != 1 {
			t.Errorf("request with a huge message has %d messages, want 1", len(req.Messages))
		}
	})
}

func TestChatHistoryKeepsToolPairs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withOptions(func(o *agent.Options) { o.MaxHistoryMessages = 4 }))
	e.tools.put(weatherTool)
	e.createAgent("a", "")
	if _, err := e.svc.SetTools(e.ctx, "a", []string{"weather"}); err != nil {
		t.Fatal(err)
	}
	// Each turn stores user, assistant (call), tool, assistant: windows of
	// 4 cut through the pairs, and the pairs must go whole or not at all.
	for i := range 4 {
		e.chat("a", "u", fmt.Sprintf("Call get_weather for Paris (%d)", i))
		e.chat("a", "u", fmt.Sprintf("plain %d", i))
	}
	for _, req := range e.requests() {
		calls := map[string]bool{}
		for i, m := range req.Messages {
			if i == 0 && m.Role == harness.RoleTool {
				t.Fatalf("request %d starts with a tool message", req.N)
			}
			for _, tc := range m.ToolCalls {
				calls[tc.ID] = true
			}
			if m.Role == harness.RoleTool && !calls[m.ToolCallID] {
				t.Fatalf("request %d: tool message for %q without its call", req.N, m.ToolCallID)
			}
		}
		for i, m := range req.Messages {
			if len(m.ToolCalls) > 0 && (i+1 >= len(req.Messages) || req.Messages[i+1].Role != harness.RoleTool) {
				t.Fatalf("request %d: a call without its answer", req.N)
			}
		}
	}
}

func TestChatClear(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createAgent("a", "")
	e.chat("a", "alice", "alice-1")
	e.chat("a", "bob", "bob-1")
	if err := e.svc.Clear(e.ctx, "a", "alice"); err != nil {
		t.Fatal(err)
	}
	e.chat("a", "alice", "alice-2")
	if got := contents(e.lastRequest(), harness.RoleUser); strings.Join(got, ",") != "alice-2" {
		t.Errorf("alice after clear sends %v", got)
	}
	e.chat("a", "bob", "bob-2")
	if got := contents(e.lastRequest(), harness.RoleUser); strings.Join(got, ",") != "bob-1,bob-2" {
		t.Errorf("bob after alice's clear sends %v", got)
	}
	if err := e.svc.Clear(e.ctx, "a", "never-chatted"); err != nil {
		t.Errorf("clear of an empty conversation: %v", err)
	}
}

func toolCallsJSON(t *testing.T, res *agent.ChatResult) []map[string]any {
	t.Helper()
	b, err := json.Marshal(res.ToolCalls)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	json.Unmarshal(b, &out)
	return out
}

func TestChatToolLoopMockResponse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tools.put(weatherTool)
	e.tools.put(lookupTool)
	e.createAgent("a", "")
	if _, err := e.svc.SetTools(e.ctx, "a", []string{"weather", "lookup"}); err != nil {
		t.Fatal(err)
	}
	res := e.chat("a", "u", "Call get_weather for Paris.")
	if want := `The result of get_weather is {"temperature":21,"unit":"celsius"}.`; res.Response != want {
		t.Errorf("response = %q, want %q", res.Response, want)
	}
	calls := toolCallsJSON(t, res)
	if len(calls) != 1 || calls[0]["name"] != "get_weather" {
		t.Fatalf("tool_calls = %v", calls)
	}
	if args, _ := calls[0]["arguments"].(map[string]any); args["city"] != "Paris" {
		t.Errorf("arguments = %v", calls[0]["arguments"])
	}
	if out, _ := calls[0]["output"].(map[string]any); out["unit"] != "celsius" {
		t.Errorf("output = %v", calls[0]["output"])
	}
	if res.Usage.TotalTokens == 0 || res.ToolRoundsExceeded {
		t.Errorf("usage %+v, exceeded %v", res.Usage, res.ToolRoundsExceeded)
	}
	reqs := e.requests()
	if len(reqs) != 2 || len(reqs[0].Tools) != 2 {
		t.Fatalf("%d requests, first offering %d tools; want 2 and 2", len(reqs), len(reqs[0].Tools))
	}
	h, _ := e.svc.History(e.ctx, "a", "u")
	var roles []string
	for _, m := range h {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,assistant" {
		t.Errorf("stored roles %v", roles)
	}
	// The next turn sends the pair back.
	e.chat("a", "u", "thanks")
	var next []string
	for _, m := range e.lastRequest().Messages {
		next = append(next, m.Role)
	}
	if strings.Join(next, ",") != "user,assistant,tool,assistant,user" {
		t.Errorf("next request roles %v", next)
	}
}

// echoTool is a registered tool: it reports who called it.
type echoTool struct {
	mu    sync.Mutex
	calls []harness.ToolCallRequest
}

func (t *echoTool) Definition() harness.FunctionDef { return lookupTool.Function }

func (t *echoTool) Call(_ context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	t.mu.Lock()
	t.calls = append(t.calls, *req)
	t.mu.Unlock()
	out, _ := json.Marshal(map[string]string{"agent": req.AgentID, "user": req.UserID, "status": "delivered"})
	return &harness.ToolResult{Output: out}, nil
}

func TestChatToolLoopRegisteredTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	impl := &echoTool{}
	if err := e.reg.RegisterTool(impl); err != nil {
		t.Fatal(err)
	}
	e.tools.put(lookupTool)
	e.createAgent("a", "")
	e.svc.SetTools(e.ctx, "a", []string{"lookup"})
	res := e.chat("a", "carol", "Please lookup_order 42")
	if !strings.Contains(res.Response, `"status":"delivered"`) || strings.Contains(res.Response, "shipped") {
		t.Errorf("response = %q, want the registered tool's output", res.Response)
	}
	impl.mu.Lock()
	defer impl.mu.Unlock()
	if len(impl.calls) != 1 || impl.calls[0].AgentID != "a" || impl.calls[0].UserID != "carol" {
		t.Errorf("tool calls = %+v", impl.calls)
	}
}

func TestChatToolRoundsBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tools.put(weatherTool)
	e.createAgent("a", "")
	e.svc.SetTools(e.ctx, "a", []string{"weather"})
	// A model that calls a tool whenever it may.
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
		if len(req.Tools) > 0 {
			return llmtest.CallTool("get_weather", map[string]any{"city": "Oslo"})
		}
		return nil
	})
	res := e.chat("a", "u", "weather forever")
	if len(res.ToolCalls) != agent.DefaultMaxToolRounds || !res.ToolRoundsExceeded {
		t.Errorf("%d tool calls, exceeded %v; want %d and true", len(res.ToolCalls), res.ToolRoundsExceeded, agent.DefaultMaxToolRounds)
	}
	reqs := e.requests()
	if len(reqs) != agent.DefaultMaxToolRounds+1 || len(reqs[len(reqs)-1].Tools) != 0 {
		t.Errorf("%d model requests, the last offering %d tools; want %d and none", len(reqs), len(reqs[len(reqs)-1].Tools), agent.DefaultMaxToolRounds+1)
	}
	if !strings.HasPrefix(res.Response, "The result of get_weather") {
		t.Errorf("response = %q", res.Response)
	}
	// A model that calls tools even when offered none: the calls are
	// dropped, and the history stays sendable.
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "still calling", ToolCalls: []harness.ToolCall{{Name: "get_weather", Arguments: "{}"}}}
	})
	res = e.chat("a", "u", "again")
	if res.Response != "still calling" || !res.ToolRoundsExceeded {
		t.Errorf("response %q, exceeded %v", res.Response, res.ToolRoundsExceeded)
	}
	e.setRespond(nil)
	e.chat("a", "u", "and now?")
	msgs := e.lastRequest().Messages
	for i, m := range msgs {
		if len(m.ToolCalls) > 0 && (i+1 >= len(msgs) || msgs[i+1].Role != harness.RoleTool) {
			t.Fatalf("message %d calls tools with no answer", i)
		}
	}
}

func TestChatSkipsDeletedTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tools.put(weatherTool)
	e.tools.put(lookupTool)
	e.createAgent("a", "")
	e.svc.SetTools(e.ctx, "a", []string{"weather", "lookup"})
	e.tools.remove("weather")
	e.chat("a", "u", "hello")
	tools := e.lastRequest().Tools
	if len(tools) != 1 || tools[0].Name != "lookup_order" {
		t.Errorf("offered %v, want only lookup_order", tools)
	}
	if !strings.Contains(e.logs.String(), "tool=weather") {
		t.Errorf("no log line names the skipped tool:\n%s", e.logs.String())
	}
}

func TestChatEndpointDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	down, err := llm.New(llm.Options{BaseURL: downURL(t), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	up := e.opts.Client
	e.opts.Client = down
	e.reopen()
	e.createAgent("a", "")
	_, err = e.svc.Chat(e.ctx, "a", "u", "are you there?")
	if err == nil || errors.Is(err, harness.ErrInvalid) || errors.Is(err, harness.ErrNotFound) {
		t.Fatalf("chat with the endpoint down = %v, want a model error", err)
	}
	var lerr *llm.Error
	if !errors.As(err, &lerr) {
		t.Errorf("error %v does not wrap the model's *llm.Error", err)
	}
	h, _ := e.svc.History(e.ctx, "a", "u")
	if len(h) != 1 || h[0].Content != "are you there?" {
		t.Fatalf("history = %v, want the user's message kept", h)
	}
	// Back up: the kept message goes to the model with the new one.
	e.opts.Client = up
	e.reopen()
	e.chat("a", "u", "hello again")
	if got := contents(e.lastRequest(), harness.RoleUser); strings.Join(got, ",") != "are you there?,hello again" {
		t.Errorf("user messages sent = %v", got)
	}
}

func TestChatSurvivesReopen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createAgent("a", "")
	e.chat("a", "u", "remember me")
	e.reopen()
	e.chat("a", "u", "do you?")
	req := e.lastRequest()
	if got := contents(req, harness.RoleUser); strings.Join(got, ",") != "remember me,do you?" {
		t.Errorf("after reopening, user messages sent = %v", got)
	}
	if got := contents(req, harness.RoleAssistant); strings.Join(got, ",") != "remember me" {
		t.Errorf("after reopening, assistant messages sent = %v", got)
	}
}

func TestChatConcurrentUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withLLM(func(o *llmtest.Options) { o.Latency = 2 * time.Millisecond }))
	e.createAgent("a", "")
	const users, turns = 16, 5
	var wg sync.WaitGroup
	for u := range users {
		// Each user sends all their messages at once: they must be
		// serialised, while the users run in parallel.
		for i := range turns {
			wg.Go(func() {
				if _, err := e.svc.Chat(e.ctx, "a", fmt.Sprintf("user%d", u), fmt.Sprintf("user%d says %d", u, i)); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if peak := e.srv.Stats().PeakInFlight; peak < 2 {
		t.Errorf("peak requests in flight = %d, want users served in parallel", peak)
	}
	for u := range users {
		id := fmt.Sprintf("user%d", u)
		h, err := e.svc.History(e.ctx, "a", id)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2*turns {
			t.Fatalf("%s has %d messages, want %d", id, len(h), 2*turns)
		}
		for i, m := range h {
			want := harness.RoleUser
			if i%2 == 1 {
				want = harness.RoleAssistant
			}
			if m.Role != want || !strings.HasPrefix(m.Content, id+" says") {
				t.Fatalf("%s message %d = %s %q: turns interleaved or crossed users", id, i, m.Role, m.Content)
			}
			if i%2 == 1 && m.Content != h[i-1].Content {
				t.Fatalf("%s: reply %q to %q", id, m.Content, h[i-1].Content)
			}
		}
	}
	for _, req := range e.requests() {
		owner := strings.Fields(req.LastUser())[0]
		for _, m := range req.Messages {
			if !strings.HasPrefix(m.Content, owner+" ") {
				t.Fatalf("%s's request holds %q", owner, m.Content)
			}
		}
	}
}
