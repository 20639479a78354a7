package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/benchmem"
)

// BenchmarkReport writes the JSON and JUnit reports of a stored run of
// 100,000 results (100 cells of 1,000) to a file, as gauntlet run
// --output does, and reports the peak Go heap while writing (HeapInuse,
// sampled every 5 ms) and the file's size. docs/performance.md ("A
// million tests") records its figures:
//
//	go test -run '^$' -bench Report -benchtime 1x ./cmd/gauntlet/
func BenchmarkReport(b *testing.B) {
	if testing.Short() {
		b.Skip("stores 100,000 results")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "g.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rs, err := runs.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	const domains, levels, perCell = 10, 10, 1000
	var keys []runs.CellKey
	for d := range domains {
		for l := 1; l <= levels; l++ {
			keys = append(keys, runs.CellKey{Domain: fmt.Sprintf("d%02d", d), Level: l, Tests: perCell})
		}
	}
	info := runs.Info{RunID: "big", StartedAt: runs.Now(), ModelName: "bench", Model: "m", Status: runs.StatusRunning,
		TotalTests: domains * levels * perCell, Domains: []string{"d00"}, Config: &runs.Config{Model: "m", Repeats: 1, Params: map[string]any{}}}
	if err := rs.CreateRun(ctx, info, keys); err != nil {
		b.Fatal(err)
	}
	batch := make([]runs.Result, 0, perCell)
	for _, k := range keys {
		batch = batch[:0]
		for i := range perCell {
			id := fmt.Sprintf("%s-l%d-t%d", k.Domain, k.Level, i)
			batch = append(batch, runs.Result{RunID: "big", TestID: id, Domain: k.Domain, Level: k.Level, Name: "Sum " + id,
				Prompt:   fmt.Sprintf("[%s] What is %d + %d? Show your working, then give the final number.", id, i, k.Level),
				Response: fmt.Sprintf("Adding %d and %d step by step gives %d. The answer is %d.", i, k.Level, i+k.Level, i+k.Level),
				Expected: harness.Expected{Answer: fmt.Sprint(i + k.Level), Type: "numeric"}, Score: 1, Status: runs.TestPassed,
				Details:    map[string]any{"extracted_answer": fmt.Sprint(i + k.Level), "pass2_used": false},
				DurationMS: 420, ModelName: "bench", SystemPrompt: "You are a careful calculator.", PromptTokens: 30, CompletionTokens: 12,
				CreatedAt: runs.Now()})
		}
		if err := rs.SaveResults(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	one := 1.0
	info.Status, info.DoneTests, info.Passed, info.OverallScore = runs.StatusCompleted, info.TotalTests, info.TotalTests, &one
	if _, err := rs.FinishRun(ctx, info); err != nil {
		b.Fatal(err)
	}
	if info, err = rs.Run(ctx, "big"); err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{"json", "junit"} {
		b.Run(format, func(b *testing.B) {
			out := filepath.Join(b.TempDir(), "report."+format)
			var peak float64
			var size int64
			for b.Loop() {
				runtime.GC()
				stop := benchmem.SampleHeapInuse()
				if err := writeReport(rs, info, format, out, 0, io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
				peak = max(peak, stop())
				fi, err := os.Stat(out)
				if err != nil {
					b.Fatal(err)
				}
				size = fi.Size()
			}
			b.ReportMetric(peak, "peak-heap-MiB")
			b.ReportMetric(float64(size)/(1<<20), "file-MiB")
		})
	}
}
