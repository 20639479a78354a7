package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

// chatResult is the parts of a chat completion answer the tests read.
type chatResult struct {
	status  int
	header  http.Header
	raw     []byte
	content *string
	calls   []wireToolCall
	finish  string
	model   string
	usage   wireUsage
	errBody struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
}

func post(t *testing.T, url string, body any) chatResult {
	t.Helper()
	return postWith(t, http.DefaultClient, url, "", body)
}

func postWith(t *testing.T, c *http.Client, url, key string, body any) chatResult {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := chatResult{status: res.StatusCode, header: res.Header}
	r.raw, _ = io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(r.raw, &e); err != nil {
			t.Fatalf("error body %s: %v", r.raw, err)
		}
		if err := json.Unmarshal(e.Error, &r.errBody); err != nil || r.errBody.Message == "" {
			t.Fatalf("error body %s is not OpenAI's shape", r.raw)
		}
		return r
	}
	var w wireResponse
	if json.Unmarshal(r.raw, &w) != nil {
		return r // garbage: the caller looks at raw
	}
	if len(w.Choices) != 1 || w.Object != "chat.completion" || w.ID == "" {
		t.Fatalf("answer %s", r.raw)
	}
	r.content, r.calls, r.finish = w.Choices[0].Message.Content, w.Choices[0].Message.ToolCalls, w.Choices[0].FinishReason
	r.model, r.usage = w.Model, w.Usage
	return r
}

func user(s string) map[string]any { return map[string]any{"role": "user", "content": s} }

func ask(prompt string) map[string]any {
	return map[string]any{"model": "m", "messages": []any{user(prompt)}}
}

func text(t *testing.T, r chatResult) string {
	t.Helper()
	if r.status != http.StatusOK || r.content == nil {
		t.Fatalf("status %d, body %s", r.status, r.raw)
	}
	return *r.content
}

func TestModels(t *testing.T) {
	srv := NewServer(Options{Model: "m1", Models: []string{"m2"}})
	defer srv.Close()
	res, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if list.Object != "list" || len(list.Data) != 2 || list.Data[0].ID != "m1" || list.Data[1].ID != "m2" || list.Data[0].Object != "model" {
		t.Fatalf("models %+v", list)
	}
	res, err = http.Post(srv.URL+"/models", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /models: %d", res.StatusCode)
	}
	if !strings.HasSuffix(srv.URL, "/v1") || !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q", srv.URL)
	}
}

func TestDefaultAnswers(t *testing.T) {
	srv := NewServer(Options{Answers: map[string]string{
		"capital of France":    "Paris.",
		"capital of France, b": "Longest key wins.",
	}})
	defer srv.Close()
	assistant := func(s string) map[string]any { return map[string]any{"role": "assistant", "content": s} }
	cases := []struct {
		name     string
		messages []any
		want     string
	}{
		{"addition", []any{user("What is 2 + 3?")}, "The answer is 5."},
		{"negatives", []any{user("What is -3 + -4?")}, "The answer is -7."},
		{"decimals", []any{user("What is 1.5 + 2.25?")}, "The answer is 3.75."},
		{"exact decimals", []any{user("What is 0.1 + 0.2?")}, "The answer is 0.3."},
		{"three operands", []any{user("What is 1 + 2 + 3?")}, "The answer is 6."},
		{"subtraction", []any{user("What is 10 - 4?")}, "The answer is 6."},
		{"minus a negative", []any{user("What is 5 - -2?")}, "The answer is 7."},
		{"multiplication", []any{user("What is 6 * 7?")}, "The answer is 42."},
		{"precedence", []any{user("What is 2 + 3 * 4 - 6 / 3?")}, "The answer is 12."},
		{"division", []any{user("What is 7 / 2?")}, "The answer is 3.5."},
		{"division by zero", []any{user("What is 1 / 0?")}, "The answer is undefined."},
		{"inside a longer prompt", []any{user("Question 3. What is 12 + 30? Give a number.")}, "The answer is 42."},
		{"echo", []any{user("Hello there")}, "Hello there"},
		{"echo after a system prompt", []any{map[string]any{"role": "system", "content": "Be brief."}, user("ping")}, "ping"},
		{"content parts", []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "What is 4 "}, map[string]any{"type": "text", "text": "+ 4?"}}}}, "The answer is 8."},
		{"scripted answer", []any{user("What is the capital of France?")}, "Paris."},
		{"longest scripted key", []any{user("capital of France, briefly")}, "Longest key wins."},
		{"restate a number", []any{user("What is 6 * 7?"), assistant("Well, 6 * 7 is 42."), user(RestatePrompt)}, "42"},
		{"restate a negative decimal", []any{user("x"), assistant("The answer is -3.5."), user("What is your final answer?")}, "-3.5"},
		{"restate words", []any{user("x"), assistant("I think the answer is Paris."), user("Final answer only, please.")}, "Paris"},
		{"restate with nothing to restate", []any{user("Give your final answer as a number.")}, "Give your final answer as a number."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, srv.URL, map[string]any{"model": "m", "messages": c.messages})
			if got := text(t, r); got != c.want {
				t.Fatalf("answer %q, want %q", got, c.want)
			}
			if r.finish != "stop" || r.model != "m" {
				t.Fatalf("finish %q, model %q", r.finish, r.model)
			}
		})
	}
}

