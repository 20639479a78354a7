package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Why this package retries itself rather than through the SDK
// (option.WithMaxRetries): the SDK (v3.96.0, internal/requestconfig) does
// honour Retry-After, retry-after-ms and HTTP dates, and jitters its
// backoff, but
//   - it does not retry an attempt that timed out: when the per-request
//     timeout fires it returns context.DeadlineExceeded at once;
//   - it does not retry a malformed body (a 200 whose JSON does not parse);
//   - its backoff (0.5 s doubling) cannot be tuned, which makes fault tests
//     slow, and it reports neither the number of attempts nor the status of
//     the last one in a useful error.
// So the SDK makes single attempts and do() loops around them.

// do runs attempt until it succeeds, fails in a way not worth retrying,
// maxRetries retries are spent or ctx ends. Each attempt passes the gate
// and the pacing of rate limits first (ratelimit.go; tokens is the
// request's estimated tokens for TPM, 0 for none), and is bounded by
// timeout; hres is where the attempt stores the HTTP response it got, if
// any. observe, when not nil, is told of each attempt as it ends: its
// number, start, duration and failure (nil when it succeeded).
//
// A rate-limited answer (429, 529, 503) is waited out and sent again
// without counting against maxRetries, for at most RateLimitWait in all;
// a wait asked for beyond what is left of it fails the request at once.
func (c *Client) do(ctx context.Context, op string, timeout time.Duration, maxRetries, tokens int,
	attempt func(actx context.Context, n int, hres **http.Response) error,
	observe func(n int, start time.Time, d time.Duration, e *Error)) error {
	var (
		retries, limited int           // failures retried, rate limits waited out
		waited           time.Duration // waiting out rate limits
		last             *Error
	)
	for n := 1; ; n++ {
		t, err := c.limit.acquire(ctx)
		if err == nil {
			if err = c.limit.pace(ctx, tokens); err != nil {
				c.limit.release(t, outcomeFailed)
			}
		}
		if err != nil {
			return cancelled(op, n-1, err, last)
		}
		c.stats.attempts.Add(1)
		if n > 1 {
			c.stats.retries.Add(1)
		}
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, timeout)
		var hres *http.Response
		err = attempt(actx, n, &hres)
		if err == nil {
			cancel()
			c.limit.release(t, outcomeOK)
			if observe != nil {
				observe(n, start, time.Since(start), nil)
			}
			return nil
		}
		e := c.classify(ctx, actx, timeout, op, hres, err)
		cancel()
		e.Attempts = n
		last = e
		throttled := e.retryable && rateLimited(e.StatusCode)
		held := true // the gate's place, released once the wait is decided
		release := func() {
			if held {
				held = false
				c.limit.release(t, outcomeFailed)
			}
		}
		if throttled {
			// A wait the provider asks for keeps its place at the gate:
			// waiting out a rate limit is still being in flight, so halving
			// the concurrency also halves the requests that come back when
			// the provider said (not all at once, to be refused again).
			c.limit.throttled(t)
			c.stats.rateLimited.Add(1)
		} else {
			release()
		}
		c.limit.settle(tokens, 0)
		if observe != nil {
			observe(n, start, time.Since(start), e)
		}
		if !e.retryable {
			release()
			return e
		}
		var delay time.Duration
		if throttled {
			limited++
			left := c.opts.RateLimitWait - waited
			if left <= 0 {
				release()
				e.Message += fmt.Sprintf(" (still rate limited after waiting %v, the rate-limit wait)", c.opts.RateLimitWait)
				return e
			}
			if e.RetryAfter > left {
				release()
				e.Message += fmt.Sprintf(" (the provider asks to wait %v, more than the %v left of the %v rate-limit wait)",
					e.RetryAfter, left.Round(time.Millisecond), c.opts.RateLimitWait)
				return e
			}
			if e.RetryAfter > 0 {
				delay = e.RetryAfter + rand.N(e.RetryAfter/10+1)
			} else {
				// No word from the provider: a backoff of this request's
				// own, which grows with its bad luck, so it gives its place
				// at the gate to the others meanwhile.
				delay = c.expBackoff(limited)
				release()
			}
			delay = min(delay, left)
			waited += delay
		} else {
			retries++
			if retries > maxRetries {
				return e
			}
			var ok bool
			delay, ok = c.backoff(retries, e.RetryAfter)
			if errors.Is(e.err, context.DeadlineExceeded) {
				// The attempt timed out: the timeout was the wait.
				delay = 0
			}
			if !ok {
				e.Message += fmt.Sprintf(" (the endpoint asks to retry after %v, more than the %v limit)", e.RetryAfter, c.opts.RetryMaxDelay)
				return e
			}
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			// The caller's deadline would pass while waiting: give up now
			// with the real reason rather than later with "deadline exceeded".
			release()
			return e
		}
		if c.opts.OnRetry != nil {
			c.opts.OnRetry(n, delay, e)
		}
		var serr error
		if throttled {
			serr = c.limit.sleep(ctx, delay)
		} else {
			serr = sleepCtx(ctx, delay)
		}
		release()
		if serr != nil {
			return &Error{Op: op, Attempts: n, err: ctx.Err(),
				Message: fmt.Sprintf("%v while waiting to retry after: %s", ctx.Err(), e.detail())}
		}
	}
}

// cancelled is the error of a request whose context ended before attempt
// n+1 could be sent (at the rate-limit gate or pacing).
func cancelled(op string, n int, err error, last *Error) *Error {
	e := &Error{Op: op, Attempts: n, err: err, Message: err.Error()}
	if last != nil {
		e.Message = fmt.Sprintf("%v while waiting to retry after: %s", err, last.detail())
	}
	return e
}

// sleepCtx waits d, or until ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff returns the wait before the attempt after attempt n (1-based),
// and false when the endpoint asks for a wait longer than RetryMaxDelay.
//
// Without a Retry-After, the wait is RetryBaseDelay·2^(n-1), capped at
// RetryMaxDelay, less a random part of up to half of it ("equal jitter":
// clients that failed together do not come back together, yet none comes
// back at once). With one, the wait is what the endpoint asked for plus up
// to 10% more, never less.
func (c *Client) backoff(n int, retryAfter time.Duration) (time.Duration, bool) {
	if retryAfter > 0 {
		if retryAfter > c.opts.RetryMaxDelay {
			return 0, false
		}
		return retryAfter + rand.N(retryAfter/10+1), true
	}
	return c.expBackoff(n), true
}

// expBackoff is the wait after the n-th failure (1-based) when the
// endpoint asks for none: RetryBaseDelay·2^(n-1), capped at
// RetryMaxDelay, less a random part of up to half of it.
func (c *Client) expBackoff(n int) time.Duration {
	d := c.opts.RetryBaseDelay
	for i := 1; i < n && d < c.opts.RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, c.opts.RetryMaxDelay)
	return d - rand.N(d/2+1)
}

// retryAfter reads how long an endpoint asks the client to wait:
// retry-after-ms (milliseconds, as OpenAI sends), else Retry-After in
// seconds or as an HTTP date. It returns 0 when neither says anything
// usable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if d, ok := scaled(v, float64(time.Millisecond)); ok {
			return d
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if d, ok := scaled(v, float64(time.Second)); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// scaled parses a non-negative number of units into a duration, saturating
// instead of overflowing.
func scaled(v string, unit float64) (time.Duration, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f*unit >= math.MaxInt64 {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(f * unit), true
}
