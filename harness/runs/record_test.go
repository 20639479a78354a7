package runs_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestRecordResults: results recorded in one batch are each stored once
// (a result the run has, or one repeated in the batch, is a no-op), the
// cells and the run move by the results inserted, and the cells they
// complete settle; a run that has ended takes none of them.
func TestRecordResults(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.CreateRun(ctx, newInfo("r"), cells); err != nil {
		t.Fatal(err)
	}
	t1 := result("r", "math", 1, "t1", 1, runs.TestPassed)
	if ok, err := s.RecordResult(ctx, t1, nil); !ok || err != nil {
		t.Fatalf("first result: %v, %v", ok, err)
	}
	t2 := result("r", "math", 1, "t2", 0.25, runs.TestFailed)
	w1 := result("r", "words", 1, "w1", 1, runs.TestPassed)
	w1.Details["cache_hits"] = 1
	settled := map[string]int{}
	inserted, errs := s.RecordResults(ctx, []runs.Result{t1, t2, w1, t2}, func(domain string, level int, samples []runs.Sample) runs.Cell {
		settled[domain] = len(samples)
		score := 0.5
		c := runs.Cell{Status: runs.CellPassed, Score: &score, Tests: len(samples), Done: len(samples)}
		for _, x := range samples {
			if x.Status == runs.TestPassed {
				c.Passed++
			} else {
				c.Failed++
			}
		}
		return c
	})
	if !slices.Equal(inserted, []bool{false, true, true, false}) || slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		t.Fatalf("inserted %v, errors %v", inserted, errs)
	}
	if settled["math"] != 2 || settled["words"] != 1 || len(settled) != 2 {
		t.Errorf("cells settled: %v; want math with 2 samples, words with 1", settled)
	}
	info, err := s.Run(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if info.DoneTests != 3 || info.Passed != 2 || info.Failed != 1 || info.Errors != 0 || info.CacheHits != 1 ||
		info.TotalTokens != 45 {
		t.Errorf("run counters %+v", info)
	}
	m, err := s.Matrix(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if c := m["math"]["1"]; c.Done != 2 || c.Passed != 1 || c.Failed != 1 || c.Status != runs.CellPassed {
		t.Errorf("cell math/1 = %+v", c)
	}
	all, _ := s.Results(ctx, "r")
	if len(all) != 3 {
		t.Errorf("%d results stored, want 3", len(all))
	}

	// The same batch again: nothing new.
	inserted, errs = s.RecordResults(ctx, []runs.Result{t2, w1}, nil)
	if slices.Contains(inserted, true) || errs[0] != nil || errs[1] != nil {
		t.Errorf("again: inserted %v, errors %v", inserted, errs)
	}

	// A batch of results of two runs is refused as one, then each is
	// recorded alone: both are stored.
	if err := s.CreateRun(ctx, newInfo("r2"), cells); err != nil {
		t.Fatal(err)
	}
	other := result("r2", "math", 1, "t1", 1, runs.TestPassed)
	w2 := result("r", "words", 2, "w2", 1, runs.TestPassed)
	inserted, errs = s.RecordResults(ctx, []runs.Result{w2, other}, nil)
	if !slices.Equal(inserted, []bool{true, true}) || errs[0] != nil || errs[1] != nil {
		t.Errorf("two runs: inserted %v, errors %v", inserted, errs)
	}

	// An ended run takes nothing.
	if ok, err := s.FenceRun(ctx, "r", runs.StatusStopped, ""); !ok || err != nil {
		t.Fatalf("fence: %v, %v", ok, err)
	}
	late := result("r", "math", 1, "t3", 1, runs.TestPassed)
	inserted, errs = s.RecordResults(ctx, []runs.Result{late}, nil)
	if inserted[0] || !errors.Is(errs[0], runs.ErrRunEnded) {
		t.Errorf("after the end: inserted %v, error %v", inserted, errs[0])
	}
	if all, _ := s.Results(ctx, "r"); len(all) != 4 {
		t.Errorf("%d results stored after the end, want 4", len(all))
	}
}
