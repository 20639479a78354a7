package engine_test

// The scale benchmarks: a suite of 100,000 or 1,000,000 tests in a
// definitions directory, synced into a SQLite cache, run at concurrency
// 64 against a model with no latency, then read back. docs/performance.md
// ("A million tests") records their figures. They are not part of the
// tests (go test -short skips them too); the million runs only when
// GAUNTLET_SCALE_1M is set (it takes minutes and a gigabyte to sync):
//
//	go test -run '^$' -bench 'Scale/100k' -benchtime 1x ./harness/engine/
//	GAUNTLET_SCALE_1M=1 go test -run '^$' -bench 'Scale/1M' -benchtime 1x -timeout 60m ./harness/engine/

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// instantModel answers "The answer is N." to "What is A + B?" at once, in
// process: a model with no latency and no HTTP, so that what the scale
// benchmarks measure is the engine, the evaluator and the store.
type instantModel struct{}

func (instantModel) Chat(_ context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	prompt := req.Messages[len(req.Messages)-1].Content
	v, _ := llmtest.Arithmetic(prompt)
	answer := "The answer is " + v + "."
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: answer},
		Usage: harness.Usage{PromptTokens: llmtest.CountTokens(prompt), CompletionTokens: llmtest.CountTokens(answer)}}, nil
}

// writeScaleSuite writes a definitions directory of domains × levels ×
// perLevel arithmetic tests straight to YAML files, a level file at a
// time, as a generator or an import of a large data set leaves one.
func writeScaleSuite(tb testing.TB, dir string, domains, levels, perLevel int) {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "evaluators"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "evaluators", "number.yaml"),
		[]byte("id: number\nname: Last number\ntype: regex\nextraction_regex: (?<answer>-?\\d+)\n"), 0o644))
	for d := range domains {
		id := fmt.Sprintf("d%02d", d)
		ddir := filepath.Join(dir, "domains", id)
		must(os.MkdirAll(ddir, 0o755))
		must(os.WriteFile(filepath.Join(ddir, "domain.yaml"), []byte("id: "+id+"\nname: Domain "+id+
			"\nevaluator_id: number\nenabled: true\nsystem_prompt: You are a careful calculator.\n"), 0o644))
		for l := 1; l <= levels; l++ {
			f, err := os.Create(filepath.Join(ddir, fmt.Sprintf("level-%d.yaml", l)))
			must(err)
			w := bufio.NewWriterSize(f, 1<<16)
			fmt.Fprintf(w, "system_prompt: Answer with the number only.\npass_threshold: 0.5\ntests:\n")
			for i := range perLevel {
				tid := fmt.Sprintf("%s-l%d-t%d", id, l, i)
				fmt.Fprintf(w, "  - id: %s\n    name: Sum %s\n    prompt: '[%s] What is %d + %d?'\n    expected:\n      answer: '%d'\n      type: numeric\n",
					tid, tid, tid, i, l, i+l)
			}
			must(w.Flush())
			must(f.Close())
		}
	}
}

// BenchmarkScale runs a whole suite of 100,000 (100k) or 1,000,000 (1M)
// tests: 10 domains × 10 levels of 1,000 or 10,000 tests, concurrency 64,
// SQLite file, the in-process model with no latency, results and the log
// stored. Metrics: the sync of the definitions directory (seconds, peak
// RSS), a second sync of it unchanged (seconds), the run (tests/s, peak RSS from VmHWM reset just before the run,
// peak Go heap + stacks), and after it the run's matrix and a filtered
// page of its results (milliseconds).
func BenchmarkScale(b *testing.B) {
	if testing.Short() {
		b.Skip("the scale benchmarks take minutes")
	}
	for _, sz := range []struct {
		name     string
		perLevel int
	}{{"100k", 1000}, {"1M", 10000}} {
		b.Run(sz.name, func(b *testing.B) {
			if sz.name == "1M" && os.Getenv("GAUNTLET_SCALE_1M") == "" {
				b.Skip("set GAUNTLET_SCALE_1M=1 to run the million")
			}
			benchScale(b, 10, 10, sz.perLevel)
		})
	}
}

