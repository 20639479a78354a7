package catalog

import (
	"context"
	"fmt"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
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
		s.Domains = append(s.Domains, harness.Domain{ID: domainID, Name: fmt.Sprintf("Domain %d", d),
			EvaluatorID: "number", Enabled: true, SystemPrompt: "You are careful.\nEnd with \"Answer: X\".", Color: "#336699"})
		for l := 1; l <= benchLevels; l++ {
			s.Levels = append(s.Levels, harness.LevelConfig{DomainID: domainID, Level: l, SystemPrompt: "Level prompt.",
				SystemPromptMode: harness.PromptAppend, PassThreshold: 0.6})
			for i := range benchTestsPerLevel {
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
				s.Tests = append(s.Tests, t)
			}
		}
	}
	return s
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

// BenchmarkSync10kTests rebuilds the cache from a directory of 10,000
// tests. Target: < 3 s.
func BenchmarkSync10kTests(b *testing.B) {
	ctx := context.Background()
	c := benchCatalog(b)
	for b.Loop() {
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
