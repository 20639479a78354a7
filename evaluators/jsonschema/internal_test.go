package jsonschema

import (
	"fmt"
	"strings"
	"testing"
)

func TestFindJSON(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		wantText   string
		wantSource string
	}{
		{"whole object", ` {"a": 1} `, `{"a": 1}`, sourceResponse},
		{"whole scalar", `42`, `42`, sourceResponse},
		{"whole string", `"hi"`, `"hi"`, sourceResponse},
		{"json fence", "x\n```json\n[1, 2]\n```\ny", `[1, 2]`, sourceFence},
		{"second fence parses", "```text\nnot json\n```\n```json\n{\"b\": 2}\n```", `{"b": 2}`, sourceFence},
		{"fence on one line", "```{\"c\": 3}```", `{"c": 3}`, sourceFence},
		{"unclosed fence falls back to embedded", "```json\n{\"d\": 4}", `{"d": 4}`, sourceEmbedded},
		{"embedded after junk brackets", `see [1] {nope} then {"e": [5]} and {"f": 6}`, `[1]`, sourceEmbedded},
		{"embedded object first", `a {"e": [5]} b`, `{"e": [5]}`, sourceEmbedded},
		{"nothing", `no json here`, ``, sourceNone},
		{"empty", ``, ``, sourceNone},
		{"trailing text is not whole", `{"a": 1} extra`, `{"a": 1}`, sourceEmbedded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := findJSON(tt.in)
			if ok != (tt.wantSource != sourceNone) || got.text != tt.wantText || got.source != tt.wantSource {
				t.Errorf("findJSON(%q) = %q, %s, %v; want %q, %s", tt.in, got.text, got.source, ok, tt.wantText, tt.wantSource)
			}
		})
	}
}

// A long text of unbalanced brackets must not cost quadratic time: only
// maxJSONStarts candidates are tried.
func TestFindJSONBounded(t *testing.T) {
	in := strings.Repeat("{", 200_000) + `{"late": true}`
	if _, ok := findJSON(in); ok {
		t.Fatal("found JSON beyond maxJSONStarts candidates")
	}
}

func TestCache(t *testing.T) {
	c := newCache(3)
	for i := range 10 {
		if _, err := c.get(fmt.Sprintf(`{"maxLength": %d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.len(); n != 3 {
		t.Errorf("cache holds %d entries, want 3", n)
	}
	a, _ := c.get(`{"maxLength": 9}`)
	b, _ := c.get(`{"maxLength": 9}`)
	if a != b {
		t.Error("a cached schema was compiled again")
	}
	if _, err := c.get(`{"type": 1}`); err == nil {
		t.Error("bad schema compiled")
	}
}
