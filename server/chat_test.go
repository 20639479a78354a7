package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func TestChat(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "You are a terse assistant.")

	t.Run("answers with success, response, session, tool calls and usage", func(t *testing.T) {
		r := must(t, e.post("/api/agents/bot/chat", map[string]any{"message": "Hello there", "user_id": "alice"}), http.StatusOK)
		m := r.object(t)
		for _, k := range []string{"success", "response", "session_id", "tool_calls", "usage"} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %s in %s", k, r.body)
			}
		}
		var out chatBody
		r.decode(t, &out)
		// llmtest echoes the last user message.
		if !out.Success || out.Response != "Hello there" || out.SessionID == "" || out.ToolCalls == nil || len(out.ToolCalls) != 0 {
			t.Errorf("answer %+v", out)
		}
		if out.Usage["prompt_tokens"] == nil || out.Usage["total_tokens"].(float64) <= 0 {
			t.Errorf("usage %v", out.Usage)
		}
		req := e.lastLLMRequest()
		if req.Model != agentModel {
			t.Errorf("model %q, want %q", req.Model, agentModel)
		}
		if len(req.Messages) != 2 || req.Messages[0].Role != harness.RoleSystem || req.Messages[0].Content != "You are a terse assistant." ||
			req.Messages[1].Role != harness.RoleUser || req.Messages[1].Content != "Hello there" {
			t.Errorf("messages sent:\n%s", messagesText(req))
		}
		if len(req.Tools) != 0 {
			t.Errorf("tools offered %v to an agent without tools", req.Tools)
		}
	})

	t.Run("the session id is per user and stable", func(t *testing.T) {
		a1 := e.chat("bot", "alice", "one")
		a2 := e.chat("bot", "alice", "two")
		b := e.chat("bot", "bob", "one")
		if a1.SessionID != a2.SessionID || a1.SessionID == b.SessionID {
			t.Errorf("sessions alice %s %s, bob %s", a1.SessionID, a2.SessionID, b.SessionID)
		}
	})

	t.Run("the knowledge base goes into the system message", func(t *testing.T) {
		must(t, e.post("/api/agents/bot/kb", map[string]any{"filename": "facts.md", "content": "The office cat is called Biscuit."}), http.StatusCreated)
		e.chat("bot", "carol", "What is the cat called?")
		sys := e.lastLLMRequest().Messages[0]
		if sys.Role != harness.RoleSystem || !strings.Contains(sys.Content, "You are a terse assistant.") || !strings.Contains(sys.Content, "Biscuit") {
			t.Errorf("system message %q", sys.Content)
		}
		must(t, e.del("/api/agents/bot/kb/facts.md"), http.StatusOK)
		e.chat("bot", "carol", "And now?")
		if sys := e.lastLLMRequest().Messages[0]; strings.Contains(sys.Content, "Biscuit") {
			t.Errorf("a deleted file is still sent: %q", sys.Content)
		}
	})

	t.Run("bad requests are 422 with success false", func(t *testing.T) {
		n := len(e.llmRequests())
		cases := []struct {
			body     any
			location string
		}{
			{map[string]any{"message": "", "user_id": "alice"}, "body.message"},
			{map[string]any{"message": "   \n", "user_id": "alice"}, "body.message"},
			{map[string]any{"user_id": "alice"}, "body.message"},
			{map[string]any{"message": "hi"}, "body.user_id"},
			{map[string]any{"message": "hi", "user_id": ""}, "body.user_id"},
			{map[string]any{"message": "hi", "user_id": strings.Repeat("u", 300)}, "body.user_id"},
		}
		for _, c := range cases {
			mustProblem(t, e.post("/api/agents/bot/chat", c.body), http.StatusUnprocessableEntity, c.location)
		}
		mustProblem(t, e.post("/api/agents/bot/chat", rawBody(`{"message": `)), http.StatusBadRequest)
		if got := len(e.llmRequests()); got != n {
			t.Errorf("%d model requests for refused chats", got-n)
		}
	})

	t.Run("unknown agent is 404", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents/ghost/chat", map[string]any{"message": "hi", "user_id": "alice"}), http.StatusNotFound)
		mustProblem(t, e.post("/api/agents/ghost/chat/clear", map[string]any{"user_id": "alice"}), http.StatusNotFound)
	})

	t.Run("clear needs a user id", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents/bot/chat/clear", map[string]any{}), http.StatusUnprocessableEntity, "body.user_id")
		mustProblem(t, e.post("/api/agents/bot/chat/clear", map[string]any{"user_id": ""}), http.StatusUnprocessableEntity, "body.user_id")
	})
}