func TestArithmetic(t *testing.T) {
	cases := []struct {
		prompt, want string
		ok           bool
	}{
		{"What is 2 + 2?", "4", true},
		{"what is 2+2", "4", true},
		{"What is −3 − 4?", "-7", true},
		{"What is 1/3?", "0.3333333333", true},
		{"What is 2 × 3 ÷ 4?", "1.5", true},
		{"What is 100000000000 * 100000000000?", "10000000000000000000000", true},
		{"What is the time?", "", false},
		{"2 + 2", "", false},
	}
	for _, c := range cases {
		got, ok := Arithmetic(c.prompt)
		if got != c.want || ok != c.ok {
			t.Errorf("Arithmetic(%q) = %q, %v; want %q, %v", c.prompt, got, ok, c.want, c.ok)
		}
	}
}

var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name":        "get_weather",
	"description": "Current weather conditions for a city",
	"parameters": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city": map[string]any{"type": "string"},
			"unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
			"days": map[string]any{"type": "integer"},
		},
		"required": []any{"city"},
	},
}}

var calcTool = map[string]any{"type": "function", "function": map[string]any{
	"name":        "calculator",
	"description": "Evaluates an arithmetic expression",
	"parameters": map[string]any{
		"type":       "object",
		"properties": map[string]any{"expression": map[string]any{"type": "string"}},
		"required":   []any{"expression"},
	},
}}

