package runs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// benchResults is the size of the run the benchmarks read.
const benchResults = 100_000

var (
	bigOnce  sync.Once
	bigStore *runs.Store
	bigErr   error
	bigDir   string // removed by TestMain
)

// bigRun returns a store, in a file database under the temporary
// directory, holding run "big" with benchResults results (80 % passed,
// 15 % failed, 5 % error over 10 domains × 5 levels; prompts of about 30
// words, responses of about 80) and a smaller run beside it. It is built
// once per test binary.
func bigRun(b *testing.B) *runs.Store {
	b.Helper()
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gauntlet-bench-")
		if err != nil {
			bigErr = err
			return
		}
		bigDir = dir
		ctx := context.Background()
		db, err := store.Open(ctx, filepath.Join(dir, "runs.db"))
		if err != nil {
			bigErr = err
			return
		}
		s, err := runs.Open(ctx, db)
		if err != nil {
			bigErr = err
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for _, run := range []struct {
			id string
			n  int
		}{{"other", 10_000}, {"big", benchResults}} {
			if bigErr = s.CreateRun(ctx, runs.Info{RunID: run.id, StartedAt: "2026-01-02 03:04:05", ModelName: "bench",
				Model: "m", Status: runs.StatusCompleted, TotalTests: run.n}, nil); bigErr != nil {
				return
			}
			batch := make([]runs.Result, 0, 1000)
			for i := range run.n {
				batch = append(batch, benchResult(rng, run.id, i))
				if len(batch) == cap(batch) {
					if bigErr = s.SaveResults(ctx, batch); bigErr != nil {
						return
					}
					batch = batch[:0]
				}
			}
			if bigErr = s.SaveResults(ctx, batch); bigErr != nil {
				return
			}
		}
		// The search index as the server's indexer leaves it.
		for {
			n, err := s.IndexSearch(ctx, runs.SearchIndexChunk)
			if bigErr = err; err != nil || n == 0 {
				break
			}
		}
		if bigErr != nil {
			return
		}
		bigStore = s
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigStore
}

// words make the prompts and responses of the benchmarks' results.
var words = strings.Fields(`the a of to and in is it that for on with as was at by be this are from or
	answer number total sum apples oranges train station minutes hours speed distance result
	therefore because first second then finally equals step calculate compute value`)

// benchText is n words drawn from words.
func benchText(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[rng.IntN(len(words))])
	}
	return sb.String()
}

// benchResult is the i-th result of a benchmark's run: 80 % passed, 15 %
// failed, 5 % error over 10 domains × 5 levels; a prompt of 30 words, a
// response of 80 (one in a thousand holding "zebra").
func benchResult(rng *rand.Rand, runID string, i int) runs.Result {
	status, score := runs.TestPassed, 1.0
	switch u := rng.Float64(); {
	case u < 0.05:
		status, score = runs.TestError, 0
	case u < 0.20:
		status, score = runs.TestFailed, float64(rng.IntN(4))/4
	}
	resp := benchText(rng, 80)
	if i%1000 == 17 {
		resp += " zebra"
	}
	return runs.Result{RunID: runID, TestID: fmt.Sprintf("test-%06d", i), Domain: fmt.Sprintf("domain%d", i%10),
		Level: 1 + i/10%5, Name: "Test " + fmt.Sprint(i), Prompt: benchText(rng, 30), Response: resp,
		Expected: harness.Expected{Answer: "42", Type: "numeric"}, Score: score, Status: status,
		Details: map[string]any{"extracted_answer": "42", "pass2_used": false}, DurationMS: int64(rng.IntN(5000)),
		ModelName: "bench", SystemPrompt: "You are a careful calculator.", PromptTokens: 40, CompletionTokens: 100,
		CreatedAt: "2026-01-02 03:04:07"}
}

// BenchmarkSaveBatch stores batches of 1,000 results, as the engine's
// writer does, into a run that grows with each batch, in a file
// database; it reports the time per result and the database's size per
// result at the end.
func BenchmarkSaveBatch(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "runs.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := runs.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.CreateRun(ctx, runs.Info{RunID: "w", StartedAt: "2026-01-02 03:04:05", ModelName: "bench",
		Model: "m", Status: runs.StatusRunning}, nil); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const batchSize = 1000
	n := 0
	batch := make([]runs.Result, batchSize)
	for b.Loop() {
		b.StopTimer()
		for i := range batch {
			batch[i] = benchResult(rng, "w", n+i)
		}
		b.StartTimer()
		if err := s.SaveBatch(ctx, batch, nil); err != nil {
			b.Fatal(err)
		}
		n += batchSize
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n), "µs/result")
	b.ReportMetric(dbMiB(path)*(1<<20)/float64(n), "disk-B/result")
}

