package csvsafe_test

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/internal/csvsafe"
)

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"=1+2":              "'=1+2",
		"+1":                "'+1",
		"-1":                "'-1",
		"@SUM(A1)":          "'@SUM(A1)",
		"\tx":               "'\tx",
		"\rx":               "'\rx",
		"\nx":               "\nx",
		" =1":               " =1",
		"'=1":               "'=1",
		"plain":             "plain",
		"a=b":               "a=b",
		"１":                 "１",
		"=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")",
	} {
		if got := csvsafe.Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWriter(t *testing.T) {
	records := [][]string{{"id", "text"}, {"1", "=cmd"}, {"2", "-3"}, {"3", "ok, \"quoted\""}}
	for _, tc := range []struct {
		name string
		raw  bool
		want [][]string
	}{
		{"safe", false, [][]string{{"id", "text"}, {"1", "'=cmd"}, {"2", "'-3"}, {"3", "ok, \"quoted\""}}},
		{"raw", true, records},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			w := csvsafe.NewWriter(&b, tc.raw)
			if err := w.WriteAll(records); err != nil {
				t.Fatal(err)
			}
			got, err := csv.NewReader(&b).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if !slices.Equal(got[i], tc.want[i]) {
					t.Errorf("record %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
			if records[1][1] != "=cmd" {
				t.Errorf("the caller's record changed: %q", records[1])
			}
		})
	}
}
