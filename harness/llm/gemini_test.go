package llm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func init() {
	testKinds = append(testKinds, testKind{kind: KindGemini, base: nativeBase})
}

// wireBody is the raw JSON of a request the fake received.
func wireBody(t *testing.T, req *llmtest.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(req.Body, &m); err != nil {
		t.Fatalf("body %s: %v", req.Body, err)
	}
	return m
}

// path walks a decoded JSON value by object keys and array indexes.
func path(v any, steps ...any) any {
	for _, s := range steps {
		switch k := s.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func TestGeminiChatRequest(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{APIKey: secretKey, Respond: rec.respond,
		Answers: map[string]string{"capital of France": "It is Paris."}})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{APIKey: secretKey, Model: "gemini-2.5-flash"})
	temp, topP, seed := 0.5, 0.9, int64(7)
	resp, err := c.Chat(context.Background(), &harness.ChatRequest{
		Messages:    []harness.Message{{Role: harness.RoleSystem, Content: "Answer briefly."}, userMsg("What is the capital of France?")},
		Temperature: &temp, TopP: &topP, Seed: &seed, MaxTokens: 50,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "It is Paris." || resp.FinishReason != "stop" || resp.Model != "gemini-2.5-flash" || resp.TTFT != 0 {
		t.Fatalf("answer %+v", resp)
	}
	sent := rec.last(t)
	if sent.Model != "gemini-2.5-flash" || sent.Stream || sent.Reasoning != nil || sent.Header.Get("X-Goog-Api-Key") != secretKey {
		t.Fatalf("request %+v", sent)
	}
	if len(sent.Messages) != 2 || !reflect.DeepEqual(sent.Messages[0], harness.Message{Role: harness.RoleSystem, Content: "Answer briefly."}) {
		t.Fatalf("messages %+v", sent.Messages)
	}
	if *sent.Temperature != 0.5 || *sent.TopP != 0.9 || *sent.Seed != 7 || sent.MaxTokens != 50 {
		t.Fatalf("parameters %+v", sent)
	}
	body := wireBody(t, sent)
	if path(body, "systemInstruction", "parts", 0, "text") != "Answer briefly." ||
		path(body, "contents", 0, "role") != "user" || path(body, "generationConfig", "maxOutputTokens") != 50.0 {
		t.Fatalf("body %s", sent.Body)
	}
}

func TestGeminiToolRoundTrip(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{})
	weather := harness.FunctionDef{
		Name:        "get_weather",
		Description: "Current weather for a city",
		Parameters: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"city": map[string]any{"type": "string", "minLength": 1.0}},
			"required":             []any{"city"},
			"additionalProperties": false,
		},
	}
	req := &harness.ChatRequest{
		Messages: []harness.Message{userMsg("What's the weather in Lisbon?")},
		Tools:    []harness.FunctionDef{weather, {Name: "no_params"}},
	}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "tool_calls" || len(resp.Message.ToolCalls) != 1 || resp.Message.Content != "" {
		t.Fatalf("answer %+v", resp)
	}
	call := resp.Message.ToolCalls[0]
	// Gemini sent no id: the call got one.
	if call.Name != "get_weather" || call.ID != "gemini-call-1-1" || call.Arguments != `{"city":"Lisbon"}` {
		t.Fatalf("call %+v", call)
	}
	sent := rec.last(t)
	// The JSON Schema went as it is, keywords Gemini's Schema lacks included.
	if len(sent.Tools) != 2 || !reflect.DeepEqual(sent.Tools[0], weather) || sent.Tools[1].Name != "no_params" {
		t.Fatalf("tools sent %+v", sent.Tools)
	}
	if decl := path(wireBody(t, sent), "tools", 0, "functionDeclarations", 0); path(decl, "parametersJsonSchema", "additionalProperties") != false {
		t.Fatalf("declaration on the wire %v", decl)
	}

	req.Messages = append(req.Messages, resp.Message,
		harness.Message{Role: harness.RoleTool, ToolCallID: call.ID, Content: `{"temp_c": 21, "sky": "clear"}`})
	resp, err = c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "stop" || len(resp.Message.ToolCalls) != 0 ||
		resp.Message.Content != `The result of get_weather is {"temp_c": 21, "sky": "clear"}.` {
		t.Fatalf("final answer %+v", resp)
	}
	sent = rec.last(t)
	if len(sent.Messages) != 3 {
		t.Fatalf("messages sent %+v", sent.Messages)
	}
	// On the wire: a model turn with the function call (without the id
	// Gemini never gave), then a user turn with the function's response
	// named after the call.
	body := wireBody(t, sent)
	model, user := path(body, "contents", 1), path(body, "contents", 2)
	if path(model, "role") != "model" || path(model, "parts", 0, "functionCall", "name") != "get_weather" ||
		path(model, "parts", 0, "functionCall", "id") != nil || path(model, "parts", 0, "functionCall", "args", "city") != "Lisbon" {
		t.Fatalf("model turn %v", model)
	}
	if path(user, "role") != "user" || path(user, "parts", 0, "functionResponse", "name") != "get_weather" ||
		path(user, "parts", 0, "functionResponse", "id") != nil ||
		path(user, "parts", 0, "functionResponse", "response", "output") != `{"temp_c": 21, "sky": "clear"}` {
		t.Fatalf("user turn %v", user)
	}
}

