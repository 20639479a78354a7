package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func init() {
	testKinds = append(testKinds, testKind{kind: KindAnthropic, base: nativeBase})
}

// nativeBase is the base URL of a native kind (anthropic, gemini) on the
// fake endpoint: its URL without the /v1 of the OpenAI routes (the SDKs
// add their own paths).
func nativeBase(srvURL string) string { return strings.TrimSuffix(srvURL, "/v1") }

// kindClient returns a client of the given kind of the fake endpoint srv.
func kindClient(t *testing.T, kind string, srv *llmtest.Server, opts Options) *Client {
	t.Helper()
	opts.Kind = kind
	return newClient(t, nativeBase(srv.URL), opts)
}

// anthropicJSON re-encodes v, for comparing wire shapes.
func anthropicJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAnthropicRequest(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{APIKey: secretKey, Respond: rec.respond})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{APIKey: secretKey, Model: "claude-test"})
	temp, topP, seed := 0.5, 0.9, int64(7)
	resp, err := c.Chat(context.Background(), &harness.ChatRequest{
		Messages: []harness.Message{
			{Role: harness.RoleSystem, Content: "You are a calculator."},
			{Role: harness.RoleSystem, Content: "Be brief."},
			userMsg("What is 300 + 33?"),
		},
		Temperature: &temp, TopP: &topP, Seed: &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "The answer is 333." || resp.FinishReason != "stop" || resp.Model != "claude-test" {
		t.Fatalf("answer %+v", resp)
	}
	// The usage counted as on the OpenAI wire: both kinds give the same.
	prompt := llmtest.CountTokens("You are a calculator.") + llmtest.CountTokens("Be brief.") + llmtest.CountTokens("What is 300 + 33?")
	completion := llmtest.CountTokens("The answer is 333.")
	if want := (harness.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}); resp.Usage != want {
		t.Fatalf("usage %+v, want %+v", resp.Usage, want)
	}
	sent := rec.last(t)
	h := sent.Header
	if h.Get("X-Api-Key") != secretKey || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Authorization") != "" {
		t.Fatalf("headers %v", h)
	}
	body := wireBody(t, sent)
	if body["model"] != "claude-test" || body["max_tokens"] != float64(DefaultAnthropicMaxTokens) ||
		body["temperature"] != 0.5 || body["top_p"] != 0.9 || body["seed"] != nil || body["stream"] != nil || body["thinking"] != nil {
		t.Fatalf("body %s", sent.Body)
	}
	if got := anthropicJSON(body["system"]); got != `[{"text":"You are a calculator.","type":"text"},{"text":"Be brief.","type":"text"}]` {
		t.Fatalf("system %s", got)
	}
	if got := anthropicJSON(body["messages"]); got != `[{"content":[{"text":"What is 300 + 33?","type":"text"}],"role":"user"}]` {
		t.Fatalf("messages %s", got)
	}
	if sent.MaxTokens != DefaultAnthropicMaxTokens || *sent.Temperature != 0.5 || *sent.TopP != 0.9 || len(sent.Messages) != 3 {
		t.Fatalf("decoded %+v", sent)
	}

	// max_tokens as asked, and an answer cut by it.
	resp, err = c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{userMsg("What is 300 + 33?")}, MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rec.last(t).MaxTokens != 1 || resp.FinishReason != "length" || resp.Message.Content != "The " || resp.Usage.CompletionTokens != 1 {
		t.Fatalf("cut answer %+v", resp)
	}
}