// dbMiB is the size of a database file and its write-ahead log, in MiB.
func dbMiB(path string) float64 {
	var size int64
	for _, f := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
	}
	return float64(size) / (1 << 20)
}

// BenchmarkQueryResults reads one page of 100 of a run of 100,000
// results, filtered and sorted as the dashboard asks, total included.
func BenchmarkQueryResults(b *testing.B) {
	s := bigRun(b)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		q    runs.ResultQuery
	}{
		{"first page", runs.ResultQuery{}},
		{"failed by score descending", runs.ResultQuery{Status: runs.TestFailed, Sort: "-score"}},
		{"errors by duration", runs.ResultQuery{Status: runs.TestError, Sort: "duration_ms"}},
		{"by score descending", runs.ResultQuery{Sort: "-score"}},
		{"one cell by duration descending", runs.ResultQuery{Domain: "domain3", Level: new(2), Sort: "-duration_ms"}},
		{"one domain's passed by score descending", runs.ResultQuery{Domain: "domain3", Status: runs.TestPassed, Sort: "-score"}},
		{"one domain's failed", runs.ResultQuery{Domain: "domain3", Status: runs.TestFailed}},
		{"one cell's passed by score descending", runs.ResultQuery{Domain: "domain3", Level: new(2), Status: runs.TestPassed, Sort: "-score"}},
		{"one cell's errors", runs.ResultQuery{Domain: "domain3", Level: new(2), Status: runs.TestError}},
		{"search a common word", runs.ResultQuery{Search: "Station"}},
		{"search a rare word", runs.ResultQuery{Search: "zebra"}},
		{"search and filter by status, by score", runs.ResultQuery{Search: "zebra", Status: runs.TestPassed, Sort: "-score"}},
		{"search a common word, filter by status", runs.ResultQuery{Search: "station", Status: runs.TestFailed}},
		{"search a common word, by score descending", runs.ResultQuery{Search: "station", Sort: "-score"}},
		{"search what no result holds", runs.ResultQuery{Search: "xylophone"}},
		{"search what every result holds", runs.ResultQuery{Search: "test-"}},
		{"search two characters", runs.ResultQuery{Search: "ze"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			q := bc.q
			q.Limit = 100
			// The first page, and the one after it when there is one.
			first, err := s.QueryResults(ctx, "big", q)
			if err != nil {
				b.Fatal(err)
			}
			none := q.Search == "xylophone"
			if (len(first.Results) == 0) != none {
				b.Fatalf("%d results for %+v", len(first.Results), q)
			}
			pages := 0
			for b.Loop() {
				p, err := s.QueryResults(ctx, "big", q)
				if err != nil || len(p.Results) != len(first.Results) {
					b.Fatal(err)
				}
				pages++
				if p.NextCursor != "" {
					pages++
					if _, err := s.QueryResults(ctx, "big", runs.ResultQuery{Domain: q.Domain, Level: q.Level, Status: q.Status,
						Search: q.Search, Sort: q.Sort, Limit: 100, Cursor: p.NextCursor}); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(pages)/1000, "ms/page")
			b.ReportMetric(float64(first.Total), "matching")
			if bc.q == (runs.ResultQuery{}) {
				b.ReportMetric(dbMiB(filepath.Join(bigDir, "runs.db")), "db-MiB")
			}
		})
	}
}

