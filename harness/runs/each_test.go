package runs_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestEachResultByCell: every result, in the order of Results (by domain,
// level, then finishing order), over more than one page; it stops at
// fn's first error; an unknown run is not found.
func TestEachResultByCell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	in := newInfo("r")
	if err := s.CreateRun(ctx, in, []runs.CellKey{{Domain: "words", Level: 1, Tests: 400}, {Domain: "math", Level: 2, Tests: 400},
		{Domain: "math", Level: 1, Tests: 400}}); err != nil {
		t.Fatal(err)
	}
	// Finished interleaved, so that storage order is not cell order.
	var batch []runs.Result
	for i := range 400 {
		for _, c := range []struct {
			d string
			l int
		}{{"words", 1}, {"math", 2}, {"math", 1}} {
			batch = append(batch, result("r", c.d, c.l, fmt.Sprintf("%s-%d-%03d", c.d, c.l, i), 1, runs.TestPassed))
		}
	}
	if err := s.SaveResults(ctx, batch); err != nil {
		t.Fatal(err)
	}
	want, err := s.Results(ctx, "r")
	if err != nil || len(want) != 1200 {
		t.Fatalf("results = %d, %v", len(want), err)
	}
	var got []runs.Result
	if err := s.EachResultByCell(ctx, "r", func(r runs.Result) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("EachResultByCell = %d results; want Results' %d in the same order", len(got), len(want))
	}
	var samples []runs.Result
	if err := s.EachSampleByCell(ctx, "r", func(r runs.Result) error { samples = append(samples, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(samples) != len(want) {
		t.Fatalf("EachSampleByCell = %d results; want %d", len(samples), len(want))
	}
	for i, w := range want {
		light := runs.Result{RunID: w.RunID, TestID: w.TestID, Repeat: w.Repeat, Domain: w.Domain, Level: w.Level, Name: w.Name,
			Score: w.Score, Status: w.Status, DurationMS: w.DurationMS, Details: map[string]any{}}
		if !reflect.DeepEqual(samples[i], light) {
			t.Fatalf("sample %d = %+v; want %+v", i, samples[i], light)
		}
	}
	cells, err := s.ResultCells(ctx, "r")
	if want := []runs.CellKey{{Domain: "math", Level: 1, Tests: 400}, {Domain: "math", Level: 2, Tests: 400},
		{Domain: "words", Level: 1, Tests: 400}}; err != nil || !reflect.DeepEqual(cells, want) {
		t.Errorf("ResultCells = %+v, %v; want %+v", cells, err, want)
	}
	if cells, err := s.ResultCells(ctx, "nope"); err != nil || len(cells) != 0 {
		t.Errorf("ResultCells of no run = %+v, %v", cells, err)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.EachResultByCell(ctx, "r", func(runs.Result) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("stop = %v after %d", err, n)
	}
	if err := s.EachResultByCell(ctx, "nope", func(runs.Result) error { return nil }); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown run = %v", err)
	}
}

// TestCellProblems: a cell's failed and errored results, whole, in the
// order they were stored, the first limit of them; none of another cell
// or run, none passed.
func TestCellProblems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	for _, id := range []string{"r", "other"} {
		if err := s.CreateRun(ctx, newInfo(id), []runs.CellKey{{Domain: "math", Level: 1, Tests: 30}, {Domain: "math", Level: 2, Tests: 30}}); err != nil {
			t.Fatal(err)
		}
	}
	statuses := []string{runs.TestPassed, runs.TestFailed, runs.TestError}
	var batch []runs.Result
	var want []runs.Result
	for i := range 30 {
		for _, run := range []string{"r", "other"} {
			for _, level := range []int{1, 2} {
				r := result(run, "math", level, fmt.Sprintf("%s-%d-%02d", run, level, 29-i), 0, statuses[i%3])
				batch = append(batch, r)
				if run == "r" && level == 2 && r.Status != runs.TestPassed {
					want = append(want, r)
				}
			}
		}
	}
	if err := s.SaveResults(ctx, batch); err != nil {
		t.Fatal(err)
	}
	all, err := s.CellProblems(ctx, "r", "math", 2, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Fatalf("%d problems, want %d", len(all), len(want))
	}
	for i := range want {
		if all[i].TestID != want[i].TestID || all[i].Status != want[i].Status || all[i].Response != want[i].Response ||
			all[i].Details["extracted_answer"] != "42" {
			t.Errorf("problem %d: %+v, want %+v", i, all[i], want[i])
		}
	}
	some, err := s.CellProblems(ctx, "r", "math", 2, 3)
	if err != nil || len(some) != 3 || some[2].TestID != want[2].TestID {
		t.Errorf("the first 3: %+v, %v", some, err)
	}
	if none, err := s.CellProblems(ctx, "r", "math", 3, 5); err != nil || len(none) != 0 {
		t.Errorf("a cell with no results: %+v, %v", none, err)
	}
	if none, err := s.CellProblems(ctx, "r", "math", 2, 0); err != nil || len(none) != 0 {
		t.Errorf("a limit of 0: %+v, %v", none, err)
	}
}
