package dataset_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/dataset"
)

// TestRowsLimitedLikeCreateTest checks that a row holding more text than
// a test created through the API may hold is refused, with an error that
// names its row and column, while the other rows are read.
func TestRowsLimitedLikeCreateTest(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	half := strings.Repeat("y", harness.MaxRecordBytes/2+1)
	jsonl := func(rows ...map[string]string) string {
		var b strings.Builder
		for _, r := range rows {
			line, _ := json.Marshal(r)
			b.Write(line)
			b.WriteByte('\n')
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, format, data string
		want               []string
	}{
		{"jsonl prompt", "jsonl", jsonl(map[string]string{"prompt": "1+1?", "answer": "2"}, map[string]string{"prompt": big, "answer": "4"}),
			[]string{`row 2: column "prompt": is 2097152 bytes`}},
		{"jsonl answer", "jsonl", jsonl(map[string]string{"question": "ok?", "target": big}),
			[]string{`row 1: column "target": is 2097152 bytes`}},
		{"csv prompt", "csv", "prompt,answer\n1+1?,2\n3+3?,6\n" + big + ",4\n",
			[]string{`row 3: column "prompt": is 2097152 bytes`}},
		{"csv answer", "csv", "input,answer\nhi," + big + "\n",
			[]string{`row 1: column "answer": is 2097152 bytes`}},
		{"together over the limit", "jsonl", jsonl(map[string]string{"prompt": half, "answer": half}),
			[]string{`row 1: column "prompt": is 524289 bytes`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := parse(t, tc.data, opts(tc.format))
			got := errorTexts(res)
			if len(got) != len(tc.want) {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(got[i], want) || !strings.Contains(got[i], "1048576") {
					t.Errorf("error %q, want it to start with %q and name the limit", got[i], want)
				}
			}
			if n := res.Total - len(res.Errors); len(res.Rows) != n {
				t.Errorf("%d rows read, want %d", len(res.Rows), n)
			}
			if slices.ContainsFunc(res.Rows, func(r dataset.Row) bool { return len(r.Test.Prompt) > harness.MaxRecordBytes }) {
				t.Error("a refused row was kept")
			}
		})
	}
	// Just under the limit is fine.
	res := parse(t, jsonl(map[string]string{"prompt": strings.Repeat("z", harness.MaxRecordBytes-1000), "answer": "1"}), opts("jsonl"))
	if len(res.Errors) != 0 || len(res.Rows) != 1 {
		t.Errorf("a test just under the limit: %q", errorTexts(res))
	}
}
