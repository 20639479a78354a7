package compare

import (
	"slices"
	"strconv"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// Figures are what a model sweep sets side by side for each run, to choose
// a model by: how well it did (the overall score's interval), what it cost
// and how fast it answered.
type Figures struct {
	// Tests is the number of tests the run finished (passed, failed or in
	// error; with repeats, each asking counts).
	Tests int `json:"tests"`
	// CI95 is the 95 % interval of the run's score over all its scored
	// tests, the test as unit as for a cell (see package stats); nil when
	// none was scored.
	CI95 *stats.Interval `json:"ci95"`
	// CostUSD and JudgeCostUSD are the run's cost and its judges' part of
	// it, in US dollars; nil when the run's model had no price.
	CostUSD      *float64 `json:"cost_usd"`
	JudgeCostUSD *float64 `json:"judge_cost_usd"`
	// CostPer1000Tests is CostUSD / Tests × 1000; nil when CostUSD is nil
	// or no test finished.
	CostPer1000Tests *float64 `json:"cost_per_1000_tests"`
	// LatencyP50MS is the median of the finished tests' durations (the
	// nearest-rank median: the smallest duration that at least half of them
	// do not exceed), in milliseconds; nil when no test finished.
	LatencyP50MS *int64 `json:"latency_p50_ms"`
	// Tokens counts every call's tokens, the judges' included.
	Tokens runs.Tokens `json:"tokens"`
}

// RunFigures computes a run's figures from its summary and its results,
// which each calls fn with (the samples of a run are enough: test id,
// repeat, domain, level, score, status, duration). Memory grows with the
// number of tests for the interval, and with the number of distinct
// durations (not of results) for the median.
func RunFigures(info runs.Info, each func(fn func(runs.Result) error) error) (Figures, error) {
	f := Figures{CostUSD: info.CostUSD, JudgeCostUSD: info.JudgeCostUSD, Tokens: info.Tokens}
	var lat Latencies
	var samples []stats.Sample
	err := each(func(r runs.Result) error {
		f.Tests++
		lat.Add(r.DurationMS)
		s := sample(r)
		// A test id names a test within its domain and level.
		s.TestID = r.Domain + "\x00" + strconv.Itoa(r.Level) + "\x00" + r.TestID
		samples = append(samples, s)
		return nil
	})
	if err != nil {
		return f, err
	}
	if sum := stats.Cell(samples, stats.Options{Seed: cellSeed}); sum.Tests > 0 {
		f.CI95 = &sum.CI95
	}
	if p, ok := lat.P50(); ok {
		f.LatencyP50MS = &p
	}
	if f.CostUSD != nil && f.Tests > 0 {
		per := *f.CostUSD / float64(f.Tests) * 1000
		f.CostPer1000Tests = &per
	}
	return f, nil
}

// sliceEach is the each of RunFigures over results in memory.
func sliceEach(results []runs.Result) func(fn func(runs.Result) error) error {
	return func(fn func(runs.Result) error) error {
		for _, r := range results {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// Latencies gathers durations, in milliseconds, to give their median
// exactly in memory that grows with the number of distinct durations, not
// with the number of durations. The zero Latencies is empty and ready.
type Latencies struct {
	counts map[int64]int
	n      int
}

// Add counts one duration.
func (l *Latencies) Add(ms int64) {
	if l.counts == nil {
		l.counts = map[int64]int{}
	}
	l.counts[ms]++
	l.n++
}

// P50 returns the nearest-rank median of the durations added: the
// smallest one that at least half of them do not exceed. ok is false when
// none was added.
func (l *Latencies) P50() (ms int64, ok bool) {
	if l.n == 0 {
		return 0, false
	}
	keys := make([]int64, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rank := (l.n + 1) / 2 // ⌈n/2⌉
	seen := 0
	for _, k := range keys {
		seen += l.counts[k]
		if seen >= rank {
			return k, true
		}
	}
	return keys[len(keys)-1], true
}
