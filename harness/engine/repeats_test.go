package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// TestCellWithoutScoreHasNoInterval: a cell whose every sample ended in
// error has no score, so no standard error nor interval either.
func TestCellWithoutScoreHasNoInterval(t *testing.T) {
	t.Parallel()
	var on atomic.Bool
	on.Store(true)
	d := newDefs().domain("d", "", true).test(harness.Test{ID: "bad", DomainID: "d", Level: 1,
		Name: "Errs", Prompt: "[bad] What is 1 + 1? FAIL", Expected: harness.Expected{Answer: "2", Type: "numeric"}})
	f := newFixture(t, fixtureOpts{snap: d.snap(), maxRetries: -1, llm: llmtest.Options{Respond: failPrompts("FAIL", &on)}})
	id := f.start(t, engine.StartRequest{Repeats: 2})
	if info, _ := f.wait(t, id); info.Errors != 2 {
		t.Fatalf("info = %+v", info)
	}
	m, _ := f.runs.Matrix(context.Background(), id)
	if c := m["d"]["1"]; c.Status != runs.CellError || c.Score != nil || c.StdErr != nil || c.CI95 != nil {
		t.Errorf("error cell = %+v", c)
	}
}

type sample struct {
	test   string
	repeat int
}

// samplesOf returns how often each (test, repeat) has a stored result.
func samplesOf(t *testing.T, f *fixture, id string) map[sample]int {
	t.Helper()
	rs, err := f.runs.Results(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[sample]int{}
	for _, r := range rs {
		out[sample{r.TestID, r.Repeat}]++
	}
	return out
}

// TestRepeats: a run with repeats 3 asks each test three times; every
// (test, repeat) has exactly one result, and the run's and cells' counts
// are samples, tests × repeats.
func TestRepeats(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 4, 1).sums("d", 2, 3, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap()})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{Repeats: 3})
	info, evs := f.wait(t, id)
	if info.Status != runs.StatusCompleted || !info.Complete || info.TotalTests != 21 || info.DoneTests != 21 ||
		info.Passed != 18 || info.Failed != 3 || info.Errors != 0 || info.Config.Repeats != 3 || !near(info.OverallScore, 18.0/21) {
		t.Fatalf("info = %+v", info)
	}
	checkStored(t, f, id)
	got := samplesOf(t, f, id)
	if len(got) != 21 {
		t.Errorf("%d distinct samples, want 21: %v", len(got), got)
	}
	for _, test := range d.s.Tests {
		for k := range 3 {
			if got[sample{test.ID, k}] != 1 {
				t.Errorf("%s repeat %d: %d results", test.ID, k, got[sample{test.ID, k}])
			}
		}
	}
	m, err := f.runs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c := m["d"]["1"]; c.Tests != 12 || c.Done != 12 || c.Passed != 9 || c.Failed != 3 || c.Status != runs.CellPassed || !near(c.Score, 0.75) {
		t.Errorf("cell 1 = %+v", c)
	}
	if c := m["d"]["2"]; c.Tests != 9 || c.Done != 9 || c.Passed != 9 || c.Status != runs.CellPassed {
		t.Errorf("cell 2 = %+v", c)
	}
	// The interval is over tests, repeats averaged first: cell 1's tests
	// score 1, 1, 1 and 0, so it is Wilson's for 3 of 4, not 9 of 12.
	if c := m["d"]["1"]; c.CI95 == nil || *c.CI95 != stats.Wilson(3, 4) || !near(c.StdErr, 0.25) {
		t.Errorf("cell 1 uncertainty = %v ± %v", c.CI95, c.StdErr)
	}
	if c := m["d"]["2"]; c.CI95 == nil || *c.CI95 != stats.Wilson(3, 3) || !near(c.StdErr, 0) {
		t.Errorf("cell 2 uncertainty = %v ± %v", c.CI95, c.StdErr)
	}
	stored, _ := f.runs.Run(ctx, id)
	if stored.Config == nil || stored.Config.Repeats != 3 || stored.TotalTests != 21 {
		t.Errorf("stored run = %+v", stored)
	}
	finished := 0
	for _, ev := range evs {
		switch ev.Kind {
		case engine.EventTestFinished:
			finished++
		case engine.EventCellFinished:
			if ev.Cell.CI95 == nil || ev.Cell.StdErr == nil {
				t.Errorf("finished cell %s/%d without its interval: %+v", ev.Domain, ev.Level, ev.Cell)
			}
		}
	}
	if finished != 21 {
		t.Errorf("%d test events, want 21", finished)
	}

	// Repeats 0 means 1.
	id = f.start(t, engine.StartRequest{Domains: []string{"d"}})
	if info, _ := f.wait(t, id); info.TotalTests != 7 || info.Config.Repeats != 1 {
		t.Errorf("default repeats: %+v", info)
	}
	for s, n := range samplesOf(t, f, id) {
		if s.repeat != 0 || n != 1 {
			t.Errorf("without repeats: %v × %d", s, n)
		}
	}
}