func TestAnthropicToolRoundTrip(t *testing.T) {
	var rec recorder
	two := false
	var mu sync.Mutex
	srv := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		rec.respond(req)
		mu.Lock()
		defer mu.Unlock()
		if two && req.Messages[len(req.Messages)-1].Role == harness.RoleUser {
			return &llmtest.Reply{ToolCalls: []harness.ToolCall{
				{Name: "get_weather", Arguments: `{"city":"Lisbon"}`}, {Name: "get_weather", Arguments: `{"city":"Porto"}`}}}
		}
		return nil
	}})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{})
	weather := harness.FunctionDef{
		Name:        "get_weather",
		Description: "Current weather for a city",
		Parameters: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"city": map[string]any{"type": "string"}},
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
	if call.Name != "get_weather" || call.ID == "" || call.Arguments != `{"city":"Lisbon"}` {
		t.Fatalf("call %+v", call)
	}
	sent := rec.last(t)
	if len(sent.Tools) != 2 || !reflect.DeepEqual(sent.Tools[0], weather) || sent.Tools[1].Name != "no_params" {
		t.Fatalf("tools sent %+v", sent.Tools)
	}
	if got := anthropicJSON(wireBody(t, sent)["tools"].([]any)[1]); got != `{"input_schema":{"properties":{},"type":"object"},"name":"no_params"}` {
		t.Fatalf("a tool without parameters on the wire: %s", got)
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
	if len(sent.Messages) != 3 || sent.Messages[1].Role != "assistant" || len(sent.Messages[1].ToolCalls) != 1 ||
		sent.Messages[1].ToolCalls[0] != call || sent.Messages[2].Role != "tool" || sent.Messages[2].ToolCallID != call.ID {
		t.Fatalf("messages sent %+v", sent.Messages)
	}
	msgs := wireBody(t, sent)["messages"].([]any)
	if got, want := anthropicJSON(msgs[1]), fmt.Sprintf(`{"content":[{"id":%q,"input":{"city":"Lisbon"},"name":"get_weather","type":"tool_use"}],"role":"assistant"}`, call.ID); got != want {
		t.Fatalf("assistant message on the wire %s, want %s", got, want)
	}
	if got, want := anthropicJSON(msgs[2]), fmt.Sprintf(`{"content":[{"content":[{"text":"{\"temp_c\": 21, \"sky\": \"clear\"}","type":"text"}],"tool_use_id":%q,"type":"tool_result"}],"role":"user"}`, call.ID); got != want {
		t.Fatalf("tool message on the wire %s, want %s", got, want)
	}

	// Two calls at once: their results go back together, in one user
	// message, followed by the user's next words.
	mu.Lock()
	two = true
	mu.Unlock()
	req.Messages = []harness.Message{userMsg("Weather in Lisbon and Porto?")}
	resp, err = c.Chat(context.Background(), req)
	if err != nil || len(resp.Message.ToolCalls) != 2 {
		t.Fatalf("two calls: %v %+v", err, resp)
	}
	req.Messages = append(req.Messages, resp.Message,
		harness.Message{Role: harness.RoleTool, ToolCallID: resp.Message.ToolCalls[0].ID, Content: "sunny"},
		harness.Message{Role: harness.RoleTool, ToolCallID: resp.Message.ToolCalls[1].ID, Content: "rain"})
	resp, err = c.Chat(context.Background(), req)
	if err != nil || resp.Message.Content != "The result of get_weather is sunny. The result of get_weather is rain." {
		t.Fatalf("after two results: %v %+v", err, resp)
	}
	msgs = wireBody(t, rec.last(t))["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages on the wire %s", anthropicJSON(msgs))
	}
	results := msgs[2].(map[string]any)
	if blocks := results["content"].([]any); results["role"] != "user" || len(blocks) != 2 ||
		blocks[0].(map[string]any)["type"] != "tool_result" || blocks[1].(map[string]any)["type"] != "tool_result" {
		t.Fatalf("results on the wire %s", anthropicJSON(results))
	}

	// A call without arguments goes as an empty object; arguments that are
	// not an object cannot be sent at all.
	req.Messages = []harness.Message{userMsg("Call it."), {Role: harness.RoleAssistant, ToolCalls: []harness.ToolCall{{ID: "toolu_1", Name: "no_params"}}},
		{Role: harness.RoleTool, ToolCallID: "toolu_1", Content: "done"}}
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := anthropicJSON(wireBody(t, rec.last(t))["messages"].([]any)[1]); !strings.Contains(got, `"input":{}`) {
		t.Fatalf("call without arguments on the wire: %s", got)
	}
	req.Messages[1].ToolCalls[0].Arguments = `[1, 2]`
	if _, err := c.Chat(context.Background(), req); !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "JSON object") {
		t.Fatalf("arguments not an object: %v", err)
	}
}