func TestToolCalls(t *testing.T) {
	srv := NewServer(Options{ToolArguments: map[string]map[string]any{"lookup": {"id": 7}}})
	defer srv.Close()
	lookupTool := map[string]any{"type": "function", "function": map[string]any{"name": "lookup"}}
	cases := []struct {
		name     string
		prompt   string
		tools    []any
		wantCall string
		wantArgs map[string]any
	}{
		{"by name", "Use get_weather for Paris in fahrenheit over 3 days.", []any{calcTool, weatherTool}, "get_weather",
			map[string]any{"city": "Paris", "unit": "fahrenheit", "days": float64(3)}},
		{"by a description word", "Is it raining in New York? Check the weather.", []any{weatherTool}, "get_weather",
			map[string]any{"city": "New York", "unit": "celsius"}},
		{"name with spaces", "Ask the calculator: 12 * 7", []any{weatherTool, calcTool}, "calculator",
			map[string]any{"expression": "12 * 7"}},
		{"scripted arguments", "Please lookup the order.", []any{lookupTool}, "lookup", map[string]any{"id": float64(7)}},
		{"not mentioned", "What is 2 + 3?", []any{weatherTool}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, srv.URL, map[string]any{"model": "m", "messages": []any{user(c.prompt)}, "tools": c.tools})
			if r.status != http.StatusOK {
				t.Fatalf("status %d %s", r.status, r.raw)
			}
			if c.wantCall == "" {
				if len(r.calls) != 0 || r.finish != "stop" {
					t.Fatalf("calls %+v finish %q", r.calls, r.finish)
				}
				return
			}
			if len(r.calls) != 1 || r.finish != "tool_calls" || r.content != nil {
				t.Fatalf("answer %s", r.raw)
			}
			tc := r.calls[0]
			if tc.Function.Name != c.wantCall || tc.Type != "function" || tc.ID == "" {
				t.Fatalf("call %+v", tc)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(args, c.wantArgs) {
				t.Fatalf("arguments %v, want %v", args, c.wantArgs)
			}
		})
	}

	t.Run("round trip", func(t *testing.T) {
		before := srv.Stats().ToolCalls
		msgs := []any{user("What's the weather in Paris?")}
		r := post(t, srv.URL, map[string]any{"model": "m", "messages": msgs, "tools": []any{weatherTool}})
		if len(r.calls) != 1 {
			t.Fatalf("answer %s", r.raw)
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": r.calls},
			map[string]any{"role": "tool", "tool_call_id": r.calls[0].ID, "content": `{"temp_c": 18}`})
		r = post(t, srv.URL, map[string]any{"model": "m", "messages": msgs, "tools": []any{weatherTool}})
		if got := text(t, r); got != `The result of get_weather is {"temp_c": 18}.` || r.finish != "stop" {
			t.Fatalf("answer %q finish %q", got, r.finish)
		}
		if st := srv.Stats(); st.ToolCalls != before+1 {
			t.Fatalf("tool calls counted %d", st.ToolCalls)
		}
	})
}