func TestRepeatsInvalid(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 1, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap()})
	for _, n := range []int{-1, engine.MaxRepeats + 1} {
		_, err := f.eng.Start(context.Background(), engine.StartRequest{Repeats: n})
		var ve *harness.ValidationError
		if !errors.Is(err, harness.ErrInvalid) || !errors.As(err, &ve) || ve.Fields[0].Field != "repeats" {
			t.Errorf("repeats %d: %v; want a field error on repeats", n, err)
		}
	}
	if f.eng.Running() {
		t.Error("a refused start left a run active")
	}
	id := f.start(t, engine.StartRequest{Repeats: engine.MaxRepeats})
	if info, _ := f.wait(t, id); info.DoneTests != engine.MaxRepeats || !info.Complete {
		t.Errorf("repeats %d: %+v", engine.MaxRepeats, info)
	}
}

// TestResumeRepeats: resuming a stopped run with repeats asks again
// exactly the samples (test, repeat) without a result or in error, and
// the run ends with one result per sample.
func TestResumeRepeats(t *testing.T) {
	t.Parallel()
	var on atomic.Bool
	on.Store(true)
	// d-err comes first: its three samples end in error before the stop.
	d := newDefs().domain("d", "", true).test(harness.Test{ID: "d-err", DomainID: "d", Level: 1,
		Name: "Errs", Prompt: "[d-err] What is 1 + 1? FAIL", Expected: harness.Expected{Answer: "2", Type: "numeric"}}).
		sums("d", 1, 6, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 2, maxRetries: -1,
		llm: llmtest.Options{Latency: 20 * time.Millisecond, Respond: failPrompts("FAIL", &on)}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{Repeats: 3})
	for n := 0; n < 5; {
		if ev := <-f.events; ev.Kind == engine.EventTestFinished {
			n++
		}
	}
	f.eng.Stop(10 * time.Second)
	first, _ := f.wait(t, id)
	if first.Status != runs.StatusStopped || first.DoneTests >= 21 || first.TotalTests != 21 {
		t.Fatalf("first = %+v", first)
	}
	if first.Errors != 3 {
		t.Fatalf("first = %+v; want d-err's 3 samples in error", first)
	}
	checkStored(t, f, id)
	if m, _ := f.runs.Matrix(ctx, id); m["d"]["1"].Status != runs.CellPartial || m["d"]["1"].CI95 == nil {
		t.Errorf("partial cell = %+v", m["d"]["1"])
	}
	rs, _ := f.runs.Results(ctx, id)
	kept := map[sample]bool{}
	for _, r := range rs {
		if r.Status != runs.TestError {
			kept[sample{r.TestID, r.Repeat}] = true
		}
	}

	on.Store(false)
	if err := f.eng.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	second, evs := f.wait(t, id)
	if second.Status != runs.StatusCompleted || !second.Complete || second.DoneTests != 21 || second.TotalTests != 21 {
		t.Fatalf("second = %+v", second)
	}
	checkStored(t, f, id)
	rerun := map[sample]int{}
	for _, ev := range evs {
		if ev.Kind == engine.EventTestFinished {
			rerun[sample{ev.Result.TestID, ev.Result.Repeat}]++
		}
	}
	for _, test := range d.s.Tests {
		for k := range 3 {
			s := sample{test.ID, k}
			if want := map[bool]int{true: 0, false: 1}[kept[s]]; rerun[s] != want {
				t.Errorf("%v asked %d times by the resume, want %d", s, rerun[s], want)
			}
		}
	}
	for s, n := range samplesOf(t, f, id) {
		if n != 1 || s.repeat < 0 || s.repeat > 2 {
			t.Errorf("after the resume: %v × %d", s, n)
		}
	}
	if err := f.eng.Resume(ctx, id); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("resume with nothing left: %v", err)
	}
}