func TestAnthropicThinking(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{MaxRetries: 3})
	tools := []harness.FunctionDef{{Name: "get_weather", Description: "Current weather for a city",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}
	req := &harness.ChatRequest{
		Messages:  []harness.Message{userMsg("What's the weather in Lisbon?")},
		Tools:     tools,
		MaxTokens: 500,
		Reasoning: &harness.ReasoningParams{BudgetTokens: 2000},
	}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sent := rec.last(t)
	body := wireBody(t, sent)
	if anthropicJSON(body["thinking"]) != `{"budget_tokens":2000,"type":"enabled"}` || body["max_tokens"] != float64(2500) ||
		sent.Reasoning == nil || sent.Reasoning.BudgetTokens != 2000 {
		t.Fatalf("thinking asked as %s, max_tokens %v", anthropicJSON(body["thinking"]), body["max_tokens"])
	}
	thinking := llmtest.ThinkingText(sent)
	if len(resp.Message.Parts) != 1 || resp.Message.Reasoning() != thinking || resp.Message.Parts[0].Signature == "" ||
		resp.Message.Parts[0].Kind != harness.PartReasoning || resp.Message.Parts[0].Redacted {
		t.Fatalf("parts %+v", resp.Message.Parts)
	}
	if resp.Message.Content != "" || len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("answer %+v", resp.Message)
	}
	if want := llmtest.CountTokens(thinking) + llmtest.CountTokens("get_weather") + llmtest.CountTokens(`{"city":"Lisbon"}`); resp.Usage.CompletionTokens != want ||
		resp.Usage.ReasoningTokens != llmtest.CountTokens(thinking) {
		t.Fatalf("usage %+v", resp.Usage)
	}

	// The tool loop goes on: the thinking goes back, signed, first in the
	// assistant's message, as the API requires.
	req.Messages = append(req.Messages, resp.Message,
		harness.Message{Role: harness.RoleTool, ToolCallID: resp.Message.ToolCalls[0].ID, Content: "sunny"})
	final, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if final.Message.Content != "The result of get_weather is sunny." || strings.Contains(final.Message.Content, "step by step") ||
		!strings.Contains(final.Message.Reasoning(), "step by step") {
		t.Fatalf("final answer %+v", final.Message)
	}
	sent = rec.last(t)
	if got := sent.Messages[1].Parts; len(got) != 1 || got[0] != resp.Message.Parts[0] {
		t.Fatalf("parts sent back %+v", got)
	}
	blocks := wireBody(t, sent)["messages"].([]any)[1].(map[string]any)["content"].([]any)
	if len(blocks) != 2 || blocks[0].(map[string]any)["type"] != "thinking" || blocks[1].(map[string]any)["type"] != "tool_use" ||
		blocks[0].(map[string]any)["signature"] != resp.Message.Parts[0].Signature {
		t.Fatalf("assistant blocks on the wire %s", anthropicJSON(blocks))
	}

	// Without its thinking, or with a signature that does not match it,
	// the API refuses the conversation: a 400, not retried.
	for name, parts := range map[string][]harness.Part{
		"lost":     nil,
		"tampered": {{Kind: harness.PartReasoning, Text: "Something else.", Signature: resp.Message.Parts[0].Signature}},
	} {
		req.Messages[1].Parts = parts
		_, err := c.Chat(context.Background(), req)
		e := asError(t, err)
		if e.StatusCode != 400 || e.Attempts != 1 || !strings.Contains(e.Message, "thinking") {
			t.Fatalf("%s thinking: %v", name, err)
		}
	}

	// An effort is a budget, at least the API's minimum; a redacted part
	// goes back as redacted_thinking; a part without signature (another
	// provider's) is not sent.
	req.Messages[1].Parts = []harness.Part{{Kind: harness.PartReasoning, Text: "unsigned"}, {Kind: harness.PartReasoning, Redacted: true, Signature: "ENCRYPTED"}}
	req.Reasoning = &harness.ReasoningParams{Effort: harness.EffortLow}
	req.MaxTokens = 0
	if _, err := c.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sent = rec.last(t)
	body = wireBody(t, sent)
	if anthropicJSON(body["thinking"]) != `{"budget_tokens":1024,"type":"enabled"}` || body["max_tokens"] != float64(DefaultAnthropicMaxTokens+1024) {
		t.Fatalf("low effort asked as %s, max_tokens %v", anthropicJSON(body["thinking"]), body["max_tokens"])
	}
	blocks = body["messages"].([]any)[1].(map[string]any)["content"].([]any)
	if got := anthropicJSON(blocks[0]); len(blocks) != 2 || got != `{"data":"ENCRYPTED","type":"redacted_thinking"}` {
		t.Fatalf("assistant blocks on the wire %s", anthropicJSON(blocks))
	}
	if got := sent.Messages[1].Parts; len(got) != 1 || !got[0].Redacted || got[0].Signature != "ENCRYPTED" {
		t.Fatalf("parts received %+v", got)
	}
}

