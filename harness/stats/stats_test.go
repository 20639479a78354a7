package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.12g, want %.12g (±%g)", name, got, want, tol)
	}
}

// Known Wilson intervals. 8/10 is the worked example (0.4902, 0.9433); the
// other four are the examples of Newcombe, "Two-sided confidence intervals
// for the single proportion: comparison of seven methods", Statistics in
// Medicine 17 (1998) 857–872, Table II, method 3 (score interval without
// continuity correction), given there to 4 decimals.
func TestWilsonKnownValues(t *testing.T) {
	cases := []struct {
		k, n      int
		low, high float64
	}{
		{8, 10, 0.4902, 0.9433},
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0.0000, 0.1611},
		{1, 29, 0.0061, 0.1718},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d_of_%d", c.k, c.n), func(t *testing.T) {
			iv := Wilson(c.k, c.n)
			near(t, "low", iv.Low, c.low, 0.00005)
			near(t, "high", iv.High, c.high, 0.00005)
		})
	}
}

func TestWilsonEdges(t *testing.T) {
	t.Run("n=0 is the whole range", func(t *testing.T) {
		if iv := Wilson(0, 0); iv != (Interval{0, 1}) {
			t.Fatalf("Wilson(0,0) = %v", iv)
		}
	})
	t.Run("all fail starts at exactly 0", func(t *testing.T) {
		iv := Wilson(0, 10)
		if iv.Low != 0 || !(iv.High > 0 && iv.High < 1) {
			t.Fatalf("Wilson(0,10) = %v", iv)
		}
	})
	t.Run("all pass ends at exactly 1", func(t *testing.T) {
		iv := Wilson(10, 10)
		if iv.High != 1 || !(iv.Low > 0 && iv.Low < 1) {
			t.Fatalf("Wilson(10,10) = %v", iv)
		}
		// Symmetry: k of n mirrors n−k of n.
		lo := Wilson(0, 10)
		near(t, "mirror", iv.Low, 1-lo.High, 1e-12)
	})
	t.Run("one trial", func(t *testing.T) {
		// z²/(1+z²) = 3.841459/4.841459 = 0.793451 (hand computed).
		near(t, "high of 0/1", Wilson(0, 1).High, 0.7934506856, 1e-9)
		near(t, "low of 1/1", Wilson(1, 1).Low, 0.2065493144, 1e-9)
	})
	t.Run("out of range counts are clamped", func(t *testing.T) {
		if Wilson(12, 10) != Wilson(10, 10) || Wilson(-1, 10) != Wilson(0, 10) {
			t.Fatal("counts outside [0, n] not clamped")
		}
	})
	t.Run("huge n", func(t *testing.T) {
		iv := Wilson(5_000_000, 10_000_000)
		// Half width ≈ z·√(0.25/1e7) = 0.000309905.
		near(t, "half width", (iv.High-iv.Low)/2, 0.000309905, 1e-8)
	})
}

// Exact two-sided McNemar p-values. 10/2 and 3/17 are hand computed:
// 2·(1+12+66)/4096 and 2·(1+20+190+1140)/2^20. The others were computed
// with exact rational arithmetic (Python integers and fractions.Fraction:
// the binomial terms summed exactly, divided by 2^(b+c)), independently of
// this package.
func TestMcNemarKnownValues(t *testing.T) {
	cases := []struct {
		b, c int
		p    float64
	}{
		{10, 2, 0.03857421875},
		{2, 10, 0.03857421875},
		{3, 17, 0.0025768280029296875},
		{500, 600, 0.0028195449914364275},
		{49500, 50500, 0.0015823598788515956},
		{49800, 50200, 0.20703897176422484},
		{50000, 50000, 1},
		{1, 1, 1},
		{0, 1100, 0}, // 2·2^-1100 is below the smallest float64
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("b=%d_c=%d", c.b, c.c), func(t *testing.T) {
			got := McNemar(c.b, c.c)
			tol := 1e-12 * max(c.p, 1e-300)
			if c.b+c.c > 1000 {
				tol = 1e-9 * c.p // log-space path: lgamma rounding
			}
			near(t, "p", got, c.p, tol)
		})
	}
}

