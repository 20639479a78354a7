package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/deadport"
)

// asError fails the test unless err is an *Error.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err %v (%T), want *Error", err, err)
	}
	return e
}

func TestChatResponseTooLarge(t *testing.T) {
	const limit = 1 << 20
	const huge = 100 << 20
	srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: huge})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{MaxResponseBytes: limit})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := c.Chat(context.Background(), ask("What is 2 + 3?"))
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	e := asError(t, err)
	if !errors.Is(err, ErrResponseTooLarge) || e.Retryable() || e.Attempts != 1 || e.StatusCode != 200 {
		t.Fatalf("err %q: too large %v, retryable %v, attempts %d, status %d",
			err, errors.Is(err, ErrResponseTooLarge), e.Retryable(), e.Attempts, e.StatusCode)
	}
	if want := "response too large: more than 1048576 bytes"; !strings.Contains(err.Error(), want) {
		t.Fatalf("err %q does not say %q", err, want)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("took %v to give up", elapsed)
	}
	// Everything allocated during the call, by the client and the fake
	// alike: reading the 100 MiB answer whole would allocate more than
	// 100 MiB; reading the limit and a byte costs a few MiB.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 32<<20 {
		t.Fatalf("the call allocated %d MiB", grown>>20)
	}
	harnesstest.Eventually(t, 0, "no request in flight", func() bool { return srv.Stats().InFlight == 0 })
	st := srv.Stats()
	if st.ChatCompletions != 1 || st.Huge != 1 {
		t.Fatalf("an answer too large was retried: %+v", st)
	}
	// The client hung up: the fake stopped writing long before 100 MiB
	// (what it wrote beyond the limit sat in socket buffers).
	if st.HugeBytesSent > 64<<20 {
		t.Fatalf("the fake wrote %d MiB before the client hung up", st.HugeBytesSent>>20)
	}
	if cs := c.Stats(); cs.Attempts != 1 || cs.Failures != 1 {
		t.Fatalf("client stats %+v", cs)
	}
}

func TestResponseLimits(t *testing.T) {
	t.Run("an answer within the limit passes", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: 512 << 10})
		defer srv.Close()
		resp, err := newClient(t, srv.URL, Options{MaxResponseBytes: 1 << 20}).Chat(context.Background(), ask("hi"))
		if err != nil || len(resp.Message.Content) != 512<<10 || resp.FinishReason != "length" {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("the default limit is 4 MiB", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{First: 1}, HugeBytes: 5 << 20})
		defer srv.Close()
		c := newClient(t, srv.URL, Options{})
		if _, err := c.Chat(context.Background(), ask("hi")); !errors.Is(err, ErrResponseTooLarge) ||
			!strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", DefaultMaxResponseBytes)) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a negative limit reads everything", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{First: 1}, HugeBytes: 5 << 20})
		defer srv.Close()
		resp, err := newClient(t, srv.URL, Options{MaxResponseBytes: -1}).Chat(context.Background(), ask("hi"))
		if err != nil || len(resp.Message.Content) != 5<<20 {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a Content-Length above the limit is refused unread", func(t *testing.T) {
		// The endpoint announces 100 MiB, sends a little and hangs: only a
		// client that believes the header returns before its timeout.
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "104857600")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"id":"x","choices":[`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		defer ts.Close()
		c := newClient(t, ts.URL+"/v1", Options{MaxResponseBytes: 1 << 20, Timeout: 10 * time.Second})
		start := time.Now()
		_, err := c.Chat(context.Background(), ask("hi"))
		if e := asError(t, err); !errors.Is(err, ErrResponseTooLarge) || e.Attempts != 1 || e.StatusCode != 200 {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v", d)
		}
	})
	t.Run("a huge error body is too large, not retried", func(t *testing.T) {
		var calls atomic.Int64
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for range 64 { // 4 MiB, streamed
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}))
		defer ts.Close()
		_, err := newClient(t, ts.URL+"/v1", Options{MaxResponseBytes: 64 << 10}).Chat(context.Background(), ask("hi"))
		e := asError(t, err)
		if !errors.Is(err, ErrResponseTooLarge) || e.StatusCode != 503 || e.Attempts != 1 || calls.Load() != 1 {
			t.Fatalf("err %v, status %d, attempts %d, calls %d", err, e.StatusCode, e.Attempts, calls.Load())
		}
	})
	t.Run("models are bounded too", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"object":"list","data":[{"id":%q}]}`, strings.Repeat("m", 4096))
		}))
		defer ts.Close()
		if _, err := newClient(t, ts.URL+"/v1", Options{MaxResponseBytes: 1024}).Models(context.Background()); !errors.Is(err, ErrResponseTooLarge) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestRequestBounds(t *testing.T) {
	zero, one := 0, 1
	t.Run("the request's timeout bounds each attempt", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{Timeouts: llmtest.Schedule{Every: 1}})
		defer srv.Close()
		c := newClient(t, srv.URL, Options{Timeout: time.Minute, MaxRetries: 5})
		req := ask("hi")
		req.Timeout, req.MaxRetries = 100*time.Millisecond, &one
		start := time.Now()
		_, err := c.Chat(context.Background(), req)
		e := asError(t, err)
		if !errors.Is(err, context.DeadlineExceeded) || e.Attempts != 2 || !strings.Contains(err.Error(), "no response within 100ms") {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
			t.Fatalf("took %v for two attempts of 100 ms", d)
		}
	})
	t.Run("zero retries means a single attempt", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{ServerErrors: llmtest.Schedule{Every: 1}})
		defer srv.Close()
		c := newClient(t, srv.URL, Options{MaxRetries: 3})
		req := ask("hi")
		req.MaxRetries = &zero
		if e := asError(t, func() error { _, err := c.Chat(context.Background(), req); return err }()); e.Attempts != 1 || srv.Stats().ChatCompletions != 1 {
			t.Fatalf("err %v, %d requests", e, srv.Stats().ChatCompletions)
		}
	})
	t.Run("the request's retries replace the client's", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{ServerErrors: llmtest.Schedule{First: 3}})
		defer srv.Close()
		c := newClient(t, srv.URL, Options{MaxRetries: -1})
		three := 3
		req := ask("What is 1 + 1?")
		req.MaxRetries = &three
		resp, err := c.Chat(context.Background(), req)
		if err != nil || resp.Message.Content != "The answer is 2." || c.Stats().Attempts != 4 {
			t.Fatalf("err %v, stats %+v", err, c.Stats())
		}
	})
	t.Run("zero fields leave the client's settings", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{ServerErrors: llmtest.Schedule{First: 2}})
		defer srv.Close()
		c := newClient(t, srv.URL, Options{MaxRetries: 2})
		if _, err := c.Chat(context.Background(), ask("hi")); err != nil || c.Stats().Attempts != 3 {
			t.Fatalf("err %v, stats %+v", err, c.Stats())
		}
	})
}