func TestGuessArguments(t *testing.T) {
	schema := func(props map[string]any, required ...any) map[string]any {
		return map[string]any{"type": "object", "properties": props, "required": required}
	}
	str := map[string]any{"type": "string"}
	num := map[string]any{"type": "number"}
	cases := []struct {
		name   string
		prompt string
		schema map[string]any
		want   map[string]any
	}{
		{"numbers in order", "Add 2.5 and 4", schema(map[string]any{"a": num, "b": num}, "a", "b"), map[string]any{"a": 2.5, "b": int64(4)}},
		{"quoted text first", `Search for "blue whales" near Oslo`, schema(map[string]any{"q": str}, "q"), map[string]any{"q": "blue whales"}},
		{"not the pronoun I", "Can I see flights to Rome?", schema(map[string]any{"to": str}, "to"), map[string]any{"to": "Rome"}},
		{"whole prompt when required and nothing else", "find cheap flights", schema(map[string]any{"q": str}, "q"), map[string]any{"q": "find cheap flights"}},
		{"optional without value is left out", "find cheap flights", schema(map[string]any{"q": str}), map[string]any{}},
		{"boolean", "x", schema(map[string]any{"ok": map[string]any{"type": "boolean"}}), map[string]any{"ok": true}},
		{"no properties", "x", map[string]any{"type": "object"}, map[string]any{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := guessArguments(c.prompt, c.schema); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestRespond(t *testing.T) {
	var mu sync.Mutex
	var seen []*Request
	srv := NewServer(Options{Respond: func(req *Request) *Reply {
		mu.Lock()
		seen = append(seen, req)
		mu.Unlock()
		switch req.LastUser() {
		case "scripted":
			return &Reply{Content: "from the script", Usage: &harness.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}}
		case "fail":
			return &Reply{Status: http.StatusBadRequest, Content: "no such thing"}
		case "call":
			return CallTool("lookup", map[string]any{"id": 1})
		}
		return nil
	}})
	defer srv.Close()

	r := post(t, srv.URL, map[string]any{"model": "m", "messages": []any{user("scripted")}, "temperature": 0, "max_tokens": 50, "top_p": 0.5, "seed": 9007199254740993})
	if text(t, r) != "from the script" || r.usage != (wireUsage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}) {
		t.Fatalf("answer %s", r.raw)
	}
	if r := post(t, srv.URL, ask("fail")); r.status != http.StatusBadRequest || r.errBody.Message != "no such thing" {
		t.Fatalf("status %d %s", r.status, r.raw)
	}
	if r := post(t, srv.URL, ask("call")); len(r.calls) != 1 || r.calls[0].Function.Arguments != `{"id":1}` {
		t.Fatalf("answer %s", r.raw)
	}
	if got := text(t, post(t, srv.URL, ask("other"))); got != "other" {
		t.Fatalf("fell through to %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 || seen[0].N != 1 || seen[3].N != 4 {
		t.Fatalf("seen %d requests", len(seen))
	}
	first := seen[0]
	if first.Model != "m" || first.Temperature == nil || *first.Temperature != 0 || first.MaxTokens != 50 ||
		first.TopP == nil || *first.TopP != 0.5 || first.Seed == nil || *first.Seed != 9007199254740993 ||
		first.Header.Get("Content-Type") != "application/json" || !bytes.Contains(first.Body, []byte(`"scripted"`)) {
		t.Fatalf("request %+v", first)
	}
}

func TestBadRequests(t *testing.T) {
	srv := NewServer(Options{APIKey: "k3y-secret", StrictModels: true, Model: "m"})
	defer srv.Close()
	c := http.DefaultClient
	cases := []struct {
		name   string
		key    string
		body   any
		status int
		code   string
	}{
		{"no messages", "k3y-secret", map[string]any{"model": "m", "messages": []any{}}, 400, ""},
		{"bad role", "k3y-secret", map[string]any{"model": "m", "messages": []any{map[string]any{"role": "robot", "content": "x"}}}, 400, ""},
		{"tool message without id", "k3y-secret", map[string]any{"model": "m", "messages": []any{map[string]any{"role": "tool", "content": "x"}}}, 400, ""},
		{"not an object", "k3y-secret", []any{1, 2}, 400, ""},
		{"unknown model", "k3y-secret", map[string]any{"model": "gpt-9", "messages": []any{user("x")}}, 404, "model_not_found"},
		{"no key", "", ask("x"), 401, "invalid_api_key"},
		{"wrong key", "nope", ask("x"), 401, "invalid_api_key"},
		{"good", "k3y-secret", ask("x"), 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := postWith(t, c, srv.URL, tc.key, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if tc.code != "" && (r.errBody.Code == nil || *r.errBody.Code != tc.code) {
				t.Fatalf("error %s", r.raw)
			}
		})
	}
	res, err := http.Get(strings.TrimSuffix(srv.URL, "/v1") + "/v1/images/generations")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown path: %d", res.StatusCode)
	}
	st := srv.Stats()
	if st.Statuses[400] != 4 || st.Statuses[401] != 2 || st.Statuses[404] != 2 || st.Statuses[200] != 1 || st.Requests != 9 {
		t.Fatalf("stats %+v", st)
	}
}

func TestUsage(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	r := post(t, srv.URL, map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "system", "content": "Be brief."}, // 9 characters: 3 tokens
		user("What is 20 + 22?"),                                 // 16: 4
	}})
	// "The answer is 42." is 17 characters: 5 tokens.
	if r.usage != (wireUsage{PromptTokens: 7, CompletionTokens: 5, TotalTokens: 12}) {
		t.Fatalf("usage %+v", r.usage)
	}
	if CountTokens("") != 0 || CountTokens("abcd") != 1 || CountTokens("abcde") != 2 || CountTokens("ééééé") != 2 {
		t.Fatal("CountTokens")
	}
	r = post(t, srv.URL, map[string]any{"model": "m", "max_tokens": 2, "messages": []any{user("a long echo of many words")}})
	if got := text(t, r); got != "a long e" || r.finish != "length" || r.usage.CompletionTokens != 2 {
		t.Fatalf("cut answer %q, finish %q, usage %+v", got, r.finish, r.usage)
	}
}

