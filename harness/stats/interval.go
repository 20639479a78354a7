package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Z95 is the standard normal quantile for a two-sided 95 % interval: the
// value z with P(|Z| ≤ z) = 0.95 for a standard normal Z.
const Z95 = 1.959963984540054

// DefaultResamples is the number of bootstrap resamples and Monte Carlo
// sign flips used when [Options.Resamples] is zero. With 2,000 the
// Monte Carlo error of a 95 % bound is about a hundredth of the interval's
// width, and of a p-value near 0.05 about ±0.005.
const DefaultResamples = 2000

// DefaultAlpha is the significance level used when [Options.Alpha] is zero.
const DefaultAlpha = 0.05

// TinyN is the number of tests below which no resampling is done: a cell
// or comparison of fewer tests gets the Wilson interval (see [Cell] and
// [Compare]), because a percentile bootstrap over so few values gives
// intervals that are too narrow.
const TinyN = 10

// LargeN is the number of tests above which the bootstrap is replaced by
// the normal interval (estimate ± Z95 × standard error): at that size the
// two agree to well within the bootstrap's own Monte Carlo error, and the
// normal interval costs one pass over the data instead of
// [DefaultResamples] passes.
const LargeN = 10000

// Method names how an interval or a p-value was computed.
type Method string

// The methods of intervals ([Cell], [Comparison.CI95]) and tests
// ([Comparison.Test]).
const (
	// MethodNone: there was nothing to estimate (no scored test).
	MethodNone Method = "none"
	// MethodWilson: the Wilson score interval.
	MethodWilson Method = "wilson"
	// MethodBootstrap: percentile bootstrap over tests.
	MethodBootstrap Method = "bootstrap"
	// MethodNormal: estimate ± Z95 × standard error (very large n).
	MethodNormal Method = "normal"
	// MethodMcNemar: exact McNemar test (every per-test difference is
	// -1, 0 or +1: pass/fail outcomes).
	MethodMcNemar Method = "mcnemar"
	// MethodSignFlipExact: sign-flip permutation test, every sign
	// assignment enumerated (or, when every non-zero difference has the
	// same size, counted with the binomial distribution).
	MethodSignFlipExact Method = "sign-flip-exact"
	// MethodSignFlipMonteCarlo: sign-flip permutation test on random sign
	// assignments.
	MethodSignFlipMonteCarlo Method = "sign-flip-monte-carlo"
	// MethodSignFlipNormal: sign-flip permutation test with the normal
	// approximation of its distribution (many non-zero differences, none
	// dominant).
	MethodSignFlipNormal Method = "sign-flip-normal"
)

// Interval is a closed interval [Low, High]. In JSON it is the array
// [low, high].
type Interval struct {
	Low  float64
	High float64
}

// MarshalJSON encodes the interval as [low, high].
func (iv Interval) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]float64{iv.Low, iv.High})
}

// UnmarshalJSON decodes [low, high].
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var a [2]float64
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("interval: %w", err)
	}
	iv.Low, iv.High = a[0], a[1]
	return nil
}

// Contains reports whether x lies in the interval.
func (iv Interval) Contains(x float64) bool { return iv.Low <= x && x <= iv.High }

// Options tunes the randomised parts of [Cell] and [Compare]. The zero value
// is usable: seed 0, [DefaultResamples], [DefaultAlpha].
type Options struct {
	// Seed seeds the PCG generator of the bootstrap and the Monte Carlo
	// permutation test. The same input with the same seed gives the same
	// output, bit for bit.
	Seed uint64
	// Resamples is the number of bootstrap resamples and of Monte Carlo
	// sign flips; 0 means DefaultResamples.
	Resamples int
	// Alpha is the significance level of [Comparison.Significant]; 0 means
	// DefaultAlpha.
	Alpha float64
}

func (o Options) resamples() int {
	if o.Resamples <= 0 {
		return DefaultResamples
	}
	return o.Resamples
}

func (o Options) alpha() float64 {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		return DefaultAlpha
	}
	return o.Alpha
}

