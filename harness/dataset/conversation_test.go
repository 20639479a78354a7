package dataset_test

import (
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/dataset"
)

// TestConversationColumns: a row with a "turns" or "messages" column (JSON)
// is a multi-turn test; a bad one is a row error naming the column.
func TestConversationColumns(t *testing.T) {
	jsonl := strings.Join([]string{
		`{"id": "a", "turns": [{"user": "My name is Ada."}, {"user": "My name?", "expected": "Ada"}]}`,
		`{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}], "type": "contains"}`,
		`{"id": "b", "turns": [{"user": "x", "expected": {"answer": "7", "type": "numeric"}}]}`,
		`{"id": "c", "turns": []}`,
		`{"id": "d", "turns": [{"expected": "x"}]}`,
		`{"id": "e", "turns": [{"user": "x", "expected": "y"}], "prompt": "p"}`,
		`{"id": "f", "messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}]}`,
		`{"id": "g", "turns": "not a list"}`,
		`{"id": "h", "turns": [{"user": "no expected"}]}`,
		`{"id": "p", "prompt": "1 + 1?", "answer": "2"}`,
	}, "\n")
	res, err := dataset.Parse(strings.NewReader(jsonl), dataset.Options{Format: dataset.JSONL, DomainID: "chat", Level: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("rows %+v, errors %+v", res.Rows, res.Errors)
	}
	a := res.Rows[0].Test
	if a.ID != "a" || a.Prompt != "" || len(a.Turns) != 2 || a.Turns[0].Expected != nil || a.Turns[1].Expected.Answer != "Ada" || a.Turns[1].Expected.Type != "exact" {
		t.Errorf("a = %+v", a)
	}
	m := res.Rows[1].Test
	if !strings.HasPrefix(m.ID, "d-") || len(m.Turns) != 2 || m.Turns[0].Expected.Answer != "Hello" || m.Turns[1].Expected.Answer != "4" || m.Turns[1].Expected.Type != "contains" {
		t.Errorf("messages row = %+v", m)
	}
	if b := res.Rows[2].Test; b.Turns[0].Expected.Type != "numeric" {
		t.Errorf("b = %+v", b)
	}
	if p := res.Rows[3].Test; p.Prompt != "1 + 1?" || p.Turns != nil {
		t.Errorf("p = %+v", p)
	}
	want := map[int]string{4: "turns", 5: "turns", 6: "prompt", 7: "messages", 8: "turns", 9: "turns"}
	got := map[int]string{}
	for _, e := range res.Errors {
		got[e.Row] = e.Column
	}
	for row, col := range want {
		if got[row] != col {
			t.Errorf("row %d: error column %q, want %q (errors %+v)", row, got[row], col, res.Errors)
		}
	}

	csv := "id,turns\nc1,\"[{\"\"user\"\": \"\"Hi\"\", \"\"expected\"\": \"\"Hello\"\"}]\"\n"
	res, err = dataset.Parse(strings.NewReader(csv), dataset.Options{Format: dataset.CSV, DomainID: "chat", Level: 1})
	if err != nil || len(res.Rows) != 1 || res.Rows[0].Test.Turns[0].Expected.Answer != "Hello" {
		t.Fatalf("csv: %+v, %v", res, err)
	}
}
