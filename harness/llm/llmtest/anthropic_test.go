package llmtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// anthropicResult is an answer of POST /v1/messages, as the tests read it.
type anthropicResult struct {
	status int
	header http.Header
	raw    []byte
	msg    anthropicAnswer
	err    anthropicError
}

// postMessages sends body to the Messages API of srv, with key in
// x-api-key when not empty and the anthropic-version header.
func postMessages(t *testing.T, srv *Server, key string, body any) anthropicResult {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/messages", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := anthropicResult{status: res.StatusCode, header: res.Header}
	r.raw, _ = io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		if err := json.Unmarshal(r.raw, &r.err); err != nil || r.err.Type != "error" || r.err.Error.Type == "" || r.err.Error.Message == "" {
			t.Fatalf("error body %s is not Anthropic's shape", r.raw)
		}
		return r
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		json.Unmarshal(r.raw, &r.msg)
	}
	return r
}

func messagesBody(msgs ...map[string]any) map[string]any {
	return map[string]any{"model": "claude-test", "max_tokens": 1024, "messages": msgs}
}

func (r anthropicResult) text() string {
	var b strings.Builder
	for _, c := range r.msg.Content {
		if c.Type == "text" {
			b.WriteString(*c.Text)
		}
	}
	return b.String()
}

func TestAnthropicAnswers(t *testing.T) {
	srv := NewServer(Options{APIKey: "k"})
	defer srv.Close()
	body := messagesBody(user("What is 300 + 33?"))
	body["system"] = "You are a calculator."
	r := postMessages(t, srv, "k", body)
	if r.status != 200 || r.text() != "The answer is 333." || r.msg.Type != "message" || r.msg.Role != "assistant" ||
		r.msg.Model != "claude-test" || *r.msg.StopReason != "end_turn" || r.msg.ID == "" {
		t.Fatalf("answer %s", r.raw)
	}
	prompt := CountTokens("You are a calculator.") + CountTokens("What is 300 + 33?")
	if u := r.msg.Usage; u.InputTokens != prompt || u.OutputTokens != CountTokens("The answer is 333.") || u.CacheReadInputTokens != 0 {
		t.Fatalf("usage %+v", u)
	}
	// The same answer as the chat completions wire gives.
	if got := text(t, postWith(t, http.DefaultClient, srv.URL, "k", ask("What is 300 + 33?"))); got != r.text() {
		t.Fatalf("openai wire %q, anthropic wire %q", got, r.text())
	}

	// max_tokens cuts the answer.
	body["max_tokens"] = 1
	if r := postMessages(t, srv, "k", body); r.text() != "The " || *r.msg.StopReason != "max_tokens" || r.msg.Usage.OutputTokens != 1 {
		t.Fatalf("cut answer %s", r.raw)
	}
}

func TestAnthropicDecode(t *testing.T) {
	var got *Request
	srv := NewServer(Options{Respond: func(req *Request) *Reply { got = req; return nil }})
	defer srv.Close()
	body := messagesBody(
		user("Weather in Lisbon and Porto?"),
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Let me look."},
			map[string]any{"type": "tool_use", "id": "t1", "name": "get_weather", "input": map[string]any{"city": "Lisbon"}},
			map[string]any{"type": "tool_use", "id": "t2", "name": "get_weather", "input": map[string]any{"city": "Porto"}},
		}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
			map[string]any{"type": "tool_result", "tool_use_id": "t2", "content": []any{map[string]any{"type": "text", "text": "rain"}}},
		}},
	)
	body["system"] = []any{map[string]any{"type": "text", "text": "One."}, map[string]any{"type": "text", "text": "Two."}}
	body["tools"] = []any{map[string]any{"name": "get_weather", "description": "Weather", "input_schema": map[string]any{"type": "object"}}}
	body["temperature"], body["top_p"] = 0.2, 0.8
	r := postMessages(t, srv, "", body)
	if r.status != 200 || r.text() != "The result of get_weather is sunny. The result of get_weather is rain." {
		t.Fatalf("answer %s", r.raw)
	}
	want := []harness.Message{
		{Role: "system", Content: "One."}, {Role: "system", Content: "Two."},
		{Role: "user", Content: "Weather in Lisbon and Porto?"},
		{Role: "assistant", Content: "Let me look.", ToolCalls: []harness.ToolCall{
			{ID: "t1", Name: "get_weather", Arguments: `{"city":"Lisbon"}`}, {ID: "t2", Name: "get_weather", Arguments: `{"city":"Porto"}`}}},
		{Role: "tool", ToolCallID: "t1", Content: "sunny"}, {Role: "tool", ToolCallID: "t2", Content: "rain"},
	}
	if b, w := anthropicJSON(got.Messages), anthropicJSON(want); b != w {
		t.Fatalf("decoded %s\nwant %s", b, w)
	}
	if got.MaxTokens != 1024 || *got.Temperature != 0.2 || *got.TopP != 0.8 || len(got.Tools) != 1 || got.Reasoning != nil || got.Stream {
		t.Fatalf("decoded %+v", got)
	}
}

func anthropicJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAnthropicBadRequests(t *testing.T) {
	srv := NewServer(Options{APIKey: "k"})
	defer srv.Close()
	toolUse := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "f", "input": map[string]any{}}}}
	for _, tc := range []struct {
		name   string
		key    string
		body   map[string]any
		status int
		typ    string
		msg    string
	}{
		{"no key", "", messagesBody(user("hi")), 401, "authentication_error", "API key"},
		{"wrong key", "nope", messagesBody(user("hi")), 401, "authentication_error", "API key"},
		{"no max_tokens", "k", map[string]any{"model": "m", "messages": []any{user("hi")}}, 400, "invalid_request_error", "max_tokens: Field required"},
		{"no messages", "k", map[string]any{"model": "m", "max_tokens": 5}, 400, "invalid_request_error", "messages"},
		{"system role", "k", messagesBody(map[string]any{"role": "system", "content": "x"}), 400, "invalid_request_error", "messages.0.role"},
		{"tool_use unanswered", "k", messagesBody(user("hi"), toolUse, user("well?")), 400, "invalid_request_error", "without `tool_result`"},
		{"tool_result unasked", "k", messagesBody(user("hi"), map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t9", "content": "x"}}}), 400, "invalid_request_error", "unexpected `tool_use_id`"},
		{"small budget", "k", map[string]any{"model": "m", "max_tokens": 5000, "messages": []any{user("hi")},
			"thinking": map[string]any{"type": "enabled", "budget_tokens": 100}}, 400, "invalid_request_error", "budget_tokens"},
		{"budget over max_tokens", "k", map[string]any{"model": "m", "max_tokens": 2000, "messages": []any{user("hi")},
			"thinking": map[string]any{"type": "enabled", "budget_tokens": 2000}}, 400, "invalid_request_error", "`max_tokens` must be greater"},
		{"bad signature", "k", messagesBody(user("hi"), map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "thinking", "thinking": "x", "signature": "forged"}, map[string]any{"type": "text", "text": "y"}}}, user("z")),
			400, "invalid_request_error", "Invalid `signature`"},
		// The API takes no empty text block (a string content is one
		// text block), nor a message whose text is all whitespace.
		{"empty text", "k", messagesBody(user("")), 400, "invalid_request_error", "messages: text content blocks must be non-empty"},
		{"empty text block", "k", messagesBody(map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "hi"}, map[string]any{"type": "text", "text": ""}}}),
			400, "invalid_request_error", "messages: text content blocks must be non-empty"},
		{"empty assistant text", "k", messagesBody(user("hi"), map[string]any{"role": "assistant", "content": ""}, user("more")),
			400, "invalid_request_error", "messages: text content blocks must be non-empty"},
		{"whitespace text", "k", messagesBody(user(" \n\t")), 400, "invalid_request_error", "messages: text content blocks must contain non-whitespace text"},
		{"empty system block", "k", map[string]any{"model": "m", "max_tokens": 5, "messages": []any{user("hi")},
			"system": []any{map[string]any{"type": "text", "text": ""}}}, 400, "invalid_request_error", "system: text content blocks must be non-empty"},
		{"empty content", "k", messagesBody(map[string]any{"role": "user", "content": []any{}}), 400, "invalid_request_error",
			"messages.0: all messages must have non-empty content except for the optional final assistant message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := postMessages(t, srv, tc.key, tc.body)
			if r.status != tc.status || r.err.Error.Type != tc.typ || !strings.Contains(r.err.Error.Message, tc.msg) {
				t.Fatalf("%d %s", r.status, r.raw)
			}
		})
	}
	// Without anthropic-version.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/messages", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Api-Key", "k")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(b), "anthropic-version") {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
}

