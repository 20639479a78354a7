package compare_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// memory is a compare.MatrixSource holding runs in memory; a program
// passes its *runs.Store.
type memory map[string][]runs.Result

func (m memory) Run(_ context.Context, id string) (runs.Info, error) {
	if _, ok := m[id]; !ok {
		return runs.Info{}, fmt.Errorf("run %q: %w", id, harness.ErrNotFound)
	}
	return runs.Info{RunID: id, ModelName: id, Status: runs.StatusCompleted}, nil
}

func (m memory) Results(_ context.Context, id string) ([]runs.Result, error) { return m[id], nil }

// Matrix summarises each cell as the run store does when the cell settles.
func (m memory) Matrix(_ context.Context, id string) (runs.Matrix, error) {
	var samples []stats.Sample
	for _, r := range m[id] {
		samples = append(samples, stats.Sample{TestID: r.TestID, Score: r.Score, Passed: r.Status == runs.TestPassed})
	}
	c := stats.Cell(samples, stats.Options{})
	return runs.Matrix{"math": {"1": {Status: runs.CellPassed, Score: &c.Score, StdErr: &c.StdErr, CI95: &c.CI95}}}, nil
}

// results are a run of 12 math tests of level 1, the first passed of them
// passing.
func results(run string, passed int) []runs.Result {
	var out []runs.Result
	for i := range 12 {
		r := runs.Result{RunID: run, TestID: "t" + strconv.Itoa(i), Domain: "math", Level: 1, Status: runs.TestFailed}
		if i < passed {
			r.Status, r.Score = runs.TestPassed, 1
		}
		out = append(out, r)
	}
	return out
}

// A sweep of three models over the same twelve tests: each run's score
// with its interval, and how the second and the third differ from the
// first.
func ExampleMany() {
	src := memory{"model-a": results("model-a", 11), "model-b": results("model-b", 10), "model-c": results("model-c", 3)}
	rep, err := compare.Many(context.Background(), src, "model-a", "model-b", "model-c")
	if err != nil {
		panic(err)
	}
	for i, c := range rep.Cells["math"][1] {
		fmt.Printf("%s: %.2f [%.2f, %.2f]", rep.Runs[i].RunID, *c.Score, c.CI95.Low, c.CI95.High)
		if v := c.VsBase; v != nil {
			fmt.Printf(", %+.2f vs %s, p = %.4f, significant: %v", v.Delta, rep.Base, v.PValue, v.Significant)
		}
		fmt.Println()
	}
	fmt.Println("a model regressed significantly:", rep.Regressed())
	// Output:
	// model-a: 0.92 [0.65, 0.99]
	// model-b: 0.83 [0.55, 0.95], -0.08 vs model-a, p = 1.0000, significant: false
	// model-c: 0.25 [0.09, 0.53], -0.67 vs model-a, p = 0.0078, significant: true
	// a model regressed significantly: true
}
