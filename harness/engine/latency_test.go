package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestLatencyFigures: a streamed run on an endpoint answering after 30 ms
// gives each result its time to first token (at least 30 ms) and output
// speed, and each cell the nearest-rank percentiles of its answered
// results' durations and the median of their times to first token, in
// the stored matrix and the events of settled cells alike, and the run's
// in its record and its final info; a run not
// streamed has no time to first token anywhere. On PostgreSQL the runs
// are queued jobs, so the same figures come from the workers' path.
func TestLatencyFigures(t *testing.T) {
	t.Parallel()
	const latency = 30 * time.Millisecond
	snap := newDefs().domain("math", "Answer with the number alone.", true).
		sums("math", 1, 5, 1).sums("math", 2, 4, 0).snap()
	f := newFixture(t, fixtureOpts{anyDB: true, snap: snap, llm: llmtest.Options{Latency: latency}})
	ctx := context.Background()
	for _, stream := range []bool{true, false} {
		info, err := f.eng.Run(ctx, engine.StartRequest{Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != runs.StatusCompleted || info.Errors != 0 {
			t.Fatalf("stream %v: run %+v", stream, info)
		}
		results, err := f.runs.Results(ctx, info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		byCell := map[int][]runs.Result{}
		for _, r := range results {
			byCell[r.Level] = append(byCell[r.Level], r)
			if r.DurationMS < latency.Milliseconds() || r.OutputTokensPerS == nil || *r.OutputTokensPerS <= 0 {
				t.Errorf("stream %v: %s took %d ms at %v tokens/s", stream, r.TestID, r.DurationMS, r.OutputTokensPerS)
			}
			switch {
			case stream && (r.TTFTMS == nil || *r.TTFTMS < latency.Milliseconds() || *r.TTFTMS != r.Calls[0].TTFTMS):
				t.Errorf("%s: ttft %v; want at least %v, its first call's (%+v)", r.TestID, r.TTFTMS, latency, r.Calls[0])
			case !stream && r.TTFTMS != nil:
				t.Errorf("%s not streamed: ttft %d", r.TestID, *r.TTFTMS)
			}
		}
		m, err := f.runs.Matrix(ctx, info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		for level, rs := range byCell {
			var durations, ttfts []int64
			for _, r := range rs {
				durations = append(durations, r.DurationMS)
				if r.TTFTMS != nil {
					ttfts = append(ttfts, *r.TTFTMS)
				}
			}
			slices.Sort(durations)
			slices.Sort(ttfts)
			c := m["math"][itoa(level)]
			p50, p95 := durations[(len(durations)+1)/2-1], durations[len(durations)-1] // n ≤ 20: p95 is the largest
			if c.LatencyP50MS == nil || *c.LatencyP50MS != p50 || c.LatencyP95MS == nil || *c.LatencyP95MS != p95 || p50 < latency.Milliseconds() {
				t.Errorf("stream %v: cell %d latency %v/%v; want %d/%d of %v", stream, level, c.LatencyP50MS, c.LatencyP95MS, p50, p95, durations)
			}
			switch {
			case stream && (c.TTFTP50MS == nil || *c.TTFTP50MS != ttfts[(len(ttfts)+1)/2-1]):
				t.Errorf("cell %d: ttft p50 %v; want the median of %v", level, c.TTFTP50MS, ttfts)
			case !stream && c.TTFTP50MS != nil:
				t.Errorf("cell %d not streamed: ttft p50 %d", level, *c.TTFTP50MS)
			}
		}
		// The run's figures are over all its results.
		var all, allTTFT []int64
		for _, r := range results {
			all = append(all, r.DurationMS)
			if r.TTFTMS != nil {
				allTTFT = append(allTTFT, *r.TTFTMS)
			}
		}
		want := runs.LatencyOf(all, allTTFT)
		stored, err := f.runs.Run(ctx, info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if !eqPtr(stored.LatencyP50MS, want.P50MS) || !eqPtr(stored.LatencyP95MS, want.P95MS) || !eqPtr(stored.TTFTP50MS, want.TTFTP50MS) ||
			stored.LatencyP50MS == nil || stream != (stored.TTFTP50MS != nil) {
			t.Errorf("stream %v: run latency %v/%v/%v; want %v/%v/%v", stream, stored.LatencyP50MS, stored.LatencyP95MS, stored.TTFTP50MS,
				want.P50MS, want.P95MS, want.TTFTP50MS)
		}
		// The run's final info (its last event, what Run returns) says
		// the same: a report made of it needs no pass over the results.
		if !eqPtr(info.LatencyP50MS, stored.LatencyP50MS) || !eqPtr(info.LatencyP95MS, stored.LatencyP95MS) ||
			!eqPtr(info.TTFTP50MS, stored.TTFTP50MS) {
			t.Errorf("stream %v: the final info's latency %v/%v/%v; stored %v/%v/%v", stream, info.LatencyP50MS, info.LatencyP95MS,
				info.TTFTP50MS, stored.LatencyP50MS, stored.LatencyP95MS, stored.TTFTP50MS)
		}
		// The live matrix of the ended run is the stored one.
		live, err := f.eng.Matrix(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for level, c := range live.Domains["math"] {
			if s := m["math"][level]; !eqPtr(c.LatencyP50MS, s.LatencyP50MS) || !eqPtr(c.TTFTP50MS, s.TTFTP50MS) {
				t.Errorf("live cell %s: %v/%v; stored %v/%v", level, c.LatencyP50MS, c.TTFTP50MS, s.LatencyP50MS, s.TTFTP50MS)
			}
		}
	}
}

// TestLatencyWhileRunning: a cell's figures are null while it runs and
// set in the event of its settling, as stored; a cell the run leaves
// partial gets them over what finished.
func TestLatencyWhileRunning(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	snap := newDefs().domain("math", "Answer with the number alone.", true).
		sums("math", 1, 2, 0).sums("math", 2, 3, 0).snap()
	f := newFixture(t, fixtureOpts{anyDB: true, snap: snap, concurrency: 1, llm: llmtest.Options{Latency: 5 * time.Millisecond,
		Respond: func(req *llmtest.Request) *llmtest.Reply {
			if slices.Contains([]string{"[math-l2-t1] What is 1 + 2?"}, req.LastUser()) {
				<-gate
			}
			return nil
		}}})
	ctx := context.Background()
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(release)
	runID, err := f.eng.Start(ctx, engine.StartRequest{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	// Level 1 settles; level 2 waits on its second test.
	deadline := time.Now().Add(30 * time.Second)
	for {
		live, err := f.eng.Matrix(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c1, c2 := live.Domains["math"]["1"], live.Domains["math"]["2"]
		if c1.Status == runs.CellPassed && c2.Done == 1 {
			if c1.LatencyP50MS == nil || c1.TTFTP50MS == nil {
				t.Errorf("settled cell %+v; want its figures", c1)
			}
			if c2.LatencyP50MS != nil || c2.TTFTP50MS != nil {
				t.Errorf("running cell %+v; want no figures yet", c2)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cells %+v, %+v", c1, c2)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := f.eng.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	release()
	info, _ := f.wait(t, runID)
	m, err := f.runs.Matrix(ctx, info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	results, err := f.runs.CellResults(ctx, info.RunID, "math", 2)
	if err != nil {
		t.Fatal(err)
	}
	c2 := m["math"]["2"]
	var answered []int64
	for _, r := range results {
		if r.Status != runs.TestError {
			answered = append(answered, r.DurationMS)
		}
	}
	slices.Sort(answered)
	if c2.Status != runs.CellPartial || len(answered) == 0 || c2.LatencyP50MS == nil || *c2.LatencyP50MS != answered[(len(answered)+1)/2-1] || c2.TTFTP50MS == nil {
		t.Errorf("partial cell %+v (p50 %v); want the median of %v", c2, c2.LatencyP50MS, answered)
	}
}

func eqPtr(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func itoa(n int) string { return string(rune('0' + n)) }