// TestGeminiToolIDs checks that the ids Gemini gives its calls go back
// with the calls and with their responses, and that the responses to the
// calls of one turn go back together.
func TestGeminiToolIDs(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		rec.respond(req)
		if len(req.Messages) == 1 {
			return &llmtest.Reply{ToolCalls: []harness.ToolCall{{ID: "abc", Name: "f", Arguments: `{"x":1}`}, {ID: "def", Name: "g"}}}
		}
		return nil
	}})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{})
	req := ask("Call both.")
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []harness.ToolCall{{ID: "abc", Name: "f", Arguments: `{"x":1}`}, {ID: "def", Name: "g", Arguments: "{}"}}
	if !reflect.DeepEqual(resp.Message.ToolCalls, want) {
		t.Fatalf("calls %+v", resp.Message.ToolCalls)
	}
	req.Messages = append(req.Messages, resp.Message,
		harness.Message{Role: harness.RoleTool, ToolCallID: "abc", Content: "one"},
		harness.Message{Role: harness.RoleTool, ToolCallID: "def", Content: "two"})
	if resp, err = c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "The result of f is one. The result of g is two." {
		t.Fatalf("answer %q", resp.Message.Content)
	}
	body := wireBody(t, rec.last(t))
	if n := len(path(body, "contents").([]any)); n != 3 {
		t.Fatalf("%d turns, want 3: %s", n, rec.last(t).Body)
	}
	user := path(body, "contents", 2)
	if path(user, "parts", 0, "functionResponse", "id") != "abc" || path(user, "parts", 1, "functionResponse", "id") != "def" ||
		path(user, "parts", 1, "functionResponse", "name") != "g" || path(body, "contents", 1, "parts", 1, "functionCall", "id") != "def" {
		t.Fatalf("body %s", rec.last(t).Body)
	}
}