// TestChatUsersAreSeparate checks that two users never see each other's
// messages, and that clearing one user's history leaves the other's.
func TestChatUsersAreSeparate(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "Be helpful.")
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "noted: " + req.LastUser()}
	})

	e.chat("bot", "alice", "my favourite colour is amber")
	e.chat("bot", "bob", "my favourite colour is blue")
	if text := messagesText(e.lastLLMRequest()); strings.Contains(text, "amber") {
		t.Fatalf("bob's request holds alice's message:\n%s", text)
	}
	e.chat("bot", "alice", "what did I say?")
	text := messagesText(e.lastLLMRequest())
	if !strings.Contains(text, "user: my favourite colour is amber") || !strings.Contains(text, "assistant: noted: my favourite colour is amber") {
		t.Errorf("alice's history is not sent:\n%s", text)
	}
	if strings.Contains(text, "blue") {
		t.Errorf("alice's request holds bob's message:\n%s", text)
	}
	// The same user of another agent is another conversation.
	e.createAgent("other", "")
	e.chat("other", "alice", "hello")
	if text := messagesText(e.lastLLMRequest()); strings.Contains(text, "amber") {
		t.Errorf("another agent sees alice's conversation:\n%s", text)
	}

	t.Run("clear affects one user only", func(t *testing.T) {
		r := must(t, e.post("/api/agents/bot/chat/clear", map[string]any{"user_id": "alice"}), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Errorf("body %s", got)
		}
		e.chat("bot", "alice", "do you remember me?")
		req := e.lastLLMRequest()
		if len(req.Messages) != 2 || strings.Contains(messagesText(req), "amber") {
			t.Errorf("alice's history survived the clear:\n%s", messagesText(req))
		}
		e.chat("bot", "bob", "and me?")
		if text := messagesText(e.lastLLMRequest()); !strings.Contains(text, "blue") {
			t.Errorf("bob's history was cleared too:\n%s", text)
		}
		// Clearing a user with no history is fine.
		must(t, e.post("/api/agents/bot/chat/clear", map[string]any{"user_id": "nobody"}), http.StatusOK)
	})

	t.Run("concurrent chats of many users", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for u := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				user := fmt.Sprintf("user%d", u)
				for i := range 3 {
					msg := fmt.Sprintf("%s message %d", user, i)
					r, err := e.try(http.MethodPost, "/api/agents/bot/chat", map[string]any{"user_id": user, "message": msg})
					if err != nil {
						errs <- err
						return
					}
					if r.status != http.StatusOK || !strings.Contains(string(r.body), "noted: "+msg) {
						errs <- fmt.Errorf("%s: %s", msg, r)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for u := range 8 {
			user := fmt.Sprintf("user%d", u)
			h, err := e.agents.History(context.Background(), "bot", user)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != 6 {
				t.Errorf("%s: %d messages stored, want 6", user, len(h))
			}
			for _, m := range h {
				if !strings.Contains(m.Content, user+" message") {
					t.Errorf("%s's history holds %q", user, m.Content)
				}
			}
		}
		// Each request held one user's messages only.
		for _, req := range e.llmRequests() {
			owner := ""
			for _, m := range req.Messages {
				if m.Role != harness.RoleUser || !strings.HasPrefix(m.Content, "user") {
					continue
				}
				u, _, _ := strings.Cut(m.Content, " ")
				if owner == "" {
					owner = u
				} else if u != owner {
					t.Errorf("a request mixes %s and %s:\n%s", owner, u, messagesText(req))
				}
			}
		}
	})
}

