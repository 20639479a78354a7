package examples

import (
	"os"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/dataset"
)

// TestDatasetSamples checks that the sample datasets import whole: every
// row becomes a test, none is refused.
func TestDatasetSamples(t *testing.T) {
	for _, tc := range []struct {
		file, format, preset, firstAnswer string
	}{
		{"datasets/gsm8k-sample.jsonl", dataset.JSONL, dataset.GSM8K, "29"},
		{"datasets/mmlu-sample.csv", dataset.CSV, dataset.MMLU, "A"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res, err := dataset.Parse(f, dataset.Options{Format: tc.format, Preset: tc.preset, DomainID: "samples", Level: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != 10 || len(res.Rows) != 10 || len(res.Errors) != 0 {
				t.Fatalf("%d rows, %d tests, errors %v", res.Total, len(res.Rows), res.Errors)
			}
			if got := res.Rows[0].Test.Expected.Answer; got != tc.firstAnswer {
				t.Fatalf("first answer %q, want %q", got, tc.firstAnswer)
			}
		})
	}
}
