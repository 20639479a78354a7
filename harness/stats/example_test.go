package stats_test

import (
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// A cell of ten pass/fail tests, eight passed: its score and Wilson
// interval. Then the same ten tests in a second run, where two passing
// tests failed: a change that ten tests cannot tell from chance.
func Example() {
	var base, head []stats.Sample
	for i := range 10 {
		id := fmt.Sprintf("t%d", i)
		b := i < 8
		h := i < 6
		base = append(base, stats.Sample{TestID: id, Score: score(b), Passed: b})
		head = append(head, stats.Sample{TestID: id, Score: score(h), Passed: h})
	}

	cell := stats.Cell(base, stats.Options{})
	fmt.Printf("base: %.2f [%.4f, %.4f] by %s\n", cell.Score, cell.CI95.Low, cell.CI95.High, cell.Method)

	cmp := stats.Compare(stats.Pairs(base, head), stats.Options{Seed: 1})
	fmt.Printf("delta %+.2f, p = %.2f by %s, significant: %v\n", cmp.Delta, cmp.PValue, cmp.Test, cmp.Significant)
	for _, f := range cmp.Flipped {
		fmt.Printf("%s: passed %v → %v\n", f.TestID, f.BasePassed, f.HeadPassed)
	}
	// Output:
	// base: 0.80 [0.4902, 0.9433] by wilson
	// delta -0.20, p = 0.50 by mcnemar, significant: false
	// t6: passed true → false
	// t7: passed true → false
}

func score(passed bool) float64 {
	if passed {
		return 1
	}
	return 0
}

// The exact McNemar test: 10 tests went from pass to fail, 2 from fail to
// pass.
func ExampleMcNemar() {
	fmt.Println(stats.McNemar(10, 2))
	// Output: 0.03857421875
}

// Three repeats of two tests, one repeat ending in error: errors are left
// out, so test "b" passed all of its two scored repeats.
func ExampleAggregate() {
	samples := []stats.Sample{
		{TestID: "a", Repeat: 0, Score: 1, Passed: true},
		{TestID: "a", Repeat: 1, Score: 0},
		{TestID: "a", Repeat: 2, Score: 0},
		{TestID: "b", Repeat: 0, Score: 1, Passed: true},
		{TestID: "b", Repeat: 1, Error: true},
		{TestID: "b", Repeat: 2, Score: 1, Passed: true},
	}
	for _, a := range stats.Aggregate(samples) {
		fmt.Printf("%s: pass_rate %.2f pass@k %v pass-all-k %v (k=%d, %d error)\n",
			a.TestID, a.PassRate, a.PassAtK, a.PassAllK, a.Scored, a.Errors)
	}
	// Output:
	// a: pass_rate 0.33 pass@k true pass-all-k false (k=3, 0 error)
	// b: pass_rate 1.00 pass@k true pass-all-k true (k=2, 1 error)
}
