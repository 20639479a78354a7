package llm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/deadport"
)

// TestChatReportsAttempts checks that each attempt of a request, retries
// included, reaches ChatRequest.OnAttempt with its number, timing, tokens
// and status.
func TestChatReportsAttempts(t *testing.T) {
	type want struct {
		status string
		http   int
	}
	cases := []struct {
		name  string
		srv   llmtest.Options
		copts Options
		want  []want
		fails bool
	}{
		{"one attempt", llmtest.Options{}, Options{}, []want{{harness.AttemptOK, 0}}, false},
		{"rate limited twice", llmtest.Options{RateLimits: llmtest.Schedule{First: 2}, RetryAfter: 10 * time.Millisecond}, Options{},
			[]want{{harness.AttemptHTTPError, 429}, {harness.AttemptHTTPError, 429}, {harness.AttemptOK, 0}}, false},
		{"server errors past the retries", llmtest.Options{ServerErrors: llmtest.Schedule{Every: 1}}, Options{MaxRetries: 1},
			[]want{{harness.AttemptHTTPError, 500}, {harness.AttemptHTTPError, 500}}, true},
		{"garbage then an answer", llmtest.Options{Garbage: llmtest.Schedule{First: 1}}, Options{},
			[]want{{harness.AttemptMalformed, 200}, {harness.AttemptOK, 0}}, false},
		{"too large", llmtest.Options{Huge: llmtest.Schedule{Every: 1}, HugeBytes: 1 << 20}, Options{MaxResponseBytes: 1 << 10},
			[]want{{harness.AttemptTooLarge, 200}}, true},
		{"timeout then an answer", llmtest.Options{Timeouts: llmtest.Schedule{First: 1}}, Options{Timeout: 1500 * time.Millisecond},
			[]want{{harness.AttemptTimeout, 0}, {harness.AttemptOK, 0}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewServer(c.srv)
			defer srv.Close()
			cl := newClient(t, srv.URL, c.copts)
			var got []harness.Attempt
			req := ask("What is 2 + 2?")
			req.OnAttempt = func(a harness.Attempt) { got = append(got, a) }
			before := time.Now()
			resp, err := cl.Chat(context.Background(), req)
			if (err != nil) != c.fails {
				t.Fatalf("err %v, want failure %v", err, c.fails)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d attempts reported, want %d: %+v", len(got), len(c.want), got)
			}
			for i, a := range got {
				if a.N != i+1 || a.Status != c.want[i].status || a.HTTPStatus != c.want[i].http {
					t.Errorf("attempt %d: n %d, status %s, http %d; want %+v", i, a.N, a.Status, a.HTTPStatus, c.want[i])
				}
				if a.Start.Before(before) || a.Duration < 0 || (i > 0 && a.Start.Before(got[i-1].Start.Add(got[i-1].Duration))) {
					t.Errorf("attempt %d: start %v, duration %v: not in order", i, a.Start, a.Duration)
				}
				if (a.Status == harness.AttemptOK) != (a.Err == nil) {
					t.Errorf("attempt %d: status %s with error %v", i, a.Status, a.Err)
				}
			}
			last := got[len(got)-1]
			if !c.fails && (last.Usage != resp.Usage || last.Usage.CompletionTokens == 0) {
				t.Errorf("last attempt's usage %+v, the answer's %+v", last.Usage, resp.Usage)
			}
			if c.fails && !errors.Is(err, last.Err) {
				t.Errorf("the request's error %v is not the last attempt's %v", err, last.Err)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		url := "http://" + deadport.Addr(t) + "/v1"
		var got []harness.Attempt
		req := ask("hi")
		req.OnAttempt = func(a harness.Attempt) { got = append(got, a) }
		_, err := newClient(t, url, Options{MaxRetries: 1}).Chat(context.Background(), req)
		if err == nil || len(got) != 2 || got[0].Status != harness.AttemptUnreachable || got[1].Status != harness.AttemptUnreachable {
			t.Fatalf("err %v, attempts %+v", err, got)
		}
		if s, _ := harness.AttemptStatusOf(err); s != harness.AttemptUnreachable {
			t.Fatalf("AttemptStatusOf = %s", s)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Options{Timeouts: llmtest.Schedule{Every: 1}})
		defer srv.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var got []harness.Attempt
		req := ask("hi")
		req.OnAttempt = func(a harness.Attempt) { got = append(got, a); cancel() }
		// The first attempt times out; the callback cancels before the retry.
		_, err := newClient(t, srv.URL, Options{Timeout: 50 * time.Millisecond}).Chat(ctx, req)
		if !errors.Is(err, context.Canceled) || len(got) == 0 || got[0].Status != harness.AttemptTimeout {
			t.Fatalf("err %v, attempts %+v", err, got)
		}
		if s, _ := harness.AttemptStatusOf(err); s != harness.AttemptCancelled {
			t.Fatalf("AttemptStatusOf = %s", s)
		}
	})
}
