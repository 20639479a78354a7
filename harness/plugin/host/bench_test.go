package host

import (
	"context"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// inProcess scores like the test plugin's default case, for the
// in-process baseline.
type inProcess struct{}

func (inProcess) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	details := map[string]any{"pid": 1, "response": req.Response}
	score := 0.0
	if req.Response == req.Test.Expected.Answer {
		score = 1
	}
	return &harness.EvalResult{Score: score, Passed: score == 1, Details: details}, nil
}

// BenchmarkEvaluate is the overhead of an evaluator call through a plugin
// (the host's shim, gRPC over a Unix socket, the plugin's shim) against
// the same evaluator in-process.
func BenchmarkEvaluate(b *testing.B) {
	dir := b.TempDir()
	install(b, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(b, Options{Dir: dir})
	ev, _ := reg.Evaluator("testeval")
	if err := m.Start(b.Context(), "gauntlet-evaluator-testeval"); err != nil {
		b.Fatal(err)
	}
	req := evalRequest("42", "42")

	run := func(b *testing.B, e harness.Evaluator, req *harness.EvalRequest) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Evaluate(b.Context(), req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("in-process", func(b *testing.B) { run(b, inProcess{}, req) })
	b.Run("grpc-floor", func(b *testing.B) {
		// The plugin's Info call, straight on the connection: the cost of
		// a gRPC round trip to the process, without the shims.
		inst, err := m.byName["gauntlet-evaluator-testeval"].get(b.Context(), 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := inst.conn.Info(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plugin", func(b *testing.B) { run(b, ev, req) })
	b.Run("plugin/with-model", func(b *testing.B) {
		// The run's model is offered to the plugin (registered for the
		// call) but not used: what every engine call pays.
		r := *req
		r.Client = &fakeModel{answer: "1"}
		run(b, ev, &r)
	})
	b.Run("plugin/judge", func(b *testing.B) {
		// The plugin calls the host's model back over the broker.
		r := evalRequest("judge", "42")
		r.Client = &fakeModel{answer: "1"}
		run(b, ev, r)
	})
	b.Run("plugin/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := ev.Evaluate(context.Background(), req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkStart is a plugin's start-up: process start, handshake, Info
// and Attach, up to the first call's readiness. Stopping it (Close) is
// reported as stop-ns/op.
func BenchmarkStart(b *testing.B) {
	dir := b.TempDir()
	install(b, dir, "evaluator", "gauntlet-evaluator-testeval")
	var stop time.Duration
	for b.Loop() {
		m, err := New(Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Start(b.Context(), "gauntlet-evaluator-testeval"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		t0 := time.Now()
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		stop += time.Since(t0)
		b.StartTimer()
	}
	b.ReportMetric(float64(stop.Nanoseconds())/float64(b.N), "stop-ns/op")
}
