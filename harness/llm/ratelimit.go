package llm

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Rate limits.
//
// A 429, 529 (Anthropic's overloaded_error) or 503 answer says that the
// provider is throttling, not that the request is wrong: it is waited out
// and sent again, without counting against the request's retries, for at
// most Options.RateLimitWait per request. The wait is what the provider
// asks for (Retry-After, retry-after-ms, else its reset headers), else an
// exponential backoff with jitter.
//
// Each Client also shapes what it sends (one Client is one provider):
//   - an AIMD gate bounds the requests in flight. A rate-limited answer
//     halves the concurrency allowed (floor 1), once per burst: answers to
//     requests sent before the last halving do not halve it again. It then
//     grows back by one per growEvery successful answers, up to
//     Options.MaxConcurrency. The provider is "throttled" from the first
//     halving until the concurrency is back: one throttling episode.
//   - Options.RPM and Options.TPM space requests out before they are sent:
//     each request takes 60 s / RPM, and its estimated tokens 60 s / TPM
//     per token, of the provider's time; a request waits until its turn.

// DefaultRateLimitWait bounds the time one request spends waiting out rate
// limits when Options.RateLimitWait is zero.
const DefaultRateLimitWait = 10 * time.Minute

// growEvery is the number of successful answers after which a throttled
// provider's concurrency grows by one.
const growEvery = 20

// rateLimited reports whether an HTTP status says that the provider is
// throttling: 429 Too Many Requests, 529 (Anthropic: overloaded) or 503
// Service Unavailable.
func rateLimited(code int) bool {
	return code == http.StatusTooManyRequests || code == 529 || code == http.StatusServiceUnavailable
}

// limiter is a Client's gate and pacers toward its provider.
type limiter struct {
	name string
	max  int // Options.MaxConcurrency; 0: no bound

	mu         sync.Mutex
	limit      int // requests allowed in flight now; 0: no bound
	target     int // what limit grows back to in an episode
	inFlight   int
	successes  int // since limit last changed, in an episode
	throttling bool
	episodes   int
	epoch      uint64 // bumped at each halving
	queue      []*waiter

	waited atomic.Int64 // nanoseconds spent waiting out rate limits
	rpm    *pacer
	tpm    *pacer
}

// waiter is a request queued at the gate. granted (guarded by the
// limiter's mu) says that it was let in; ready is then closed.
type waiter struct {
	ready   chan struct{}
	granted bool
	epoch   uint64
}

// ticket is a request let through the gate: the epoch when it was.
type ticket struct{ epoch uint64 }

func newLimiter(opts Options) *limiter {
	l := &limiter{name: opts.Name, max: max(opts.MaxConcurrency, 0)}
	l.limit = l.max
	if opts.RPM > 0 {
		l.rpm = &pacer{per: float64(time.Minute) / float64(opts.RPM)}
	}
	if opts.TPM > 0 {
		l.tpm = &pacer{per: float64(time.Minute) / float64(opts.TPM)}
	}
	return l
}

// admitsLocked reports whether one more request may be in flight.
func (l *limiter) admitsLocked() bool { return l.limit == 0 || l.inFlight < l.limit }

// acquire waits at the gate until the request may be sent, first come
// first served, or ctx ends.
func (l *limiter) acquire(ctx context.Context) (ticket, error) {
	l.mu.Lock()
	if len(l.queue) == 0 && l.admitsLocked() {
		l.inFlight++
		t := ticket{l.epoch}
		l.mu.Unlock()
		return t, nil
	}
	w := &waiter{ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	select {
	case <-w.ready:
		return ticket{w.epoch}, nil
	case <-ctx.Done():
		l.mu.Lock()
		if w.granted {
			l.inFlight--
			l.wakeLocked()
		} else {
			for i, q := range l.queue {
				if q == w {
					l.queue = append(l.queue[:i], l.queue[i+1:]...)
					break
				}
			}
		}
		l.mu.Unlock()
		return ticket{}, ctx.Err()
	}
}

// wakeLocked lets queued requests in while there is room.
func (l *limiter) wakeLocked() {
	for len(l.queue) > 0 && l.admitsLocked() {
		w := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		w.granted, w.epoch = true, l.epoch
		l.inFlight++
		close(w.ready)
	}
}

// Outcomes of an attempt, for release.
const (
	outcomeFailed = iota // any failure, rate limits included
	outcomeOK
)

// release ends an attempt let in by t: successes grow a throttled
// provider's concurrency back; a rate-limited answer, which throttled
// has counted, changes nothing more.
func (l *limiter) release(t ticket, outcome int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if outcome == outcomeOK && l.throttling {
		if l.successes++; l.successes >= growEvery {
			l.successes = 0
			l.limit++
			if l.limit >= l.target {
				l.throttling = false
				l.limit = l.max
			}
		}
	}
	l.inFlight--
	l.wakeLocked()
}

// throttled notes a rate-limited answer to an attempt let in by t: it
// halves the concurrency allowed, unless the attempt was sent before the
// last halving (which answered the same burst). The attempt keeps its
// place until it is released, after its wait: a request waiting out a
// rate limit is still one of the requests in flight.
func (l *limiter) throttled(t ticket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.epoch != l.epoch {
		return
	}
	base := l.limit
	if base == 0 {
		base = l.inFlight // no bound: halve what is in flight
	}
	if !l.throttling {
		l.throttling = true
		l.episodes++
		l.target = l.max
		if l.target == 0 {
			l.target = base
		}
	}
	l.limit = max(base/2, 1)
	l.epoch++
	l.successes = 0
}

// pace waits until the provider's rate allows one more request of about
// tokens tokens (RPM and TPM), or ctx ends; the time waited counts as
// time waiting out rate limits.
func (l *limiter) pace(ctx context.Context, tokens int) error {
	now := time.Now()
	d := l.rpm.reserve(1, now)
	if tokens > 0 {
		d = max(d, l.tpm.reserve(float64(tokens), now))
	}
	return l.sleep(ctx, d)
}

// settle corrects the TPM pacing once a request's real token count is
// known (used; 0 when the attempt failed and cost nothing).
func (l *limiter) settle(estimate, used int) {
	if l.tpm != nil && estimate > 0 {
		l.tpm.adjust(float64(used - estimate))
	}
}

// sleep waits d, or until ctx ends, counting the time as waited out.
func (l *limiter) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	defer func() { l.waited.Add(int64(time.Since(start))) }()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// state is the limiter's harness.RateLimitState.
func (l *limiter) state() harness.RateLimitState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return harness.RateLimitState{
		Concurrency: l.limit, ConcurrencyMax: l.max, Throttled: l.throttling, Episodes: l.episodes,
		WaitingS: time.Duration(l.waited.Load()).Seconds(),
	}
}