// TestChatTools offers the agent's tools to the model and answers its
// calls with the tools' mock responses.
func TestChatTools(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	must(t, e.post("/api/settings/tools", weatherTool()), http.StatusCreated)
	must(t, e.post("/api/settings/tools", clockTool()), http.StatusCreated)
	e.createAgent("bot", "Use your tools.")
	must(t, e.put("/api/agents/bot/tools", map[string]any{"tools": []string{"weather", "clock"}}), http.StatusOK)

	out := e.chat("bot", "alice", `Call get_weather for "Paris" please.`)
	reqs := e.llmRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2 (the call, then the answer)", len(reqs))
	}
	var offered []string
	for _, f := range reqs[0].Tools {
		offered = append(offered, f.Name)
	}
	if !slices.Equal(offered, []string{"get_weather", "get_time"}) {
		t.Errorf("functions offered %v, want get_weather and get_time", offered)
	}
	second := reqs[1].Messages
	last := second[len(second)-1]
	if last.Role != harness.RoleTool || !strings.Contains(last.Content, `"temp_c":21.5`) {
		t.Errorf("the tool's answer sent back: %+v", last)
	}
	if len(out.ToolCalls) != 1 || out.ToolCalls[0]["name"] != "get_weather" {
		t.Fatalf("tool_calls %v", out.ToolCalls)
	}
	if args, _ := out.ToolCalls[0]["arguments"].(map[string]any); args["city"] != "Paris" {
		t.Errorf("arguments %v", out.ToolCalls[0]["arguments"])
	}
	if output, _ := out.ToolCalls[0]["output"].(map[string]any); output["sky"] != "clear" {
		t.Errorf("output %v", out.ToolCalls[0]["output"])
	}
	if !strings.Contains(out.Response, "get_weather") || !strings.Contains(out.Response, "21.5") {
		t.Errorf("response %q does not report the tool's result", out.Response)
	}

	t.Run("the tool exchange stays in the history", func(t *testing.T) {
		e.setRespond(func(req *llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "ok"} })
		defer e.setRespond(nil)
		e.chat("bot", "alice", "thanks")
		text := messagesText(e.lastLLMRequest())
		if !strings.Contains(text, `"temp_c":21.5`) {
			t.Errorf("history lacks the tool's answer:\n%s", text)
		}
	})

	t.Run("the loop is bounded", func(t *testing.T) {
		calls := 0
		var mu sync.Mutex
		e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
			if len(req.Tools) == 0 {
				return &llmtest.Reply{Content: "giving up"}
			}
			mu.Lock()
			calls++
			mu.Unlock()
			return llmtest.CallTool("get_time", nil)
		})
		defer e.setRespond(nil)
		out := e.chat("bot", "bob", "loop forever")
		if out.Response != "giving up" || len(out.ToolCalls) != 8 || calls != 8 {
			t.Errorf("response %q, %d tool calls, %d rounds; want 8", out.Response, len(out.ToolCalls), calls)
		}
	})

	t.Run("a function the agent was not given is answered with an error", func(t *testing.T) {
		e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
			if req.Messages[len(req.Messages)-1].Role == harness.RoleTool {
				return &llmtest.Reply{Content: "tool said: " + req.Messages[len(req.Messages)-1].Content}
			}
			return llmtest.CallTool("rm_rf", nil)
		})
		defer e.setRespond(nil)
		out := e.chat("bot", "carol", "do something bad")
		if !strings.Contains(out.Response, "error") || !strings.Contains(out.Response, "rm_rf") {
			t.Errorf("response %q", out.Response)
		}
	})

	t.Run("an agent without tools is offered none", func(t *testing.T) {
		must(t, e.put("/api/agents/bot/tools", map[string]any{"tools": []string{}}), http.StatusOK)
		out := e.chat("bot", "dave", "Call get_weather for Paris.")
		if len(e.lastLLMRequest().Tools) != 0 || len(out.ToolCalls) != 0 {
			t.Errorf("tools %v, calls %v", e.lastLLMRequest().Tools, out.ToolCalls)
		}
	})
}

// TestChatModelDown checks that a failing model endpoint gives success
// false with the reason, and that the user's message stays in the
// history.
func TestChatModelDown(t *testing.T) {
	t.Parallel()
	t.Run("the endpoint answers 500", func(t *testing.T) {
		e := newAgentEnv(t, agentConfig{llm: llmtest.Options{ServerErrors: llmtest.Schedule{First: 1}}})
		e.createAgent("bot", "")
		r := e.post("/api/agents/bot/chat", map[string]any{"message": "remember the pelican", "user_id": "alice"})
		if r.status < 500 {
			t.Fatalf("status %d, want a 5xx; %s", r.status, r.body)
		}
		p := mustProblem(t, r, r.status)
		if !strings.Contains(p.Detail, "500") && !strings.Contains(strings.ToLower(p.Detail), "server error") {
			t.Errorf("detail %q does not say why", p.Detail)
		}
		e.chat("bot", "alice", "and now?")
		text := messagesText(e.lastLLMRequest())
		if !strings.Contains(text, "user: remember the pelican") || !strings.Contains(text, "user: and now?") {
			t.Errorf("the failed turn's message is not in the history:\n%s", text)
		}
	})

	t.Run("the endpoint is unreachable", func(t *testing.T) {
		e := newAgentEnv(t, agentConfig{modelURL: unreachableURL(t)})
		e.createAgent("bot", "")
		var out chatBody
		r := e.post("/api/agents/bot/chat", map[string]any{"message": "anyone?", "user_id": "alice"})
		p := mustProblem(t, r, r.status)
		if r.status < 500 {
			t.Fatalf("status %d, want a 5xx", r.status)
		}
		r.decode(t, &out)
		if out.Success || !strings.Contains(strings.ToLower(p.Detail), "refused") {
			t.Errorf("success %v, detail %q: want the reason", out.Success, p.Detail)
		}
		h, err := e.agents.History(context.Background(), "bot", "alice")
		if err != nil || len(h) != 1 || h[0].Content != "anyone?" || h[0].Role != harness.RoleUser {
			t.Errorf("history %+v %v, want the user's message", h, err)
		}
	})
}
