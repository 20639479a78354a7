package engine_test

// Benchmarks of the engine and the runs store; docs/performance.md records
// their figures. Run them with
//
//	go test -run '^$' -bench . -benchmem -benchtime 5x ./harness/engine/

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/procmem"
)

// benchDefs is domains × levels × perLevel arithmetic tests scored by the
// "number" evaluator (standard-library regex).
func benchDefs(domains, levels, perLevel int) *harness.Snapshot {
	d := newDefs()
	for i := range domains {
		id := fmt.Sprintf("d%02d", i)
		d.domain(id, "You are a careful calculator.", true)
		for l := 1; l <= levels; l++ {
			d.level(id, l, "Answer with the number only.", harness.PromptAppend, 0.5)
			d.sums(id, l, perLevel, 0)
		}
	}
	return d.snap()
}

// benchEngine is a fixture whose events only signal the end of runs.
func benchEngine(b *testing.B, snap *harness.Snapshot, conc int, mock llmtest.Options) (*fixture, chan runs.Info) {
	b.Helper()
	return benchEngineTimeout(b, snap, conc, mock, time.Minute)
}

// benchEngineTimeout is benchEngine with a model request timeout.
func benchEngineTimeout(b testing.TB, snap *harness.Snapshot, conc int, mock llmtest.Options, timeout time.Duration) (*fixture, chan runs.Info) {
	b.Helper()
	finished := make(chan runs.Info, 1)
	f := newFixture(b, fixtureOpts{snap: snap, concurrency: conc, llm: mock, timeout: timeout,
		onEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventRunFinished {
				finished <- *ev.Info
			}
		}})
	return f, finished
}

// runOnce starts a run and waits for it; it fails unless every test passed.
func runOnce(b *testing.B, f *fixture, finished chan runs.Info, tests int) {
	id, err := f.eng.Start(context.Background(), engine.StartRequest{})
	if err != nil {
		b.Fatal(err)
	}
	info := <-finished
	if info.RunID != id || info.Status != runs.StatusCompleted || info.TotalTests != tests || info.OverallScore == nil || *info.OverallScore != 1 {
		b.Fatalf("run: %+v", info)
	}
}