func TestGeminiThinking(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			req := &harness.ChatRequest{Messages: []harness.Message{userMsg("What's the weather in Lisbon?")},
				Tools:     []harness.FunctionDef{{Name: "get_weather", Description: "Current weather for a city"}},
				Reasoning: &harness.ReasoningParams{Effort: harness.EffortLow}, Stream: stream}
			resp, err := c.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			sent := rec.last(t)
			if sent.Reasoning == nil || sent.Reasoning.BudgetTokens != 1024 ||
				path(wireBody(t, sent), "generationConfig", "thinkingConfig", "includeThoughts") != true {
				t.Fatalf("thinking asked %+v: %s", sent.Reasoning, sent.Body)
			}
			m := resp.Message
			if len(m.Parts) != 2 || m.Parts[0].Kind != harness.PartReasoning || m.Parts[0].Text != llmtest.GeminiThought ||
				m.Parts[0].Signature == "" || m.Parts[1].Text != "" || m.Parts[1].Signature == "" {
				t.Fatalf("parts %+v", m.Parts)
			}
			if m.Reasoning() != llmtest.GeminiThought || strings.Contains(m.Content, llmtest.GeminiThought) || len(m.ToolCalls) != 1 {
				t.Fatalf("message %+v", m)
			}
			think := llmtest.CountTokens(llmtest.GeminiThought)
			if u := resp.Usage; u.ReasoningTokens != think || u.CompletionTokens <= think || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Fatalf("usage %+v", u)
			}

			// The next turn sends the thought back with its signature, and
			// the call's signature with the call.
			req.Messages = append(req.Messages, m, harness.Message{Role: harness.RoleTool, ToolCallID: m.ToolCalls[0].ID, Content: "21 C"})
			resp, err = c.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "The result of get_weather is 21 C." || resp.Message.Reasoning() != llmtest.GeminiThought {
				t.Fatalf("answer %+v", resp.Message)
			}
			turn := path(wireBody(t, rec.last(t)), "contents", 1)
			if path(turn, "parts", 0, "thought") != true || path(turn, "parts", 0, "text") != llmtest.GeminiThought ||
				path(turn, "parts", 0, "thoughtSignature") != m.Parts[0].Signature ||
				path(turn, "parts", 1, "functionCall", "name") != "get_weather" ||
				path(turn, "parts", 1, "thoughtSignature") != m.Parts[1].Signature {
				t.Fatalf("model turn sent %v", turn)
			}
			if sig, _ := base64.StdEncoding.DecodeString(m.Parts[1].Signature); !strings.HasPrefix(string(sig), "llmtest-call-signature-") {
				t.Fatalf("signature %q", sig)
			}
		})
	}
}

func TestGeminiUsage(t *testing.T) {
	usage := harness.Usage{PromptTokens: 1000, CachedTokens: 600, CompletionTokens: 50, ReasoningTokens: 20, TotalTokens: 1050}
	srv := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "Cached.", Usage: &usage}
	}})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{})
	for _, stream := range []bool{false, true} {
		req := ask("hi")
		req.Stream = stream
		resp, err := c.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != usage {
			t.Fatalf("stream %v: usage %+v, want %+v", stream, resp.Usage, usage)
		}
	}
}

func TestGeminiStream(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: rec.respond, Latency: time.Millisecond})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{})
	for name, req := range map[string]*harness.ChatRequest{
		"text":     {Messages: []harness.Message{userMsg("Please repeat these few words back to me, all of them.")}},
		"short":    ask("What is 2 + 2?"),
		"tool":     {Messages: []harness.Message{userMsg("What's the weather in Lisbon?")}, Tools: []harness.FunctionDef{{Name: "get_weather", Description: "weather"}}},
		"thinking": {Messages: []harness.Message{userMsg("What is 6 * 7?")}, Reasoning: &harness.ReasoningParams{BudgetTokens: 2000}},
		"cut":      {Messages: []harness.Message{userMsg("Please repeat these few words back to me.")}, MaxTokens: 3},
	} {
		t.Run(name, func(t *testing.T) {
			whole, err := c.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			sreq := *req
			sreq.Stream = true
			streamed, err := c.Chat(context.Background(), &sreq)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.last(t).Stream {
				t.Fatal("the request did not ask for a stream")
			}
			if streamed.TTFT <= 0 || whole.TTFT != 0 {
				t.Fatalf("TTFT %v streamed, %v whole", streamed.TTFT, whole.TTFT)
			}
			streamed.TTFT = 0
			if !reflect.DeepEqual(streamed, whole) {
				t.Fatalf("streamed %+v\nwhole    %+v", streamed, whole)
			}
		})
	}
}

