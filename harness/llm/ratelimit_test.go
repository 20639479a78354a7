package llm

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func TestResetAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"OpenAI requests", map[string]string{"X-Ratelimit-Reset-Requests": "1s"}, time.Second},
		{"OpenAI minutes", map[string]string{"X-Ratelimit-Reset-Requests": "6m0s"}, 6 * time.Minute},
		{"OpenAI milliseconds", map[string]string{"X-Ratelimit-Reset-Tokens": "20ms"}, 20 * time.Millisecond},
		{"OpenAI: the shortest when none is exhausted", map[string]string{
			"X-Ratelimit-Reset-Requests": "6m0s", "X-Ratelimit-Reset-Tokens": "20ms"}, 20 * time.Millisecond},
		{"OpenAI: the exhausted limit", map[string]string{
			"X-Ratelimit-Reset-Requests": "6m0s", "X-Ratelimit-Remaining-Requests": "5",
			"X-Ratelimit-Reset-Tokens": "1.5s", "X-Ratelimit-Remaining-Tokens": "0"}, 1500 * time.Millisecond},
		{"OpenAI: the longest of the exhausted", map[string]string{
			"X-Ratelimit-Reset-Requests": "2s", "X-Ratelimit-Remaining-Requests": "0",
			"X-Ratelimit-Reset-Tokens": "1s", "X-Ratelimit-Remaining-Tokens": "0"}, 2 * time.Second},
		{"Anthropic requests", map[string]string{"Anthropic-Ratelimit-Requests-Reset": at(30 * time.Second)}, 30 * time.Second},
		{"Anthropic input tokens exhausted", map[string]string{
			"Anthropic-Ratelimit-Requests-Reset": at(5 * time.Second), "Anthropic-Ratelimit-Requests-Remaining": "40",
			"Anthropic-Ratelimit-Input-Tokens-Reset": at(12 * time.Second), "Anthropic-Ratelimit-Input-Tokens-Remaining": "0",
			"Anthropic-Ratelimit-Tokens-Reset": at(3 * time.Second)}, 12 * time.Second},
		{"Anthropic in the past", map[string]string{"Anthropic-Ratelimit-Requests-Reset": at(-time.Second)}, 0},
		{"garbage", map[string]string{"X-Ratelimit-Reset-Requests": "soon", "Anthropic-Ratelimit-Tokens-Reset": "tomorrow"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			if got := resetAfter(h, now); got != c.want {
				t.Fatalf("resetAfter = %v, want %v", got, c.want)
			}
		})
	}
}

// TestRateLimitsAreNotRetries: a client allowed no retry at all still
// gets its answer through 429s, 503s and 529s, which are waited out;
// each attempt is reported.
func TestRateLimitsAreNotRetries(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, 529} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			var n int
			var mu sync.Mutex
			srv := llmtest.NewServer(llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
				mu.Lock()
				defer mu.Unlock()
				if n++; n <= 3 {
					return &llmtest.Reply{Status: status, Content: "slow down"}
				}
				return nil
			}})
			defer srv.Close()
			c := newClient(t, srv.URL, Options{MaxRetries: -1, Name: "p"})
			var attempts []harness.Attempt
			req := ask("What is 2 + 2?")
			req.OnAttempt = func(a harness.Attempt) { attempts = append(attempts, a) }
			resp, err := c.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "The answer is 4." {
				t.Fatalf("answer %q", resp.Message.Content)
			}
			if len(attempts) != 4 || attempts[3].Status != harness.AttemptOK {
				t.Fatalf("attempts %+v", attempts)
			}
			for _, a := range attempts[:3] {
				if a.Status != harness.AttemptHTTPError || a.HTTPStatus != status {
					t.Fatalf("attempt %+v, want http_error %d", a, status)
				}
			}
			if st := c.Stats(); st.RateLimited != 3 || st.Attempts != 4 || st.Failures != 0 {
				t.Fatalf("stats %+v", st)
			}
			rl := c.RateLimits()["p"]
			if rl.WaitingS <= 0 || rl.Episodes != 1 {
				t.Fatalf("rate-limit state %+v", rl)
			}
		})
	}
}

// TestRetryAfterBeyondTheWait: a provider asking for an hour fails the
// request at once, saying so, instead of sleeping.
func TestRetryAfterBeyondTheWait(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{RateLimits: llmtest.Schedule{Every: 1}, RetryAfter: time.Hour})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{RateLimitWait: 2 * time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Chat(ctx, ask("hi"))
	e := asError(t, err)
	if e.StatusCode != 429 || e.Attempts != 1 || ctx.Err() != nil ||
		!strings.Contains(err.Error(), "the provider asks to wait 1h0m0s, more than the 2m0s left of the 2m0s rate-limit wait") {
		t.Fatalf("err %v (attempts %d)", err, e.Attempts)
	}
}

