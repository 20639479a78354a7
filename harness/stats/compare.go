package stats

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// Pair is one test (and repeat) answered in both runs of a comparison.
type Pair struct {
	TestID string
	Repeat int
	// Base and Head are the scores in the base and head runs, in [0, 1].
	Base, Head float64
	// BasePassed and HeadPassed are the pass/fail outcomes.
	BasePassed, HeadPassed bool
}

// Pairs matches the samples of two runs by test id and repeat. A sample is
// paired only when the other run has the same test with the same repeat
// and neither of the two ended in error (an error says nothing about the
// model, so the pair would compare nothing). Pairs come in the order of
// head. When a run holds the same (test, repeat) twice, the last one wins.
func Pairs(base, head []Sample) []Pair {
	type key struct {
		id     string
		repeat int
	}
	idx := make(map[key]int, len(base))
	for i, s := range base {
		idx[key{s.TestID, s.Repeat}] = i
	}
	out := make([]Pair, 0, min(len(base), len(head)))
	for _, h := range head {
		i, ok := idx[key{h.TestID, h.Repeat}]
		if !ok || h.Error || base[i].Error {
			continue
		}
		b := base[i]
		out = append(out, Pair{TestID: h.TestID, Repeat: h.Repeat,
			Base: b.Score, Head: h.Score, BasePassed: b.Passed, HeadPassed: h.Passed})
	}
	return out
}

// Flip is a pair whose pass/fail outcome changed between the runs.
type Flip struct {
	TestID     string `json:"test_id"`
	Repeat     int    `json:"repeat"`
	BasePassed bool   `json:"base_passed"`
	HeadPassed bool   `json:"head_passed"`
}

// Comparison is the paired comparison of a base and a head run over the
// tests both answered.
type Comparison struct {
	// Tests is the number of tests with at least one pair; Pairs the
	// number of pairs.
	Tests int `json:"tests"`
	Pairs int `json:"pairs"`
	// BaseScore and HeadScore are the mean per-test scores of each run
	// over the paired tests (each test's score is the mean over its
	// paired repeats); Delta is HeadScore − BaseScore.
	BaseScore float64 `json:"base_score"`
	HeadScore float64 `json:"head_score"`
	Delta     float64 `json:"delta"`
	// StdErr is the standard error of Delta (standard deviation of the
	// per-test differences over √n).
	StdErr float64 `json:"stderr"`
	// CI95 is a 95 % interval for the true difference; it always contains
	// Delta. [-1, 1] when there is no pair.
	CI95 Interval `json:"ci95"`
	// CIMethod says how CI95 was computed.
	CIMethod Method `json:"ci_method"`
	// PValue is the two-sided p-value of "head and base score the same";
	// 1 when no test's score changed.
	PValue float64 `json:"p_value"`
	// Test says how PValue was computed.
	Test Method `json:"test"`
	// Significant is PValue < alpha.
	Significant bool `json:"significant"`
	// Improved, Regressed and Unchanged count tests whose score went up,
	// went down or stayed the same.
	Improved  int `json:"improved"`
	Regressed int `json:"regressed"`
	Unchanged int `json:"unchanged"`
	// Flipped lists the pairs whose pass/fail outcome changed, in input
	// order.
	Flipped []Flip `json:"flipped"`
}

// exactMax is the largest number of non-zero differences whose 2^m sign
// assignments the permutation test enumerates.
const exactMax = 12

// eps is the tolerance under which a difference counts as zero and two
// statistics as equal (scores are means of a few values in [0, 1], so
// rounding errors are far smaller).
const eps = 1e-9

