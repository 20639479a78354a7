package target_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/target"
)

// env is a Getenv over a map.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func turn(msgs ...string) *target.Turn {
	t := &target.Turn{ConversationID: "conv-1"}
	for i, m := range msgs {
		role := harness.RoleUser
		if i%2 == 1 {
			role = harness.RoleAssistant
		}
		t.Messages = append(t.Messages, harness.Message{Role: role, Content: m})
	}
	return t
}

func newClient(t *testing.T, def harness.TargetDefinition, opts target.Options) *target.Client {
	t.Helper()
	if opts.RetryBaseDelay == 0 {
		opts.RetryBaseDelay = time.Millisecond
	}
	c, err := target.New(def, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSend: one turn goes out with the body rendered (a placeholder alone
// is its JSON value, inside a longer string its text), the headers'
// variables read, the body signed; the reply's answer, tool calls and
// sources come back from their pointers.
func TestSend(t *testing.T) {
	t.Parallel()
	var got struct {
		method, auth, ctype, sig string
		body                     []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.method, got.auth, got.ctype, got.sig = r.Method, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("X-Sig")
		got.body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data": {"text": "Paris.", "calls": [
			{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"city\":\"Paris\"}"}},
			{"name": "convert", "arguments": {"amount": 3}}],
			"refs": ["faq.md", {"file": "cities.md", "chunk": 2, "score": 0.5}]}}`)
	}))
	defer srv.Close()
	def := harness.TargetDefinition{
		ID: "support", URL: srv.URL + "/${PATH_PART}", Method: "put",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"},
		Body: map[string]any{"q": "{{prompt}}", "history": "{{ messages }}", "session": "{{conversation_id}}",
			"note": "turn of {{conversation_id}}: {{prompt}}", "n": 3.0, "list": []any{"{{prompt}}"}},
		Response:  harness.TargetResponse{Answer: "/data/text", ToolCalls: "/data/calls", Sources: "/data/refs"},
		Signature: &harness.TargetSignature{Header: "X-Sig", Secret: "${SIG_SECRET}"},
	}
	c := newClient(t, def, target.Options{Getenv: env(map[string]string{"TOKEN": "tok-123", "SIG_SECRET": "s3cret", "PATH_PART": "chat"})})
	var attempts []harness.Attempt
	tr := turn("Hello", "Hi! How can I help?", "What is the capital of France?")
	tr.OnAttempt = func(a harness.Attempt) { attempts = append(attempts, a) }
	reply, err := c.Send(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if got.method != "PUT" || got.auth != "Bearer tok-123" || got.ctype != "application/json" {
		t.Errorf("request: %s, auth %q, content type %q", got.method, got.auth, got.ctype)
	}
	if !webhook.Verify("s3cret", got.body, got.sig) {
		t.Errorf("signature %q does not sign the body", got.sig)
	}
	var body map[string]any
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatal(err)
	}
	history, _ := json.Marshal(body["history"])
	if body["q"] != "What is the capital of France?" || body["session"] != "conv-1" || body["n"] != 3.0 ||
		body["note"] != "turn of conv-1: What is the capital of France?" ||
		string(history) != `[{"content":"Hello","role":"user"},{"content":"Hi! How can I help?","role":"assistant"},{"content":"What is the capital of France?","role":"user"}]` ||
		body["list"].([]any)[0] != "What is the capital of France?" {
		t.Errorf("body = %s", got.body)
	}
	if reply.Answer != "Paris." || reply.StatusCode != 200 || reply.Attempts != 1 || reply.Latency <= 0 {
		t.Errorf("reply = %+v", reply)
	}
	if len(reply.ToolCalls) != 2 || reply.ToolCalls[0] != (harness.ToolCall{ID: "c1", Name: "lookup", Arguments: `{"city":"Paris"}`}) ||
		reply.ToolCalls[1] != (harness.ToolCall{Name: "convert", Arguments: `{"amount":3}`}) {
		t.Errorf("tool calls = %+v", reply.ToolCalls)
	}
	if len(reply.Sources) != 2 || reply.Sources[0] != (harness.Source{File: "faq.md", Score: 1}) ||
		reply.Sources[1] != (harness.Source{File: "cities.md", Chunk: 2, Score: 0.5}) {
		t.Errorf("sources = %+v", reply.Sources)
	}
	if len(attempts) != 1 || attempts[0].Status != harness.AttemptOK || attempts[0].HTTPStatus != 200 {
		t.Errorf("attempts = %+v", attempts)
	}
	if d := c.Definition(); d.Headers["Authorization"] != "Bearer ${TOKEN}" {
		t.Errorf("the definition kept %q", d.Headers["Authorization"])
	}
}

// TestNewMissingVariable: a variable the definition names and the
// environment lacks is an error naming it, before anything is sent.
func TestNewMissingVariable(t *testing.T) {
	t.Parallel()
	def := harness.TargetDefinition{ID: "x", URL: "http://127.0.0.1:9/", Body: "{{prompt}}",
		Headers: map[string]string{"Authorization": "Bearer ${NOT_SET_TOKEN}"}, Response: harness.TargetResponse{Answer: "/a"}}
	_, err := target.New(def, target.Options{Getenv: env(nil)})
	if !errors.Is(err, harness.ErrEnvNotSet) || !strings.Contains(err.Error(), "NOT_SET_TOKEN") || !strings.Contains(err.Error(), "headers.Authorization") {
		t.Errorf("New = %v; want the variable named", err)
	}
	def.Headers = nil
	def.URL = "${BASE}/chat"
	_, err = target.New(def, target.Options{Getenv: env(map[string]string{"BASE": "ftp://host"})})
	if !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "not an http or https URL") {
		t.Errorf("New with an ftp base = %v", err)
	}
	def.URL = "http://127.0.0.1:9/"
	def.Response.Answer = "answer"
	if _, err := target.New(def, target.Options{}); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("New with a bad pointer = %v; want invalid", err)
	}
}

// TestDefaultsAreTheModels: a target is held to a model's bounds.
func TestDefaultsAreTheModels(t *testing.T) {
	if target.DefaultMaxResponseBytes != llm.DefaultMaxResponseBytes || target.DefaultTimeout != llm.DefaultTimeout ||
		target.DefaultMaxRetries != llm.DefaultMaxRetries {
		t.Errorf("target defaults %d B, %v, %d retries; the model's %d B, %v, %d", target.DefaultMaxResponseBytes, target.DefaultTimeout,
			target.DefaultMaxRetries, llm.DefaultMaxResponseBytes, llm.DefaultTimeout, llm.DefaultMaxRetries)
	}
}

// TestFaults: every way a target fails ends the turn with an error whose
// text says why (what a test's details.error shows), classified as a
// model endpoint's failure is, retried only when another attempt might
// succeed.
func TestFaults(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	def := func(url string) harness.TargetDefinition {
		return harness.TargetDefinition{ID: "agent", URL: url, Body: map[string]any{"q": "{{prompt}}"},
			Headers:  map[string]string{"Authorization": "Bearer ${TOKEN}"},
			Response: harness.TargetResponse{Answer: "/answer"}}
	}
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/chat"
	}
	var bigWritten atomic.Int64
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		url      string // instead of a server
		timeout  time.Duration
		msg      []string
		status   string
		http     int
		sentinel error
		attempts int
	}{
		{
			name: "HTML page",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, "<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>")
			},
			msg:    []string{"target agent: ", "the target answered an HTML page, not JSON", "Welcome to nginx"},
			status: harness.AttemptMalformed, http: 200, sentinel: target.ErrMalformedResponse, attempts: 1,
		},
		{
			name: "HTML error page",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusBadGateway)
				io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
			},
			msg:    []string{"HTTP 502 Bad Gateway: an HTML page", "(after 3 attempts)"},
			status: harness.AttemptHTTPError, http: 502, attempts: 3,
		},
		{
			name: "500",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(500)
				io.WriteString(w, `{"error": "the agent crashed"}`)
			},
			msg:    []string{"target agent: HTTP 500 Internal Server Error: the agent crashed (after 3 attempts)"},
			status: harness.AttemptHTTPError, http: 500, attempts: 3,
		},
		{
			name: "404 is not retried",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "no such route", http.StatusNotFound)
			},
			msg:    []string{"HTTP 404 Not Found: no such route"},
			status: harness.AttemptHTTPError, http: 404, attempts: 1,
		},
		{
			name: "a secret echoed back is not repeated",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "bad token "+r.Header.Get("Authorization"), http.StatusUnauthorized)
			},
			msg:    []string{"HTTP 401 Unauthorized: bad token Bearer ********"},
			status: harness.AttemptHTTPError, http: 401, attempts: 1,
		},
		{
			name: "50 MiB body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				chunk := []byte(`{"answer": "` + strings.Repeat("a", mib-13))
				for range 50 {
					n, err := w.Write(chunk)
					bigWritten.Add(int64(n))
					if err != nil {
						return
					}
					chunk = []byte(strings.Repeat("a", mib))
				}
			},
			msg:    []string{"response too large: more than 4194304 bytes (the answer limit)"},
			status: harness.AttemptTooLarge, http: 200, sentinel: target.ErrResponseTooLarge, attempts: 1,
		},
		{
			name: "50 MiB announced",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "52428800")
				w.WriteHeader(200)
				w.Write([]byte(`{"answer":`))
			},
			msg:    []string{"response too large"},
			status: harness.AttemptTooLarge, http: 200, sentinel: target.ErrResponseTooLarge, attempts: 1,
		},
		{
			name: "pointer that names nothing",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"reply": {"text": "hi"}, "ok": true}`)
			},
			msg:    []string{"no answer in the reply: nothing at /answer (the reply has keys ok, reply)"},
			status: harness.AttemptMalformed, http: 200, sentinel: target.ErrMalformedResponse, attempts: 1,
		},
		{
			name: "answer that is not a string",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"answer": 42}`)
			},
			msg:    []string{"the answer at /answer is a number, not a string"},
			status: harness.AttemptMalformed, http: 200, sentinel: target.ErrMalformedResponse, attempts: 1,
		},
		{
			name: "text that is not JSON",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, "Paris")
			},
			msg:    []string{"the target answered text/plain that is not JSON", "Paris", "(after 3 attempts)"},
			status: harness.AttemptMalformed, http: 200, sentinel: target.ErrMalformedResponse, attempts: 3,
		},
		{
			name:   "connection refused",
			url:    refused(),
			msg:    []string{"connection failed", "connection refused", "(after 3 attempts)"},
			status: harness.AttemptUnreachable, sentinel: harness.ErrUnreachable, attempts: 3,
		},
		{
			name: "timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // then the server sees the client hang up
				<-r.Context().Done()
			},
			timeout: 100 * time.Millisecond,
			msg:     []string{"no reply within 100ms (timeout) (after 3 attempts)"},
			status:  harness.AttemptTimeout, sentinel: context.DeadlineExceeded, attempts: 3,
		},
		{
			name: "redirect",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://elsewhere.example/chat", http.StatusFound)
			},
			msg:    []string{"HTTP 302 Found: the target redirects to https://elsewhere.example/chat"},
			status: harness.AttemptHTTPError, http: 302, attempts: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.url
			var hits atomic.Int32
			if tc.handler != nil {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					hits.Add(1)
					tc.handler(w, r)
				}))
				defer srv.Close()
				url = srv.URL + "/chat"
			}
			c := newClient(t, def(url), target.Options{Getenv: env(map[string]string{"TOKEN": "sk-very-secret"})})
			tr := turn("Where is Paris?")
			tr.Timeout = tc.timeout
			var mu sync.Mutex
			var statuses []string
			tr.OnAttempt = func(a harness.Attempt) { mu.Lock(); statuses = append(statuses, a.Status); mu.Unlock() }
			reply, err := c.Send(context.Background(), tr)
			if err == nil {
				t.Fatalf("reply %+v; want an error", reply)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			if strings.Contains(err.Error(), "sk-very-secret") {
				t.Errorf("error %q holds the secret", err)
			}
			status, code := harness.AttemptStatusOf(err)
			if status != tc.status || code != tc.http {
				t.Errorf("AttemptStatusOf = %s, %d; want %s, %d", status, code, tc.status, tc.http)
			}
			if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
				t.Errorf("error %v does not match %v", err, tc.sentinel)
			}
			var te *target.Error
			if !errors.As(err, &te) || te.Attempts != tc.attempts || len(statuses) != tc.attempts {
				t.Errorf("attempts: error %+v, reported %v; want %d", te, statuses, tc.attempts)
			}
			// An attempt that timed out may have ended before its request
			// reached the handler, on a busy machine.
			if got := int(hits.Load()); tc.handler != nil && (got > tc.attempts || got < 1 || tc.timeout == 0 && got != tc.attempts) {
				t.Errorf("the target got %d requests; want %d", got, tc.attempts)
			}
		})
	}
	t.Cleanup(func() {
		// The 50 MiB body was cut off near the limit, not read whole.
		if n := bigWritten.Load(); n >= 40*mib {
			t.Errorf("the target wrote %d bytes before the client hung up; want far fewer than 50 MiB", n)
		}
	})
}