func TestRetriedStatuses(t *testing.T) {
	for _, tc := range []struct {
		status int
		retry  bool
	}{
		{400, false}, {401, false}, {403, false}, {404, false}, {413, false}, {422, false},
		{408, true}, {409, true}, {429, true},
		{500, true}, {501, false}, {502, true}, {503, true}, {504, true}, {529, true},
	} {
		// A rate limit (429, 503, 529) is waited out, not retried: for
		// RateLimitWait, then the request fails saying so.
		limited := tc.status == 429 || tc.status == 503 || tc.status == 529
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
				return &llmtest.Reply{Status: tc.status, Content: "no"}
			}, RetryAfter: time.Millisecond})
			defer srv.Close()
			_, err := newClient(t, srv.URL, Options{MaxRetries: 1, RateLimitWait: 20 * time.Millisecond}).Chat(context.Background(), ask("hi"))
			e := asError(t, err)
			if limited != strings.Contains(err.Error(), "still rate limited after waiting 20ms") {
				t.Errorf("err %v: rate limited %v", err, limited)
			}
			want := 1
			if tc.retry {
				want = 2
			}
			if limited {
				want = max(e.Attempts, 2) // as many as fit in the wait
			}
			if e.Retryable() != tc.retry || e.Attempts != want || e.StatusCode != tc.status || srv.Stats().ChatCompletions != int64(want) {
				t.Fatalf("err %v: retryable %v, attempts %d", err, e.Retryable(), e.Attempts)
			}
			if errors.Is(err, harness.ErrUnreachable) {
				t.Fatal("an endpoint that answered is unreachable")
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		url := "http://" + deadport.Addr(t) + "/v1"
		c := newClient(t, url, Options{MaxRetries: 1})
		start := time.Now()
		_, err := c.Chat(context.Background(), ask("hi"))
		e := asError(t, err)
		var op *net.OpError
		if !errors.Is(err, harness.ErrUnreachable) || !errors.As(err, &op) || !e.Retryable() || e.Attempts != 2 {
			t.Fatalf("err %v: unreachable %v, retryable %v, attempts %d", err, errors.Is(err, harness.ErrUnreachable), e.Retryable(), e.Attempts)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
		if _, err := c.Models(context.Background()); !errors.Is(err, harness.ErrUnreachable) {
			t.Fatalf("models: %v", err)
		}
	})
	t.Run("host name does not resolve", func(t *testing.T) {
		// .invalid never resolves (RFC 2606).
		c := newClient(t, "http://gauntlet-test.invalid/v1", Options{MaxRetries: 2})
		_, err := c.Chat(context.Background(), ask("hi"))
		e := asError(t, err)
		var dns *net.DNSError
		if !errors.Is(err, harness.ErrUnreachable) || !errors.As(err, &dns) || !strings.Contains(err.Error(), "host name not resolved") {
			t.Fatalf("err %v", err)
		}
		// Without a resolver at all the failure is temporary and retried.
		if dns.IsNotFound && (e.Retryable() || e.Attempts != 1) {
			t.Fatalf("no such host retried: %v", err)
		}
	})
	t.Run("a timeout is not unreachable", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{Timeouts: llmtest.Schedule{Every: 1}})
		defer srv.Close()
		_, err := newClient(t, srv.URL, Options{Timeout: 50 * time.Millisecond, MaxRetries: -1}).Chat(context.Background(), ask("hi"))
		if err == nil || errors.Is(err, harness.ErrUnreachable) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a dropped connection is not unreachable", func(t *testing.T) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer ts.Close()
		_, err := newClient(t, ts.URL+"/v1", Options{MaxRetries: -1}).Chat(context.Background(), ask("hi"))
		if e := asError(t, err); errors.Is(err, harness.ErrUnreachable) || !e.Retryable() {
			t.Fatalf("err %v", err)
		}
	})
}

// BenchmarkChatResponseTooLarge measures what refusing a 100 MiB answer
// costs with a 1 MiB limit: B/op stays near the limit, not the answer.
func BenchmarkChatResponseTooLarge(b *testing.B) {
	srv := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: 100 << 20})
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL, Model: "m", MaxResponseBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	req := ask("hi")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Chat(context.Background(), req); !errors.Is(err, ErrResponseTooLarge) {
			b.Fatal(err)
		}
	}
}
