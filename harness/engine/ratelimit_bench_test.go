package engine_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// BenchmarkThrottledProvider runs a suite against a fake provider that
// throttles like a real one: at most RPM requests a minute (a bucket of 10,
// refilled continuously) and 10 in flight, answering 429 with Retry-After
// beyond. The client knows neither limit: it learns them from the 429s
// (its concurrency bound is the engine's, 10). It reports the wall time as
// a ratio to the best schedule the limit allows, n / RPM (ratio), and the
// tests in error (errors, which must be 0).
//
// The shape is 10,000 tests at 600 requests a minute, which takes 17
// minutes; by default the rate is scaled up (12,000 a minute) and the
// suite down, the same shape in seconds. GAUNTLET_BENCH_RPM and
// GAUNTLET_BENCH_TESTS set them:
//
//	GAUNTLET_BENCH_RPM=600 GAUNTLET_BENCH_TESTS=10000 go test -run '^$' \
//	    -bench BenchmarkThrottledProvider -benchtime 1x -timeout 30m ./harness/engine/
func BenchmarkThrottledProvider(b *testing.B) {
	rpm, tests := envInt(b, "GAUNTLET_BENCH_RPM", 12000), envInt(b, "GAUNTLET_BENCH_TESTS", 2000)
	const inFlight = 10
	snap := benchDefs(1, 1, tests)
	for b.Loop() {
		b.StopTimer()
		finished := make(chan runs.Info, 1)
		f := newFixture(b, fixtureOpts{snap: snap, concurrency: inFlight, timeout: time.Minute,
			llm:    llmtest.Options{RPM: rpm, RPMBurst: inFlight, MaxInFlight: inFlight, Latency: 2 * time.Millisecond},
			client: func(o *llm.Options) { o.MaxConcurrency = inFlight; o.Name = "fake" },
			onEvent: func(ev engine.Event) {
				if ev.Kind == engine.EventRunFinished {
					finished <- *ev.Info
				}
			}})
		b.StartTimer()
		start := time.Now()
		if _, err := f.eng.Start(context.Background(), engine.StartRequest{}); err != nil {
			b.Fatal(err)
		}
		info := <-finished
		wall := time.Since(start)
		b.StopTimer()
		ideal := time.Duration(float64(tests) / float64(rpm) * float64(time.Minute))
		b.ReportMetric(wall.Seconds()/ideal.Seconds(), "ratio")
		b.ReportMetric(float64(info.Errors), "errors")
		b.ReportMetric(float64(f.mock.Stats().Throttled), "429s")
		if info.DoneTests != tests {
			b.Fatalf("run %+v", info)
		}
		b.StartTimer()
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: not a positive integer", name, v)
	}
	return n
}
