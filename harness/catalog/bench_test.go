package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/internal/benchmem"
)

// The benchmarks' catalog: 10 domains × 10 levels × 100 tests. Run them
// with
//
//	go test -run '^$' -bench . -benchtime 5x ./harness/catalog/
//
// and record the figures in docs/performance.md.
const (
	benchDomains       = 10
	benchLevels        = 10
	benchTestsPerLevel = 100
	benchTests         = benchDomains * benchLevels * benchTestsPerLevel
)

// benchSnapshot returns 10,000 tests with a mix of expected types, with an
// evaluator and a tool they refer to.
func benchSnapshot() *harness.Snapshot {
	s := &harness.Snapshot{
		Evaluators: []harness.EvaluatorConfig{{ID: "number", Name: "Number", Type: harness.EvaluatorTypeRegex,
			ExtractionRegex: `Answer:\s*(?<answer>-?[\d,./%]+)`, UsesPass2: true}},
		Tools: []harness.ToolDefinition{{ID: "weather", Name: "Weather", Function: harness.FunctionDef{Name: "get_weather",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required": []any{"city"}}}, MockResponse: map[string]any{"temperature": 21.5, "sky": "sunny"}}},
	}
	for d := range benchDomains {
		domainID := fmt.Sprintf("domain-%02d", d)
		s.Domains = append(s.Domains, benchDomain(domainID))
		for l := 1; l <= benchLevels; l++ {
			s.Levels = append(s.Levels, benchLevel(domainID, l))
			for i := range benchTestsPerLevel {
				s.Tests = append(s.Tests, benchTest(domainID, l, i))
			}
		}
	}
	return s
}

func benchDomain(id string) harness.Domain {
	return harness.Domain{ID: id, Name: "Domain " + id, EvaluatorID: "number", Enabled: true,
		SystemPrompt: "You are careful.\nEnd with \"Answer: X\".", Color: "#336699"}
}

func benchLevel(domainID string, l int) harness.LevelConfig {
	return harness.LevelConfig{DomainID: domainID, Level: l, SystemPrompt: "Level prompt.",
		SystemPromptMode: harness.PromptAppend, PassThreshold: 0.6}
}

// benchTest is test i of a level: a mix of expected types.
func benchTest(domainID string, l, i int) harness.Test {
	t := harness.Test{ID: fmt.Sprintf("%s-l%d-t%03d", domainID, l, i), DomainID: domainID, Level: l,
		Name: fmt.Sprintf("Test %d", i)}
	switch i % 4 {
	case 0:
		t.Prompt = fmt.Sprintf("What is %d + %d?", i, l)
		t.Expected = harness.Expected{Answer: fmt.Sprint(i + l), Type: "numeric"}
	case 1:
		t.Prompt = fmt.Sprintf("Question %d.\nChoose one:\nA) yes\nB) no\nC) maybe", i)
		t.Expected = harness.Expected{Answer: "B", Type: "choice"}
	case 2:
		t.Prompt = fmt.Sprintf("Name the capital of country #%d: \"quoted\" text", i)
		t.Expected = harness.Expected{Answer: "Paris", Type: "exact"}
	case 3:
		t.Prompt = "What is the weather in Paris?"
		t.Expected = harness.Expected{Answer: "get_weather", Type: "tool_call",
			Arguments: map[string]any{"city": "Paris", "days": i}}
		t.Tools = []string{"weather"}
	}
	return t
}

// benchCatalog returns a catalog holding benchSnapshot.
func benchCatalog(b *testing.B) *Catalog {
	b.Helper()
	c := newCatalog(b)
	if _, err := c.Import(context.Background(), benchSnapshot(), false); err != nil {
		b.Fatal(err)
	}
	return c
}

func reportMS(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
}

// BenchmarkImport10kTests imports 10,000 tests into an empty catalog
// (merge=false): validation, 100 level files and the cache. Target: < 2 s.
func BenchmarkImport10kTests(b *testing.B) {
	ctx := context.Background()
	s := benchSnapshot()
	for b.Loop() {
		b.StopTimer()
		c := newCatalog(b)
		b.StartTimer()
		res, err := c.Import(ctx, s, false)
		if err != nil {
			b.Fatal(err)
		}
		if res.Total.Tests != benchTests {
			b.Fatalf("imported %d tests", res.Total.Tests)
		}
	}
	reportMS(b)
}

// BenchmarkListTestsOneDomain lists the 1,000 tests of one domain out of
// 10,000. Target: < 20 ms.
func BenchmarkListTestsOneDomain(b *testing.B) {
	ctx := context.Background()
	c := benchCatalog(b)
	for b.Loop() {
		ts, err := c.Tests(ctx, TestFilter{DomainID: "domain-03"})
		if err != nil {
			b.Fatal(err)
		}
		if len(ts) != benchTests/benchDomains {
			b.Fatalf("listed %d tests", len(ts))
		}
	}
	reportMS(b)
}

// writeLargeDir writes a definitions directory of benchDomains ×
// benchLevels × perLevel tests (benchTest), a level file at a time: the
// directory a generator or an import of a large data set leaves.
func writeLargeDir(b *testing.B, dir string, perLevel int) {
	b.Helper()
	snap := benchSnapshot()
	for _, e := range snap.Evaluators {
		data, err := encodeEvaluator(e)
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, dir, evaluatorPath(e.ID), string(data))
	}
	for _, t := range snap.Tools {
		data, err := encodeTool(t)
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, dir, toolPath(t.ID), string(data))
	}
	tests := make([]harness.Test, perLevel)
	for d := range benchDomains {
		domainID := fmt.Sprintf("domain-%02d", d)
		data, err := encodeDomain(benchDomain(domainID))
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, dir, domainPath(domainID), string(data))
		for l := 1; l <= benchLevels; l++ {
			for i := range perLevel {
				tests[i] = benchTest(domainID, l, i)
			}
			data, err := encodeLevel(benchLevel(domainID, l), tests)
			if err != nil {
				b.Fatal(err)
			}
			writeFile(b, dir, levelPath(domainID, l), string(data))
		}
	}
}

