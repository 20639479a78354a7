package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// matrixSource is a fakeSource whose matrices are computed from the
// results, as the run store keeps them.
type matrixSource struct {
	fakeSource
	models map[string]string
}

func (m matrixSource) Run(ctx context.Context, id string) (runs.Info, error) {
	info, err := m.fakeSource.Run(ctx, id)
	info.ModelName, info.Model, info.Status = "label-"+m.models[id], m.models[id], runs.StatusCompleted
	return info, err
}

func (m matrixSource) Matrix(_ context.Context, id string) (runs.Matrix, error) {
	if id == "broken" {
		return nil, errors.New("matrix unreadable")
	}
	byCell := map[[2]string][]stats.Sample{}
	for _, r := range m.fakeSource[id] {
		k := [2]string{r.Domain, strconv.Itoa(r.Level)}
		byCell[k] = append(byCell[k], sample(r))
	}
	out := runs.Matrix{}
	for k, samples := range byCell {
		c := stats.Cell(samples, stats.Options{Seed: 1})
		if out[k[0]] == nil {
			out[k[0]] = map[string]runs.Cell{}
		}
		cell := runs.Cell{Status: runs.CellError}
		if id == "pending" {
			cell = runs.Cell{Status: runs.CellPending} // a run stored nothing for yet
		} else if c.Tests > 0 {
			cell = runs.Cell{Status: runs.CellPassed, Score: &c.Score, StdErr: &c.StdErr, CI95: &c.CI95}
		}
		out[k[0]][k[1]] = cell
	}
	return out, nil
}

func TestMany(t *testing.T) {
	half := func(i int) string {
		if i%2 == 0 {
			return runs.TestPassed
		}
		return runs.TestFailed
	}
	src := matrixSource{
		fakeSource: fakeSource{
			"a": append(results("a", "math", 1, 30, always(runs.TestPassed)), results("a", "code", 2, 10, always(runs.TestPassed))...),
			"b": append(results("b", "math", 1, 30, half), results("b", "code", 2, 10, always(runs.TestPassed))...),
			"c": append(results("c", "math", 1, 30, always(runs.TestPassed)), results("c", "extra", 1, 4, always(runs.TestPassed))...),
			// d shares nothing scored with a: every test ended in error.
			"d": results("d", "math", 1, 30, always(runs.TestError)),
		},
		models: map[string]string{"a": "ma", "b": "mb", "c": "mc", "d": "md"},
	}
	ctx := context.Background()
	rep, err := Many(ctx, src, "a", "b", "c", "d")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Base != "a" || len(rep.Runs) != 4 || rep.Runs[1].ModelName != "label-mb" || rep.Runs[1].Model != "mb" || rep.Runs[0].Compared {
		t.Fatalf("runs = %+v", rep.Runs)
	}
	// Each head's figures are those of the two-run comparison.
	for i, head := range []string{"b", "c"} {
		two, err := Load(ctx, src, "a", head)
		if err != nil {
			t.Fatal(err)
		}
		r := rep.Runs[i+1]
		if !r.Compared || r.Summary != two.Summary || len(r.Flipped) != len(two.Flipped) {
			t.Errorf("run %s = %+v, want the summary of Load: %+v", head, r, two.Summary)
		}
		for d, levels := range two.Cells {
			for l, c := range levels {
				if got := rep.Cells[d][l][i+1].VsBase; got == nil || *got != c {
					t.Errorf("%s %s/%d vs base = %+v, want %+v", head, d, l, got, c)
				}
			}
		}
	}
	m := rep.Cells["math"][1]
	if len(m) != 4 || m[0].VsBase != nil || *m[0].Score != 1 || m[0].CI95 == nil || *m[1].Score != 0.5 ||
		!m[1].VsBase.SignificantRegression() || m[2].VsBase.Significant || m[3].VsBase != nil || m[3].Status != runs.CellError {
		t.Errorf("math/1 = %+v", m)
	}
	if !rep.Runs[1].Regressed() || rep.Runs[2].Regressed() || !rep.Regressed() {
		t.Error("regressions")
	}
	// A cell one run has alone is listed, with nothing compared.
	if e := rep.Cells["extra"][1]; e[0].Status != "" || e[0].Score != nil || e[2].Score == nil || e[2].VsBase != nil {
		t.Errorf("extra/1 = %+v", e)
	}
	if c := rep.Cells["code"][2]; c[2].Status != "" || c[1].VsBase == nil || c[1].VsBase.Delta != 0 {
		t.Errorf("code/2 = %+v", c)
	}
	if d := rep.Runs[3]; d.Compared || d.Flipped == nil || len(d.Flipped) != 0 || d.Summary != (Summary{}) {
		t.Errorf("run sharing nothing = %+v", d)
	}
	if got := rep.Domains(); fmt.Sprint(got) != "[code extra math]" || fmt.Sprint(rep.Levels("math")) != "[1]" {
		t.Errorf("domains %v", got)
	}

	// A cell whose run stored no score yet is measured from its results,
	// as the engine measures it when it settles.
	src.fakeSource["pending"] = results("pending", "math", 1, 30, half)
	rep, err = Many(ctx, src, "a", "pending", "b")
	if err != nil {
		t.Fatal(err)
	}
	p, b := rep.Cells["math"][1][1], rep.Cells["math"][1][2]
	if p.Status != runs.CellPending || p.Score == nil || *p.Score != *b.Score || *p.StdErr != *b.StdErr || *p.CI95 != *b.CI95 || *p.VsBase != *b.VsBase {
		t.Errorf("pending cell %+v, want the figures of %+v", p, b)
	}

	// Improvements only: nothing regressed.
	rep, err = Many(ctx, src, "b", "a")
	if err != nil || rep.Regressed() || rep.Runs[1].Summary.SignificantImprovements != 1 {
		t.Fatalf("b vs a: %+v, %v", rep, err)
	}
	// The base alone: its cells, nothing compared.
	rep, err = Many(ctx, src, "a")
	if err != nil || len(rep.Runs) != 1 || len(rep.Cells["math"][1]) != 1 || rep.Regressed() {
		t.Fatalf("base alone: %+v, %v", rep, err)
	}
}

func TestManyErrors(t *testing.T) {
	src := matrixSource{fakeSource: fakeSource{"a": results("a", "m", 0, 2, always(runs.TestPassed)),
		"broken": results("broken", "m", 0, 2, always(runs.TestPassed))}}
	ctx := context.Background()
	for _, ids := range [][]string{{"nope", "a"}, {"a", "nope"}, {"a", "a", "nope"}} {
		if _, err := Many(ctx, src, ids[0], ids[1:]...); !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("Many(%v) err = %v, want not found", ids, err)
		}
	}
	if _, err := Many(ctx, src, "a", "broken"); err == nil || err.Error() != "matrix unreadable" {
		t.Errorf("unreadable matrix: err = %v", err)
	}
}
