package stats

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
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

// normalMin is the number of non-zero differences above which the
// permutation test uses its normal approximation (when no difference
// dominates).
const normalMin = 200

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
//   - by the normal approximation of the same distribution (mean 0,
//     variance Σd²) when more than 200 differences are non-zero and none
//     carries more than 2 % of Σd². The distribution is symmetric, so the
//     approximation's error shrinks like 1/m rather than 1/√m; at this
//     size it is smaller than the Monte Carlo error of 2,000 draws;
//   - by opt.Resamples random sign assignments otherwise (p = (1 + hits) /
//     (1 + resamples), which never reports 0).
//
// CI95 is the interval of the mean difference: Delta ± Z95 × StdErr
// (clamped to [−1, 1]) for [TinyN] tests or more; for fewer, and when every
// difference is −1 or +1, the Wilson interval of the differences mapped to
// [0, 1] by (d+1)/2, which is conservative for so few tests (see [Cell]).
// A percentile bootstrap would add little for a mean and cost a pass over
// the tests per resample, in every cell. CI95 describes the size of the
// change; Significant comes from the p-value, and the two agree in all but
// borderline cases.
//
// Compare draws random numbers only for the Monte Carlo test, from a PCG
// generator seeded with opt.Seed: the same pairs and seed give the same
// result.
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
	// As for a cell: the random draws index the differences, so they are
	// sorted, and the result depends on the pairs, not on their order.
	slices.Sort(d)
	c.Delta, c.StdErr = meanSE(d)
	c.PValue, c.Test = signFlip(d, opt)
	c.Significant = c.PValue < opt.alpha()

	c.CI95, c.CIMethod = diffInterval(d, c.Delta, c.StdErr)
	return c
}

// diffInterval is the 95 % interval of the mean of the differences d.
func diffInterval(d []float64, mean, se float64) (Interval, Method) {
	n := len(d)
	ones, binary := 0, true
	for _, x := range d {
		switch x {
		case 1:
			ones++
		case -1:
		default:
			binary = false
		}
	}
	var iv Interval
	method := MethodWilson
	switch {
	case binary:
		iv = Wilson(ones, n)
	case n < TinyN:
		iv = wilsonAt((mean+1)/2, float64(n))
	default:
		h := Z95 * se
		return widen(Interval{max(mean-h, -1), min(mean+h, 1)}, mean), MethodNormal
	}
	return widen(Interval{2*iv.Low - 1, 2*iv.High - 1}, mean), method
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
	case m > normalMin && maxSq <= 0.02*ss:
		z := obs / math.Sqrt(ss)
		return min(1, math.Erfc(z/math.Sqrt2)), MethodSignFlipNormal
	default:
		return signFlipMC(nz, obs, opt.resamples(), opt.rng()), MethodSignFlipMonteCarlo
	}
}

// signFlipMC draws b random sign assignments of nz and returns the share,
// counting the observed one, whose |sum| reaches obs.
//
// Σ s_i·a_i = total − 2·Σ_{s_i = −1} a_i, so a draw needs only the sum of
// the values whose sign is flipped. The values are cut in groups of 8 with
// a 256-entry table of subset sums each; a random byte picks one entry, so
// a draw costs one table load per 8 values.
func signFlipMC(nz []float64, obs float64, b int, r *rand.PCG) float64 {
	var total float64
	for _, a := range nz {
		total += a
	}
	groups := (len(nz) + 7) / 8
	table := make([][256]float64, groups)
	for g := range table {
		t := &table[g]
		for mask := 1; mask < 256; mask++ {
			j := 8*g + bits.TrailingZeros8(uint8(mask))
			v := 0.0
			if j < len(nz) {
				v = nz[j]
			}
			t[mask] = t[mask&(mask-1)] + v
		}
	}
	hits := 0
	for range b {
		var neg float64
		for g := 0; g < groups; g += 8 {
			w := r.Uint64()
			for k := g; k < min(g+8, groups); k++ {
				neg += table[k][uint8(w)]
				w >>= 8
			}
		}
		if math.Abs(total-2*neg) >= obs-eps {
			hits++
		}
	}
	return float64(1+hits) / float64(1+b)
}
