package engine

import "github.com/gauntlet-eval/gauntlet/harness/runs"

// cellLatency is a live cell's latency: the durations and times to first
// token of its answered results, kept until the cell's status becomes
// final, then the figures measured from them once (runs.LatencyOf), the
// way its interval is (cell.measure). A running cell has no figures: a
// poll of the live matrix never sorts a cell's results.
type cellLatency struct {
	runs.Latency
	durations, ttfts []int64
}

// add keeps an answered result's duration and time to first token.
func (l *cellLatency) add(res *runs.Result) {
	if res.Status != runs.TestPassed && res.Status != runs.TestFailed {
		return
	}
	l.durations = append(l.durations, res.DurationMS)
	if res.TTFTMS != nil {
		l.ttfts = append(l.ttfts, *res.TTFTMS)
	}
}

// measure sets the figures from what was kept, and lets it go.
func (l *cellLatency) measure() {
	l.Latency = runs.LatencyOf(l.durations, l.ttfts)
	l.durations, l.ttfts = nil, nil
}