// Compare compares head with base over pairs.
//
// The unit is the test: each test's difference d = head − base is the mean
// over its pairs (its repeats answered in both runs), so repeats of one
// test, which are not independent, stay together.
//
// The p-value comes from the sign-flip permutation test on the per-test
// differences. If head and base are the same model setting, each d is as
// likely to be positive as negative, so every assignment of signs to the
// observed |d| is equally likely; the p-value is the share of assignments
// whose |Σd| is at least the observed one. It makes no assumption about the
// shape of the scores (they are bounded, often 0/1, far from normal), is
// exact for small n, and for pass/fail outcomes it is the exact McNemar
// test. It is computed:
//
//   - exactly by the binomial distribution when every non-zero difference
//     has the same size ([MethodMcNemar] when that size is 1, i.e.
//     pass/fail, with b regressions and c improvements: [McNemar](b, c));
//   - exactly by enumeration when at most 12 differences are non-zero;
//   - by opt.Resamples random sign assignments otherwise (p = (1 + hits) /
//     (1 + resamples), which never reports 0);
//   - by the normal approximation of the same distribution (mean 0,
//     variance Σd²) when more than [LargeN] differences are non-zero and
//     none of them carries more than 1 % of Σd².
//
// CI95 is the interval of the mean difference with the rules of [Cell] on
// the differences mapped to [0, 1] by (d+1)/2: the Wilson bound for fewer
// than [TinyN] tests, the percentile bootstrap over tests (seeded by
// opt.Seed), the normal interval beyond [LargeN] tests. It describes the
// size of the change; Significant comes from the p-value. The two agree in
// all but borderline cases.
func Compare(pairs []Pair, opt Options) Comparison {
	var c Comparison
	c.Pairs = len(pairs)
	// Group by test in first-appearance order.
	index := make(map[string]int, len(pairs))
	type acc struct {
		base, head float64
		n          int
	}
	var tests []acc
	for _, p := range pairs {
		i, ok := index[p.TestID]
		if !ok {
			i = len(tests)
			index[p.TestID] = i
			tests = append(tests, acc{})
		}
		tests[i].base += clamp01(p.Base)
		tests[i].head += clamp01(p.Head)
		tests[i].n++
		if p.BasePassed != p.HeadPassed {
			c.Flipped = append(c.Flipped, Flip{TestID: p.TestID, Repeat: p.Repeat,
				BasePassed: p.BasePassed, HeadPassed: p.HeadPassed})
		}
	}
	n := len(tests)
	c.Tests = n
	c.PValue, c.Test = 1, MethodSignFlipExact
	if n == 0 {
		c.CI95, c.CIMethod = Interval{-1, 1}, MethodNone
		return c
	}
	d := make([]float64, n)
	var sb, sh float64
	for i, t := range tests {
		b, h := t.base/float64(t.n), t.head/float64(t.n)
		sb += b
		sh += h
		d[i] = h - b
		switch {
		case d[i] > eps:
			c.Improved++
		case d[i] < -eps:
			c.Regressed++
		default:
			d[i] = 0
			c.Unchanged++
		}
	}
	c.BaseScore, c.HeadScore = sb/float64(n), sh/float64(n)
	c.Delta, c.StdErr = meanSE(d)
	c.PValue, c.Test = signFlip(d, opt)
	c.Significant = c.PValue < opt.alpha()

	// Interval: on u = (d+1)/2 ∈ [0, 1], then back.
	u := make([]float64, n)
	for i, x := range d {
		u[i] = (x + 1) / 2
	}
	cs := CellScores(u, opt)
	c.CIMethod = cs.Method
	c.CI95 = widen(Interval{2*cs.CI95.Low - 1, 2*cs.CI95.High - 1}, c.Delta)
	return c
}

// signFlip returns the two-sided p-value of the sign-flip permutation test
// on d (zeros already exact) and how it was computed.
func signFlip(d []float64, opt Options) (float64, Method) {
	var nz []float64
	var t, ss, maxSq float64
	same := true
	for _, x := range d {
		if x == 0 {
			continue
		}
		a := math.Abs(x)
		if len(nz) > 0 && math.Abs(a-nz[0]) > eps {
			same = false
		}
		nz = append(nz, a)
		t += x
		ss += x * x
		maxSq = max(maxSq, x*x)
	}
	m := len(nz)
	if m == 0 {
		return 1, MethodSignFlipExact
	}
	obs := math.Abs(t)
	switch {
	case same:
		// Σd = a·(c − b) with c ~ Bin(m, ½) under the null: McNemar.
		pos := 0
		for _, x := range d {
			if x > 0 {
				pos++
			}
		}
		p := McNemar(m-pos, pos)
		if math.Abs(nz[0]-1) <= eps {
			return p, MethodMcNemar
		}
		return p, MethodSignFlipExact
	case m <= exactMax:
		hits := 0
		for mask := range uint32(1) << m {
			var s float64
			for i, a := range nz {
				if mask&(1<<i) != 0 {
					s -= a
				} else {
					s += a
				}
			}
			if math.Abs(s) >= obs-eps {
				hits++
			}
		}
		return float64(hits) / float64(uint32(1)<<m), MethodSignFlipExact
	case m > LargeN && maxSq <= 0.01*ss:
		z := obs / math.Sqrt(ss)
		return min(1, math.Erfc(z/math.Sqrt2)), MethodSignFlipNormal
	default:
		return signFlipMC(nz, obs, opt.resamples(), opt.rng()), MethodSignFlipMonteCarlo
	}
}

// signFlipMC draws b random sign assignments, 64 signs per random word.
func signFlipMC(nz []float64, obs float64, b int, r *rand.Rand) float64 {
	var total float64
	for _, a := range nz {
		total += a
	}
	hits := 0
	for range b {
		// Σ s_i a_i = total − 2·Σ_{s_i = −1} a_i.
		var neg float64
		for i := 0; i < len(nz); i += 64 {
			w := r.Uint64()
			end := min(i+64, len(nz))
			if end-i < 64 {
				w &= 1<<(end-i) - 1
			}
			for w != 0 {
				j := bits.TrailingZeros64(w)
				neg += nz[i+j]
				w &= w - 1
			}
		}
		if math.Abs(total-2*neg) >= obs-eps {
			hits++
		}
	}
	return float64(1+hits) / float64(1+b)
}
