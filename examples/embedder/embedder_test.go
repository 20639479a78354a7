package embedder_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/examples/embedder"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestSuiteLoads: every embedded file loads, strictly.
func TestSuiteLoads(t *testing.T) {
	_, res, err := catalog.Load(context.Background(), embedder.Suite(), catalog.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fe := range res.Errors {
		t.Errorf("%s", fe)
	}
	if res.Loaded.Domains != 2 || res.Loaded.Tests != 6 || res.Loaded.Evaluators != 2 {
		t.Errorf("loaded %+v", res.Loaded)
	}
}

// TestEvaluateProgress: over real HTTP, the events report every test
// once, with Done counting up to the total.
func TestEvaluateProgress(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Options{Latency: 2 * time.Millisecond})
	defer srv.Close()
	client, err := llm.New(llm.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	last := 0
	rep, err := embedder.Evaluate(context.Background(), client, embedder.Options{Model: "m", OnEvent: func(ev engine.Event) {
		if ev.Kind == engine.EventTestFinished {
			seen[ev.Result.TestID]++
			last = ev.Done
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 6 || last != 6 {
		t.Errorf("tests seen %v, last done %d", seen, last)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s finished %d times", id, n)
		}
	}
	if rep.Info.Model != "m" || srv.Stats().ChatCompletions != 6 {
		t.Errorf("model %q, %d requests", rep.Info.Model, srv.Stats().ChatCompletions)
	}
}

// TestEvaluateCancel: cancelling the context of Evaluate while the
// endpoint hangs stops the run, keeps what finished and returns ctx's
// error with the report.
func TestEvaluateCancel(t *testing.T) {
	// Every second request hangs until its client gives up; the suite's
	// six tests are all asked at once.
	srv := llmtest.NewServer(llmtest.Options{Timeouts: llmtest.Schedule{Every: 2}})
	defer srv.Close()
	client, err := llm.New(llm.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var finished atomic.Int64
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if st := srv.Stats(); finished.Load() > 0 && st.Statuses[200] == 3 && st.InFlight == 3 {
				cancel()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Error("no request hung")
		cancel()
	}()
	rep, err := embedder.Evaluate(ctx, client, embedder.Options{OnEvent: func(ev engine.Event) {
		if ev.Kind == engine.EventTestFinished {
			finished.Add(1)
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Evaluate: %v, want context.Canceled", err)
	}
	in := rep.Info
	if in.Status != runs.StatusStopped || in.Complete || in.DoneTests == 0 || int64(in.DoneTests) != finished.Load() || in.Errors != 0 {
		t.Errorf("info %+v, %d finished events", in, finished.Load())
	}
	done := 0
	for _, levels := range rep.Matrix {
		for _, c := range levels {
			done += c.Done
		}
	}
	if done != in.DoneTests {
		t.Errorf("matrix says %d done, info %d", done, in.DoneTests)
	}
}
