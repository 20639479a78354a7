package engine_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// checkRunEvents checks the events one receiver got of one run, none
// dropped: EventRunStarted first, EventRunFinished last, every test of
// the run finished exactly once (in any order), Done counting them one by
// one up to the run's total, and every cell finished once.
func checkRunEvents(t *testing.T, evs []engine.Event, runID string, tests []string, cells int) runs.Info {
	t.Helper()
	if len(evs) < 2 || evs[0].Kind != engine.EventRunStarted || evs[len(evs)-1].Kind != engine.EventRunFinished {
		t.Fatalf("%d events, want run_started first and run_finished last", len(evs))
	}
	var finished []string
	cellsDone, lastDone := 0, 0
	for i, ev := range evs {
		if ev.RunID != runID {
			t.Errorf("event %d is of run %q, want %q", i, ev.RunID, runID)
		}
		if ev.Total != len(tests) || ev.Done < lastDone || ev.Dropped != 0 {
			t.Errorf("event %d (%s): done %d (before %d), total %d, dropped %d", i, ev.Kind, ev.Done, lastDone, ev.Total, ev.Dropped)
		}
		lastDone = ev.Done
		switch ev.Kind {
		case engine.EventTestFinished:
			finished = append(finished, ev.Result.TestID)
			if ev.Done != len(finished) {
				t.Errorf("test %s finished as number %d, event says done %d", ev.Result.TestID, len(finished), ev.Done)
			}
		case engine.EventCellFinished:
			cellsDone++
			if ev.Cell.Done != ev.Cell.Tests {
				t.Errorf("cell %s/%d finished with %d of %d", ev.Domain, ev.Level, ev.Cell.Done, ev.Cell.Tests)
			}
		}
	}
	slices.Sort(finished)
	want := slices.Sorted(slices.Values(tests))
	if !slices.Equal(finished, want) {
		t.Errorf("tests finished %v, want each of %v once", finished, want)
	}
	if cellsDone != cells {
		t.Errorf("%d cells finished, want %d", cellsDone, cells)
	}
	last := evs[len(evs)-1]
	if last.Done != len(tests) || last.Info == nil || last.Info.DoneTests != len(tests) {
		t.Errorf("run_finished: done %d, info %+v", last.Done, last.Info)
	}
	return *last.Info
}

// testIDs lists the ids of a snapshot's tests.
func testIDs(s *harness.Snapshot) []string {
	var ids []string
	for _, t := range s.Tests {
		ids = append(ids, t.ID)
	}
	return ids
}

