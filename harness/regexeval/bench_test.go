package regexeval

import (
	"strings"
	"testing"
)

// benchResponse is a ~500-character response ending with the answer line.
var benchResponse = strings.Repeat("Let me work through this step by step, checking each part. ", 8) +
	"So the total is 1234.\nAnswer: 1234"

func benchmarkExtract(b *testing.B, opts Options, pattern, wantEngine string) {
	ev := New(opts)
	if _, _, engine, err := ev.patterns.extract(pattern, benchResponse); err != nil || engine != wantEngine {
		b.Fatalf("engine %s, err %v", engine, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, ok, _, err := ev.patterns.extract(pattern, benchResponse)
		if err != nil || !ok || got != "1234" {
			b.Fatalf("got %q %v %v", got, ok, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "extractions/s")
}

// BenchmarkExtractStdlib is the common case: an RE2 pattern, run by the
// standard library.
func BenchmarkExtractStdlib(b *testing.B) {
	b.Logf("response: %d characters", len(benchResponse))
	benchmarkExtract(b, Options{}, `Answer: (\d+)`, engineStdlib)
}

// BenchmarkExtractRegexp2 is the same extraction forced onto regexp2.
func BenchmarkExtractRegexp2(b *testing.B) {
	benchmarkExtract(b, Options{forceRegexp2: true}, `Answer: (\d+)`, engineRegexp2)
}

// BenchmarkExtractRegexp2LookAhead needs regexp2: an equivalent pattern
// with a look-ahead.
func BenchmarkExtractRegexp2LookAhead(b *testing.B) {
	benchmarkExtract(b, Options{}, `Answer: (\d+)(?!\d)`, engineRegexp2)
}

// BenchmarkEvaluate is a whole evaluation: extraction and a numeric
// comparison.
func BenchmarkEvaluate(b *testing.B) {
	ev := New(Options{})
	req := numericReq(benchResponse, `Answer: (\d+)`, false, nil)
	req.Test.Expected.Answer = "1234"
	b.ReportAllocs()
	for b.Loop() {
		if res, err := ev.Evaluate(b.Context(), req); err != nil || !res.Passed {
			b.Fatal(err, res.Details)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evaluations/s")
}
