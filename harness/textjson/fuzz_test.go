package textjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/textjson"
)

// FuzzFind checks, for any bytes, that Find and Objects do not panic, that
// what they return is valid JSON located where they say, and that they
// allocate no more than a linear bound (the allocation a search that
// re-read the text at each candidate would exceed). Run it with
//
//	go test -fuzz=FuzzFind ./harness/textjson/
func FuzzFind(f *testing.F) {
	seeds := []string{
		``,
		`42`,
		`{"a": 1}`,
		` [1, 2] `,
		`{"a": 1} trailing`,
		"```json\n{\"a\": 1}\n```",
		"```\n[1]\n```",
		"```{\"c\": 3}```",
		"````markdown\n```json\n{\"e\": 5}\n```\n````",
		"```json\n{\"d\": 4}",
		"```jsonc title=\"x\"\n{}\n```",
		`He said "{" then {"s": "}{", "t": "\"}"}`,
		"\xff\xfe{\"s\": \"\xff\"}",
		"\x00{\x00}",
		`{nope} {"ok": true} [1`,
		strings.Repeat("[", 100) + strings.Repeat("1,", 100),
		strings.Repeat("```", 50),
		strings.Repeat(`{"k":`, 70) + `"x`,
		`{"score": 0.8, "reasoning": "fine"}`,
		"Score: 0.8",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		limit := uint64(12*len(s) + 8<<20)
		var v textjson.Value
		var ok bool
		if n := allocated(func() { v, ok = textjson.Find(s) }); n > limit {
			t.Errorf("Find allocated %d bytes for %d bytes of text", n, len(s))
		}
		if ok {
			checkValue(t, s, v)
			switch v.Source {
			case textjson.Whole:
				if v.Text != strings.TrimSpace(s) {
					t.Errorf("whole value %q is not the trimmed text", v.Text)
				}
			case textjson.Fence, textjson.Embedded:
			default:
				t.Errorf("unknown source %q", v.Source)
			}
		} else if json.Valid([]byte(strings.TrimSpace(s))) && strings.TrimSpace(s) != "" {
			t.Errorf("the whole text is JSON, but Find found nothing")
		}

		end := 0
		n := 0
		for o := range textjson.Objects(s) {
			checkValue(t, s, o)
			if o.Offset < end || o.Text[0] != '{' || o.Source != textjson.Embedded {
				t.Errorf("object %q at %d overlaps the previous one or is no object", o.Text, o.Offset)
			}
			end = o.Offset + len(o.Text)
			n++
		}
		if n > textjson.MaxStarts {
			t.Errorf("Objects yielded %d objects", n)
		}
	})
}

func checkValue(t *testing.T, s string, v textjson.Value) {
	t.Helper()
	if v.Offset < 0 || v.Offset+len(v.Text) > len(s) || s[v.Offset:v.Offset+len(v.Text)] != v.Text {
		t.Fatalf("value %q is not at offset %d", v.Text, v.Offset)
	}
	if !json.Valid([]byte(v.Text)) {
		t.Errorf("value %q is not valid JSON", v.Text)
	}
	if v.Text != strings.TrimSpace(v.Text) {
		t.Errorf("value %q has white space around it", v.Text)
	}
}
