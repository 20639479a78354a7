package llmtest

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// throttle is the rate limit of Options.RPM and Options.MaxInFlight: a
// bucket of requests that refills at RPM a minute, holding at most
// RPMBurst, and a bound on the chat requests being answered at once.
type throttle struct {
	rpm      int
	burst    float64
	perToken time.Duration
	maxIn    int

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	inFlight int
}

func newThrottle(opts Options) *throttle {
	if opts.RPM <= 0 && opts.MaxInFlight <= 0 {
		return nil
	}
	t := &throttle{rpm: opts.RPM, maxIn: opts.MaxInFlight}
	if opts.RPM > 0 {
		t.burst = float64(opts.RPMBurst)
		if t.burst <= 0 {
			t.burst = math.Max(1, math.Floor(float64(opts.RPM)/60))
		}
		t.tokens = t.burst
		t.perToken = time.Minute / time.Duration(opts.RPM)
	}
	return t
}

// admit takes a request in, or says why not: the wait before a request
// would be let in (for Retry-After), the time until the bucket is full
// again (for x-ratelimit-reset-requests) and which limit refused it.
// done must be called once an admitted request is answered.
func (t *throttle) admit(now time.Time) (ok bool, wait, reset time.Duration, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.maxIn > 0 && t.inFlight >= t.maxIn {
		return false, time.Millisecond, time.Millisecond, fmt.Sprintf("%d requests in flight", t.maxIn)
	}
	if t.rpm > 0 {
		if !t.last.IsZero() {
			t.tokens = math.Min(t.burst, t.tokens+float64(now.Sub(t.last))/float64(t.perToken))
		}
		t.last = now
		if t.tokens < 1 {
			wait = time.Duration((1 - t.tokens) * float64(t.perToken))
			reset = time.Duration((t.burst - t.tokens) * float64(t.perToken))
			return false, wait, reset, fmt.Sprintf("%d requests per minute", t.rpm)
		}
		t.tokens--
	}
	t.inFlight++
	return true, 0, 0, ""
}

func (t *throttle) done() {
	t.mu.Lock()
	t.inFlight--
	t.mu.Unlock()
}

// remaining is the whole requests left in the bucket, for
// x-ratelimit-remaining-requests.
func (t *throttle) remaining() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int(t.tokens)
}

// throttled answers a chat request 429 when the rate limit refuses it, as
// a provider does: Retry-After (whole seconds, rounded up),
// retry-after-ms, and OpenAI's x-ratelimit-limit-requests,
// x-ratelimit-remaining-requests and x-ratelimit-reset-requests. It
// reports whether it did; release, when not nil, must be called once
// the admitted request is answered.
func (h *Handler) throttled(w http.ResponseWriter, f wireFormat) (refused bool, release func()) {
	t := h.throttle
	if t == nil {
		return false, nil
	}
	ok, wait, reset, why := t.admit(time.Now())
	if ok {
		return false, t.done
	}
	h.throttledN.Add(1)
	hd := w.Header()
	hd.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
	hd.Set("Retry-After-Ms", strconv.FormatInt(max(int64(math.Ceil(float64(wait)/float64(time.Millisecond))), 1), 10))
	if t.rpm > 0 {
		hd.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(t.rpm))
		hd.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(t.remaining()))
		hd.Set("X-Ratelimit-Reset-Requests", reset.Round(time.Millisecond).String())
	}
	f.writeRateLimit(w, fmt.Sprintf("Rate limit reached (llmtest: %s). Please try again in %v.", why, wait.Round(time.Millisecond)))
	return true, nil
}