// memSampler records the peak of HeapInuse+StackInuse, read every 10 ms.
type memSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startMemSampler() *memSampler {
	s := &memSampler{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if v := ms.HeapInuse + ms.StackInuse; v > s.peak.Load() {
				s.peak.Store(v)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *memSampler) done() float64 {
	close(s.stop)
	s.wg.Wait()
	return float64(s.peak.Load()) / (1 << 20)
}

// vmHWM returns the process's peak resident set (VmHWM) in MiB, 0 when
// /proc is not there. resetHWM starts it again from the current RSS.
func vmHWM() float64 {
	n, _ := procmem.PeakRSS(procmem.Self)
	return float64(n) / (1 << 20)
}

func resetHWM() { procmem.ResetPeak() }

// cpuTime returns the CPU time (user + system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOverhead: 10,000 tests against llmtest with no latency,
// concurrency 64, every result persisted. The fake endpoint runs in the
// same process and shares its CPUs.
func BenchmarkOverhead(b *testing.B) {
	const tests, conc = 10000, 64
	f, finished := benchEngine(b, benchDefs(10, 10, 100), conc, llmtest.Options{})
	runtime.GC()
	resetHWM()
	mem := startMemSampler()
	start, cpu0 := time.Now(), cpuTime()
	n := 0
	for b.Loop() {
		runOnce(b, f, finished, tests)
		n++
	}
	el := time.Since(start)
	b.ReportMetric(float64(n*tests)/el.Seconds(), "tests/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n*tests), "cpu-µs/test")
	b.ReportMetric(mem.done(), "peak-heap+stack-MiB")
	if hwm := vmHWM(); hwm > 0 {
		b.ReportMetric(hwm, "peak-RSS-MiB")
	}
	if st := f.mock.Stats(); st.PeakInFlight > conc {
		b.Errorf("peak in flight %d > %d", st.PeakInFlight, conc)
	}
}

// BenchmarkLatencyBound: 1,000 tests, 50 ms latency, concurrency 64.
// The ideal is 1000 × 50 ms / 64 = 0.78 s; with whole waves of 64 it is
// 16 × 50 ms = 0.80 s.
func BenchmarkLatencyBound(b *testing.B) {
	const tests, conc, latency = 1000, 64, 50 * time.Millisecond
	f, finished := benchEngine(b, benchDefs(2, 5, 100), conc, llmtest.Options{Latency: latency})
	ideal := (tests * latency / conc).Seconds()
	start, cpu0 := time.Now(), cpuTime()
	n := 0
	for b.Loop() {
		runOnce(b, f, finished, tests)
		n++
	}
	wall := time.Since(start).Seconds() / float64(n)
	b.ReportMetric(wall, "wall-s/run")
	b.ReportMetric(wall/ideal, "x-ideal")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n*tests), "cpu-µs/test")
}

// BenchmarkReads: a stored run of 100,000 results in 100 cells of 1,000,
// inserted through runs.Store; reading the run's matrix and one cell's
// results.
func BenchmarkReads(b *testing.B) {
	const domains, levels, perCell = 10, 10, 1000
	ctx := context.Background()
	_, _, rs := openStores(b, b.TempDir(), "", benchDefs(1, 1, 1))
	var keys []runs.CellKey
	for d := range domains {
		for l := 1; l <= levels; l++ {
			keys = append(keys, runs.CellKey{Domain: fmt.Sprintf("d%02d", d), Level: l, Tests: perCell})
		}
	}
	info := runs.Info{RunID: "big", StartedAt: runs.Now(), ModelName: "bench", Model: "m", Status: runs.StatusRunning,
		TotalTests: domains * levels * perCell, Domains: []string{"d00"}}
	if err := rs.CreateRun(ctx, info, keys); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	batch := make([]runs.Result, 0, perCell)
	for _, k := range keys {
		batch = batch[:0]
		for i := range perCell {
			id := fmt.Sprintf("%s-l%d-t%d", k.Domain, k.Level, i)
			batch = append(batch, runs.Result{RunID: "big", TestID: id, Domain: k.Domain, Level: k.Level, Name: "Sum " + id,
				Prompt:   fmt.Sprintf("[%s] What is %d + %d? Show your working, then give the final number.", id, i, k.Level),
				Response: fmt.Sprintf("Adding %d and %d step by step gives %d. The answer is %d.", i, k.Level, i+k.Level, i+k.Level),
				Expected: harness.Expected{Answer: strconv.Itoa(i + k.Level), Type: "numeric"}, Score: 1, Status: runs.TestPassed,
				Details:    map[string]any{"expected_type": "numeric", "extracted_answer": strconv.Itoa(i + k.Level), "pass2_used": false, "regex_engine": "stdlib"},
				DurationMS: 420, ModelName: "bench", SystemPrompt: "You are a careful calculator.\n\nAnswer with the number only.",
				PromptTokens: 30, CompletionTokens: 12, CreatedAt: runs.Now()})
		}
		if err := rs.SaveResults(ctx, batch); err != nil {
			b.Fatal(err)
		}
		one := 1.0
		ms := int64(420000)
		if err := rs.SaveCell(ctx, "big", k.Domain, k.Level, runs.Cell{Status: runs.CellPassed, Score: &one, DurationMS: &ms,
			Tests: perCell, Done: perCell, Passed: perCell}); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("stored %d results in %v", domains*levels*perCell, time.Since(start))

	b.Run("matrix", func(b *testing.B) {
		for b.Loop() {
			m, err := rs.Matrix(ctx, "big")
			if err != nil || len(m) != domains || len(m["d05"]) != levels {
				b.Fatalf("matrix: %d domains, %v", len(m), err)
			}
		}
	})
	b.Run("cell", func(b *testing.B) {
		for b.Loop() {
			res, err := rs.CellResults(ctx, "big", "d05", 7)
			if err != nil || len(res) != perCell {
				b.Fatalf("cell: %d results, %v", len(res), err)
			}
		}
	})
	b.Run("stats", func(b *testing.B) {
		for b.Loop() {
			st, err := rs.Stats(ctx, "big")
			if err != nil || st.TotalTests != domains*levels*perCell {
				b.Fatalf("stats: %+v, %v", st, err)
			}
		}
	})
}

// sleepModel answers "The answer is N." to "What is A + B?" after a fixed
// delay, in process: the latency-bound run without HTTP, the SDK or the
// fake server, to tell the engine's own overhead from theirs.
type sleepModel struct{ latency time.Duration }

func (m sleepModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	t := time.NewTimer(m.latency)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	v, _ := llmtest.Arithmetic(prompt)
	answer := "The answer is " + v + "."
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: answer},
		Usage: harness.Usage{PromptTokens: llmtest.CountTokens(prompt), CompletionTokens: llmtest.CountTokens(answer)}}, nil
}