// TestRunBlocks: Run waits for the run's end, returns its final info, and
// returns only after the request's OnEvent has had every event of it.
func TestRunBlocks(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("a", "", true).sums("a", 1, 6, 1).sums("a", 2, 6, 0).domain("b", "", true).sums("b", 1, 5, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 3, llm: llmtest.Options{Latency: 5 * time.Millisecond}})
	var evs []engine.Event // written by OnEvent only: Run's return must follow every write
	info, err := f.eng.Run(context.Background(), engine.StartRequest{ModelName: "blocking",
		OnEvent: func(ev engine.Event) { evs = append(evs, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	// One test fails: complete says every test finished with no error,
	// not that all passed.
	if info.Status != runs.StatusCompleted || info.DoneTests != 17 || info.Passed != 16 || info.Failed != 1 || !info.Complete {
		t.Errorf("info = %+v", info)
	}
	if f.eng.Running() {
		t.Error("engine running after Run returned")
	}
	got := checkRunEvents(t, evs, info.RunID, testIDs(d.snap()), 3)
	if got.Status != info.Status || got.DoneTests != info.DoneTests || *got.OverallScore != *info.OverallScore {
		t.Errorf("run_finished says %+v, Run returned %+v", got, info)
	}
	stored, err := f.runs.Run(context.Background(), info.RunID)
	if err != nil || stored.Status != runs.StatusCompleted || stored.DoneTests != 17 {
		t.Errorf("stored %+v %v", stored, err)
	}

	// Run's errors are Start's: nothing starts.
	_, err = f.eng.Run(context.Background(), engine.StartRequest{Domains: []string{"nope"}})
	if !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("run of an unknown domain: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.eng.Run(ctx, engine.StartRequest{}); !errors.Is(err, context.Canceled) {
		t.Errorf("run with a cancelled context: %v", err)
	}
	if _, err := f.eng.Start(ctx, engine.StartRequest{}); !errors.Is(err, context.Canceled) || f.eng.Running() {
		t.Errorf("start with a cancelled context: %v, running %v", err, f.eng.Running())
	}
}

// TestRunCancel cancels Run's context with requests hanging at the
// endpoint: the run stops at once with what finished kept, the hanging
// tests leave nothing, nothing is counted twice, and Run returns the
// final info with ctx's error.
func TestRunCancel(t *testing.T) {
	t.Parallel()
	const conc = 2
	d := newDefs().domain("d", "", true).sums("d", 1, 10, 0).sums("d", 2, 10, 0)
	// Every second request hangs until its client gives up: the slots fill
	// with hanging requests after a few answers.
	// The client gives up after a minute: a Run that waited for the hung
	// requests would take that long, far past the bound below, which is
	// loose enough for a loaded machine.
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: conc, timeout: time.Minute,
		llm: llmtest.Options{Timeouts: llmtest.Schedule{Every: 2}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		info runs.Info
		err  error
	}
	done := make(chan outcome, 1)
	var mu sync.Mutex
	var evs []engine.Event
	go func() {
		info, err := f.eng.Run(ctx, engine.StartRequest{OnEvent: func(ev engine.Event) {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		}})
		done <- outcome{info, err}
	}()
	// Two answered, and two requests in flight that no answer is coming
	// for: the even ones.
	harnesstest.Eventually(t, 10*time.Second, "both slots hanging", func() bool {
		st := f.mock.Stats()
		return st.Statuses[200] >= 2 && st.InFlight == conc && st.ChatCompletions-st.Statuses[200] == conc
	})
	start := time.Now()
	cancel()
	var out outcome
	select {
	case out = <-done:
	case <-time.After(40 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Run took %v to return after the cancel", d)
	}
	// The endpoint sees the hung requests end when their connections
	// close, a moment after Run returns.
	harnesstest.Eventually(t, 10*time.Second, "the hung requests given up on", func() bool {
		st := f.mock.Stats()
		return st.Timeouts > 0 && st.InFlight == 0
	})
	if !errors.Is(out.err, context.Canceled) {
		t.Errorf("Run error %v, want context.Canceled", out.err)
	}
	info := out.info
	if info.Status != runs.StatusStopped || info.Complete || info.DoneTests == 0 || info.DoneTests >= 20 || info.Errors != 0 {
		t.Errorf("info = %+v", info)
	}
	if f.eng.Running() {
		t.Error("engine running after Run returned")
	}

	// Stored: the run, one result per finished test, none an error, and
	// cells whose done add up to the same count.
	bg := context.Background()
	stored, err := f.runs.Run(bg, info.RunID)
	if err != nil || stored.Status != runs.StatusStopped || stored.DoneTests != info.DoneTests {
		t.Errorf("stored run %+v %v", stored, err)
	}
	results, err := f.runs.Results(bg, info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range results {
		ids = append(ids, r.TestID)
		if r.Status != runs.TestPassed {
			t.Errorf("%s stored as %s %v", r.TestID, r.Status, r.Details)
		}
	}
	if n := f.count(t, "run_results", info.RunID); n != info.DoneTests || len(results) != n {
		t.Errorf("%d result rows, %d results, run says %d done", n, len(results), info.DoneTests)
	}
	m, err := f.runs.Matrix(bg, info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, lv := range m["d"] {
		sum += lv.Done
		if lv.Status == runs.CellRunning || lv.Status == runs.CellPending {
			t.Errorf("cell left %s", lv.Status)
		}
	}
	if sum != info.DoneTests {
		t.Errorf("cells count %d done, run %d", sum, info.DoneTests)
	}

	// The events say the same: each stored test finished once.
	mu.Lock()
	defer mu.Unlock()
	var finished []string
	for _, ev := range evs {
		if ev.Kind == engine.EventTestFinished {
			finished = append(finished, ev.Result.TestID)
		}
	}
	slices.Sort(ids)
	slices.Sort(finished)
	if !slices.Equal(ids, finished) {
		t.Errorf("stored %v, events %v", ids, finished)
	}
	if last := evs[len(evs)-1]; last.Kind != engine.EventRunFinished || last.Info.Status != runs.StatusStopped {
		t.Errorf("last event %+v", last)
	}
}

// TestStartContext: Start's context bounds the run (cancelling it stops
// the run, as Stop does), unless the caller detaches it with
// context.WithoutCancel; Resume follows the same rule.
func TestStartContext(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 30, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 2, llm: llmtest.Options{Latency: 20 * time.Millisecond}})

	// Cancelled: the run stops with what finished.
	ctx, cancel := context.WithCancel(context.Background())
	id, err := f.eng.Start(ctx, engine.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	harnesstest.Eventually(t, 10*time.Second, "a result", func() bool { return f.eng.Status().Progress > 0 })
	cancel()
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusStopped || info.DoneTests == 0 || info.DoneTests == 30 || info.Error != "" {
		t.Errorf("cancelled run: %+v", info)
	}

	// Resume with a context that ends: stopped again, with more done.
	rctx, rcancel := context.WithCancel(context.Background())
	if err := f.eng.Resume(rctx, id); err != nil {
		t.Fatal(err)
	}
	before := info.DoneTests
	harnesstest.Eventually(t, 10*time.Second, "a resumed result", func() bool { return f.eng.Status().Progress > before })
	rcancel()
	resumed, _ := f.wait(t, id)
	if resumed.Status != runs.StatusStopped || resumed.DoneTests <= before || resumed.DoneTests == 30 {
		t.Errorf("cancelled resume: %+v (before: %d done)", resumed, before)
	}

	// Detached: the caller's context ends, the run goes on to the end.
	hctx, hcancel := context.WithCancel(context.Background())
	if err := f.eng.Resume(context.WithoutCancel(hctx), id); err != nil {
		t.Fatal(err)
	}
	hcancel()
	if final, _ := f.wait(t, id); final.Status != runs.StatusCompleted || final.DoneTests != 30 || !final.Complete {
		t.Errorf("detached resume: %+v", final)
	}
	if n := f.count(t, "run_results", id); n != 30 {
		t.Errorf("%d results stored, want 30", n)
	}
}

// TestRunReset: a Reset from elsewhere ends Run at once with the aborted
// run's info and no error, even while the model ignores cancellation.
func TestRunReset(t *testing.T) {
	t.Parallel()
	f, stuck := newStuckFixture(t, 2)
	done := make(chan runs.Info, 1)
	go func() {
		info, err := f.eng.Run(context.Background(), engine.StartRequest{})
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- info
	}()
	stuck.waitStuck(t)
	f.eng.Reset()
	select {
	case info := <-done:
		if info.Status != runs.StatusAborted || info.DoneTests != 0 {
			t.Errorf("info = %+v", info)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after Reset")
	}
	close(stuck.release)
	engine.WaitRuns(f.eng)
}

// TestSubscribe: a subscription sees every event of a run, the same as
// Options.OnEvent; one for another run sees none; cancelling its context
// closes the channel.
func TestSubscribe(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("a", "", true).sums("a", 1, 8, 2).sums("a", 2, 7, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 4})
	ctx, cancel := context.WithCancel(context.Background())
	all := f.eng.Subscribe(ctx, engine.SubscribeOptions{})
	octx, ocancel := context.WithCancel(context.Background())
	other := f.eng.Subscribe(octx, engine.SubscribeOptions{RunID: "another-run"})

	id := f.start(t, engine.StartRequest{})
	var evs []engine.Event
	for ev := range all {
		evs = append(evs, ev)
		if ev.Kind == engine.EventRunFinished {
			break
		}
	}
	info := checkRunEvents(t, evs, id, testIDs(d.snap()), 2)
	if info.Status != runs.StatusCompleted || info.Failed != 2 {
		t.Errorf("info %+v", info)
	}
	_, viaOption := f.wait(t, id)
	if len(viaOption) != len(evs) {
		t.Errorf("Options.OnEvent had %d events, the subscription %d", len(viaOption), len(evs))
	}

	cancel()
	ocancel()
	waitClosed(t, all)
	if n := waitClosed(t, other); n != 0 {
		t.Errorf("a subscription to another run got %d events", n)
	}
}

// waitClosed drains a channel until it is closed and returns how many
// events were left in it.
func waitClosed(t *testing.T, ch <-chan engine.Event) int {
	t.Helper()
	n := 0
	timeout := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return n
			}
			n++
		case <-timeout:
			t.Fatal("subscription not closed after its context was cancelled")
		}
	}
}

// TestSlowSubscriber: receivers that do not keep up never hold up a run.
// A subscription read only after the run keeps the newest events, the
// run's end last, and counts what it dropped; a request's OnEvent that
// blocks lets the run finish, then gets the run's end.
func TestSlowSubscriber(t *testing.T) {
	const n, buffer = 40, 4
	d := newDefs().domain("d", "", true).sums("d", 1, n, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := f.eng.Subscribe(ctx, engine.SubscribeOptions{Buffer: buffer})

	release := make(chan struct{})
	var handled []engine.Event // OnEvent's own
	delivered := make(chan struct{})
	id := f.start(t, engine.StartRequest{OnEvent: func(ev engine.Event) {
		<-release
		handled = append(handled, ev)
		if ev.Kind == engine.EventRunFinished {
			close(delivered)
		}
	}})
	// The run ends while neither receiver has taken anything.
	info, all := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.DoneTests != n {
		t.Fatalf("run with slow receivers: %+v", info)
	}

	// The subscription holds the newest events, the run's end last; what
	// it got plus what it was told it lost is every event of the run.
	// Options.OnEvent (which f.wait follows) hears of the run's end a
	// moment before the subscription does: read up to it.
	var got []engine.Event
	for len(got) == 0 || got[len(got)-1].Kind != engine.EventRunFinished {
		select {
		case ev := <-slow:
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("the subscription never got the run's end; got %+v", got)
		}
	}
	dropped := 0
	for _, ev := range got {
		dropped += ev.Dropped
	}
	if last := got[len(got)-1]; last.Kind != engine.EventRunFinished || last.Done != n || last.Info.Status != runs.StatusCompleted {
		t.Errorf("last event kept: %+v", last)
	}
	if len(got)+dropped != len(all) || dropped == 0 {
		t.Errorf("kept %d, dropped %d, the run sent %d", len(got), dropped, len(all))
	}

	// The blocked OnEvent gets going: it ends with the run's end.
	close(release)
	select {
	case <-delivered:
	case <-time.After(10 * time.Second):
		t.Fatal("OnEvent never got the run's end")
	}
	if first := handled[0]; first.Kind != engine.EventRunStarted {
		t.Errorf("OnEvent's first event: %+v", first)
	}
	lost := 0
	for _, ev := range handled {
		lost += ev.Dropped
	}
	if len(handled)+lost != len(all) {
		t.Errorf("OnEvent handled %d, lost %d, the run sent %d", len(handled), lost, len(all))
	}
}