func TestMcNemarEdges(t *testing.T) {
	if p := McNemar(0, 0); p != 1 {
		t.Errorf("b+c=0: p = %v, want 1", p)
	}
	if p := McNemar(0, 1); p != 1 {
		t.Errorf("one discordant pair: p = %v, want 1", p)
	}
	// No NaN, no Inf, within [0, 1] and monotone in the imbalance, at sizes
	// where a naive 2^n or n! overflows.
	prev := 2.0
	for b := 50_000; b >= 0; b -= 2_500 {
		p := McNemar(b, 100_000-b)
		if math.IsNaN(p) || p < 0 || p > 1 {
			t.Fatalf("McNemar(%d, %d) = %v", b, 100_000-b, p)
		}
		if p > prev {
			t.Fatalf("p not monotone: McNemar(%d, …) = %v > %v", b, p, prev)
		}
		prev = p
	}
	// Both paths agree around the switch at 1,000 pairs: the normal
	// approximation with continuity correction is close at this size.
	for _, n := range []int{999, 1000, 1001, 1002} {
		b := n/2 - 30
		exact := McNemar(b, n-b)
		z := (float64(n-2*b) - 1) / math.Sqrt(float64(n))
		approx := math.Erfc(z / math.Sqrt2)
		if math.Abs(exact-approx) > 0.01*approx {
			t.Errorf("n=%d: exact %v vs normal %v", n, exact, approx)
		}
	}
}

func TestAggregateRepeats(t *testing.T) {
	samples := []Sample{
		{TestID: "a", Repeat: 0, Score: 1, Passed: true},
		{TestID: "b", Repeat: 0, Score: 0},
		{TestID: "a", Repeat: 1, Score: 0},
		{TestID: "a", Repeat: 2, Error: true},
		{TestID: "b", Repeat: 1, Score: 0},
		{TestID: "c", Repeat: 0, Score: 1, Passed: true},
		{TestID: "c", Repeat: 1, Error: true},
		{TestID: "d", Repeat: 0, Error: true},
		{TestID: "e", Repeat: 0, Score: 0.5, Passed: true},
		{TestID: "e", Repeat: 1, Score: 1.5, Passed: true}, // clamped to 1
	}
	want := []TestAggregate{
		{TestID: "a", Scored: 2, Errors: 1, Passes: 1, Score: 0.5, PassRate: 0.5, PassAtK: true},
		{TestID: "b", Scored: 2, Score: 0},
		// An error is not a failure: c passed every scored repeat.
		{TestID: "c", Scored: 1, Errors: 1, Passes: 1, Score: 1, PassRate: 1, PassAtK: true, PassAllK: true},
		// Only errors: nothing is known, nothing is claimed.
		{TestID: "d", Errors: 1},
		{TestID: "e", Scored: 2, Passes: 2, Score: 0.75, PassRate: 1, PassAtK: true, PassAllK: true},
	}
	got := Aggregate(samples)
	if len(got) != len(want) {
		t.Fatalf("got %d aggregates, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("test %s:\n got  %+v\n want %+v", want[i].TestID, got[i], want[i])
		}
	}
	if Aggregate(nil) != nil {
		t.Error("Aggregate(nil) not empty")
	}
}

func binarySamples(k, n int) []Sample {
	s := make([]Sample, n)
	for i := range s {
		s[i] = Sample{TestID: fmt.Sprint("t", i)}
		if i < k {
			s[i].Score, s[i].Passed = 1, true
		}
	}
	return s
}

