package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After": "3", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"HTTP date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "2", "Retry-After-Ms": "x"}, 2 * time.Second},
		{"huge saturates", map[string]string{"Retry-After": "1e300"}, time.Duration(1<<63 - 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != c.want {
				t.Fatalf("retryAfter = %v, want %v", got, c.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	c := &Client{opts: Options{RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second}}
	for _, tc := range []struct {
		n        int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 200 * time.Millisecond, 400 * time.Millisecond},
		{5, 500 * time.Millisecond, time.Second},
		{60, 500 * time.Millisecond, time.Second},
	} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d, ok := c.backoff(tc.n, 0)
			if !ok || d < tc.min || d > tc.max {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v]", tc.n, d, tc.min, tc.max)
			}
			seen[d] = true
		}
		if len(seen) < 50 {
			t.Fatalf("backoff(%d): %d distinct delays, want jitter", tc.n, len(seen))
		}
	}
	for range 100 {
		d, ok := c.backoff(1, 800*time.Millisecond)
		if !ok || d < 800*time.Millisecond || d > 880*time.Millisecond {
			t.Fatalf("with Retry-After 800ms: %v", d)
		}
	}
	if _, ok := c.backoff(1, 2*time.Second); ok {
		t.Fatal("a Retry-After beyond RetryMaxDelay is waited for")
	}
}