// BenchmarkSyncLarge syncs a directory of 100,000 tests in 100 level
// files (a million with GAUNTLET_SYNC_1M=1) into a SQLite cache:
//
//   - cold: opening a catalog over it with an empty database (every
//     file decoded and inserted);
//   - unchanged: a sync of the same directory again (every file read and
//     hashed, none decoded);
//   - one-file-changed: a sync after one level file changed.
//
// It reports the time of each and the peak of the Go heap in use
// (sampled) during it.
func BenchmarkSyncLarge(b *testing.B) {
	perLevel := 1000
	if os.Getenv("GAUNTLET_SYNC_1M") != "" {
		perLevel = 10000
	}
	tests := benchDomains * benchLevels * perLevel
	dir := filepath.Join(b.TempDir(), "definitions")
	writeLargeDir(b, dir, perLevel)
	ctx := context.Background()
	check := func(res *SyncResult, err error) {
		b.Helper()
		if err != nil || len(res.Errors) != 0 || res.Loaded.Tests != tests {
			b.Fatalf("sync: %v %+v", err, res)
		}
	}
	var c *Catalog
	top := b
	b.Run("cold", func(b *testing.B) {
		var heap float64
		for b.Loop() {
			b.StopTimer()
			db := openDB(top) // open for the other sub-benchmarks
			runtime.GC()
			peak := benchmem.SampleHeapInuse()
			b.StartTimer()
			cat, res, err := Open(ctx, Options{Dir: dir, DB: db})
			b.StopTimer()
			heap = max(heap, peak())
			check(res, err)
			c = cat
			b.StartTimer()
		}
		reportMS(b)
		b.ReportMetric(heap, "peak-heap-MiB")
	})
	if c == nil {
		b.Skip("cold did not run")
	}
	b.Run("unchanged", func(b *testing.B) {
		var heap float64
		for b.Loop() {
			runtime.GC()
			peak := benchmem.SampleHeapInuse()
			res, err := c.Sync(ctx)
			heap = max(heap, peak())
			check(res, err)
		}
		reportMS(b)
		b.ReportMetric(heap, "peak-heap-MiB")
	})
	b.Run("one-file-changed", func(b *testing.B) {
		var heap float64
		tests := make([]harness.Test, perLevel)
		n := 0
		for b.Loop() {
			b.StopTimer()
			n++
			for i := range perLevel {
				tests[i] = benchTest("domain-04", 5, i)
			}
			tests[0].Name = fmt.Sprintf("Changed %d", n)
			data, err := encodeLevel(benchLevel("domain-04", 5), tests)
			if err != nil {
				b.Fatal(err)
			}
			writeFile(b, dir, levelPath("domain-04", 5), string(data))
			runtime.GC()
			peak := benchmem.SampleHeapInuse()
			b.StartTimer()
			res, err := c.Sync(ctx)
			heap = max(heap, peak())
			check(res, err)
		}
		reportMS(b)
		b.ReportMetric(heap, "peak-heap-MiB")
	})
}

// BenchmarkSync10kTests rebuilds the cache from a directory of 10,000
// tests, every file decoded (the cache's record of its files is emptied
// before each sync, as in a database an older version made). Target:
// < 3 s.
func BenchmarkSync10kTests(b *testing.B) {
	ctx := context.Background()
	c := benchCatalog(b)
	for b.Loop() {
		b.StopTimer()
		if _, err := c.db.NewDelete().Model((*fileRow)(nil)).Where("1 = 1").Exec(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := c.Sync(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Errors) != 0 || res.Loaded.Tests != benchTests {
			b.Fatalf("sync: %+v", res)
		}
	}
	reportMS(b)
}