func TestCell(t *testing.T) {
	t.Run("no sample", func(t *testing.T) {
		c := Cell(nil, Options{})
		if c.Tests != 0 || c.Method != MethodNone || c.CI95 != (Interval{0, 1}) {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("only errors", func(t *testing.T) {
		c := Cell([]Sample{{TestID: "a", Error: true}, {TestID: "b", Error: true}}, Options{})
		if c.Tests != 0 || c.Errors != 2 || c.Samples != 0 || c.Method != MethodNone {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("pass/fail is Wilson", func(t *testing.T) {
		c := Cell(binarySamples(8, 10), Options{})
		if c.Method != MethodWilson || c.Score != 0.8 || c.CI95 != Wilson(8, 10) {
			t.Fatalf("%+v", c)
		}
		// s = √(10/9 · 0.16) = 0.421637; s/√10 = 0.133333 (hand computed).
		near(t, "stderr", c.StdErr, 0.1333333333, 1e-9)
	})
	t.Run("all pass, all fail", func(t *testing.T) {
		for k, want := range map[int]Interval{0: Wilson(0, 50), 50: Wilson(50, 50)} {
			c := Cell(binarySamples(k, 50), Options{})
			if c.Method != MethodWilson || c.CI95 != want || c.StdErr != 0 {
				t.Errorf("k=%d: %+v", k, c)
			}
		}
	})
	t.Run("one test", func(t *testing.T) {
		c := Cell([]Sample{{TestID: "a", Score: 1, Passed: true}}, Options{})
		if c.Tests != 1 || c.CI95 != Wilson(1, 1) || c.StdErr != 0 {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("repeats that agree are pass/fail per test", func(t *testing.T) {
		var s []Sample
		for i := range 20 {
			for r := range 3 {
				s = append(s, Sample{TestID: fmt.Sprint(i), Repeat: r, Score: float64(i % 2), Passed: i%2 == 1})
			}
		}
		c := Cell(s, Options{})
		// n is the 20 tests, not the 60 samples.
		if c.Tests != 20 || c.Samples != 60 || c.Method != MethodWilson || c.CI95 != Wilson(10, 20) {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("few tests with scores get the Wilson bound", func(t *testing.T) {
		s := []Sample{{TestID: "a", Score: 0.5}, {TestID: "b", Score: 0.7}, {TestID: "c", Score: 0.9}}
		c := Cell(s, Options{})
		near(t, "score", c.Score, 0.7, 1e-12)
		// s = 0.2, s/√3 = 0.11547 (hand computed).
		near(t, "stderr", c.StdErr, 0.2/math.Sqrt(3), 1e-12)
		if c.Method != MethodWilson {
			t.Fatalf("method %s", c.Method)
		}
		// Wilson at p = 0.7, n = 3: z² = 3.841459, centre =
		// (0.7+0.640243)/2.280486 = 0.587700, half = 0.859452 ·
		// √(0.07+0.106707) = 0.361284 → [0.226416, 0.948984] (hand computed).
		near(t, "low", c.CI95.Low, 0.226416, 2e-6)
		near(t, "high", c.CI95.High, 0.948984, 2e-6)
	})
	t.Run("scores use the bootstrap", func(t *testing.T) {
		s := scoreSamples(200, 3, 1)
		c := Cell(s, Options{Seed: 7})
		if c.Method != MethodBootstrap || c.Tests != 200 || c.Samples != 600 {
			t.Fatalf("%+v", c)
		}
		// The bootstrap interval of a mean is close to ±1.96 standard
		// errors at this size.
		width := c.CI95.High - c.CI95.Low
		near(t, "width / (2·1.96·se)", width/(2*Z95*c.StdErr), 1, 0.1)
	})
	t.Run("large cells use the normal interval", func(t *testing.T) {
		c := Cell(scoreSamples(LargeN+1, 1, 2), Options{})
		if c.Method != MethodNormal {
			t.Fatalf("method %s", c.Method)
		}
		near(t, "low", c.CI95.Low, c.Score-Z95*c.StdErr, 1e-12)
	})
}

// scoreSamples returns n tests of r repeats with scores spread over [0, 1].
func scoreSamples(n, r int, seed uint64) []Sample {
	g := rand.New(rand.NewPCG(seed, 1))
	var s []Sample
	for i := range n {
		base := g.Float64()
		for j := range r {
			x := clamp01(base + 0.2*(g.Float64()-0.5))
			s = append(s, Sample{TestID: fmt.Sprint("t", i), Repeat: j, Score: x, Passed: x >= 0.5})
		}
	}
	return s
}

func TestCellDeterminism(t *testing.T) {
	s := scoreSamples(300, 2, 3)
	a, b := Cell(s, Options{Seed: 42}), Cell(s, Options{Seed: 42})
	if a != b {
		t.Fatalf("same seed, different results:\n%+v\n%+v", a, b)
	}
	c := Cell(s, Options{Seed: 43})
	if c.CI95 == a.CI95 {
		t.Fatal("different seeds gave the very same interval: the seed is not used")
	}
	// Different seeds differ by Monte Carlo noise only.
	w := a.CI95.High - a.CI95.Low
	near(t, "low across seeds", c.CI95.Low, a.CI95.Low, 0.05*w)
	near(t, "high across seeds", c.CI95.High, a.CI95.High, 0.05*w)
}

// Property: whatever the data, every 95 % interval lies in [0, 1] and
// contains the reported score; Wilson contains k/n.
func TestIntervalsContainTheMean(t *testing.T) {
	g := rand.New(rand.NewPCG(99, 99))
	for i := range 500 {
		n := 1 + g.IntN(60)
		k := g.IntN(n + 1)
		iv := Wilson(k, n)
		if p := float64(k) / float64(n); !iv.Contains(p) || iv.Low < 0 || iv.High > 1 {
			t.Fatalf("Wilson(%d, %d) = %v misses %v", k, n, iv, p)
		}
		// Skewed scores (many zeros, a few high values) are where a
		// percentile interval is most likely to miss the mean.
		scores := make([]float64, 1+g.IntN(80))
		for j := range scores {
			if g.IntN(10) == 0 {
				scores[j] = g.Float64()
			}
		}
		c := CellScores(scores, Options{Seed: uint64(i), Resamples: 200})
		if !c.CI95.Contains(c.Score) || c.CI95.Low < 0 || c.CI95.High > 1 {
			t.Fatalf("%s interval %v misses the mean %v of %v", c.Method, c.CI95, c.Score, scores)
		}
	}
}

// Coverage: over many simulated cells, the bootstrap interval holds the
// true mean about 95 % of the time. Seeds are fixed, so this is
// deterministic; the bounds leave room for the bootstrap's known slight
// undercoverage at n = 40.
func TestBootstrapCoverage(t *testing.T) {
	g := rand.New(rand.NewPCG(5, 5))
	const trials, n = 400, 40
	hits := 0
	for i := range trials {
		scores := make([]float64, n)
		for j := range scores {
			scores[j] = g.Float64() * g.Float64() // mean 1/4
		}
		c := CellScores(scores, Options{Seed: uint64(i), Resamples: 500})
		if c.Method != MethodBootstrap {
			t.Fatalf("method %s", c.Method)
		}
		if c.CI95.Contains(0.25) {
			hits++
		}
	}
	if rate := float64(hits) / trials; rate < 0.90 || rate > 0.99 {
		t.Fatalf("coverage %.3f, want about 0.95", rate)
	}
}

func TestIntervalJSON(t *testing.T) {
	b, err := json.Marshal(CellSummary{Tests: 10, Score: 0.8, CI95: Interval{0.25, 0.875}, Method: MethodWilson})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tests":10,"samples":0,"errors":0,"score":0.8,"stderr":0,"ci95":[0.25,0.875],"method":"wilson"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back CellSummary
	if err := json.Unmarshal(b, &back); err != nil || back.CI95 != (Interval{0.25, 0.875}) {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	if err := json.Unmarshal([]byte(`{"ci95":{"low":1}}`), &back); err == nil {
		t.Fatal("an object decoded as an interval")
	}
}

// TestOrderDoesNotMatter: a cell's interval and a comparison depend on
// the results, not on the order the tests finished in (which concurrency
// changes from one run to the next).
func TestOrderDoesNotMatter(t *testing.T) {
	var samples []Sample
	var pairs []Pair
	for i := range 40 {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		score := float64((i*7)%10) / 9
		samples = append(samples, Sample{TestID: id, Score: score, Passed: score > 0.5})
		pairs = append(pairs, Pair{TestID: id, Base: score, Head: float64((i*3)%10) / 9})
	}
	cell, cmp := Cell(samples, Options{Seed: 1}), Compare(pairs, Options{Seed: 1})
	if cell.Method != MethodBootstrap {
		t.Fatalf("method %v: the test needs the bootstrap", cell.Method)
	}
	for range 5 {
		rand.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
		rand.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		if got := Cell(samples, Options{Seed: 1}); got != cell {
			t.Fatalf("shuffled samples: %+v, want %+v", got, cell)
		}
		got := Compare(pairs, Options{Seed: 1})
		if got.CI95 != cmp.CI95 || got.PValue != cmp.PValue || got.Delta != cmp.Delta {
			t.Fatalf("shuffled pairs: %+v, want %+v", got, cmp)
		}
	}
}
