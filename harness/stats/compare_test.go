package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// passFailPairs returns n tests: b passed→failed, c failed→passed, the rest
// passed in both.
func passFailPairs(b, c, n int) []Pair {
	p := make([]Pair, n)
	for i := range p {
		p[i] = Pair{TestID: fmt.Sprint("t", i), Base: 1, Head: 1, BasePassed: true, HeadPassed: true}
		switch {
		case i < b:
			p[i].Head, p[i].HeadPassed = 0, false
		case i < b+c:
			p[i].Base, p[i].BasePassed = 0, false
		}
	}
	return p
}

func TestComparePassFailIsMcNemar(t *testing.T) {
	// b = 10 regressions, c = 2 improvements, 88 unchanged: the exact
	// McNemar p is 2·(1+12+66)/4096 = 0.03857421875 (hand computed).
	c := Compare(passFailPairs(10, 2, 100), Options{})
	if c.Test != MethodMcNemar {
		t.Fatalf("test %s", c.Test)
	}
	near(t, "p", c.PValue, 0.03857421875, 1e-15)
	if !c.Significant || c.Regressed != 10 || c.Improved != 2 || c.Unchanged != 88 || c.Tests != 100 || c.Pairs != 100 {
		t.Fatalf("%+v", c)
	}
	near(t, "base", c.BaseScore, 0.98, 1e-12)
	near(t, "head", c.HeadScore, 0.90, 1e-12)
	near(t, "delta", c.Delta, -0.08, 1e-12)
	// s² = (12 − 100·0.0064)/99 = 0.114747, SE = √(s²/100) = 0.033874,
	// 0.08 ± 1.96·SE = [−0.146393, −0.013607] (hand computed).
	near(t, "low", c.CI95.Low, -0.146393, 2e-6)
	near(t, "high", c.CI95.High, -0.013607, 2e-6)
	if c.CIMethod != MethodNormal || !c.CI95.Contains(c.Delta) || c.CI95.High >= 0 {
		t.Errorf("interval %v (%s) should lie below 0", c.CI95, c.CIMethod)
	}
	if len(c.Flipped) != 12 {
		t.Fatalf("flipped %d, want 12", len(c.Flipped))
	}
	if f := c.Flipped[0]; f.TestID != "t0" || !f.BasePassed || f.HeadPassed {
		t.Errorf("first flip %+v", f)
	}
	if f := c.Flipped[11]; f.TestID != "t11" || f.BasePassed || !f.HeadPassed {
		t.Errorf("last flip %+v", f)
	}
	// At alpha 0.01 the same change is not significant.
	if Compare(passFailPairs(10, 2, 100), Options{Alpha: 0.01}).Significant {
		t.Error("significant at alpha 0.01 with p = 0.0386")
	}
}