// TestAIMD follows the gate through an episode: halved once per burst,
// grown back by one per 20 successes.
func TestAIMD(t *testing.T) {
	l := newLimiter(Options{Name: "p", MaxConcurrency: 8})
	ctx := context.Background()
	var ts []ticket
	for range 8 {
		tk, err := l.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tk)
	}
	want := func(conc int, throttled bool, episodes int) {
		t.Helper()
		st := l.state()
		if st.Concurrency != conc || st.ConcurrencyMax != 8 || st.Throttled != throttled || st.Episodes != episodes {
			t.Fatalf("state %+v, want concurrency %d, throttled %v, %d episodes", st, conc, throttled, episodes)
		}
	}
	want(8, false, 0)
	l.throttled(ts[0])
	l.release(ts[0], outcomeFailed)
	want(4, true, 1)
	l.throttled(ts[1])
	l.release(ts[1], outcomeFailed) // the same burst
	want(4, true, 1)
	for _, tk := range ts[2:] {
		l.release(tk, outcomeOK)
	}
	ok := func(n int) {
		for range n {
			tk, err := l.acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			l.release(tk, outcomeOK)
		}
	}
	ok(20 - 6)
	want(5, true, 1)
	tk, _ := l.acquire(ctx)
	l.throttled(tk)
	l.release(tk, outcomeFailed) // a new burst
	want(2, true, 1)
	tk, _ = l.acquire(ctx)
	l.throttled(tk)
	l.release(tk, outcomeFailed)
	want(1, true, 1)
	tk, _ = l.acquire(ctx)
	l.throttled(tk)
	l.release(tk, outcomeFailed)
	want(1, true, 1) // floor 1
	ok(19)
	want(1, true, 1)
	ok(1)
	want(2, true, 1)
	ok(5*20 + 19)
	want(7, true, 1)
	ok(1)
	want(8, false, 1)

	// Without a bound, the gate halves what is in flight, and lifts once
	// it is back to it.
	u := newLimiter(Options{Name: "u"})
	ts = ts[:0]
	for range 6 {
		tk, _ := u.acquire(ctx)
		ts = append(ts, tk)
	}
	u.throttled(ts[0])
	u.release(ts[0], outcomeFailed)
	if st := u.state(); st.Concurrency != 3 || !st.Throttled {
		t.Fatalf("unbounded: %+v", st)
	}
	for _, tk := range ts[1:] {
		u.release(tk, outcomeOK)
	}
	for range 3*20 - 5 {
		tk, _ := u.acquire(ctx)
		u.release(tk, outcomeOK)
	}
	if st := u.state(); st.Concurrency != 0 || st.Throttled {
		t.Fatalf("unbounded after: %+v", st)
	}
}

// TestGateQueues: the gate holds requests beyond the bound until one
// ends, in order, and lets a cancelled one go.
func TestGateQueues(t *testing.T) {
	l := newLimiter(Options{MaxConcurrency: 1})
	ctx := context.Background()
	first, _ := l.acquire(ctx)
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error)
	go func() { _, err := l.acquire(cctx); gone <- err }()
	got := make(chan ticket)
	go func() {
		harnessWait(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 1 })
		tk, _ := l.acquire(ctx)
		got <- tk
	}()
	harnessWait(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 2 })
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("a cancelled wait got in")
	}
	l.release(first, outcomeOK)
	second := <-got
	l.release(second, outcomeOK)
	if l.inFlight != 0 || len(l.queue) != 0 {
		t.Fatalf("in flight %d, queued %d", l.inFlight, len(l.queue))
	}
}

// harnessWait waits for cond, for 10 s at most.
func harnessWait(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Error("condition not met within 10 s")
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGateBoundsInFlight: MaxConcurrency bounds what the provider sees.
func TestGateBoundsInFlight(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Latency: 20 * time.Millisecond})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{MaxConcurrency: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for range 12 {
		wg.Go(func() {
			if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p := srv.Stats().PeakInFlight; p > 3 || p < 1 {
		t.Fatalf("peak in flight %d, want at most 3", p)
	}
}

// TestThrottlingProvider: against a provider that throttles like a real
// one (a bucket of requests per minute, 429 with Retry-After), a client
// allowed no retry gets every answer, and its concurrency adapts.
func TestThrottlingProvider(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{RPM: 6000, RPMBurst: 2, Latency: time.Millisecond})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{MaxConcurrency: 8, MaxRetries: -1, Name: "p"})
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for range 60 {
		wg.Go(func() {
			if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := srv.Stats()
	if st.Throttled == 0 || st.Statuses[200] != 60 {
		t.Fatalf("server %+v: want throttling and 60 answers", st)
	}
	if rl := c.RateLimits()["p"]; rl.Episodes < 1 || rl.WaitingS <= 0 || rl.ConcurrencyMax != 8 {
		t.Fatalf("state %+v", rl)
	}
	if cs := c.Stats(); cs.RateLimited != st.Throttled || cs.Failures != 0 {
		t.Fatalf("client %+v, server throttled %d", cs, st.Throttled)
	}
}

// TestPacing: RPM spaces requests evenly; TPM by their tokens, corrected
// by what the answer used.
func TestPacing(t *testing.T) {
	now := time.Now()
	p := &pacer{per: float64(time.Minute) / 600}
	for i, want := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond} {
		if got := p.reserve(1, now); got != want {
			t.Fatalf("request %d waits %v, want %v", i, got, want)
		}
	}
	if got := p.reserve(1, now.Add(time.Second)); got != 0 {
		t.Fatalf("after a pause: %v", got)
	}
	tp := &pacer{per: float64(time.Minute) / 60000} // 1 ms a token
	tp.reserve(100, now)
	l := &limiter{tpm: tp}
	l.settle(100, 40) // the answer used 40 of the 100 estimated
	if got := tp.reserve(1, now); got != 40*time.Millisecond {
		t.Fatalf("after settling: %v, want 40ms", got)
	}

	// The client paces real requests: 6 at 6,000 a minute take 50 ms at
	// least, waited out.
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	c := newClient(t, srv.URL, Options{RPM: 6000, Name: "p"})
	start := time.Now()
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, err := c.Chat(context.Background(), ask("hi")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("6 requests at 6,000 a minute took %v", d)
	}
	if rl := c.RateLimits()["p"]; rl.WaitingS <= 0 || rl.Throttled {
		t.Fatalf("state %+v", rl)
	}
	if est := estimateTokens(&harness.ChatRequest{Messages: []harness.Message{{Role: "user", Content: strings.Repeat("x", 400)}}, MaxTokens: 50}); est != 150 {
		t.Fatalf("estimate %d, want 150", est)
	}
}