// BenchmarkQueryResults1M reads pages of a run of 1,000,000 results laid
// out as the engine stores a run of the scale benchmark (harness/engine
// BenchmarkScale): 10 domains × 10 levels × 10,000 tests, stored domain
// by domain and level by level, every result passed with score 1, short
// texts. The rows are written by one INSERT … SELECT (the search index
// kept by its triggers as always), which is much quicker than running the
// suite (GAUNTLET_SCALE_N sets another number of results); the run's 100
// cells then get their counters from the rows and the run is counted, as
// the engine's runs are. Each query is read twice: "cells", the total
// summed from the cells' counters, and "rows", the run's flag cleared, the
// total counted from its rows as a run stored before the counters is. It
// runs only with GAUNTLET_SCALE_1M set:
//
//	GAUNTLET_SCALE_1M=1 go test -run '^$' -bench QueryResults1M -benchtime 5x -timeout 30m ./harness/runs/
func BenchmarkQueryResults1M(b *testing.B) {
	if os.Getenv("GAUNTLET_SCALE_1M") == "" {
		b.Skip("set GAUNTLET_SCALE_1M=1 to build and read a run of a million results")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := runs.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("GAUNTLET_SCALE_N")); err == nil && v > 0 {
		n = v
	}
	var cells []runs.CellKey
	for d := range 10 {
		for l := 1; l <= 10; l++ {
			cells = append(cells, runs.CellKey{Domain: fmt.Sprintf("d%02d", d), Level: l, Tests: n / 100})
		}
	}
	if err := s.CreateRun(ctx, runs.Info{RunID: "m", StartedAt: "2026-01-02 03:04:05", ModelName: "bench",
		Model: "m", Status: runs.StatusCompleted, TotalTests: n}, cells); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := runs.FillRun(ctx, db, "m", n); err != nil {
		b.Fatal(err)
	}
	if err := runs.CountRun(ctx, db, "m"); err != nil {
		b.Fatal(err)
	}
	b.Logf("stored %d results in %v", n, time.Since(start).Round(time.Second))
	// What GET /api/run/{id} reads before its body: the run's status
	// counts and mean score, summed over its cells or over its results.
	for _, from := range []string{"cells", "rows"} {
		b.Run(from+"/stats", func(b *testing.B) {
			if err := runs.SetCounted(ctx, db, "m", from == "cells"); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				st, err := s.Stats(ctx, "m")
				if err != nil || st.TotalTests != n {
					b.Fatalf("stats %+v, %v", st, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
		})
	}
	level := 3
	for _, bc := range []struct {
		name string
		q    runs.ResultQuery
		want int
	}{
		{"one domain's passed by score descending", runs.ResultQuery{Domain: "d05", Status: runs.TestPassed, Sort: "-score"}, n / 10},
		{"one domain's passed", runs.ResultQuery{Domain: "d05", Status: runs.TestPassed}, n / 10},
		{"one domain's passed by duration", runs.ResultQuery{Domain: "d05", Status: runs.TestPassed, Sort: "duration_ms"}, n / 10},
		{"one cell's passed by score descending", runs.ResultQuery{Domain: "d05", Level: &level, Status: runs.TestPassed, Sort: "-score"}, n / 100},
		{"one cell's passed", runs.ResultQuery{Domain: "d05", Level: &level, Status: runs.TestPassed}, n / 100},
		{"one cell by score descending", runs.ResultQuery{Domain: "d05", Level: &level, Sort: "-score"}, n / 100},
		{"the failed results", runs.ResultQuery{Status: runs.TestFailed}, 0},
	} {
		for _, from := range []string{"cells", "rows"} {
			b.Run(from+"/"+bc.name, func(b *testing.B) {
				if err := runs.SetCounted(ctx, db, "m", from == "cells"); err != nil {
					b.Fatal(err)
				}
				q := bc.q
				q.Limit = 100
				pages := 0
				for b.Loop() {
					p, err := s.QueryResults(ctx, "m", q)
					if err != nil || p.Total != bc.want || len(p.Results) != min(100, bc.want) {
						b.Fatalf("%d results of %d, %v; want %d", len(p.Results), p.Total, err, bc.want)
					}
					pages++
					if p.NextCursor != "" {
						pages++
						q2 := q
						q2.Cursor = p.NextCursor
						if p2, err := s.QueryResults(ctx, "m", q2); err != nil || len(p2.Results) != 100 {
							b.Fatalf("next page: %d results, %v", len(p2.Results), err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(pages)/1000, "ms/page")
			})
		}
	}
}

// BenchmarkEachResult walks every result of the run of 100,000, as an
// export does, and reports results per second, bytes allocated per result
// and the peak of the live heap during the walk.
func BenchmarkEachResult(b *testing.B) {
	s := bigRun(b)
	ctx := context.Background()
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	peak := newHeapPeak()
	n := 0
	start := time.Now()
	for b.Loop() {
		if err := s.EachResult(ctx, "big", runs.ResultQuery{}, func(r runs.Result) error {
			n++
			if n%1000 == 0 {
				peak.sample()
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "results/s")
	b.ReportMetric(float64(after.TotalAlloc-base.TotalAlloc)/float64(n), "B/result")
	b.ReportMetric(float64(peak.max)/(1<<20), "peak-heap-MiB")
}

// heapPeak samples the live heap (objects in use, as of the last GC
// cycle's marking plus what was allocated since).
type heapPeak struct {
	s   []metrics.Sample
	max uint64
}

func newHeapPeak() *heapPeak {
	return &heapPeak{s: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
}

func (h *heapPeak) sample() {
	metrics.Read(h.s)
	if v := h.s[0].Value.Uint64(); v > h.max {
		h.max = v
	}
}

// TestMain removes the benchmarks' database after the tests, and stops
// the PostgreSQL server the tests may have started.
func TestMain(m *testing.M) {
	code := dbtest.Main(m)
	if bigDir != "" {
		os.RemoveAll(bigDir)
	}
	os.Exit(code)
}