// rng returns the generator of one computation. The second PCG word is a
// fixed constant so that seed 0 is as good as any other. The concrete
// *rand.PCG (not a *rand.Rand around it) lets the hot loops call Uint64
// without an interface call.
func (o Options) rng() *rand.PCG {
	return rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15)
}

// Wilson returns the 95 % Wilson score interval for passes successes out of
// n trials. It is the set of proportions p for which the score test of
// "rate = p" does not reject at 5 %:
//
//	centre = (p̂ + z²/2n) / (1 + z²/n)
//	half   = z / (1 + z²/n) × √(p̂(1−p̂)/n + z²/4n²)
//
// with p̂ = passes/n and z = [Z95]. Unlike p̂ ± z·√(p̂(1−p̂)/n) it never
// collapses to a point at 0/n or n/n and stays inside [0, 1]. n = 0 gives
// [0, 1] (nothing is known); passes is clamped to [0, n].
func Wilson(passes, n int) Interval {
	if n <= 0 {
		return Interval{0, 1}
	}
	passes = min(max(passes, 0), n)
	iv := wilsonAt(float64(passes)/float64(n), float64(n))
	// The formula gives exactly 0 and 1 in exact arithmetic at the ends;
	// make it so in floating point too.
	if passes == 0 {
		iv.Low = 0
	}
	if passes == n {
		iv.High = 1
	}
	return iv
}

// wilsonAt is the Wilson interval at proportion p with n trials. For a mean
// of n values in [0, 1] it is a conservative interval: a value in [0, 1]
// with mean p has variance at most p(1−p), the variance of a pass/fail.
func wilsonAt(p, n float64) Interval {
	z2 := Z95 * Z95
	den := 1 + z2/n
	centre := (p + z2/(2*n)) / den
	half := Z95 / den * math.Sqrt(max(p*(1-p), 0)/n+z2/(4*n*n))
	return Interval{Low: clamp01(centre - half), High: clamp01(centre + half)}
}

// clamp01 clamps x to [0, 1]; NaN becomes 0.
func clamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return min(max(x, 0), 1)
}

// meanSE returns the mean of xs and its standard error s/√n (s with the
// n−1 denominator; 0 when n < 2). Welford's update keeps it accurate.
func meanSE(xs []float64) (mean, se float64) {
	var m, m2 float64
	for i, x := range xs {
		d := x - m
		m += d / float64(i+1)
		m2 += d * (x - m)
	}
	n := len(xs)
	if n < 2 {
		return m, 0
	}
	return m, math.Sqrt(m2/float64(n-1)) / math.Sqrt(float64(n))
}

// bootstrapMean returns the 2.5 % and 97.5 % percentiles of the means of B
// resamples (with replacement, of size len(xs)) of xs. len(xs) must be
// below 2^32.
//
// Each index is drawn from 32 random bits by multiply-and-shift (two
// indices per 64-bit draw): its bias, at most n/2^32 (2·10^-6 for n =
// 10,000), is far below the Monte Carlo noise, and it halves the cost of
// the loop that dominates the whole computation.
func bootstrapMean(xs []float64, b int, r *rand.PCG) Interval {
	n := len(xs)
	means := make([]float64, b)
	un := uint64(n)
	for j := range means {
		// Two sums break the chain of dependent additions.
		var s0, s1 float64
		i := 0
		for ; i+1 < n; i += 2 {
			w := r.Uint64()
			s0 += xs[((w&0xffffffff)*un)>>32]
			s1 += xs[((w>>32)*un)>>32]
		}
		if i < n {
			s0 += xs[((r.Uint64()>>32)*un)>>32]
		}
		means[j] = (s0 + s1) / float64(n)
	}
	slices.Sort(means)
	return Interval{Low: quantile(means, 0.025), High: quantile(means, 0.975)}
}

// quantile of sorted xs at q, interpolating linearly between order
// statistics (the "type 7" definition of most statistics packages).
func quantile(sorted []float64, q float64) float64 {
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// widen makes iv contain x: a percentile interval can, in rare skewed
// cases, miss the estimate it is reported with.
func widen(iv Interval, x float64) Interval {
	return Interval{Low: min(iv.Low, x), High: max(iv.High, x)}
}