func TestCompareEdges(t *testing.T) {
	t.Run("no pair", func(t *testing.T) {
		c := Compare(nil, Options{})
		if c.Tests != 0 || c.PValue != 1 || c.Significant || c.CI95 != (Interval{-1, 1}) || c.CIMethod != MethodNone {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		c := Compare(passFailPairs(0, 0, 50), Options{})
		if c.PValue != 1 || c.Significant || c.Delta != 0 || c.Unchanged != 50 || len(c.Flipped) != 0 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("one test", func(t *testing.T) {
		c := Compare(passFailPairs(1, 0, 1), Options{})
		// One discordant pair: p = min(1, 2·½) = 1.
		if c.PValue != 1 || c.Significant || c.Delta != -1 || !c.CI95.Contains(-1) || c.CIMethod != MethodWilson {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("huge b+c", func(t *testing.T) {
		// 49,500 regressions and 50,500 improvements over 100,000 tests:
		// exact p 0.0015823598788515956 (Python, exact rationals).
		c := Compare(passFailPairs(49_500, 50_500, 100_000), Options{})
		near(t, "p", c.PValue, 0.0015823598788515956, 1e-9*0.0016)
		// Every difference is −1 or +1, so the interval is Wilson's on
		// (d+1)/2.
		if c.Test != MethodMcNemar || !c.Significant || c.CIMethod != MethodWilson {
			t.Fatalf("test %s, significant %v, interval method %s", c.Test, c.Significant, c.CIMethod)
		}
		if math.IsNaN(c.CI95.Low) || math.IsNaN(c.CI95.High) || !c.CI95.Contains(0.01) {
			t.Fatalf("interval %v", c.CI95)
		}
	})
	t.Run("all regress at scale", func(t *testing.T) {
		c := Compare(passFailPairs(100_000, 0, 100_000), Options{})
		if c.PValue != 0 || !c.Significant || c.Delta != -1 {
			t.Fatalf("p %v, significant %v, delta %v", c.PValue, c.Significant, c.Delta)
		}
	})
}

func TestCompareSignFlipExact(t *testing.T) {
	cases := []struct {
		name string
		d    []float64
		p    float64
	}{
		// Signs of {0.6, 0.4, 0.2}: sums ±1.2, ±0.8, ±0.4, 0, 0; |Σ| ≥ 1.2
		// for 2 of 8 (hand counted).
		{"all up", []float64{0.6, 0.4, 0.2}, 2.0 / 8},
		// Observed 0.8: ±1.2 and ±0.8 reach it, 4 of 8.
		{"mixed", []float64{0.6, 0.4, -0.2}, 4.0 / 8},
		// Zeros flip to themselves and change nothing.
		{"with zeros", []float64{0.6, 0, 0.4, 0, -0.2}, 4.0 / 8},
		// Same size, not 1: binomial path. 5 up of 5: 2·(1/32) = 1/16.
		{"equal sizes", []float64{0.5, 0.5, 0.5, 0.5, 0.5}, 1.0 / 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pairs []Pair
			for i, d := range tc.d {
				base := 0.2
				pairs = append(pairs, Pair{TestID: fmt.Sprint(i), Base: base, Head: base + d})
			}
			c := Compare(pairs, Options{})
			if c.Test != MethodSignFlipExact {
				t.Fatalf("test %s", c.Test)
			}
			near(t, "p", c.PValue, tc.p, 1e-12)
		})
	}
}

// bruteSignFlip is an independent reference: it enumerates every sign
// vector of d with integer arithmetic on d scaled to integers.
func bruteSignFlip(d []int) float64 {
	obs := 0
	for _, x := range d {
		obs += x
	}
	obs = max(obs, -obs)
	hits := 0
	for mask := 0; mask < 1<<len(d); mask++ {
		s := 0
		for i, x := range d {
			if mask>>i&1 == 1 {
				s -= x
			} else {
				s += x
			}
		}
		if max(s, -s) >= obs {
			hits++
		}
	}
	return float64(hits) / float64(int(1)<<len(d))
}

func TestCompareMonteCarloMatchesEnumeration(t *testing.T) {
	// 18 differences (beyond the exact limit of 12): the Monte Carlo
	// p-value must be within its own noise of the enumerated one.
	ints := []int{7, 3, -2, 5, 9, 1, 4, -6, 8, 2, 3, 5, -1, 6, 4, 2, 7, -3}
	want := bruteSignFlip(ints)
	var pairs []Pair
	for i, x := range ints {
		pairs = append(pairs, Pair{TestID: fmt.Sprint(i), Base: 0.5, Head: 0.5 + float64(x)/20})
	}
	c := Compare(pairs, Options{Seed: 1, Resamples: 20_000})
	if c.Test != MethodSignFlipMonteCarlo {
		t.Fatalf("test %s", c.Test)
	}
	// Binomial standard error of the estimate: √(p(1−p)/20000).
	se := math.Sqrt(want * (1 - want) / 20_000)
	near(t, "p", c.PValue, want, 4*se+1e-4)
	if want > 0.05 || !c.Significant {
		t.Errorf("reference p %v, significant %v", want, c.Significant)
	}
}

func TestCompareRepeatsStayTogether(t *testing.T) {
	// 12 tests × 3 repeats, each test 1/3 better in head: the unit is the
	// test, so n = 12 and every difference is +1/3 (binomial path,
	// p = 2/4096), not 36 pairs.
	var pairs []Pair
	for i := range 12 {
		for r := range 3 {
			p := Pair{TestID: fmt.Sprint(i), Repeat: r, Base: 0, Head: 0}
			if r == 0 {
				p.Head, p.HeadPassed = 1, true
			}
			pairs = append(pairs, p)
		}
	}
	c := Compare(pairs, Options{})
	if c.Tests != 12 || c.Pairs != 36 || c.Improved != 12 || c.Test != MethodSignFlipExact {
		t.Fatalf("%+v", c)
	}
	near(t, "delta", c.Delta, 1.0/3, 1e-12)
	near(t, "p", c.PValue, 2.0/4096, 1e-15)
	if len(c.Flipped) != 12 || c.Flipped[0].Repeat != 0 {
		t.Fatalf("flipped %+v", c.Flipped)
	}
}

func TestPairs(t *testing.T) {
	base := []Sample{
		{TestID: "a", Repeat: 0, Score: 1, Passed: true},
		{TestID: "a", Repeat: 1, Score: 0},
		{TestID: "b", Repeat: 0, Error: true},
		{TestID: "c", Repeat: 0, Score: 0.5},
		{TestID: "only-base", Score: 1},
	}
	head := []Sample{
		{TestID: "c", Repeat: 0, Score: 0.75, Passed: true},
		{TestID: "a", Repeat: 1, Error: true}, // error: dropped
		{TestID: "a", Repeat: 0, Score: 0},
		{TestID: "b", Repeat: 0, Score: 1}, // base errored: dropped
		{TestID: "a", Repeat: 2, Score: 1}, // repeat not in base
		{TestID: "only-head", Score: 1},
	}
	got := Pairs(base, head)
	want := []Pair{
		{TestID: "c", Base: 0.5, Head: 0.75, HeadPassed: true},
		{TestID: "a", Base: 1, Head: 0, BasePassed: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("pair %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestCompareDeterminism(t *testing.T) {
	pairs := scorePairs(100, 0.02, 3)
	a, b := Compare(pairs, Options{Seed: 9}), Compare(pairs, Options{Seed: 9})
	if a.Test != MethodSignFlipMonteCarlo {
		t.Fatalf("test %s", a.Test)
	}
	if a.CI95 != b.CI95 || a.PValue != b.PValue {
		t.Fatalf("same seed differs: %v %v / %v %v", a.CI95, a.PValue, b.CI95, b.PValue)
	}
	c := Compare(pairs, Options{Seed: 10})
	if c.PValue == a.PValue {
		t.Fatal("the seed is not used")
	}
	// Monte Carlo noise only: the standard error of p at 2,000 draws is
	// at most 0.011.
	near(t, "p", c.PValue, a.PValue, 0.035)
}

func TestCompareNormalApproximation(t *testing.T) {
	// 5,000 tests, head better by 0.01 on average: more than 200
	// non-zero differences, none dominant.
	pairs := scorePairs(5000, 0.01, 4)
	c := Compare(pairs, Options{})
	if c.Test != MethodSignFlipNormal || c.CIMethod != MethodNormal {
		t.Fatalf("test %s, interval %s", c.Test, c.CIMethod)
	}
	// The Monte Carlo estimate of the same distribution must agree.
	var nz []float64
	var sum float64
	for _, p := range pairs {
		if d := clamp01(p.Head) - clamp01(p.Base); d != 0 {
			nz = append(nz, math.Abs(d))
			sum += d
		}
	}
	mc := signFlipMC(nz, math.Abs(sum), 20_000, Options{Seed: 3}.rng())
	near(t, "p normal vs Monte Carlo", c.PValue, mc, 4*math.Sqrt(mc*(1-mc)/20_000)+0.002)
	// A dominant difference keeps the Monte Carlo path.
	pairs[0].Base, pairs[0].Head = 0, 1
	for i := 1; i < len(pairs); i++ {
		pairs[i].Head = pairs[i].Base + 0.001*float64(i%3-1)
	}
	if c := Compare(pairs, Options{}); c.Test != MethodSignFlipMonteCarlo {
		t.Fatalf("dominated: test %s", c.Test)
	}
}

// Property: under no true difference, the test rejects about alpha of the
// time (it is a valid test); with a clear improvement, nearly always.
func TestCompareErrorRates(t *testing.T) {
	const trials = 300
	reject := func(shift float64) float64 {
		n := 0
		for i := range trials {
			pairs := scorePairs(30, shift, uint64(100+i))
			if Compare(pairs, Options{Seed: uint64(i), Resamples: 400}).Significant {
				n++
			}
		}
		return float64(n) / trials
	}
	if r := reject(0); r > 0.09 {
		t.Errorf("false positive rate %.3f, want about 0.05", r)
	}
	if r := reject(0.15); r < 0.9 {
		t.Errorf("power %.3f at a 0.15 shift, want > 0.9", r)
	}
}

// scorePairs: n tests with scores in [0, 1]; head = base + shift + noise.
func scorePairs(n int, shift float64, seed uint64) []Pair {
	g := rand.New(rand.NewPCG(seed, 2))
	p := make([]Pair, n)
	for i := range p {
		b := g.Float64()
		h := clamp01(b + shift + 0.3*(g.Float64()-0.5))
		b = clamp01(b + 0.3*(g.Float64()-0.5))
		p[i] = Pair{TestID: fmt.Sprint("t", i), Base: b, Head: h, BasePassed: b >= 0.5, HeadPassed: h >= 0.5}
	}
	return p
}
