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
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/deadport"
)

const secretKey = "sk-test-TOPSECRET-0123456789"

// newClient returns a client of srv with fast retries.
func newClient(t *testing.T, url string, opts Options) *Client {
	t.Helper()
	opts.BaseURL = url
	if opts.Model == "" {
		opts.Model = "default-model"
	}
	if opts.RetryBaseDelay == 0 {
		opts.RetryBaseDelay = 10 * time.Millisecond
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userMsg(s string) harness.Message { return harness.Message{Role: harness.RoleUser, Content: s} }

func ask(prompt string) *harness.ChatRequest {
	return &harness.ChatRequest{Messages: []harness.Message{userMsg(prompt)}}
}

// recorder keeps the requests an llmtest server sees.
type recorder struct {
	mu   sync.Mutex
	reqs []*llmtest.Request
}

func (r *recorder) respond(req *llmtest.Request) *llmtest.Reply {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return nil
}

func (r *recorder) last(t *testing.T) *llmtest.Request {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("no request reached the server")
	}
	return r.reqs[len(r.reqs)-1]
}

func TestChat(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{
		Respond: rec.respond,
		Answers: map[string]string{"capital of France": "It is Paris."},
	})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{APIKey: secretKey})
	temp := 0.0
	topP, seed := 0.25, int64(1<<62+7)
	cases := []struct {
		name      string
		req       *harness.ChatRequest
		want      string
		wantModel string
		check     func(t *testing.T, r *llmtest.Request)
	}{
		{name: "echo", req: ask("Hello, model"), want: "Hello, model", wantModel: "default-model"},
		{name: "arithmetic", req: ask("What is 19 + 23?"), want: "The answer is 42."},
		{name: "negative decimals", req: ask("What is -1.5 * 4?"), want: "The answer is -6."},
		{name: "scripted", req: ask("What is the capital of France?"), want: "It is Paris."},
		{name: "model named by the request", req: &harness.ChatRequest{Model: "other", Messages: []harness.Message{userMsg("hi")}},
			want: "hi", wantModel: "other"},
		{name: "system prompt, temperature and max tokens are sent",
			req: &harness.ChatRequest{
				Messages:    []harness.Message{{Role: harness.RoleSystem, Content: "Be terse."}, userMsg("What is 1 + 1?")},
				Temperature: &temp, MaxTokens: 64,
			},
			want: "The answer is 2.",
			check: func(t *testing.T, r *llmtest.Request) {
				if len(r.Messages) != 2 || !reflect.DeepEqual(r.Messages[0], harness.Message{Role: "system", Content: "Be terse."}) {
					t.Errorf("messages %+v", r.Messages)
				}
				if r.Temperature == nil || *r.Temperature != 0 || r.MaxTokens != 64 {
					t.Errorf("temperature %v, max tokens %d", r.Temperature, r.MaxTokens)
				}
				if got := r.Header.Get("Authorization"); got != "Bearer "+secretKey {
					t.Errorf("Authorization %q", got)
				}
			}},
		{name: "top_p and seed are sent",
			req:  &harness.ChatRequest{Messages: []harness.Message{userMsg("y")}, TopP: &topP, Seed: &seed},
			want: "y",
			check: func(t *testing.T, r *llmtest.Request) {
				if r.TopP == nil || *r.TopP != 0.25 || r.Seed == nil || *r.Seed != seed {
					t.Errorf("top_p %v, seed %v: %s", r.TopP, r.Seed, r.Body)
				}
				if r.Temperature != nil || r.MaxTokens != 0 {
					t.Errorf("unset parameters sent: %s", r.Body)
				}
			}},
		{name: "no temperature, no max tokens", req: ask("x"), want: "x",
			check: func(t *testing.T, r *llmtest.Request) {
				var raw map[string]any
				json.Unmarshal(r.Body, &raw)
				for _, k := range []string{"temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "tools", "stream"} {
					if _, ok := raw[k]; ok {
						t.Errorf("%s sent: %s", k, r.Body)
					}
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Chat(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != tc.want || resp.Message.Role != harness.RoleAssistant || len(resp.Message.ToolCalls) != 0 {
				t.Fatalf("message %+v, want %q", resp.Message, tc.want)
			}
			if resp.FinishReason != "stop" {
				t.Errorf("finish reason %q", resp.FinishReason)
			}
			if tc.wantModel != "" && resp.Model != tc.wantModel {
				t.Errorf("model %q, want %q", resp.Model, tc.wantModel)
			}
			if r := rec.last(t); tc.wantModel != "" && r.Model != tc.wantModel {
				t.Errorf("model sent %q, want %q", r.Model, tc.wantModel)
			}
			if tc.check != nil {
				tc.check(t, rec.last(t))
			}
		})
	}
	if st := c.Stats(); st.Calls != int64(len(cases)) || st.Attempts != st.Calls || st.Retries != 0 || st.Failures != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestChatUsage(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{})
	req := &harness.ChatRequest{Messages: []harness.Message{
		{Role: harness.RoleSystem, Content: "You are a calculator."},
		userMsg("What is 300 + 33?"),
	}}
	resp, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	prompt := llmtest.CountTokens("You are a calculator.") + llmtest.CountTokens("What is 300 + 33?")
	completion := llmtest.CountTokens("The answer is 333.")
	want := harness.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	if resp.Usage != want || want.PromptTokens == 0 {
		t.Fatalf("usage %+v, want %+v", resp.Usage, want)
	}
	// max_tokens cuts the answer short.
	req.MaxTokens = 1
	resp, err = c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.FinishReason != "length" || resp.Message.Content != "The " || resp.Usage.CompletionTokens != 1 {
		t.Fatalf("cut answer %+v", resp)
	}
}

func TestChatToolRoundTrip(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{})
	weather := harness.FunctionDef{
		Name:        "get_weather",
		Description: "Current weather for a city",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required":   []any{"city"},
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
	if resp.FinishReason != "tool_calls" || len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("answer %+v", resp)
	}
	call := resp.Message.ToolCalls[0]
	if call.Name != "get_weather" || call.ID == "" || call.Arguments != `{"city":"Lisbon"}` {
		t.Fatalf("call %+v", call)
	}
	sent := rec.last(t)
	if len(sent.Tools) != 2 || !reflect.DeepEqual(sent.Tools[0], weather) || sent.Tools[1].Name != "no_params" ||
		sent.Tools[1].Parameters["type"] != "object" {
		t.Fatalf("tools sent %+v", sent.Tools)
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
	// The assistant's tool call and the tool's answer went out in the wire format.
	sent = rec.last(t)
	if len(sent.Messages) != 3 {
		t.Fatalf("messages sent %+v", sent.Messages)
	}
	if got := sent.Messages[1]; got.Role != "assistant" || got.Content != "" || len(got.ToolCalls) != 1 || got.ToolCalls[0] != call {
		t.Fatalf("assistant message sent %+v", got)
	}
	if got := sent.Messages[2]; got.Role != "tool" || got.ToolCallID != call.ID {
		t.Fatalf("tool message sent %+v", got)
	}
	var raw struct {
		Messages []map[string]any `json:"messages"`
	}
	json.Unmarshal(sent.Body, &raw)
	tc := raw.Messages[1]["tool_calls"].([]any)[0].(map[string]any)
	if tc["type"] != "function" || tc["id"] != call.ID {
		t.Fatalf("tool call on the wire %v", tc)
	}
}

func TestChatInvalidRequest(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{})
	for name, req := range map[string]*harness.ChatRequest{
		"nil":                     nil,
		"no messages":             {},
		"unknown role":            {Messages: []harness.Message{{Role: "robot", Content: "x"}}},
		"tool message without id": {Messages: []harness.Message{{Role: harness.RoleTool, Content: "x"}}},
		"tool without a name":     {Messages: []harness.Message{userMsg("x")}, Tools: []harness.FunctionDef{{}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Chat(context.Background(), req)
			if !errors.Is(err, harness.ErrInvalid) {
				t.Fatalf("err %v, want ErrInvalid", err)
			}
		})
	}
	if n := srv.Stats().Requests; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestChatRetries(t *testing.T) {
	type result struct {
		resp    *harness.ChatResponse
		err     error
		elapsed time.Duration
		stats   Stats
		srv     llmtest.Stats
	}
	run := func(t *testing.T, sopts llmtest.Options, copts Options) result {
		t.Helper()
		srv := llmtest.NewServer(sopts)
		defer srv.Close()
		c := newClient(t, srv.URL, copts)
		start := time.Now()
		resp, err := c.Chat(context.Background(), ask("What is 2 + 2?"))
		return result{resp, err, time.Since(start), c.Stats(), srv.Stats()}
	}
	ok := func(t *testing.T, r result, attempts int64) {
		t.Helper()
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.resp.Message.Content != "The answer is 4." {
			t.Fatalf("answer %q", r.resp.Message.Content)
		}
		if r.stats.Attempts != attempts || r.stats.Retries != attempts-1 || r.stats.Failures != 0 {
			t.Fatalf("client stats %+v, want %d attempts", r.stats, attempts)
		}
	}
	failed := func(t *testing.T, r result, attempts int, status int, contains ...string) *Error {
		t.Helper()
		var e *Error
		if !errors.As(r.err, &e) {
			t.Fatalf("err %v (%T), want *Error", r.err, r.err)
		}
		if e.Attempts != attempts || e.StatusCode != status || r.stats.Failures != 1 || r.stats.Attempts != int64(attempts) {
			t.Fatalf("error %q: attempts %d, status %d, stats %+v; want %d attempts, status %d", e, e.Attempts, e.StatusCode, r.stats, attempts, status)
		}
		for _, s := range contains {
			if !strings.Contains(e.Error(), s) {
				t.Errorf("error %q does not mention %q", e, s)
			}
		}
		return e
	}

	t.Run("500 then success", func(t *testing.T) {
		r := run(t, llmtest.Options{ServerErrors: llmtest.Schedule{First: 1}}, Options{})
		ok(t, r, 2)
		if r.srv.Statuses[500] != 1 || r.srv.Statuses[200] != 1 {
			t.Fatalf("server stats %+v", r.srv)
		}
	})
	t.Run("two 500s then success within the default retries", func(t *testing.T) {
		ok(t, run(t, llmtest.Options{ServerErrors: llmtest.Schedule{First: 2}}, Options{}), 3)
	})
	t.Run("429 honours Retry-After", func(t *testing.T) {
		// RetryBaseDelay alone would retry after about 10 ms.
		r := run(t, llmtest.Options{RateLimits: llmtest.Schedule{First: 1}, RetryAfter: 700 * time.Millisecond}, Options{})
		ok(t, r, 2)
		if r.elapsed < 650*time.Millisecond || r.elapsed > 5*time.Second {
			t.Fatalf("retried after %v, want about 700 ms", r.elapsed)
		}
	})
	t.Run("429 with Retry-After in whole seconds", func(t *testing.T) {
		var n atomic.Int64
		fake := llmtest.NewServer(llmtest.Options{})
		defer fake.Close()
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"error":{"message":"slow down","type":"requests"}}`)
				return
			}
			fake.ServeHTTP(w, r)
		}))
		defer proxy.Close()
		c := newClient(t, proxy.URL+"/v1", Options{})
		start := time.Now()
		if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 950*time.Millisecond {
			t.Fatalf("retried after %v, want at least about 1 s", d)
		}
	})
	t.Run("Retry-After beyond the rate-limit wait is not waited for", func(t *testing.T) {
		r := run(t, llmtest.Options{RateLimits: llmtest.Schedule{First: 1}, RetryAfter: 10 * time.Second},
			Options{RateLimitWait: time.Second})
		e := failed(t, r, 1, 429, "429", "Rate limit reached", "the provider asks to wait 10s, more than the 1s left of the 1s rate-limit wait")
		if e.RetryAfter != 10*time.Second || r.elapsed > 2*time.Second {
			t.Fatalf("RetryAfter %v, elapsed %v", e.RetryAfter, r.elapsed)
		}
	})
	t.Run("give up on 500 says so", func(t *testing.T) {
		r := run(t, llmtest.Options{ServerErrors: llmtest.Schedule{Every: 1}}, Options{MaxRetries: 2})
		e := failed(t, r, 3, 500, "HTTP 500 Internal Server Error", "llmtest fault", "after 3 attempts", "chat completion")
		if !e.Retryable() || r.srv.Statuses[500] != 3 {
			t.Fatalf("retryable %v, server %+v", e.Retryable(), r.srv)
		}
	})
	t.Run("no retries when MaxRetries is negative", func(t *testing.T) {
		failed(t, run(t, llmtest.Options{ServerErrors: llmtest.Schedule{Every: 1}}, Options{MaxRetries: -1}), 1, 500)
	})
	t.Run("4xx is not retried", func(t *testing.T) {
		r := run(t, llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
			return &llmtest.Reply{Status: http.StatusBadRequest, Content: "context length exceeded"}
		}}, Options{})
		if e := failed(t, r, 1, 400, "HTTP 400 Bad Request: context length exceeded"); e.Retryable() {
			t.Fatal("400 retryable")
		}
	})
	t.Run("timeout then success", func(t *testing.T) {
		// The timeout ends the hung attempt; the second must answer within
		// it on a loaded machine too.
		r := run(t, llmtest.Options{Timeouts: llmtest.Schedule{First: 1}}, Options{Timeout: 1500 * time.Millisecond})
		ok(t, r, 2)
	})
	t.Run("a timed-out attempt is retried without backoff", func(t *testing.T) {
		// A 10 s backoff would show; the timeout was the wait.
		var delays []time.Duration
		r := run(t, llmtest.Options{Timeouts: llmtest.Schedule{First: 1}}, Options{Timeout: 1500 * time.Millisecond,
			RetryBaseDelay: 10 * time.Second, OnRetry: func(_ int, d time.Duration, _ error) { delays = append(delays, d) }})
		ok(t, r, 2)
		if len(delays) != 1 || delays[0] != 0 || r.elapsed > 8*time.Second {
			t.Fatalf("retry delays %v, elapsed %v", delays, r.elapsed)
		}
	})
	t.Run("timeouts give up after the retries", func(t *testing.T) {
		r := run(t, llmtest.Options{Timeouts: llmtest.Schedule{Every: 1}}, Options{Timeout: 100 * time.Millisecond, MaxRetries: 1})
		e := failed(t, r, 2, 0, "no response within 100ms", "timeout", "after 2 attempts")
		if !errors.Is(e, context.DeadlineExceeded) {
			t.Fatal("a timeout does not match context.DeadlineExceeded")
		}
		if r.elapsed < 200*time.Millisecond || r.elapsed > 3*time.Second {
			t.Fatalf("elapsed %v", r.elapsed)
		}
	})
	t.Run("garbage then success", func(t *testing.T) {
		ok(t, run(t, llmtest.Options{Garbage: llmtest.Schedule{First: 1}}, Options{}), 2)
	})
	t.Run("garbage gives up", func(t *testing.T) {
		r := run(t, llmtest.Options{Garbage: llmtest.Schedule{Every: 1}}, Options{})
		e := failed(t, r, 3, 200, "malformed response")
		if !errors.Is(e, ErrMalformedResponse) {
			t.Fatal("not ErrMalformedResponse")
		}
	})
	t.Run("mixed faults", func(t *testing.T) {
		r := run(t, llmtest.Options{
			RateLimits: llmtest.Schedule{First: 1}, RetryAfter: 50 * time.Millisecond,
			ServerErrors: llmtest.Schedule{First: 2}, Garbage: llmtest.Schedule{First: 3},
		}, Options{MaxRetries: 3})
		ok(t, r, 4)
	})
	t.Run("OnRetry sees each retry", func(t *testing.T) {
		var mu sync.Mutex
		var seen []string
		r := run(t, llmtest.Options{ServerErrors: llmtest.Schedule{First: 2}}, Options{OnRetry: func(n int, d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%d:%v", n, strings.Contains(err.Error(), "500")))
			if d <= 0 || d > 20*time.Millisecond {
				t.Errorf("delay %v", d)
			}
		}})
		ok(t, r, 3)
		if !slices.Equal(seen, []string{"1:true", "2:true"}) {
			t.Fatalf("OnRetry calls %v", seen)
		}
	})
}

func TestChatConnectionErrors(t *testing.T) {
	url := "http://" + deadport.Addr(t) + "/v1"
	c := newClient(t, url, Options{APIKey: secretKey, MaxRetries: 1})
	_, err := c.Chat(context.Background(), ask("hi"))
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 2 || !strings.Contains(err.Error(), "connection failed") || !e.Retryable() {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), secretKey) {
		t.Fatalf("key in %q", err)
	}
}

func TestChatCancel(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Timeouts: llmtest.Schedule{Every: 1}})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Chat(ctx, ask("hi"))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	var e *Error
	if !errors.As(err, &e) || e.Attempts != 1 {
		t.Fatalf("err %#v", err)
	}

	// Cancelled while waiting to retry: the context error, and why it was
	// retrying.
	failing := llmtest.NewServer(llmtest.Options{ServerErrors: llmtest.Schedule{Every: 1}})
	defer failing.Close()
	c = newClient(t, failing.URL, Options{RetryBaseDelay: 10 * time.Second, RetryMaxDelay: 20 * time.Second})
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = c.Chat(ctx, ask("hi"))
	if !errors.Is(err, context.Canceled) || err.Error() != "llm: chat completion: context canceled while waiting to retry after: "+
		"HTTP 500 Internal Server Error: The server had an error while processing your request (llmtest fault)." {
		t.Fatalf("err %v", err)
	}

	// A caller's deadline that falls before the next retry stops the
	// retries at once, with the real reason.
	srv2 := llmtest.NewServer(llmtest.Options{ServerErrors: llmtest.Schedule{Every: 1}})
	defer srv2.Close()
	c = newClient(t, srv2.URL, Options{RetryBaseDelay: 10 * time.Second, RetryMaxDelay: 20 * time.Second})
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start = time.Now()
	_, err = c.Chat(ctx, ask("hi"))
	if err == nil || !strings.Contains(err.Error(), "500") || time.Since(start) > time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	// An endpoint that echoes the Authorization header in every error.
	echo := func(status int) *llmtest.Server {
		return llmtest.NewServer(llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
			return &llmtest.Reply{Status: status, Content: "Incorrect API key provided: " + r.Header.Get("Authorization")}
		}})
	}
	for _, status := range []int{401, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := echo(status)
			defer srv.Close()
			c := newClient(t, srv.URL, Options{APIKey: secretKey})
			_, err := c.Chat(context.Background(), ask("hi"))
			if err == nil || strings.Contains(err.Error(), secretKey) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), secretKey) {
				t.Fatalf("err %v", err)
			}
			if !strings.Contains(err.Error(), "Incorrect API key provided: Bearer [redacted]") {
				t.Fatalf("err %v", err)
			}
			_, err = c.Models(context.Background())
			if err != nil && strings.Contains(err.Error(), secretKey) {
				t.Fatalf("Models err %v", err)
			}
		})
	}
	t.Run("plain text error body", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "<html>bad gateway for %s</html>", r.Header.Get("Authorization"))
		}))
		defer srv.Close()
		c := newClient(t, srv.URL+"/v1", Options{APIKey: secretKey, MaxRetries: -1})
		_, err := c.Chat(context.Background(), ask("hi"))
		if err == nil || strings.Contains(err.Error(), secretKey) || !strings.Contains(err.Error(), "HTTP 502 Bad Gateway: <html>bad gateway for Bearer [redacted]</html>") {
			t.Fatalf("err %v", err)
		}
	})
}

func TestEnvironmentDoesNotOverride(t *testing.T) {
	var rec recorder
	srv := llmtest.NewServer(llmtest.Options{APIKey: secretKey, Respond: rec.respond})
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: yes")

	c := newClient(t, srv.URL, Options{APIKey: secretKey})
	if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	h := rec.last(t).Header
	if h.Get("Authorization") != "Bearer "+secretKey || h.Get("X-From-Env") != "" ||
		h.Get("OpenAI-Organization") != "" || h.Get("OpenAI-Project") != "" {
		t.Fatalf("headers %v", h)
	}
	if names, err := c.Models(context.Background()); err != nil || len(names) != 1 {
		t.Fatalf("models %v %v", names, err)
	}

	// No key configured: none is sent, not even the environment's.
	open := llmtest.NewServer(llmtest.Options{Respond: rec.respond})
	defer open.Close()
	c = newClient(t, open.URL, Options{})
	if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
		t.Fatal(err)
	}
	if got := rec.last(t).Header.Get("Authorization"); got != "" {
		t.Fatalf("Authorization %q sent without a key", got)
	}
}

func TestModels(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Model: "qwen2.5:7b", Models: []string{"llama3.2"}, APIKey: secretKey})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{APIKey: secretKey})
	names, err := c.Models(context.Background())
	if err != nil || !slices.Equal(names, []string{"qwen2.5:7b", "llama3.2"}) {
		t.Fatalf("models %v, %v", names, err)
	}
	c = newClient(t, srv.URL, Options{APIKey: "wrong-key"})
	_, err = c.Models(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 401 || e.Op != "list models" || e.Attempts != 1 {
		t.Fatalf("err %v", err)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<html>not an API</html>"))
	}))
	defer bad.Close()
	c = newClient(t, bad.URL+"/v1", Options{})
	if _, err := c.Models(context.Background()); !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("err %v", err)
	}
}

func TestChatConcurrent(t *testing.T) {
	const n = 32
	srv := llmtest.NewServer(llmtest.Options{Latency: 20 * time.Millisecond, ServerErrors: llmtest.Schedule{Rate: 0.2}, Seed: 7})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{MaxRetries: 5})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := c.Chat(context.Background(), ask(fmt.Sprintf("What is %d + 1?", i)))
			if err != nil {
				t.Error(err)
				return
			}
			if want := fmt.Sprintf("The answer is %d.", i+1); resp.Message.Content != want {
				t.Errorf("answer %q, want %q", resp.Message.Content, want)
			}
		})
	}
	wg.Wait()
	st, sst := c.Stats(), srv.Stats()
	if st.Calls != n || st.Failures != 0 || st.Attempts != sst.ChatCompletions || st.Retries != sst.Statuses[500] {
		t.Fatalf("client %+v, server %+v", st, sst)
	}
	if sst.PeakInFlight < 8 {
		t.Fatalf("peak in flight %d", sst.PeakInFlight)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("no BaseURL accepted")
	}
	c, err := New(Options{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if DefaultTimeout != 120*time.Second || DefaultMaxResponseBytes != 4<<20 {
		t.Fatalf("defaults %v, %d", DefaultTimeout, DefaultMaxResponseBytes)
	}
	if err != nil || c.Model() != "m" || c.opts.Timeout != DefaultTimeout || c.opts.MaxRetries != DefaultMaxRetries ||
		c.opts.MaxResponseBytes != DefaultMaxResponseBytes {
		t.Fatalf("%v %+v", err, c.opts)
	}
}

// BenchmarkChat measures the client and the fake together: the overhead
// an evaluation pays per model call, without the model.
func BenchmarkChat(b *testing.B) {
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	req := &harness.ChatRequest{Messages: []harness.Message{
		{Role: harness.RoleSystem, Content: "Answer with a number."},
		userMsg("What is 1234 + 4321?"),
	}}
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
}