func TestFaults(t *testing.T) {
	statuses := func(t *testing.T, srv *Server, n int) []int {
		var got []int
		for range n {
			got = append(got, post(t, srv.URL, ask("hi")).status)
		}
		return got
	}
	t.Run("server errors first", func(t *testing.T) {
		srv := NewServer(Options{ServerErrors: Schedule{First: 2}})
		defer srv.Close()
		if got := statuses(t, srv, 3); !reflect.DeepEqual(got, []int{500, 500, 200}) {
			t.Fatalf("statuses %v", got)
		}
		if st := srv.Stats(); st.Statuses[500] != 2 || st.Statuses[200] != 1 || st.ChatCompletions != 3 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("rate limits every other", func(t *testing.T) {
		srv := NewServer(Options{RateLimits: Schedule{Every: 2}, RetryAfter: 1500 * time.Millisecond})
		defer srv.Close()
		if got := statuses(t, srv, 4); !reflect.DeepEqual(got, []int{200, 429, 200, 429}) {
			t.Fatalf("statuses %v", got)
		}
		r := post(t, srv.URL, ask("hi"))
		if r.status != 200 {
			t.Fatal(r.status)
		}
		r = post(t, srv.URL, ask("hi"))
		if r.status != 429 || r.header.Get("Retry-After") != "2" || r.header.Get("Retry-After-Ms") != "1500" ||
			r.errBody.Code == nil || *r.errBody.Code != "rate_limit_exceeded" {
			t.Fatalf("429 answer: %v %s", r.header, r.raw)
		}
	})
	t.Run("rate is seeded and deterministic", func(t *testing.T) {
		run := func(seed uint64) []int {
			srv := NewServer(Options{ServerErrors: Schedule{Rate: 0.3}, Seed: seed})
			defer srv.Close()
			return statuses(t, srv, 200)
		}
		a, b, other := run(1), run(1), run(2)
		if !reflect.DeepEqual(a, b) {
			t.Fatal("same seed, different faults")
		}
		if reflect.DeepEqual(a, other) {
			t.Fatal("different seeds, same faults")
		}
		fails := 0
		for _, s := range a {
			if s == 500 {
				fails++
			}
		}
		if fails < 40 || fails > 80 {
			t.Fatalf("%d of 200 failed at rate 0.3", fails)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		srv := NewServer(Options{Garbage: Schedule{First: 1}})
		defer srv.Close()
		r := post(t, srv.URL, ask("hi"))
		if r.status != 200 || json.Valid(r.raw) || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("garbage answer %d %q", r.status, r.raw)
		}
		if got := text(t, post(t, srv.URL, ask("hi"))); got != "hi" {
			t.Fatalf("then %q", got)
		}
		if srv.Stats().Garbage != 1 {
			t.Fatal("garbage not counted")
		}
	})
	t.Run("huge answer is valid and of the size asked", func(t *testing.T) {
		srv := NewServer(Options{Huge: Schedule{First: 1}, HugeBytes: 100_003})
		defer srv.Close()
		r := post(t, srv.URL, ask("What is 2 + 3?"))
		got := text(t, r)
		if len(got) != 100_003 || !strings.HasPrefix(got, hugeFiller) || r.finish != "length" || r.usage.CompletionTokens != 25_001 {
			t.Fatalf("huge answer: %d bytes, finish %q, usage %+v", len(got), r.finish, r.usage)
		}
		if r.header.Get("Content-Length") != "" {
			t.Fatal("a huge answer announces its size")
		}
		if got := text(t, post(t, srv.URL, ask("What is 2 + 3?"))); got != "The answer is 5." {
			t.Fatalf("then %q", got)
		}
		if st := srv.Stats(); st.Huge != 1 || st.HugeBytesSent != int64(len(r.raw)) {
			t.Fatalf("stats %+v, body %d bytes", st, len(r.raw))
		}
	})
	t.Run("huge answer stops when the client hangs up", func(t *testing.T) {
		const size = 1 << 30 // never allocated: 1 GiB would fail the test's memory
		srv := NewServer(Options{Huge: Schedule{Every: 1}, HugeBytes: size})
		defer srv.Close()
		res, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, res.Body, 1<<20); err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		harnesstest.Eventually(t, 0, "no request in flight", func() bool { return srv.Stats().InFlight == 0 })
		if sent := srv.Stats().HugeBytesSent; sent < 1<<20 || sent > 256<<20 {
			t.Fatalf("%d bytes written for a client that read 1 MiB", sent)
		}
	})
	t.Run("NUL answers", func(t *testing.T) {
		srv := NewServer(Options{NUL: Schedule{Every: 2}})
		defer srv.Close()
		var got []string
		for range 4 {
			got = append(got, text(t, post(t, srv.URL, ask("What is 2 + 3?"))))
		}
		want := []string{"The answer is 5.", "The\x00 answer is 5.", "The answer is 5.", "The\x00 answer is 5."}
		if !reflect.DeepEqual(got, want) || srv.Stats().NULs != 2 {
			t.Fatalf("answers %q, stats %+v", got, srv.Stats())
		}
		if withNUL("") != "\x00" || withNUL("42") != "42\x00" {
			t.Fatal("withNUL of one word")
		}
	})
	t.Run("timeouts hang until the client gives up", func(t *testing.T) {
		srv := NewServer(Options{Timeouts: Schedule{First: 1}})
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		start := time.Now()
		_, err := http.DefaultClient.Do(req)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 90*time.Millisecond {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
		harnesstest.Eventually(t, 0, "one timeout", func() bool { return srv.Stats().Timeouts == 1 })
		if got := text(t, post(t, srv.URL, ask("hi"))); got != "hi" {
			t.Fatalf("then %q", got)
		}
	})
	t.Run("close releases hung requests", func(t *testing.T) {
		srv := NewServer(Options{Timeouts: Schedule{Every: 1}})
		done := make(chan error, 1)
		go func() {
			res, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
			if err == nil {
				res.Body.Close()
			}
			done <- err
		}()
		harnesstest.Eventually(t, 0, "one request in flight", func() bool { return srv.Stats().InFlight == 1 })
		closed := make(chan struct{})
		go func() { srv.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("Close blocked on a hung request")
		}
		<-done
	})
}

func TestLatencyAndConcurrency(t *testing.T) {
	const n, latency = 8, 150 * time.Millisecond
	srv := NewServer(Options{Latency: latency})
	defer srv.Close()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if got := text(t, post(t, srv.URL, ask("What is 1 + "+string(rune('0'+i))+"?"))); !strings.HasPrefix(got, "The answer is ") {
				t.Errorf("answer %q", got)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// One after another would take n*latency; allow a loaded machine slack.
	if elapsed < latency || elapsed > n*latency*3/4 {
		t.Fatalf("%d requests of %v each took %v: not concurrent", n, latency, elapsed)
	}
	st := srv.Stats()
	if st.PeakInFlight != n || st.InFlight != 0 || st.Requests != n || st.Statuses[200] != n {
		t.Fatalf("stats %+v", st)
	}
	srv.ResetStats()
	if st := srv.Stats(); st.PeakInFlight != 0 || st.Requests != 0 || len(st.Statuses) != 0 {
		t.Fatalf("after reset %+v", st)
	}
}

func TestJitter(t *testing.T) {
	h := NewHandler(Options{Latency: 10 * time.Millisecond, Jitter: 20 * time.Millisecond, Seed: 3})
	var distinct = map[time.Duration]bool{}
	for n := int64(1); n <= 50; n++ {
		d := h.latency(n)
		if d < 10*time.Millisecond || d >= 30*time.Millisecond {
			t.Fatalf("latency %v out of [10ms, 30ms)", d)
		}
		if d != NewHandler(Options{Latency: 10 * time.Millisecond, Jitter: 20 * time.Millisecond, Seed: 3}).latency(n) {
			t.Fatal("jitter is not deterministic")
		}
		distinct[d] = true
	}
	if len(distinct) < 40 {
		t.Fatalf("only %d distinct latencies", len(distinct))
	}
}