func benchScale(b *testing.B, domains, levels, perLevel int) {
	const conc = 64
	tests := domains * levels * perLevel
	ctx := context.Background()
	dir := b.TempDir()
	defsDir := filepath.Join(dir, "definitions")
	t0 := time.Now()
	writeScaleSuite(b, defsDir, domains, levels, perLevel)
	b.Logf("wrote %d tests in %v", tests, time.Since(t0))

	db, err := store.Open(ctx, filepath.Join(dir, "g.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	runtime.GC()
	debug.FreeOSMemory()
	resetHWM()
	t0 = time.Now()
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: defsDir, DB: db})
	if err != nil || len(res.Errors) > 0 || res.Loaded.Tests != tests {
		b.Fatalf("catalog: %v %+v", err, res)
	}
	syncS := time.Since(t0).Seconds()
	syncHWM := vmHWM()
	b.Logf("catalog opened (synced %d tests) in %.1f s, peak RSS %.0f MiB", tests, syncS, syncHWM)
	// A restart over the same directory: every file hashed, none decoded.
	t0 = time.Now()
	if res, err := cat.Sync(ctx); err != nil || len(res.Errors) > 0 || res.Loaded.Tests != tests {
		b.Fatalf("sync again: %v %+v", err, res)
	}
	resyncS := time.Since(t0).Seconds()
	rs, err := runs.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: instantModel{}, Model: "instant",
		Version: "bench", Concurrency: conc, LogDir: filepath.Join(dir, "logs")})
	if err != nil {
		b.Fatal(err)
	}

	var last runs.Info
	var runS, startS, hwm, heap float64
	var cpu time.Duration
	n := 0
	for b.Loop() {
		runtime.GC()
		debug.FreeOSMemory()
		resetHWM()
		mem := startMemSampler()
		stopProfile := heapProfileAtHalf(b, eng, tests)
		start, cpu0 := time.Now(), cpuTime()
		var started time.Time
		info, err := eng.Run(ctx, engine.StartRequest{OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventRunStarted {
				started = time.Now()
			}
		}})
		stopProfile()
		runS += time.Since(start).Seconds()
		startS += started.Sub(start).Seconds()
		cpu += cpuTime() - cpu0
		heap = max(heap, mem.done())
		hwm = max(hwm, vmHWM())
		if err != nil || info.Status != runs.StatusCompleted || info.Passed != tests {
			b.Fatalf("run: %v %+v", err, info)
		}
		last = info
		n++
	}
	b.ReportMetric(syncS, "sync-s")
	b.ReportMetric(syncHWM, "sync-peak-RSS-MiB")
	b.ReportMetric(resyncS, "resync-s")
	b.ReportMetric(float64(n*tests)/runS, "tests/s")
	b.ReportMetric(startS/float64(n), "start-s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n*tests), "cpu-µs/test")
	b.ReportMetric(hwm, "peak-RSS-MiB")
	b.ReportMetric(heap, "peak-heap+stack-MiB")

	// Reads of the finished run: the matrix, and a filtered page (one
	// domain's passed results sorted by score, a page of 100).
	best := func(f func() error) float64 {
		var m time.Duration
		for i := range 5 {
			t := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			if d := time.Since(t); i == 0 || d < m {
				m = d
			}
		}
		return float64(m.Microseconds()) / 1000
	}
	b.ReportMetric(best(func() error {
		m, err := rs.Matrix(ctx, last.RunID)
		if err == nil && len(m) != domains {
			err = fmt.Errorf("matrix has %d domains", len(m))
		}
		return err
	}), "matrix-ms")
	// Filtered pages of 100: one cell sorted by score (the explorer's
	// first page of a cell), the failed results of the run (none here),
	// one domain's passed results sorted by score and in storage order,
	// and one cell's passed results sorted by score.
	lvl := 3
	for _, pg := range []struct {
		name string
		q    runs.ResultQuery
		want int
	}{
		{"page-cell-ms", runs.ResultQuery{Domain: "d05", Level: &lvl, Sort: "-score", Limit: 100}, perLevel},
		{"page-failed-ms", runs.ResultQuery{Status: runs.TestFailed, Limit: 100}, 0},
		{"page-domain-passed-ms", runs.ResultQuery{Domain: "d05", Status: runs.TestPassed, Sort: "-score", Limit: 100}, levels * perLevel},
		{"page-domain-passed-id-ms", runs.ResultQuery{Domain: "d05", Status: runs.TestPassed, Limit: 100}, levels * perLevel},
		{"page-cell-passed-ms", runs.ResultQuery{Domain: "d05", Level: &lvl, Status: runs.TestPassed, Sort: "-score", Limit: 100}, perLevel},
	} {
		b.ReportMetric(best(func() error {
			p, err := rs.QueryResults(ctx, last.RunID, pg.q)
			if err == nil && (len(p.Results) != min(100, pg.want) || p.Total != pg.want) {
				err = fmt.Errorf("%s: %d results of %d", pg.name, len(p.Results), p.Total)
			}
			return err
		}), pg.name)
	}
}

// heapProfileAtHalf writes a heap profile to the file named by
// $GAUNTLET_SCALE_HEAPPROFILE once the run is half done (nothing without
// it): where the memory of a run in progress goes. The returned function
// stops waiting.
func heapProfileAtHalf(b *testing.B, eng *engine.Engine, tests int) func() {
	path := os.Getenv("GAUNTLET_SCALE_HEAPPROFILE")
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if eng.Status().Progress >= tests/2 {
				f, err := os.Create(path)
				if err != nil {
					b.Error(err)
					return
				}
				runtime.GC()
				if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
					b.Error(err)
				}
				f.Close()
				return
			}
		}
	}()
	return func() { close(done) }
}
