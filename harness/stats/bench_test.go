package stats

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user + system CPU time so far. On a shared
// machine the wall time of a benchmark swings with the other jobs; the CPU
// time it used does not.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRuns returns two runs of n results each (n/cells tests per cell),
// the head slightly better, scores spread over [0, 1] so that nearly every
// per-test difference is non-zero and of its own size: the costliest case
// for the permutation test and the bootstrap. binary gives pass/fail
// scores instead.
func benchRuns(n, cells int, binary bool) (base, head [][]Sample) {
	g := rand.New(rand.NewPCG(1, 1))
	per := n / cells
	base, head = make([][]Sample, cells), make([][]Sample, cells)
	for c := range cells {
		for i := range per {
			id := fmt.Sprintf("c%d-t%d", c, i)
			b := g.Float64()
			h := clamp01(b + 0.01 + 0.2*(g.Float64()-0.5))
			if binary {
				b, h = float64(g.IntN(10)/8), float64(g.IntN(10)/7)
			}
			base[c] = append(base[c], Sample{TestID: id, Score: b, Passed: b >= 0.5})
			head[c] = append(head[c], Sample{TestID: id, Score: h, Passed: h >= 0.5})
		}
	}
	return base, head
}

// BenchmarkCompare100k compares two runs of 100,000 results: pairing by
// test id and repeat, then Compare with the default 2,000 resamples, for
// the whole run as one cell, split into 100 cells of 1,000 tests (the
// shape of a per-cell comparison of a 10 domains × 10 levels run), and
// into 1,000 cells of 100 tests.
func BenchmarkCompare100k(b *testing.B) {
	for _, bc := range []struct {
		name   string
		cells  int
		binary bool
	}{
		{"scores/1-cell", 1, false},
		{"scores/100-cells", 100, false},
		// 100 tests a cell: the Monte Carlo permutation test in every cell.
		{"scores/1000-cells", 1000, false},
		{"pass-fail/1-cell", 1, true},
		{"pass-fail/100-cells", 100, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base, head := benchRuns(100_000, bc.cells, bc.binary)
			cpu0 := cpuTime(b)
			for b.Loop() {
				regressed := 0
				for c := range base {
					cmp := Compare(Pairs(base[c], head[c]), Options{Seed: 1})
					if cmp.Tests != len(base[c]) {
						b.Fatalf("tests %d, want %d", cmp.Tests, len(base[c]))
					}
					regressed += cmp.Regressed
				}
				if regressed == 0 {
					b.Fatal("no regression found in random data")
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkCell100k computes the interval of every cell of a 100,000-result
// run of scores (100 cells of 1,000 tests, the bootstrap path): what a run
// with repeats costs when it summarises its cells.
func BenchmarkCell100k(b *testing.B) {
	cells, _ := benchRuns(100_000, 100, false)
	cpu0 := cpuTime(b)
	for b.Loop() {
		for _, c := range cells {
			if s := Cell(c, Options{Seed: 1}); s.Method != MethodBootstrap || s.Tests != len(c) {
				b.Fatalf("method %s, tests %d", s.Method, s.Tests)
			}
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