// TestRetryThenAnswer: a 503 then an answer is one reply of two
// attempts, each reported.
func TestRetryThenAnswer(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, `{"answer": "ok"}`)
	}))
	defer srv.Close()
	c := newClient(t, harness.TargetDefinition{ID: "a", URL: srv.URL, Body: "{{prompt}}", Response: harness.TargetResponse{Answer: "/answer"}}, target.Options{})
	var statuses []string
	tr := turn("hi")
	tr.OnAttempt = func(a harness.Attempt) { statuses = append(statuses, a.Status) }
	reply, err := c.Send(context.Background(), tr)
	if err != nil || reply.Answer != "ok" || reply.Attempts != 2 {
		t.Fatalf("reply %+v, %v", reply, err)
	}
	if len(statuses) != 2 || statuses[0] != harness.AttemptHTTPError || statuses[1] != harness.AttemptOK {
		t.Errorf("attempts = %v", statuses)
	}
	// A turn's own MaxRetries of 0 is a single attempt.
	n.Store(0)
	zero := 0
	tr = turn("hi")
	tr.MaxRetries = &zero
	if _, err := c.Send(context.Background(), tr); err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Errorf("single attempt = %v; want the 503", err)
	}
}

// TestCancel: a cancelled context ends the turn at once, saying so.
func TestCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c := newClient(t, harness.TargetDefinition{ID: "a", URL: srv.URL, Body: "{{prompt}}", Response: harness.TargetResponse{Answer: "/answer"}}, target.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }() // the request is in flight
	_, err := c.Send(ctx, turn("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v; want cancelled", err)
	}
	if s, _ := harness.AttemptStatusOf(err); s != harness.AttemptCancelled {
		t.Errorf("status %s", s)
	}
}

// TestTurnMustEndWithTheUser: a conversation that does not end with the
// user's message is refused before anything is sent.
func TestTurnMustEndWithTheUser(t *testing.T) {
	t.Parallel()
	c := newClient(t, harness.TargetDefinition{ID: "a", URL: "http://127.0.0.1:9/", Body: "{{prompt}}", Response: harness.TargetResponse{Answer: "/a"}}, target.Options{})
	if _, err := c.Send(context.Background(), turn("hi", "hello")); err == nil || !strings.Contains(err.Error(), "ends with the user's message") {
		t.Errorf("Send = %v", err)
	}
}

func TestConversationID(t *testing.T) {
	a, b := target.ConversationID("run1", "t1", 0), target.ConversationID("run1", "t1", 1)
	if a == b || a != target.ConversationID("run1", "t1", 0) || a == target.ConversationID("run2", "t1", 0) {
		t.Errorf("ids %q %q", a, b)
	}
}
