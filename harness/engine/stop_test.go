package engine_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
)

// TestStopMidRun stops a run with tests in flight: finished results stay,
// in-flight ones leave nothing, cells not reached are skipped, and the
// engine is idle and can start again.
func TestStopMidRun(t *testing.T) {
	t.Parallel()
	const conc = 2
	d := newDefs().domain("d", "", true).sums("d", 1, 10, 0).sums("d", 2, 10, 0).sums("d", 3, 10, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: conc, llm: llmtest.Options{Latency: 50 * time.Millisecond}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})

	// Wait for four stored results with both slots busy again.
	var finished []string
	for len(finished) < 4 {
		select {
		case ev := <-f.events:
			if ev.Kind == engine.EventTestFinished {
				finished = append(finished, ev.Result.TestID)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no results")
		}
	}
	harnesstest.Eventually(t, 5*time.Second, "both slots in flight", func() bool { return f.mock.Stats().InFlight == conc })

	start := time.Now()
	stopped, err := f.eng.Stop(10 * time.Second)
	if err != nil || stopped != id {
		t.Fatalf("stop: %q %v", stopped, err)
	}
	// Well under Stop's 10 s wait: the run wound down rather than being
	// given up on (loose for a loaded machine).
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("stop took %v", d)
	}
	if f.eng.Running() || f.eng.Status().Status != "idle" {
		t.Errorf("engine not idle after stop: %+v", f.eng.Status())
	}
	info, rest := f.wait(t, id)
	for _, ev := range rest {
		if ev.Kind == engine.EventTestFinished {
			finished = append(finished, ev.Result.TestID)
		}
	}
	if info.Status != runs.StatusStopped || info.CompletedAt == nil || info.OverallScore == nil {
		t.Errorf("info = %+v", info)
	}

	// Finished results are stored, and only those; none is an error.
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range results {
		ids = append(ids, r.TestID)
		if r.Status != runs.TestPassed {
			t.Errorf("%s stored as %s: %v", r.TestID, r.Status, r.Details)
		}
	}
	slices.Sort(ids)
	slices.Sort(finished)
	if !slices.Equal(ids, finished) || len(ids) >= 30 {
		t.Errorf("stored %v, finished %v", ids, finished)
	}
	if sent := f.mock.Stats().ChatCompletions; sent <= int64(len(results)) {
		t.Errorf("%d requests for %d results: nothing was in flight", sent, len(results))
	}

	// Cells: those whose tests all finished before the stop are passed,
	// the one reached is partial with its score, the others are skipped.
	// (Usually the first is the one reached; on a loaded machine the run
	// may be further on when the stop comes.)
	m, err := f.runs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	perLevel := map[int]int{}
	for _, r := range results {
		perLevel[r.Level]++
	}
	for l := 1; l <= 3; l++ {
		c, n := m["d"][strconv.Itoa(l)], perLevel[l]
		var ok bool
		switch {
		case n == 10:
			ok = c.Status == runs.CellPassed && c.Done == 10
		case n > 0:
			ok = c.Status == runs.CellPartial && c.Done == n && c.Score != nil && *c.Score == 1
		default:
			ok = c.Status == runs.CellSkipped && c.Done == 0 && c.Score == nil
		}
		if !ok {
			t.Errorf("cell %d with %d results stored = %+v", l, n, c)
		}
	}
	stored, _ := f.runs.Run(ctx, id)
	if stored.Status != runs.StatusStopped || stored.Complete || stored.DoneTests != len(results) || stored.TotalTests != 30 {
		t.Errorf("stored run %+v", stored)
	}
	runstest.CheckCounters(t, f.db, id)

	// EVAL_COMPLETE ends the logs.
	lines, running := f.eng.PollLogs()
	if running || len(lines) == 0 || lines[len(lines)-1] != engine.EvalComplete {
		t.Errorf("logs after stop: running=%v %q", running, lines)
	}
	if last := lines[len(lines)-2]; !strings.Contains(last, "stopped") {
		t.Errorf("last line before EVAL_COMPLETE: %q", last)
	}

	// The engine runs again, to completion.
	f.mock.ResetStats()
	again := f.start(t, engine.StartRequest{})
	if info, _ := f.wait(t, again); info.Status != runs.StatusCompleted || info.TotalTests != 30 {
		t.Errorf("run after stop: %+v", info)
	}
	if _, err := f.eng.Stop(time.Second); !errors.Is(err, engine.ErrNotRunning) {
		t.Errorf("stop when idle: %v", err)
	}
}

