package engine_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// BenchmarkOverheadProviders is BenchmarkOverhead through each provider
// kind: 10,000 tests, no latency, concurrency 64, against a fake endpoint
// speaking that kind's wire format through its official SDK. The
// per-test CPU of the anthropic and gemini paths is compared with the
// openai path's (target: within 1.2×).
func BenchmarkOverheadProviders(b *testing.B) {
	const tests, conc = 10000, 64
	for _, k := range providerKinds {
		b.Run(k.kind, func(b *testing.B) {
			prov := llmtest.NewServer(llmtest.Options{})
			b.Cleanup(prov.Close)
			finished := make(chan runs.Info, 1)
			f := newFixture(b, fixtureOpts{snap: benchDefs(10, 10, 100), concurrency: conc, timeout: time.Minute,
				onEvent: func(ev engine.Event) {
					if ev.Kind == engine.EventRunFinished {
						finished <- *ev.Info
					}
				},
				model: func(m harness.ChatModel) harness.ChatModel {
					ps, err := llm.ParseProviders([]string{"bench=" + k.kind + ",base_url=" + k.base(prov.URL) + ",api_key_env=BENCH_KEY"})
					if err != nil {
						b.Fatal(err)
					}
					r, err := llm.NewRouter(llm.RouterOptions{Default: m.(*llm.Client), Providers: ps,
						Client: llm.Options{Timeout: time.Minute}, Getenv: func(string) string { return "bench-key" }})
					if err != nil {
						b.Fatal(err)
					}
					return r
				}})
			runtime.GC()
			start, cpu0 := time.Now(), cpuTime()
			n := 0
			for b.Loop() {
				id, err := f.eng.Start(context.Background(), engine.StartRequest{Model: "bench/m"})
				if err != nil {
					b.Fatal(err)
				}
				info := <-finished
				if info.RunID != id || info.Status != runs.StatusCompleted || info.TotalTests != tests || info.OverallScore == nil || *info.OverallScore != 1 {
					b.Fatalf("run: %+v", info)
				}
				n++
			}
			el := time.Since(start)
			b.ReportMetric(float64(n*tests)/el.Seconds(), "tests/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n*tests), "cpu-µs/test")
			if st := prov.Stats(); st.ChatCompletions < int64(n*tests) || !strings.Contains(k.base(prov.URL), "127.0.0.1") {
				b.Fatalf("the provider answered %d requests for %d tests", st.ChatCompletions, n*tests)
			}
		})
	}
}
