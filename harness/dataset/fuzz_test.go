package dataset_test

import (
	"bytes"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/dataset"
)

// FuzzParse feeds arbitrary data to every format and preset: Parse must
// not panic, and every test it returns must pass the validator with an
// id that harness.ValidID accepts.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"2+2?","answer":4}`,
		"\uFEFF{\"question\":\"q\",\"answer\":\"x\\n#### 1,000\"}\n\n",
		`{"question":"q","choices":["a","b","c","d"],"answer":2}`,
		"prompt,answer\n\"a\nb\",1\n",
		"q,a,b,c,d,B\n\"x\"y,1\n",
		"id;prompt;answer;type\nx;p;1;numeric\n",
		"\"unterminated\n",
		"{\"prompt\":\"\x00\",\"answer\":\"\xff\"}",
	} {
		f.Add([]byte(seed), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		o := dataset.Options{DomainID: "d", Level: 1, MaxRows: 1000}
		o.Format = []string{dataset.JSONL, dataset.CSV}[mode%2]
		o.Preset = []string{"", dataset.GSM8K, dataset.MMLU}[int(mode/2)%3]
		if o.Format == dataset.CSV && mode&8 != 0 {
			o.Delimiter = ";"
		}
		res, err := dataset.Parse(bytes.NewReader(data), o)
		if err != nil {
			return
		}
		bad := map[int]bool{}
		for _, e := range res.Errors {
			bad[e.Row] = true
		}
		if len(res.Rows)+len(bad) != res.Total {
			t.Fatalf("%d rows and %d refused of %d", len(res.Rows), len(bad), res.Total)
		}
		for _, row := range res.Rows {
			tt := row.Test
			if !harness.ValidID(tt.ID) {
				t.Fatalf("row %d: invalid id %q", row.Row, tt.ID)
			}
			if err := (harness.Validator{}).Test(&tt); err != nil {
				t.Fatalf("row %d: accepted test fails validation: %v", row.Row, err)
			}
		}
		for _, e := range res.Errors {
			if e.Row < 1 || e.Row > res.Total {
				t.Fatalf("row error %+v out of range", e)
			}
		}
	})
}