// TestAnthropicAnswerShapes reads answers the fake does not give: redacted
// thinking, tokens written to the cache, a stop reason of its own.
func TestAnthropicAnswerShapes(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
			{"type":"thinking","thinking":"Hmm.","signature":"SIG"},
			{"type":"redacted_thinking","data":"SECRET"},
			{"type":"text","text":"Part one, "},
			{"type":"text","text":"part two."}],
			"stop_reason":"refusal","stop_sequence":null,
			"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":7}}`)
	}))
	defer ts.Close()
	c := newClient(t, ts.URL, Options{Kind: KindAnthropic})
	resp, err := c.Chat(context.Background(), ask("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := []harness.Part{{Kind: harness.PartReasoning, Text: "Hmm.", Signature: "SIG"}, {Kind: harness.PartReasoning, Redacted: true, Signature: "SECRET"}}
	if resp.Message.Content != "Part one, part two." || !reflect.DeepEqual(resp.Message.Parts, want) ||
		resp.FinishReason != "refusal" || resp.Model != "claude-x" {
		t.Fatalf("answer %+v", resp)
	}
	if u := (harness.Usage{PromptTokens: 35, CachedTokens: 20, CompletionTokens: 7, TotalTokens: 42}); resp.Usage != u {
		t.Fatalf("usage %+v, want %+v", resp.Usage, u)
	}
}

func TestAnthropicUsage(t *testing.T) {
	u := harness.Usage{PromptTokens: 1000, CachedTokens: 600, CompletionTokens: 50, ReasoningTokens: 20, TotalTokens: 1050}
	srv := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "cached", Usage: &u}
	}})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{})
	for _, stream := range []bool{false, true} {
		resp, err := c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{userMsg("hi")}, Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != u {
			t.Fatalf("stream %v: usage %+v, want %+v", stream, resp.Usage, u)
		}
	}
}

func TestAnthropicStream(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: rec.respond, Latency: time.Millisecond})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{})
	tools := []harness.FunctionDef{{Name: "get_weather", Description: "Current weather for a city",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}}
	for _, tc := range []struct {
		name string
		req  harness.ChatRequest
	}{
		{"text", harness.ChatRequest{Messages: []harness.Message{{Role: harness.RoleSystem, Content: "Be brief."}, userMsg("What is 12 * 12? Say it in a sentence, with ünïcödé.")}}},
		{"tool call", harness.ChatRequest{Messages: []harness.Message{userMsg("What's the weather in Lisbon?")}, Tools: tools}},
		{"thinking", harness.ChatRequest{Messages: []harness.Message{userMsg("What is 2 + 2?")}, Reasoning: &harness.ReasoningParams{Effort: harness.EffortMedium}}},
		{"cut", harness.ChatRequest{Messages: []harness.Message{userMsg("What is 300 + 33?")}, MaxTokens: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := tc.req
			want, err := c.Chat(context.Background(), &plain)
			if err != nil {
				t.Fatal(err)
			}
			if want.TTFT != 0 {
				t.Fatalf("TTFT %v without streaming", want.TTFT)
			}
			streamed := tc.req
			streamed.Stream = true
			got, err := c.Chat(context.Background(), &streamed)
			if err != nil {
				t.Fatal(err)
			}
			if !rec.last(t).Stream || wireBody(t, rec.last(t))["stream"] != true {
				t.Fatalf("not asked as a stream: %s", rec.last(t).Body)
			}
			if got.TTFT <= 0 {
				t.Fatalf("TTFT %v", got.TTFT)
			}
			got.TTFT = 0
			// Tool call ids differ from one request to the next.
			for i := range got.Message.ToolCalls {
				if got.Message.ToolCalls[i].ID == "" || i >= len(want.Message.ToolCalls) {
					t.Fatalf("tool calls %+v", got.Message.ToolCalls)
				}
				got.Message.ToolCalls[i].ID = want.Message.ToolCalls[i].ID
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("streamed %+v\nnot streamed %+v", got, want)
			}
		})
	}
}

// anthropicSSEServer serves a Messages answer as the events given, each followed
// by a blank line; cut, when set, hangs up on the client after them
// without ending the body.
func anthropicSSEServer(t *testing.T, cut bool, events ...string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			fmt.Fprint(w, e+"\n\n")
		}
		w.(http.Flusher).Flush()
		if cut {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

const (
	anthSSEStart = `event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`
	anthSSEBlock = `event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	anthSSEDelta = `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`
	anthSSEEnd   = `event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n" +
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}` + "\n\n" +
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`
)

func TestAnthropicStreamMalformed(t *testing.T) {
	streamed := &harness.ChatRequest{Messages: []harness.Message{userMsg("hi")}, Stream: true}
	zero := 0
	single := &harness.ChatRequest{Messages: streamed.Messages, Stream: true, MaxRetries: &zero}

	// The shapes are right: the same events, whole, make an answer.
	c := newClient(t, anthropicSSEServer(t, false, anthSSEStart, anthSSEBlock, anthSSEDelta, anthSSEEnd).URL, Options{Kind: KindAnthropic})
	if resp, err := c.Chat(context.Background(), single); err != nil || resp.Message.Content != "Hello" || resp.Usage.CompletionTokens != 2 {
		t.Fatalf("whole stream: %v %+v", err, resp)
	}

	for _, tc := range []struct {
		name   string
		cut    bool
		events []string
	}{
		{"event that does not parse", false, []string{anthSSEStart, anthSSEBlock, `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_de`}},
		{"ends before message_stop", false, []string{anthSSEStart, anthSSEBlock, anthSSEDelta}},
		{"connection cut", true, []string{anthSSEStart, anthSSEBlock, anthSSEDelta}},
		{"block out of order", false, []string{anthSSEStart, `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}`, anthSSEEnd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, anthropicSSEServer(t, tc.cut, tc.events...).URL, Options{Kind: KindAnthropic, MaxRetries: 1})
			resp, err := c.Chat(context.Background(), streamed)
			e := asError(t, err)
			if !errors.Is(err, ErrMalformedResponse) || !e.Retryable() || e.Attempts != 2 || resp != nil {
				t.Fatalf("err %v (attempts %d), resp %+v", err, e.Attempts, resp)
			}
		})
	}

	// An error event that is not an API error: malformed, and the key a
	// body echoes is not in the error.
	c = newClient(t, anthropicSSEServer(t, false, anthSSEStart, "event: error\ndata: oops "+secretKey).URL, Options{Kind: KindAnthropic, APIKey: secretKey})
	if _, err := c.Chat(context.Background(), single); !errors.Is(err, ErrMalformedResponse) || strings.Contains(err.Error(), secretKey) {
		t.Fatalf("bad error event: %v", err)
	}

	// A stream that stops in the middle is the attempt's timeout.
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, anthSSEStart+"\n\n"+anthSSEBlock+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release)
	c = newClient(t, hung.URL, Options{Kind: KindAnthropic, Timeout: 100 * time.Millisecond})
	e := asError(t, func() error { _, err := c.Chat(context.Background(), single); return err }())
	if !errors.Is(e, context.DeadlineExceeded) || !e.Retryable() || !strings.Contains(e.Message, "timeout") {
		t.Fatalf("hung stream: %v", e)
	}

	// The fake's cut stream, then a whole one: retried, and answered.
	srv := llmtest.NewServer(llmtest.Options{Garbage: llmtest.Schedule{First: 1}})
	defer srv.Close()
	c = kindClient(t, KindAnthropic, srv, Options{})
	_, err := c.Chat(context.Background(), single)
	if !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("cut stream: %v", err)
	}
	if resp, err := c.Chat(context.Background(), streamed); err != nil || resp.Message.Content != "hi" {
		t.Fatalf("after the cut stream: %v %+v", err, resp)
	}
	// And its cut body, not streamed.
	srv = llmtest.NewServer(llmtest.Options{Garbage: llmtest.Schedule{First: 1}})
	defer srv.Close()
	c = kindClient(t, KindAnthropic, srv, Options{MaxRetries: -1})
	if _, err := c.Chat(context.Background(), ask("hi")); !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("cut body: %v", err)
	}

	// An error event in the stream means what the same error would mean
	// before it: overloaded_error is a 529, a rate limit waited out (here
	// for 300 ms at most) and retried without counting as a retry.
	overloaded := `event: error` + "\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	c = newClient(t, anthropicSSEServer(t, false, anthSSEStart, overloaded).URL, Options{Kind: KindAnthropic, MaxRetries: 1,
		RateLimitWait: 300 * time.Millisecond, RetryBaseDelay: 20 * time.Millisecond})
	e = asError(t, func() error { _, err := c.Chat(context.Background(), streamed); return err }())
	if e.StatusCode != 529 || e.Attempts < 2 || !strings.Contains(e.Message, "Overloaded") || errors.Is(e, ErrMalformedResponse) {
		t.Fatalf("overloaded in the stream: %v", e)
	}
	if st := c.Stats(); st.RateLimited < 2 {
		t.Fatalf("stats %+v: the overloaded answers were not taken for rate limits", st)
	}
}

func TestAnthropicOverloaded(t *testing.T) {
	const wait = 80 * time.Millisecond
	for _, tc := range []struct {
		name   string
		opts   llmtest.Options
		status int
	}{
		{"overloaded", llmtest.Options{Overloaded: llmtest.Schedule{First: 1}, RetryAfter: wait}, 529},
		{"rate limited", llmtest.Options{RateLimits: llmtest.Schedule{First: 1}, RetryAfter: wait}, 429},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				srv := llmtest.NewServer(tc.opts)
				defer srv.Close()
				var mu sync.Mutex
				var delays []time.Duration
				var errs []*Error
				c := kindClient(t, KindAnthropic, srv, Options{MaxRetries: 2, OnRetry: func(n int, d time.Duration, err error) {
					mu.Lock()
					defer mu.Unlock()
					delays = append(delays, d)
					var e *Error
					errors.As(err, &e)
					errs = append(errs, e)
				}})
				resp, err := c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{userMsg("What is 1 + 1?")}, Stream: stream})
				if err != nil || resp.Message.Content != "The answer is 2." {
					t.Fatalf("%v %+v", err, resp)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(errs) != 1 || errs[0] == nil || errs[0].StatusCode != tc.status || errs[0].RetryAfter != wait ||
					delays[0] < wait || !strings.Contains(errs[0].Message, "llmtest") {
					t.Fatalf("retried after %v for %v", delays, errs)
				}
				if st := srv.Stats(); st.ChatCompletions != 2 || st.Statuses[tc.status] != 1 {
					t.Fatalf("server stats %+v", st)
				}
			})
		}
	}

	// On the OpenAI wire, an overloaded provider answers 503, waited out
	// as long as the rate-limit wait allows (here 300 ms).
	srv := llmtest.NewServer(llmtest.Options{Overloaded: llmtest.Schedule{Every: 1}, RetryAfter: wait})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{MaxRetries: -1, RateLimitWait: 300 * time.Millisecond})
	e := asError(t, func() error { _, err := c.Chat(context.Background(), ask("hi")); return err }())
	if e.StatusCode != 503 || e.RetryAfter != wait || e.Attempts < 2 {
		t.Fatalf("openai wire: %v", e)
	}
}

func TestAnthropicBadRequestNotRetried(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{APIKey: secretKey})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{APIKey: secretKey, MaxRetries: 3})
	// A tool call whose result never came: the API refuses it.
	_, err := c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{
		userMsg("Call it."),
		{Role: harness.RoleAssistant, ToolCalls: []harness.ToolCall{{ID: "toolu_1", Name: "f"}}},
		userMsg("Well?"),
	}})
	e := asError(t, err)
	if e.StatusCode != 400 || e.Attempts != 1 || e.Retryable() || !strings.Contains(e.Message, "tool_result") {
		t.Fatalf("err %v", err)
	}
	if st := srv.Stats(); st.ChatCompletions != 1 {
		t.Fatalf("a 400 was retried: %+v", st)
	}
	// A wrong key: 401, its message, never the key.
	c = kindClient(t, KindAnthropic, srv, Options{APIKey: "sk-wrong-key-0123456789", MaxRetries: 3})
	_, err = c.Chat(context.Background(), ask("hi"))
	e = asError(t, err)
	if e.StatusCode != 401 || e.Attempts != 1 || strings.Contains(err.Error(), "sk-wrong-key") || !strings.Contains(e.Message, "API key") {
		t.Fatalf("err %v", err)
	}
}

func TestAnthropicResponseTooLarge(t *testing.T) {
	const limit = 1 << 20
	srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: 64 << 20})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{MaxResponseBytes: limit})
	for _, stream := range []bool{false, true} {
		_, err := c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{userMsg("hi")}, Stream: stream})
		e := asError(t, err)
		if !errors.Is(err, ErrResponseTooLarge) || e.Retryable() || e.Attempts != 1 || e.StatusCode != 200 {
			t.Fatalf("stream %v: err %v", stream, err)
		}
	}
	// Under the limit, the same huge answer is read whole.
	small := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: 256 << 10})
	defer small.Close()
	c = kindClient(t, KindAnthropic, small, Options{MaxResponseBytes: limit})
	for _, stream := range []bool{false, true} {
		resp, err := c.Chat(context.Background(), &harness.ChatRequest{Messages: []harness.Message{userMsg("hi")}, Stream: stream})
		if err != nil || len(resp.Message.Content) != 256<<10 || resp.FinishReason != "length" {
			t.Fatalf("stream %v: %v", stream, err)
		}
	}
	harnesstest.Eventually(t, 0, "no request in flight", func() bool { return srv.Stats().InFlight == 0 })
	if st := srv.Stats(); st.Huge != 2 || st.ChatCompletions != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAnthropicEnvironmentDoesNotOverride(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{APIKey: secretKey, Respond: rec.respond})
	defer srv.Close()
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: yes")
	t.Setenv("ANTHROPIC_PROFILE", "no-such-profile")
	t.Setenv("ANTHROPIC_CONFIG_DIR", t.TempDir())

	c := kindClient(t, KindAnthropic, srv, Options{APIKey: secretKey})
	if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	h := rec.last(t).Header
	if h.Get("X-Api-Key") != secretKey || h.Get("Authorization") != "" || h.Get("X-From-Env") != "" {
		t.Fatalf("headers %v", h)
	}
	if names, err := c.Models(context.Background()); err != nil || len(names) != 1 {
		t.Fatalf("models %v %v", names, err)
	}

	// No key configured: none is sent, not even the environment's.
	open := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer open.Close()
	c = kindClient(t, KindAnthropic, open, Options{})
	if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	if h := rec.last(t).Header; h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
		t.Fatalf("a key was sent without one configured: %v", h)
	}
}

func TestAnthropicModels(t *testing.T) {
	more := make([]string, 1200)
	for i := range more {
		more[i] = fmt.Sprintf("claude-%04d", i)
	}
	srv := llmtest.NewServer(llmtest.Options{Model: "claude-default", Models: more, APIKey: secretKey})
	defer srv.Close()
	c := kindClient(t, KindAnthropic, srv, Options{APIKey: secretKey})
	names, err := c.Models(context.Background())
	if err != nil || !slices.Equal(names, append([]string{"claude-default"}, more...)) {
		t.Fatalf("models %d %v", len(names), err)
	}
	// The same path still answers the OpenAI kind in its shape.
	oc := newClient(t, srv.URL, Options{APIKey: secretKey})
	if names, err := oc.Models(context.Background()); err != nil || len(names) != 1201 {
		t.Fatalf("openai models %d %v", len(names), err)
	}
	// A wrong key: 401 from the list too.
	c = kindClient(t, KindAnthropic, srv, Options{APIKey: "sk-wrong-0123456789"})
	if _, err := c.Models(context.Background()); asError(t, err).StatusCode != 401 || strings.Contains(err.Error(), "sk-wrong") {
		t.Fatalf("err %v", err)
	}
}

// BenchmarkAnthropicChat is BenchmarkChat on the anthropic kind: the
// overhead of a call through Anthropic's SDK and the fake's Messages API,
// not streamed and streamed.
func BenchmarkAnthropicChat(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			srv := llmtest.NewServer(llmtest.Options{})
			defer srv.Close()
			c, err := New(Options{Kind: KindAnthropic, BaseURL: nativeBase(srv.URL), Model: "m"})
			if err != nil {
				b.Fatal(err)
			}
			req := &harness.ChatRequest{Messages: []harness.Message{
				{Role: harness.RoleSystem, Content: "Answer with a number."},
				userMsg("What is 1234 + 4321?"),
			}, Stream: stream}
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Chat(context.Background(), req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