// pacer spaces out what is sent: each unit (a request, a token) takes per
// nanoseconds of the provider's time, and a request is sent when the
// units before it have had theirs. It allows no burst: requests go evenly
// spaced, which a provider that enforces its per-minute limit per second
// (as they do) accepts too.
type pacer struct {
	per  float64 // nanoseconds per unit
	mu   sync.Mutex
	next time.Time // when the next request may go
}

// reserve takes units of time for a request and returns how long it must
// wait before it is sent. A nil pacer never waits.
func (p *pacer) reserve(units float64, now time.Time) time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	start := p.next
	if start.Before(now) {
		start = now
	}
	p.next = start.Add(time.Duration(units * p.per))
	return start.Sub(now)
}

// adjust gives back (units < 0) or takes more (units > 0) of the time
// reserved.
func (p *pacer) adjust(units float64) {
	p.mu.Lock()
	p.next = p.next.Add(time.Duration(units * p.per))
	p.mu.Unlock()
}

// RateLimits reports the rate-limit state toward the client's provider,
// keyed by its name (Options.Name): the concurrency allowed now and at
// most (0: no bound), whether it is throttled, and the time its requests
// have waited out rate limits. It implements harness.RateLimitReporter.
func (c *Client) RateLimits() map[string]harness.RateLimitState {
	return map[string]harness.RateLimitState{c.opts.Name: c.limit.state()}
}

var _ harness.RateLimitReporter = (*Client)(nil)

// estimateTokens estimates a request's tokens for TPM pacing, before the
// provider counts them: a token per four bytes of its messages and tools,
// plus the answer's bound (max_tokens) when it sets one.
func estimateTokens(req *harness.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
		for _, p := range m.Parts {
			n += len(p.Text)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + 64
	}
	n = (n + 3) / 4
	if req.MaxTokens > 0 {
		n += req.MaxTokens
	}
	return max(n, 1)
}

// resetHeaders are the providers' rate-limit reset headers, each with the
// header saying how much of that limit is left.
var resetHeaders = []struct {
	reset, remaining string
	rfc3339          bool // an RFC 3339 time (Anthropic), else a duration such as "6m0s" (OpenAI)
}{
	{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Remaining-Requests", false},
	{"X-Ratelimit-Reset-Tokens", "X-Ratelimit-Remaining-Tokens", false},
	{"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Remaining", true},
	{"Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Remaining", true},
	{"Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Remaining", true},
	{"Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Remaining", true},
}

// resetAfter reads the wait a rate-limited answer's reset headers imply:
// OpenAI's x-ratelimit-reset-requests / -tokens (durations such as "1s",
// "6m0s", "20ms") and Anthropic's anthropic-ratelimit-*-reset (RFC 3339
// times). The relevant limit is the one exhausted (its remaining header
// is 0): the longest reset among those; when none says so, the shortest
// reset given. 0 when there is none.
func resetAfter(h http.Header, now time.Time) time.Duration {
	var exhausted, shortest time.Duration
	for _, r := range resetHeaders {
		v := strings.TrimSpace(h.Get(r.reset))
		if v == "" {
			continue
		}
		var d time.Duration
		if r.rfc3339 {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				continue
			}
			d = t.Sub(now)
		} else {
			var err error
			if d, err = time.ParseDuration(v); err != nil {
				continue
			}
		}
		if d <= 0 {
			continue
		}
		if left, err := strconv.ParseFloat(strings.TrimSpace(h.Get(r.remaining)), 64); err == nil && left <= 0 {
			exhausted = max(exhausted, d)
		}
		if shortest == 0 || d < shortest {
			shortest = d
		}
	}
	if exhausted > 0 {
		return exhausted
	}
	return shortest
}