// BenchmarkLatencyBoundInProcess is BenchmarkLatencyBound with the model
// in process (sleepModel): what the engine and the store cost alone.
func BenchmarkLatencyBoundInProcess(b *testing.B) {
	const tests, conc, latency = 1000, 64, 50 * time.Millisecond
	finished := make(chan runs.Info, 1)
	f := newFixture(b, fixtureOpts{snap: benchDefs(2, 5, 100), concurrency: conc,
		model: func(harness.ChatModel) harness.ChatModel { return sleepModel{latency} },
		onEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventRunFinished {
				finished <- *ev.Info
			}
		}})
	ideal := (tests * latency / conc).Seconds()
	start, cpu0 := time.Now(), cpuTime()
	n := 0
	for b.Loop() {
		runOnce(b, f, finished, tests)
		n++
	}
	wall := time.Since(start).Seconds() / float64(n)
	b.ReportMetric(wall, "wall-s/run")
	b.ReportMetric(wall/ideal, "x-ideal")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n*tests), "cpu-µs/test")
}

// BenchmarkCacheHit is BenchmarkOverhead with the response cache on, once
// filled: the same 10,000 tests run again, every model request answered
// from the cache (the endpoint is never asked). Target: at least twice
// BenchmarkOverhead's rate.
func BenchmarkCacheHit(b *testing.B) {
	const tests, conc = 10000, 64
	f, finished := benchEngine(b, benchDefs(10, 10, 100), conc, llmtest.Options{})
	fill := func() runs.Info {
		id, err := f.eng.Start(context.Background(), engine.StartRequest{Cache: true})
		if err != nil {
			b.Fatal(err)
		}
		info := <-finished
		if info.RunID != id || info.Status != runs.StatusCompleted || info.Passed != tests {
			b.Fatalf("run: %+v", info)
		}
		return info
	}
	fill()
	asked := f.mock.Stats().ChatCompletions
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime()
	n := 0
	for b.Loop() {
		if info := fill(); info.CacheHits != tests {
			b.Fatalf("cache hits = %d; want %d", info.CacheHits, tests)
		}
		n++
	}
	el := time.Since(start)
	if got := f.mock.Stats().ChatCompletions; got != asked {
		b.Fatalf("cached runs asked the endpoint %d times", got-asked)
	}
	b.ReportMetric(float64(n*tests)/el.Seconds(), "tests/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n*tests), "cpu-µs/test")
}

// BenchmarkRescore: a stored run of 10,000 results (made by a run against
// llmtest) scored again with the regex evaluator into a new run. Target:
// at least 5,000 results/s.
func BenchmarkRescore(b *testing.B) {
	const tests, conc = 10000, 64
	f, finished := benchEngine(b, benchDefs(10, 10, 100), conc, llmtest.Options{})
	id, err := f.eng.Start(context.Background(), engine.StartRequest{})
	if err != nil {
		b.Fatal(err)
	}
	if info := <-finished; info.RunID != id || info.Passed != tests {
		b.Fatalf("source run: %+v", info)
	}
	asked := f.mock.Stats().ChatCompletions
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime()
	n := 0
	for b.Loop() {
		rid, err := f.eng.Rescore(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		if info := <-finished; info.RunID != rid || info.RescoredFrom != id || info.Passed != tests {
			b.Fatalf("rescore: %+v", info)
		}
		n++
	}
	el := time.Since(start)
	if got := f.mock.Stats().ChatCompletions; got != asked {
		b.Fatalf("rescores asked the endpoint %d times", got-asked)
	}
	b.ReportMetric(float64(n*tests)/el.Seconds(), "results/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(n*tests), "cpu-µs/result")
}