func TestAnthropicThinkingAndUsage(t *testing.T) {
	srv := NewServer(Options{Respond: func(req *Request) *Reply {
		if req.LastUser() == "cached" {
			return &Reply{Content: "ok", Usage: &harness.Usage{PromptTokens: 100, CachedTokens: 70, CompletionTokens: 9, ReasoningTokens: 4}}
		}
		return nil
	}})
	defer srv.Close()
	body := messagesBody(user("What is 2 + 2?"))
	body["max_tokens"] = 3000
	body["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 2048}
	r := postMessages(t, srv, "", body)
	if r.status != 200 || len(r.msg.Content) != 2 || r.msg.Content[0].Type != "thinking" || r.text() != "The answer is 4." {
		t.Fatalf("answer %s", r.raw)
	}
	th := r.msg.Content[0]
	if *th.Signature != anthropicSignature(*th.Thinking) || !strings.Contains(*th.Thinking, "What is 2 + 2?") {
		t.Fatalf("thinking %s", r.raw)
	}
	if u := r.msg.Usage; u.OutputTokens != CountTokens(*th.Thinking)+CountTokens("The answer is 4.") ||
		u.OutputTokensDetails == nil || u.OutputTokensDetails.ThinkingTokens != CountTokens(*th.Thinking) {
		t.Fatalf("usage %s", r.raw)
	}

	r = postMessages(t, srv, "", messagesBody(user("cached")))
	if u := r.msg.Usage; u.InputTokens != 30 || u.CacheReadInputTokens != 70 || u.OutputTokens != 9 || u.OutputTokensDetails.ThinkingTokens != 4 {
		t.Fatalf("usage %s", r.raw)
	}
}

// anthropicEvent is one server-sent event.
type anthropicEvent struct {
	name string
	data map[string]any
}

// readAnthropicSSE reads the events of a body; complete reports whether the body
// ended at an event's end.
func readAnthropicSSE(t *testing.T, body io.Reader) (events []anthropicEvent, complete bool) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	var cur anthropicEvent
	var data string
	complete = true
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := json.Unmarshal([]byte(data), &cur.data); err != nil {
				t.Fatalf("event %s: %q", cur.name, data)
			}
			events = append(events, cur)
			cur, data, complete = anthropicEvent{}, "", true
		case strings.HasPrefix(line, "event: "):
			cur.name, complete = strings.TrimPrefix(line, "event: "), false
		case strings.HasPrefix(line, "data: "):
			data, complete = strings.TrimPrefix(line, "data: "), false
		}
	}
	return events, complete
}

