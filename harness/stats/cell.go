package stats

import (
	"math"
	"slices"
)

// Sample is one answer to one test: a test asked several times (repeats)
// has one Sample per repeat.
type Sample struct {
	// TestID identifies the test; samples with the same TestID are
	// repeats of one test.
	TestID string
	// Repeat is the 0-based repeat index. Only [Pairs] reads it.
	Repeat int
	// Score is the sample's score, in [0, 1] (values outside are clamped,
	// NaN counts as 0).
	Score float64
	// Passed is the sample's pass/fail outcome.
	Passed bool
	// Error marks a sample that ended in error (the model call, a plugin
	// or the evaluator failed). An error says nothing about the model, so
	// such a sample is left out of every figure: it is neither a pass nor
	// a failure, and a test whose every sample ended in error is not
	// counted at all.
	Error bool
}

// TestAggregate summarises the repeats of one test. Samples that ended in
// error are not repeats here: k is the number of scored samples.
type TestAggregate struct {
	TestID string `json:"test_id"`
	// Scored is k, the number of samples that did not end in error.
	Scored int `json:"scored"`
	// Errors is the number of samples that ended in error.
	Errors int `json:"errors"`
	// Passes is the number of scored samples that passed.
	Passes int `json:"passes"`
	// Score is the mean score of the scored samples (0 when Scored is 0).
	Score float64 `json:"score"`
	// PassRate is Passes / Scored (0 when Scored is 0).
	PassRate float64 `json:"pass_rate"`
	// PassAtK is true when at least one scored sample passed.
	PassAtK bool `json:"pass_at_k"`
	// PassAllK is true when there is at least one scored sample and every
	// scored sample passed.
	PassAllK bool `json:"pass_all_k"`
}

// Aggregate groups samples by TestID and summarises each test's repeats,
// in the order in which each test first appears. A test whose samples all
// ended in error is returned with Scored 0 and every rate 0 and false: a
// caller shows its figures as absent, not as zero.
func Aggregate(samples []Sample) []TestAggregate {
	index := make(map[string]int)
	var out []TestAggregate
	for _, s := range samples {
		i, ok := index[s.TestID]
		if !ok {
			i = len(out)
			index[s.TestID] = i
			out = append(out, TestAggregate{TestID: s.TestID})
		}
		a := &out[i]
		if s.Error {
			a.Errors++
			continue
		}
		a.Scored++
		a.Score += clamp01(s.Score)
		if s.Passed {
			a.Passes++
		}
	}
	for i := range out {
		a := &out[i]
		if a.Scored == 0 {
			continue
		}
		a.Score /= float64(a.Scored)
		a.PassRate = float64(a.Passes) / float64(a.Scored)
		a.PassAtK = a.Passes > 0
		a.PassAllK = a.Passes == a.Scored
	}
	return out
}

// CellSummary is the score of a cell (a set of tests) with its
// uncertainty.
type CellSummary struct {
	// Tests is the number of tests with at least one scored sample: the
	// n of every figure below.
	Tests int `json:"tests"`
	// Samples is the number of scored samples; Errors the number of
	// samples that ended in error (left out).
	Samples int `json:"samples"`
	Errors  int `json:"errors"`
	// Score is the mean over tests of each test's mean score; every test
	// weighs the same whatever its number of scored repeats. When every
	// test has the same number of scored samples it is also the mean over
	// samples. 0 when Tests is 0 (a caller shows it as absent).
	Score float64 `json:"score"`
	// StdErr is the standard error of Score: the standard deviation of
	// the per-test scores (n−1 denominator) over √n; 0 when Tests < 2.
	StdErr float64 `json:"stderr"`
	// CI95 is a 95 % interval for the cell's true score; it always
	// contains Score. [0, 1] when Tests is 0.
	CI95 Interval `json:"ci95"`
	// Method says how CI95 was computed.
	Method Method `json:"method"`
}

// Cell summarises samples of one cell. The unit is the test: repeats of a
// test are averaged first, so they stay together (they are not
// independent draws, and counting them as such would shrink the interval
// without reason). CI95 is, for n tests with a scored sample:
//
//   - MethodNone, [0, 1], when n = 0;
//   - MethodWilson, the Wilson score interval of k of n, when every test's
//     score is exactly 0 or 1 (pass/fail scoring, each test passing all or
//     none of its repeats) and k tests scored 1. The Wilson interval is
//     accurate for proportions even for small n or rates near 0 or 1;
//   - MethodWilson at the mean score, when n < [TinyN]: a bootstrap over so
//     few tests is too narrow, while the Wilson interval is conservative
//     for any scores in [0, 1] (such a score varies at most as much as a
//     pass/fail with the same mean);
//   - MethodBootstrap otherwise: the 2.5 % and 97.5 % percentiles of the
//     mean of opt.Resamples resamples of the per-test scores, drawn with
//     a PCG generator seeded with opt.Seed, so the result is reproducible;
//   - MethodNormal, Score ± Z95 × StdErr clamped to [0, 1], when n >
//     [LargeN], where it agrees with the bootstrap at a fraction of the
//     cost.
func Cell(samples []Sample, opt Options) CellSummary {
	aggs := Aggregate(samples)
	var sum CellSummary
	scores := make([]float64, 0, len(aggs))
	binary := true
	ones := 0
	for _, a := range aggs {
		sum.Errors += a.Errors
		sum.Samples += a.Scored
		if a.Scored == 0 {
			continue
		}
		scores = append(scores, a.Score)
		switch a.Score {
		case 1:
			ones++
		case 0:
		default:
			binary = false
		}
	}
	return summarise(sum, scores, binary, ones, opt)
}

// CellScores summarises a cell from per-test scores already computed by the
// caller (one value in [0, 1] per test), with the same rules as [Cell].
// Samples and Errors are left 0.
func CellScores(scores []float64, opt Options) CellSummary {
	xs := make([]float64, len(scores))
	binary := true
	ones := 0
	for i, s := range scores {
		xs[i] = clamp01(s)
		switch xs[i] {
		case 1:
			ones++
		case 0:
		default:
			binary = false
		}
	}
	return summarise(CellSummary{}, xs, binary, ones, opt)
}

func summarise(sum CellSummary, scores []float64, binary bool, ones int, opt Options) CellSummary {
	n := len(scores)
	sum.Tests = n
	if n == 0 {
		sum.CI95 = Interval{0, 1}
		sum.Method = MethodNone
		return sum
	}
	// The figures depend on the set of scores, not on the order the tests
	// finished in: the bootstrap's draws index the scores, so they are
	// sorted first (a copy: the caller's slice is left alone).
	scores = slices.Clone(scores)
	slices.Sort(scores)
	sum.Score, sum.StdErr = meanSE(scores)
	switch {
	case binary:
		sum.Score = float64(ones) / float64(n) // exact, not Welford's rounding
		sum.CI95, sum.Method = Wilson(ones, n), MethodWilson
	case n < TinyN:
		sum.CI95, sum.Method = wilsonAt(sum.Score, float64(n)), MethodWilson
	case n > LargeN:
		h := Z95 * sum.StdErr
		sum.CI95 = Interval{clamp01(sum.Score - h), clamp01(sum.Score + h)}
		sum.Method = MethodNormal
	default:
		sum.CI95 = bootstrapMean(scores, opt.resamples(), opt.rng())
		sum.Method = MethodBootstrap
	}
	sum.CI95 = widen(sum.CI95, sum.Score)
	if math.IsNaN(sum.CI95.Low) || math.IsNaN(sum.CI95.High) {
		sum.CI95 = Interval{0, 1}
	}
	return sum
}