// geminiRaw serves a fixed body to every request, for the answers the
// fake does not make.
func geminiRaw(t *testing.T, contentType, body string) *Client {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(ts.Close)
	return newClient(t, ts.URL, Options{Kind: KindGemini, MaxRetries: -1})
}

func TestGeminiMalformed(t *testing.T) {
	const chunk = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}]}` + "\r\n\r\n"
	for name, c := range map[string]*Client{
		"cut stream":        geminiRaw(t, "text/event-stream", chunk),
		"not json event":    geminiRaw(t, "text/event-stream", chunk+"data: not json\r\n\r\n"),
		"not an event":      geminiRaw(t, "text/event-stream", "hello\r\n\r\n"),
		"error event":       geminiRaw(t, "text/event-stream", chunk+`data: {"error":{"code":500,"message":"boom","status":"INTERNAL"}}`+"\r\n\r\n"),
		"no candidates":     geminiRaw(t, "application/json", `{"modelVersion":"x"}`),
		"no candidates sse": geminiRaw(t, "text/event-stream", `data: {"modelVersion":"x"}`+"\r\n\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			req := ask("hi")
			req.Stream = strings.Contains(name, "stream") || strings.Contains(name, "event") || strings.Contains(name, "sse")
			_, err := c.Chat(context.Background(), req)
			e := asError(t, err)
			if !errors.Is(err, ErrMalformedResponse) || !e.Retryable() || e.StatusCode != 200 {
				t.Fatalf("err %v: malformed %v, retryable %v, status %d", err, errors.Is(err, ErrMalformedResponse), e.Retryable(), e.StatusCode)
			}
		})
	}
	// The fake's garbage: a cut JSON body, a stream cut in its second
	// event; retried, the call succeeds.
	for _, stream := range []bool{false, true} {
		srv := llmtest.NewServer(llmtest.Options{Garbage: llmtest.Schedule{First: 1}})
		c := kindClient(t, KindGemini, srv, Options{MaxRetries: -1})
		req := ask("What is 2 + 2?")
		req.Stream = stream
		if _, err := c.Chat(context.Background(), req); !errors.Is(err, ErrMalformedResponse) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("stream %v: %q", stream, err)
		}
		srv.Close()
	}
	srv := llmtest.NewServer(llmtest.Options{Garbage: llmtest.Schedule{First: 1}})
	defer srv.Close()
	req := ask("What is 2 + 2?")
	req.Stream = true
	if resp, err := kindClient(t, KindGemini, srv, Options{MaxRetries: 1}).Chat(context.Background(), req); err != nil || resp.Message.Content != "The answer is 4." {
		t.Fatalf("after a cut stream: %v %+v", err, resp)
	}
}

func TestGeminiRateLimits(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{RateLimits: llmtest.Schedule{First: 1}, RetryAfter: 150 * time.Millisecond})
	defer srv.Close()
	var delays []time.Duration
	var statuses []int
	c := kindClient(t, KindGemini, srv, Options{OnRetry: func(_ int, d time.Duration, err error) {
		delays = append(delays, d)
		statuses = append(statuses, err.(*Error).StatusCode)
	}})
	resp, err := c.Chat(context.Background(), ask("What is 2 + 2?"))
	if err != nil || resp.Message.Content != "The answer is 4." {
		t.Fatalf("%v %+v", err, resp)
	}
	if len(delays) != 1 || delays[0] < 150*time.Millisecond || statuses[0] != 429 {
		t.Fatalf("retries after %v, statuses %v: the Retry-After was not honoured", delays, statuses)
	}

	// A wait longer than the rate-limit wait allows: the status, the wait
	// asked for and Gemini's message, at once.
	srv2 := llmtest.NewServer(llmtest.Options{RateLimits: llmtest.Schedule{First: 1}, RetryAfter: 2 * time.Second})
	defer srv2.Close()
	_, err = kindClient(t, KindGemini, srv2, Options{MaxRetries: -1, RateLimitWait: 500 * time.Millisecond}).Chat(context.Background(), ask("hi"))
	e := asError(t, err)
	if e.StatusCode != 429 || e.RetryAfter != 2*time.Second || !e.Retryable() || !strings.Contains(e.Message, "Rate limit reached") {
		t.Fatalf("429: %q, retry after %v", err, e.RetryAfter)
	}

	// 503 UNAVAILABLE is retried, 400 INVALID_ARGUMENT is not.
	var n atomic.Int64
	srv3 := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		switch {
		case strings.Contains(req.LastUser(), "invalid"):
			return &llmtest.Reply{Status: 400, Content: "* GenerateContentRequest.contents: bad"}
		case n.Add(1) == 1:
			return &llmtest.Reply{Status: 503, Content: "The model is overloaded. Please try again later."}
		}
		return nil
	}})
	defer srv3.Close()
	c = kindClient(t, KindGemini, srv3, Options{MaxRetries: 3})
	if _, err := c.Chat(context.Background(), ask("What is 1 + 1?")); err != nil || c.Stats().Retries != 1 {
		t.Fatalf("503: %v, stats %+v", err, c.Stats())
	}
	_, err = c.Chat(context.Background(), ask("an invalid one"))
	e = asError(t, err)
	if e.StatusCode != 400 || e.Attempts != 1 || e.Retryable() || !strings.Contains(e.Message, "GenerateContentRequest.contents: bad") {
		t.Fatalf("400: %q", err)
	}
}

func TestGeminiResponseTooLarge(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: 8 << 20})
		c := kindClient(t, KindGemini, srv, Options{MaxResponseBytes: 1 << 20})
		req := ask("hi")
		req.Stream = stream
		_, err := c.Chat(context.Background(), req)
		e := asError(t, err)
		if !errors.Is(err, ErrResponseTooLarge) || e.Retryable() || e.Attempts != 1 || e.StatusCode != 200 {
			t.Fatalf("stream %v: %q", stream, err)
		}
		srv.Close()
		if st := srv.Stats(); st.ChatCompletions != 1 {
			t.Fatalf("stream %v: retried: %+v", stream, st)
		}
	}
	// Within the limit, a huge answer is an answer.
	srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: 1 << 20})
	defer srv.Close()
	resp, err := kindClient(t, KindGemini, srv, Options{MaxResponseBytes: 4 << 20}).Chat(context.Background(), ask("hi"))
	if err != nil || len(resp.Message.Content) != 1<<20 || resp.FinishReason != "length" {
		t.Fatalf("%v", err)
	}
}

func TestGeminiEnvironmentIgnored(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{APIKey: secretKey, Respond: rec.respond})
	defer srv.Close()
	t.Setenv("GEMINI_API_KEY", "key-from-the-environment")
	t.Setenv("GOOGLE_API_KEY", "other-key-from-the-environment")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	t.Setenv("GOOGLE_GENAI_USE_ENTERPRISE", "true")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "env-project")
	t.Setenv("GOOGLE_CLOUD_LOCATION", "env-location")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("GOOGLE_VERTEX_BASE_URL", "http://127.0.0.1:1")

	c := kindClient(t, KindGemini, srv, Options{APIKey: secretKey})
	if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t).Header.Get("X-Goog-Api-Key"); got != secretKey {
		t.Fatalf("key sent %q", got)
	}
	if names, err := c.Models(context.Background()); err != nil || len(names) != 1 {
		t.Fatalf("models %v %v", names, err)
	}

	// No key configured: none is sent, not even the environment's.
	open := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer open.Close()
	c = kindClient(t, KindGemini, open, Options{})
	if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	if h := rec.last(t).Header; h.Get("X-Goog-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Fatalf("headers %v", h)
	}
	// And a key refused is refused with Gemini's message, the key not in it.
	_, err := kindClient(t, KindGemini, srv, Options{APIKey: "wrong-key-1234"}).Chat(context.Background(), ask("hi"))
	if e := asError(t, err); e.StatusCode != 401 || e.Retryable() || strings.Contains(err.Error(), "wrong-key-1234") {
		t.Fatalf("401: %q", err)
	}
}

func TestGeminiModels(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Models: []string{"gemini-2.5-pro"}})
	defer srv.Close()
	names, err := kindClient(t, KindGemini, srv, Options{}).Models(context.Background())
	if err != nil || !reflect.DeepEqual(names, []string{llmtest.DefaultModel, "gemini-2.5-pro"}) {
		t.Fatalf("models %v %v", names, err)
	}
}

func TestGeminiInvalidRequest(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{})
	big := int64(1) << 40
	for name, req := range map[string]*harness.ChatRequest{
		"no messages":     {},
		"unknown role":    {Messages: []harness.Message{{Role: "narrator", Content: "x"}}},
		"tool without id": {Messages: []harness.Message{userMsg("x"), {Role: harness.RoleTool, Content: "y"}}},
		"seed too large":  {Messages: []harness.Message{userMsg("x")}, Seed: &big},
		"bad arguments": {Messages: []harness.Message{userMsg("x"),
			{Role: harness.RoleAssistant, ToolCalls: []harness.ToolCall{{ID: "a", Name: "f", Arguments: "[1"}}}}},
		"tool without name": {Messages: []harness.Message{userMsg("x")}, Tools: []harness.FunctionDef{{}}},
	} {
		if _, err := c.Chat(context.Background(), req); !errors.Is(err, harness.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if st := srv.Stats(); st.ChatCompletions != 0 {
		t.Fatalf("invalid requests were sent: %+v", st)
	}
}

// TestGeminiRetryInfo checks that the wait a 429 asks for in its body
// (google.rpc.RetryInfo), as Gemini does instead of a Retry-After header,
// is honoured.
func TestGeminiRetryInfo(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) == 1 {
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[`+
				`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},`+
				`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"0.2s"}]}}`)
			return
		}
		fmt.Fprint(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`)
	}))
	defer ts.Close()
	var delays []time.Duration
	c := newClient(t, ts.URL, Options{Kind: KindGemini, OnRetry: func(_ int, d time.Duration, _ error) { delays = append(delays, d) }})
	resp, err := c.Chat(context.Background(), ask("hi"))
	if err != nil || resp.Message.Content != "ok" {
		t.Fatalf("%v %+v", err, resp)
	}
	if len(delays) != 1 || delays[0] < 200*time.Millisecond {
		t.Fatalf("retried after %v, want the 0.2 s asked for", delays)
	}
	n.Store(0)
	_, err = newClient(t, ts.URL, Options{Kind: KindGemini, MaxRetries: -1, RateLimitWait: 100 * time.Millisecond}).Chat(context.Background(), ask("hi"))
	if e := asError(t, err); e.StatusCode != 429 || e.RetryAfter != 200*time.Millisecond || !strings.Contains(e.Message, "exceeded your current quota") {
		t.Fatalf("429: %q, retry after %v", err, e.RetryAfter)
	}
}

// TestGeminiEmptyAnswer checks that an empty assistant message (a blocked
// answer) is left out of the next request, a part with no data being
// refused by Gemini, while a signature alone goes back on an empty text.
func TestGeminiEmptyAnswer(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer srv.Close()
	c := kindClient(t, KindGemini, srv, Options{})
	sig := base64.StdEncoding.EncodeToString([]byte("sig"))
	resp, err := c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{
		userMsg("first"), {Role: harness.RoleAssistant},
		userMsg("second"), {Role: harness.RoleAssistant, Parts: []harness.Part{{Kind: harness.PartReasoning, Signature: sig}}},
		userMsg("What is 2 + 2?")}})
	if err != nil || resp.Message.Content != "The answer is 4." {
		t.Fatalf("%v %+v", err, resp)
	}
	body := wireBody(t, rec.last(t))
	turns := path(body, "contents").([]any)
	if len(turns) != 4 || path(turns[2], "role") != "model" || path(turns[2], "parts", 0, "thoughtSignature") != sig {
		t.Fatalf("contents %s", rec.last(t).Body)
	}
}
