package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// watch makes the progress show the rate limiting of the model client
// (when it reports it): on a terminal, the bar line says which providers
// throttle and the concurrency they allow; otherwise a line is printed
// when a provider starts throttling and one when it stops.
func (p *progress) watch(model any) {
	if rr, ok := model.(harness.RateLimitReporter); ok && rr != nil {
		p.limits = rr
	}
}

// throttling returns the bar's suffix saying which providers throttle
// (" · openai rate limited: 2 of 8 at once"), "" when none; off a
// terminal, it prints the changes instead.
func (p *progress) throttling() string {
	if p.limits == nil {
		return ""
	}
	now := p.limits.RateLimits()
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(now)) {
		st := now[name]
		if !p.terminal && st.Throttled != p.throttled[name] {
			if st.Throttled {
				fmt.Fprintf(p.w, "%s is rate limiting: %s requests at once, waiting out its rate limits\n", name, atOnce(st))
			} else {
				fmt.Fprintf(p.w, "%s is no longer rate limiting: %s requests at once\n", name, atOnce(st))
			}
		}
		if p.throttled == nil {
			p.throttled = map[string]bool{}
		}
		p.throttled[name] = st.Throttled
		if st.Throttled {
			parts = append(parts, fmt.Sprintf("%s rate limited: %s at once", name, atOnce(st)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " · " + strings.Join(parts, ", ")
}

// atOnce says "2 of 8", or "2" without a bound.
func atOnce(st harness.RateLimitState) string {
	if st.ConcurrencyMax > 0 {
		return fmt.Sprintf("%d of %d", st.Concurrency, st.ConcurrencyMax)
	}
	return fmt.Sprint(st.Concurrency)
}
