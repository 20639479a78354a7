package engine

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// rateLimitPoll is how often a run looks at its model client's rate-limit
// state, to log throttling episodes.
const rateLimitPoll = 200 * time.Millisecond

// rateLimits is the rate-limit state of the engine's model client, by
// provider; nil when the client reports none (harness.RateLimitReporter).
func (e *Engine) rateLimits() map[string]harness.RateLimitState {
	if rr, ok := e.opts.Client.(harness.RateLimitReporter); ok {
		return rr.RateLimits()
	}
	return nil
}

// watchRateLimits logs, while the run executes, one line when a provider
// starts throttling and one when it stops (its concurrency grown back),
// per episode. It returns the function that stops it, which logs the
// episodes it has not seen end yet as they stand.
func (r *run) watchRateLimits() func() {
	if _, ok := r.e.opts.Client.(harness.RateLimitReporter); !ok {
		return func() {}
	}
	seen := map[string]harness.RateLimitState{}
	for name, st := range r.e.rateLimits() {
		st.Throttled = false // an episode before the run is not this run's
		seen[name] = st
	}
	look := func() {
		now := r.e.rateLimits()
		for _, name := range slices.Sorted(maps.Keys(now)) {
			st, was := now[name], seen[name]
			if st.Episodes > was.Episodes {
				r.logRun("provider %s is throttling: rate-limited answers are waited out, concurrency %s", name, concurrency(st))
				was.Throttled = true
			}
			if was.Throttled && !st.Throttled {
				r.logRun("provider %s is no longer throttling: concurrency %s, %.1f s waited out in all", name, concurrency(st), st.WaitingS)
			}
			seen[name] = st
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(rateLimitPoll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				look()
				return
			case <-t.C:
				look()
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// concurrency says "3 of 8", or "3" without a bound.
func concurrency(st harness.RateLimitState) string {
	switch {
	case st.ConcurrencyMax > 0:
		return strconv.Itoa(st.Concurrency) + " of " + strconv.Itoa(st.ConcurrencyMax)
	case st.Concurrency > 0:
		return strconv.Itoa(st.Concurrency)
	}
	return "unbounded"
}
