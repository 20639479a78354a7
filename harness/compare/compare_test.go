package compare

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// results builds n results of one cell, test ids t0..t(n-1); status(i)
// gives each one's status.
func results(run, domain string, level, n int, status func(i int) string) []runs.Result {
	out := make([]runs.Result, n)
	for i := range out {
		st := status(i)
		score := 0.0
		if st == runs.TestPassed {
			score = 1
		}
		out[i] = runs.Result{RunID: run, TestID: fmt.Sprintf("%s-%d-t%d", domain, level, i), Domain: domain, Level: level, Score: score, Status: st}
	}
	return out
}

func always(s string) func(int) string { return func(int) string { return s } }

func TestRunsRegressionAndUnchanged(t *testing.T) {
	base := append(results("a", "math", 1, 30, always(runs.TestPassed)),
		results("a", "code", 2, 10, always(runs.TestPassed))...)
	head := append(results("b", "math", 1, 30, func(i int) string {
		if i < 20 {
			return runs.TestFailed
		}
		return runs.TestPassed
	}), results("b", "code", 2, 10, always(runs.TestPassed))...)
	// Errors are left out: t9 of code/2 in error in head pairs nothing.
	head[len(head)-1].Status, head[len(head)-1].Score = runs.TestError, 0
	// A cell only the head has is not compared.
	head = append(head, results("b", "extra", 1, 3, always(runs.TestPassed))...)

	rep, err := Runs("a", "b", base, head)
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Cells["math"][1]
	if m.Tests != 30 || m.BaseScore != 1 || m.Delta > -0.66 || m.Delta < -0.67 || !m.Significant || m.PValue > 1e-5 || m.Regressed != 20 {
		t.Errorf("math/1 = %+v, want a significant regression of 20 of 30", m)
	}
	if !m.CI95.Contains(m.Delta) || m.CI95.High >= 0 {
		t.Errorf("math/1 ci95 %v", m.CI95)
	}
	c := rep.Cells["code"][2]
	if c.Tests != 9 || c.Delta != 0 || c.Significant || c.PValue != 1 {
		t.Errorf("code/2 = %+v, want 9 unchanged tests", c)
	}
	if _, ok := rep.Cells["extra"]; ok {
		t.Error("a cell of one run only was compared")
	}
	if len(rep.Flipped) != 20 || rep.Flipped[0] != (Flip{TestID: "math-1-t0", Domain: "math", Level: 1, BaseStatus: "passed", HeadStatus: "failed"}) {
		t.Errorf("flipped = %+v", rep.Flipped)
	}
	want := Summary{Improved: 0, Regressed: 20, Unchanged: 19, SignificantRegressions: 1}
	if rep.Summary != want || !rep.Regressed() {
		t.Errorf("summary = %+v, want %+v", rep.Summary, want)
	}
	if got := rep.Domains(); len(got) != 2 || got[0] != "code" || got[1] != "math" {
		t.Errorf("domains %v", got)
	}
}

func TestRunsDeterministic(t *testing.T) {
	// Scores between 0 and 1 with more than 12 changes: the Monte Carlo
	// test draws random numbers, seeded from the run ids.
	mk := func(run string, shift float64) []runs.Result {
		out := results(run, "d", 1, 40, always(runs.TestPassed))
		for i := range out {
			out[i].Score = float64(i%7)/10 + shift*float64(i%3)
		}
		return out
	}
	a, _ := Runs("x", "y", mk("x", 0), mk("y", 0.05))
	b, _ := Runs("x", "y", mk("x", 0), mk("y", 0.05))
	if a.Cells["d"][1] != b.Cells["d"][1] {
		t.Errorf("two comparisons differ: %+v vs %+v", a.Cells["d"][1], b.Cells["d"][1])
	}
	if Seed("x", "y") == Seed("y", "x") || Seed("ab", "c") == Seed("a", "bc") {
		t.Error("seeds collide")
	}
}

func TestRunsNothingShared(t *testing.T) {
	base := results("a", "math", 1, 3, always(runs.TestPassed))
	for _, head := range [][]runs.Result{
		nil,
		results("b", "math", 2, 3, always(runs.TestPassed)),    // other level
		results("b", "math", 1, 3, always(runs.TestError)),     // all in error
		results("b", "science", 1, 3, always(runs.TestPassed)), // other domain
	} {
		_, err := Runs("a", "b", base, head)
		var ns *NothingSharedError
		if !errors.As(err, &ns) || !errors.Is(err, harness.ErrInvalid) || err.Error() != "runs a and b share no test: nothing to compare" {
			t.Errorf("err = %v", err)
		}
	}
}

type fakeSource map[string][]runs.Result

func (f fakeSource) Run(_ context.Context, id string) (runs.Info, error) {
	if _, ok := f[id]; !ok {
		return runs.Info{}, fmt.Errorf("run %q: %w", id, harness.ErrNotFound)
	}
	return runs.Info{RunID: id}, nil
}

func (f fakeSource) Results(_ context.Context, id string) ([]runs.Result, error) { return f[id], nil }

func TestLoad(t *testing.T) {
	src := fakeSource{"a": results("a", "m", 0, 2, always(runs.TestPassed)), "b": results("b", "m", 0, 2, always(runs.TestFailed))}
	rep, err := Load(context.Background(), src, "a", "b")
	if err != nil || rep.Cells["m"][0].Delta != -1 || len(rep.Flipped) != 2 {
		t.Fatalf("Load = %+v, %v", rep, err)
	}
	for _, ids := range [][2]string{{"nope", "b"}, {"a", "nope"}} {
		if _, err := Load(context.Background(), src, ids[0], ids[1]); !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("Load(%v) err = %v, want not found", ids, err)
		}
	}
}

func TestRunsFlipNamesTheRepeat(t *testing.T) {
	var base, head []runs.Result
	for k := range 3 {
		b := results("a", "math", 1, 2, always(runs.TestPassed))
		h := results("b", "math", 1, 2, always(runs.TestPassed))
		for i := range b {
			b[i].Repeat, h[i].Repeat = k, k
		}
		if k == 2 {
			h[1].Status, h[1].Score = runs.TestFailed, 0
		}
		base, head = append(base, b...), append(head, h...)
	}
	rep, err := Runs("a", "b", base, head)
	if err != nil {
		t.Fatal(err)
	}
	want := Flip{TestID: "math-1-t1", Repeat: 2, Domain: "math", Level: 1, BaseStatus: "passed", HeadStatus: "failed"}
	if len(rep.Flipped) != 1 || rep.Flipped[0] != want {
		t.Fatalf("flipped = %+v, want [%+v]", rep.Flipped, want)
	}

	// The head finished t1#2, then t0#1, then t1#0: t1's askings are
	// listed together, in order, before t0's.
	head[5].Status, head[5].Score = runs.TestFailed, 0 // t1#2, already
	head[0].Status, head[0].Score = runs.TestFailed, 0 // t0#0
	head[1].Status, head[1].Score = runs.TestFailed, 0 // t1#0
	order := []runs.Result{head[5], head[0], head[1]}
	rep, err = Runs("a", "b", base, append(order, head[2], head[3], head[4]))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Flipped {
		got = append(got, fmt.Sprintf("%s#%d", f.TestID, f.Repeat))
	}
	if fmt.Sprint(got) != "[math-1-t1#0 math-1-t1#2 math-1-t0#0]" {
		t.Fatalf("flipped in the order %v", got)
	}
}
