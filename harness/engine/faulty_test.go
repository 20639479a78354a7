package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// nulEvery answers every n-th test (by the number in its id) with a NUL
// character inside a correct answer; the other tests get the default.
func nulEvery(n int) func(*llmtest.Request) *llmtest.Reply {
	return func(req *llmtest.Request) *llmtest.Reply {
		prompt := req.Messages[len(req.Messages)-1].Content
		if atoiSuffix(promptID(prompt))%n != n-1 {
			return nil
		}
		var a, b int
		if _, rest, ok := strings.Cut(prompt, "] "); ok {
			if _, err := fmt.Sscanf(rest, "What is %d + %d?", &a, &b); err == nil {
				return &llmtest.Reply{Content: fmt.Sprintf("The sum\x00 is %d.", a+b)}
			}
		}
		return nil
	}
}

// faultyRun runs tests with the given faults and checks that every
// result is stored, the NUL answers byte for byte, and errors apart.
func faultyRun(t testing.TB, f *fixture, finished chan runs.Info, tests int) runs.Info {
	ctx := context.Background()
	id, err := f.eng.Start(ctx, engine.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	info := <-finished
	if info.RunID != id || info.Status != runs.StatusCompleted || info.DoneTests != tests ||
		info.Passed+info.Errors != tests || info.Failed != 0 {
		t.Fatalf("run: %+v", info)
	}
	if n := f.count(t, "run_results", id); n != tests {
		t.Fatalf("%d results stored of %d", n, tests)
	}
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	nul := 0
	for _, r := range results {
		if strings.Contains(r.Response, "\x00") {
			nul++
		}
	}
	if nul == 0 {
		t.Fatal("no answer with a NUL was stored")
	}
	return info
}

// TestHangsAndNULs: with answers that hang (5%) and answers holding a
// NUL (one test per cell), every result is stored, and hung requests cost one timeout
// each, not the run.
func TestHangsAndNULs(t *testing.T) {
	t.Parallel()
	const tests = 200
	f, finished := benchEngineTimeout(t, benchDefs(2, 2, tests/4), 16, llmtest.Options{
		Timeouts: llmtest.Schedule{Rate: 0.05}, Respond: nulEvery(tests / 4), Seed: 7}, 300*time.Millisecond)
	faultyRun(t, f, finished, tests)
	if st := f.mock.Stats(); st.Timeouts == 0 {
		t.Errorf("no hang injected: %+v", st)
	}
}

// BenchmarkFaultyRun: 2,000 tests at 100 ms latency with 5% of requests
// hanging and 1% of answers holding a NUL, with a 2 s request timeout,
// against the same run without faults. Every result is stored; the
// figure that matters is x-faultfree, the faulty run's wall time over the
// fault-free one's. Run it with -benchtime 5x: where the hangs fall (and
// whether a late retry hangs again) moves a single run's figure by 10%.
func BenchmarkFaultyRun(b *testing.B) {
	const tests, conc, latency = 2000, 64, 100 * time.Millisecond
	snap := benchDefs(4, 5, tests/20)
	clean, cleanDone := benchEngineTimeout(b, snap, conc, llmtest.Options{Latency: latency, Respond: nulEvery(100)}, 2*time.Second)
	faulty, faultyDone := benchEngineTimeout(b, snap, conc, llmtest.Options{Latency: latency, Respond: nulEvery(100),
		Timeouts: llmtest.Schedule{Rate: 0.05}, Seed: 11}, 2*time.Second)
	var cleanWall, faultyWall time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		faultyRun(b, clean, cleanDone, tests)
		cleanWall += time.Since(start)
		start = time.Now()
		faultyRun(b, faulty, faultyDone, tests)
		faultyWall += time.Since(start)
		n++
	}
	b.ReportMetric(cleanWall.Seconds()/float64(n), "faultfree-s/run")
	b.ReportMetric(faultyWall.Seconds()/float64(n), "faulty-s/run")
	b.ReportMetric(faultyWall.Seconds()/cleanWall.Seconds(), "x-faultfree")
	b.ReportMetric(float64(faulty.mock.Stats().Timeouts)/float64(n), "hangs/run")
}