func postAnthropicStream(t *testing.T, srv *Server, body map[string]any) (*http.Response, []anthropicEvent, bool) {
	t.Helper()
	body["stream"] = true
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/messages", bytes.NewReader(b))
	req.Header.Set("Anthropic-Version", "2023-06-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events, complete := readAnthropicSSE(t, res.Body)
	return res, events, complete
}

func TestAnthropicStream(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	body := messagesBody(user("What's the weather in Lisbon?"))
	body["max_tokens"] = 3000
	body["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 1024}
	body["tools"] = []any{map[string]any{"name": "get_weather", "description": "Current weather for a city",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	res, events, complete := postAnthropicStream(t, srv, body)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || !complete {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	var names []string
	thinking, sig, args := "", "", ""
	for _, e := range events {
		if e.data["type"] != e.name {
			t.Fatalf("event %s has type %v", e.name, e.data["type"])
		}
		if len(names) == 0 || names[len(names)-1] != e.name {
			names = append(names, e.name)
		}
		if d, ok := e.data["delta"].(map[string]any); ok && e.name == "content_block_delta" {
			switch d["type"] {
			case "thinking_delta":
				thinking += d["thinking"].(string)
			case "signature_delta":
				sig += d["signature"].(string)
			case "input_json_delta":
				args += d["partial_json"].(string)
			}
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events %s", got)
	}
	if sig != anthropicSignature(thinking) || args != `{"city":"Lisbon"}` {
		t.Fatalf("thinking %q %q, arguments %q", thinking, sig, args)
	}
	last := events[len(events)-2].data
	if last["delta"].(map[string]any)["stop_reason"] != "tool_use" || last["usage"].(map[string]any)["output_tokens"].(float64) <= 0 {
		t.Fatalf("message_delta %v", last)
	}
}

func TestAnthropicFaults(t *testing.T) {
	t.Run("overloaded", func(t *testing.T) {
		srv := NewServer(Options{Overloaded: Schedule{First: 1}, RetryAfter: 1500 * time.Millisecond})
		defer srv.Close()
		r := postMessages(t, srv, "", messagesBody(user("hi")))
		if r.status != 529 || r.err.Error.Type != "overloaded_error" || r.header.Get("Retry-After") != "2" || r.header.Get("Retry-After-Ms") != "1500" {
			t.Fatalf("%d %v %s", r.status, r.header, r.raw)
		}
		if r := postMessages(t, srv, "", messagesBody(user("hi"))); r.status != 200 {
			t.Fatalf("second: %d", r.status)
		}
		// The chat completions wire answers 503.
		o := NewServer(Options{Overloaded: Schedule{Every: 1}})
		defer o.Close()
		if r := post(t, o.URL, ask("hi")); r.status != 503 || r.header.Get("Retry-After") != "1" {
			t.Fatalf("openai wire: %d %v", r.status, r.header)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		srv := NewServer(Options{RateLimits: Schedule{First: 1}})
		defer srv.Close()
		if r := postMessages(t, srv, "", messagesBody(user("hi"))); r.status != 429 || r.err.Error.Type != "rate_limit_error" || r.header.Get("Retry-After") != "1" {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	})
	t.Run("server error", func(t *testing.T) {
		srv := NewServer(Options{ServerErrors: Schedule{First: 1}})
		defer srv.Close()
		if r := postMessages(t, srv, "", messagesBody(user("hi"))); r.status != 500 || r.err.Error.Type != "api_error" {
			t.Fatalf("%d %s", r.status, r.raw)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		srv := NewServer(Options{Garbage: Schedule{Every: 1}})
		defer srv.Close()
		r := postMessages(t, srv, "", messagesBody(user("hi")))
		if r.status != 200 || json.Valid(r.raw) || !strings.HasPrefix(string(r.raw), `{"id":"msg_llmtest_1"`) {
			t.Fatalf("%d %s", r.status, r.raw)
		}
		_, events, complete := postAnthropicStream(t, srv, messagesBody(user("hi")))
		if complete || len(events) == 0 || events[len(events)-1].name == "message_stop" {
			t.Fatalf("the cut stream is whole: %v", events)
		}
		if st := srv.Stats(); st.Garbage != 2 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("huge", func(t *testing.T) {
		srv := NewServer(Options{Huge: Schedule{Every: 1}, HugeBytes: 100 << 10})
		defer srv.Close()
		r := postMessages(t, srv, "", messagesBody(user("hi")))
		if r.status != 200 || len(r.text()) != 100<<10 || *r.msg.StopReason != "max_tokens" {
			t.Fatalf("%d, %d bytes of text", r.status, len(r.text()))
		}
		_, events, complete := postAnthropicStream(t, srv, messagesBody(user("hi")))
		n := 0
		for _, e := range events {
			if d, ok := e.data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
				n += len(d["text"].(string))
			}
		}
		if !complete || n != 100<<10 || events[len(events)-1].name != "message_stop" {
			t.Fatalf("streamed %d bytes of text in %d events", n, len(events))
		}
	})
}

func TestAnthropicModels(t *testing.T) {
	srv := NewServer(Options{Model: "a", Models: []string{"b", "c"}, APIKey: "k"})
	defer srv.Close()
	get := func(query, key string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/models"+query, nil)
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.Header.Set("X-Api-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var page map[string]any
		json.NewDecoder(res.Body).Decode(&page)
		return res.StatusCode, page
	}
	status, page := get("", "k")
	if status != 200 || anthropicJSON(page["data"].([]any)[0]) != `{"created_at":"2025-01-01T00:00:00Z","display_name":"a","id":"a","type":"model"}` ||
		page["has_more"] != false || page["first_id"] != "a" || page["last_id"] != "c" {
		t.Fatalf("%d %v", status, page)
	}
	if status, page := get("?limit=1&after_id=a", "k"); status != 200 || len(page["data"].([]any)) != 1 || page["first_id"] != "b" || page["has_more"] != true {
		t.Fatalf("%d %v", status, page)
	}
	if status, page := get("", "wrong"); status != 401 || page["type"] != "error" {
		t.Fatalf("%d %v", status, page)
	}
}