// TestReset gives up on a run whose model hangs: Reset returns at once,
// the engine is idle, the run is recorded aborted, and a new run starts.
func TestReset(t *testing.T) {
	t.Parallel()
	const conc = 2
	d := newDefs().domain("d", "", true).sums("d", 1, 4, 0)
	// The first requests hang until the client gives up (30 s); the later
	// ones are answered.
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: conc, timeout: 30 * time.Second,
		llm: llmtest.Options{Timeouts: llmtest.Schedule{First: conc}}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	harnesstest.Eventually(t, 5*time.Second, "hung requests", func() bool { return f.mock.Stats().InFlight == conc })

	start := time.Now()
	if got := f.eng.Reset(); got != id {
		t.Errorf("reset returned %q, want %q", got, id)
	}
	// The hung requests last 30 s: a Reset that waited for them would
	// take that long.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("reset took %v", d)
	}
	if st := f.eng.Status(); st.Status != "idle" || st.RunID != nil || f.eng.Running() {
		t.Errorf("status after reset: %+v", st)
	}
	lines, running := f.eng.PollLogs()
	if running || len(lines) == 0 || lines[len(lines)-1] != engine.EvalComplete {
		t.Errorf("logs after reset: running=%v %q", running, lines)
	}
	harnesstest.Eventually(t, 5*time.Second, "the run recorded aborted", func() bool {
		info, err := f.runs.Run(ctx, id)
		return err == nil && info.Status == runs.StatusAborted
	})

	// A new run starts at once and completes.
	again, err := f.eng.Start(ctx, engine.StartRequest{})
	if err != nil {
		t.Fatalf("start after reset: %v", err)
	}
	if info, _ := f.wait(t, again); info.Status != runs.StatusCompleted {
		t.Errorf("run after reset: %+v", info)
	}
	if info, _ := f.runs.Run(ctx, id); info.Status != runs.StatusAborted || info.CompletedAt == nil {
		t.Errorf("reset run: %+v", info)
	}
	if n := f.count(t, "run_results", id); n != 0 {
		t.Errorf("the reset run stored %d results", n)
	}
	if f.eng.Reset() != "" {
		t.Error("reset when idle returned a run")
	}
}

// stuckModel is a ChatModel that ignores cancellation: its first calls
// block until release is closed, as a wedged client or plugin would.
type stuckModel struct {
	inner   harness.ChatModel
	release chan struct{}
	mu      sync.Mutex
	stuck   int
}

func (m *stuckModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	m.mu.Lock()
	hang := m.stuck > 0
	if hang {
		m.stuck--
	}
	m.mu.Unlock()
	if hang {
		<-m.release
		return nil, errors.New("released")
	}
	return m.inner.Chat(ctx, req)
}

// newStuckFixture is a fixture over a domain "d" of 4 tests at level 1,
// with concurrency conc, whose model's first conc calls block until
// stuck.release is closed.
func newStuckFixture(t *testing.T, conc int) (*fixture, *stuckModel) {
	t.Helper()
	d := newDefs().domain("d", "", true).sums("d", 1, 4, 0)
	stuck := &stuckModel{release: make(chan struct{}), stuck: conc}
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: conc,
		model: func(m harness.ChatModel) harness.ChatModel { stuck.inner = m; return stuck }})
	return f, stuck
}

// waitStuck waits until every call that is to block has come and blocks.
func (m *stuckModel) waitStuck(t *testing.T) {
	t.Helper()
	harnesstest.Eventually(t, 5*time.Second, "stuck calls", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.stuck == 0
	})
}

// TestResetStuckModel resets a run whose model ignores cancellation: the
// engine is idle at once, the run is recorded aborted at once, and a new
// run completes while the old calls are still stuck.
func TestResetStuckModel(t *testing.T) {
	t.Parallel()
	f, stuck := newStuckFixture(t, 2)
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	stuck.waitStuck(t)
	if got := f.eng.Reset(); got != id {
		t.Errorf("reset returned %q", got)
	}
	// The reset announces the run's end at once, aborted.
	if info, _ := f.wait(t, id); info.Status != runs.StatusAborted {
		t.Errorf("run finished event after reset: %+v", info)
	}
	if f.eng.Running() {
		t.Error("running after reset")
	}
	if info, err := f.runs.Run(ctx, id); err != nil || info.Status != runs.StatusAborted || info.CompletedAt == nil {
		t.Errorf("stuck run after reset: %+v %v", info, err)
	}
	m, err := f.runs.Matrix(ctx, id)
	if err != nil || m["d"]["1"].Status != runs.CellSkipped {
		t.Errorf("stuck run's matrix: %+v %v", m, err)
	}
	again := f.start(t, engine.StartRequest{})
	if info, _ := f.wait(t, again); info.Status != runs.StatusCompleted {
		t.Errorf("run after reset: %+v", info)
	}
	// The stuck calls come back: the old run ends, still aborted, stores
	// no error for them and sends no more events.
	close(stuck.release)
	engine.WaitRuns(f.eng)
	for len(f.events) > 0 {
		if ev := <-f.events; ev.RunID == id {
			t.Errorf("event of the reset run after its end: %+v", ev)
		}
	}
	if info, _ := f.runs.Run(ctx, id); info.Status != runs.StatusAborted {
		t.Errorf("old run stored as %+v", info)
	}
	if n := f.count(t, "run_results", id); n != 0 {
		t.Errorf("the reset run stored %d results", n)
	}
	if st := f.eng.Status(); st.LastRunID == nil || *st.LastRunID != again {
		t.Errorf("last run %v, want %s", ptr(st.LastRunID), again)
	}
}
