package textjson_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/textjson"
)

func ExampleFind() {
	answer := "Here is the record:\n\n```json\n{\"name\": \"Ada\", \"born\": 1815}\n```\n"
	v, ok := textjson.Find(answer)
	fmt.Println(ok, v.Source, v.Text)

	var rec struct {
		Name string `json:"name"`
		Born int    `json:"born"`
	}
	if err := json.Unmarshal([]byte(v.Text), &rec); err != nil {
		fmt.Println(err)
	}
	fmt.Println(rec.Name, rec.Born)
	// Output:
	// true fence {"name": "Ada", "born": 1815}
	// Ada 1815
}

func ExampleObjects() {
	reply := `First {"score": 0.2} then, on reflection, {"score": 0.9, "reason": "cites {sources}"}.`
	for v := range textjson.Objects(reply) {
		fmt.Println(v.Offset, v.Text)
	}
	// Output:
	// 6 {"score": 0.2}
	// 42 {"score": 0.9, "reason": "cites {sources}"}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   string
		source textjson.Source // "" when nothing is found
	}{
		// The whole text.
		{"whole object", " {\"a\": 1} \n", `{"a": 1}`, textjson.Whole},
		{"whole array", `[1, 2]`, `[1, 2]`, textjson.Whole},
		{"whole number", `42`, `42`, textjson.Whole},
		{"whole string", `"hi"`, `"hi"`, textjson.Whole},
		{"whole literal", "\ttrue\n", `true`, textjson.Whole},
		{"whole with trailing text is not whole", `{"a": 1} extra`, `{"a": 1}`, textjson.Embedded},
		{"two values are not whole", `{"a": 1} {"b": 2}`, `{"a": 1}`, textjson.Embedded},

		// Fenced blocks.
		{"json fence", "x\n```json\n[1, 2]\n```\ny", `[1, 2]`, textjson.Fence},
		{"JSON fence, upper case", "```JSON\n{\"a\": 1}\n```", `{"a": 1}`, textjson.Fence},
		{"fence with no info string", "```\n{\"a\": 1}\n```", `{"a": 1}`, textjson.Fence},
		{"fence with a long info string", "```jsonc title=\"x.json\" \n{\"a\": 1}\n```", `{"a": 1}`, textjson.Fence},
		{"second fence parses", "```text\nnot json\n```\n```json\n{\"b\": 2}\n```", `{"b": 2}`, textjson.Fence},
		{"fence on one line", "```{\"c\": 3}```", `{"c": 3}`, textjson.Fence},
		{"fence whose first line is JSON", "```{\"c\":\n3}\n```", "{\"c\":\n3}", textjson.Fence},
		{"string on the opening line is kept", "```\"quoted\"\n```", `"quoted"`, textjson.Fence},
		{"scalar in a fence", "The answer:\n```\n42\n```", `42`, textjson.Fence},
		{"unclosed fence is no block", "```json\n{\"d\": 4}", `{"d": 4}`, textjson.Embedded},
		{"nested fences", "````markdown\n```json\n{\"e\": 5}\n```\n````", `{"e": 5}`, textjson.Fence},
		{"a longer closing fence", "```json\n{\"f\": 6}\n`````\nmore", `{"f": 6}`, textjson.Fence},
		{"fence inside a JSON string", "```json\n{\"code\": \"```x```\"}\n```",
			// The closing fence is the first run after the opening one:
			// the string's fences split the block, so the object is
			// found amid the text instead.
			"{\"code\": \"```x```\"}", textjson.Embedded},
		{"empty fence then embedded", "```\n```\n{\"g\": 7}", `{"g": 7}`, textjson.Embedded},

		// Embedded values.
		{"embedded object", `a {"e": [5]} b`, `{"e": [5]}`, textjson.Embedded},
		{"embedded after junk brackets", `see [1] {nope} then {"e": [5]}`, `[1]`, textjson.Embedded},
		{"first that parses", `{nope} then {"e": [5]} and {"f": 6}`, `{"e": [5]}`, textjson.Embedded},
		{"braces inside strings", `He said "{" and "}" then {"s": "}{][", "t": "\"}"} ok`, `{"s": "}{][", "t": "\"}"}`, textjson.Embedded},
		{"quote in prose before", `it's "x {"a": 1}`, `{"a": 1}`, textjson.Embedded},
		{"unbalanced prose brace", `{ a brace, then {"k": true}`, `{"k": true}`, textjson.Embedded},
		{"invalid UTF-8 inside a string", "ok {\"s\": \"\xff\xfe\"} ok", "{\"s\": \"\xff\xfe\"}", textjson.Embedded},
		{"invalid UTF-8 around", "\xff\xfe{\"a\": 1}\xff", `{"a": 1}`, textjson.Embedded},
		{"NUL in the text", "\x00{\"a\": 1}\x00", `{"a": 1}`, textjson.Embedded},

		// Nothing.
		{"no JSON", `no json here`, ``, ""},
		{"empty", ``, ``, ""},
		{"white space", " \n\t", ``, ""},
		{"only brackets", `{[}]`, ``, ""},
		{"control character in a string", "{\"a\": \"x\x01\"}", ``, ""},
		{"number amid text is not embedded", `the answer is 42`, ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := textjson.Find(tt.in)
			if ok != (tt.source != "") || got.Text != tt.want || got.Source != tt.source {
				t.Fatalf("Find(%q) = %q, %q, %v; want %q, %q", tt.in, got.Text, got.Source, ok, tt.want, tt.source)
			}
			if ok && tt.in[got.Offset:got.Offset+len(got.Text)] != got.Text {
				t.Errorf("Offset %d does not locate %q", got.Offset, got.Text)
			}
		})
	}
}

func TestObjects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"none", `nothing [1, 2]`, nil},
		{"one", `x {"a": 1} y`, []string{`{"a": 1}`}},
		{"nested ones are not separate", `{"a": {"b": 1}} {"c": 2}`, []string{`{"a": {"b": 1}}`, `{"c": 2}`}},
		{"in an array", `[{"a": 1}, {"b": 2}]`, []string{`{"a": 1}`, `{"b": 2}`}},
		{"in fences", "```json\n{\"a\": 1}\n```\n```\n{\"b\": 2}\n```", []string{`{"a": 1}`, `{"b": 2}`}},
		{"skips what does not parse", `{bad} {"ok": true} {"also": "}"}`, []string{`{"ok": true}`, `{"also": "}"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for v := range textjson.Objects(tt.in) {
				if v.Source != textjson.Embedded || tt.in[v.Offset:v.Offset+len(v.Text)] != v.Text {
					t.Errorf("bad value %+v", v)
				}
				got = append(got, v.Text)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Objects(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	// Stopping early is fine.
	for range textjson.Objects(`{"a": 1} {"b": 2}`) {
		break
	}
}

// At most MaxStarts candidate positions are tried.
func TestStartsAreBounded(t *testing.T) {
	junk := strings.Repeat("{x ", textjson.MaxStarts)
	if v, ok := textjson.Find(junk + `{"late": true}`); ok {
		t.Errorf("found %q beyond MaxStarts candidates", v.Text)
	}
	if v, ok := textjson.Find(strings.Repeat("{x ", textjson.MaxStarts-1) + `{"in": true}`); !ok || v.Text != `{"in": true}` {
		t.Errorf("the last candidate was not tried: %q, %v", v.Text, ok)
	}
	n := 0
	for range textjson.Objects(strings.Repeat(`{} `, 10*textjson.MaxStarts)) {
		n++
	}
	if n != textjson.MaxStarts {
		t.Errorf("Objects yielded %d objects, want MaxStarts", n)
	}
}

// At most MaxFences fenced blocks are tried.
func TestFencesAreBounded(t *testing.T) {
	junk := strings.Repeat("```\nnot json\n```\n", textjson.MaxFences)
	if v, _ := textjson.Find(junk + "```\n[1]\n```"); v.Source == textjson.Fence {
		t.Errorf("a fence beyond MaxFences was tried: %+v", v)
	}
	junk = strings.Repeat("```\nnot json\n```\n", textjson.MaxFences-1)
	if v, _ := textjson.Find(junk + "```\n[1]\n```"); v.Source != textjson.Fence {
		t.Errorf("the last fence was not tried: %+v", v)
	}
}

// Huge inputs built to make a naive search quadratic end, with the
// answer a linear search gives or none. The bound on the work itself is
// checked in the package's internal test.
func TestHugeInputs(t *testing.T) {
	const size = 4 << 20
	inputs := map[string]string{
		"unclosed arrays":     strings.Repeat("[1,", size/3),
		"long unclosed lists": strings.Repeat("[", 2*textjson.MaxStarts) + strings.Repeat("1,", size/2),
		"long unclosed keys":  strings.Repeat(`{"k":`, 2*textjson.MaxStarts) + `"` + strings.Repeat("x", size),
		"deep nesting":        strings.Repeat("[", size),
		"unterminated string": `{"a": "` + strings.Repeat("x", size),
		"unclosed fences":     strings.Repeat("```{", size/4),
		"paired fences":       strings.Repeat("```\n{\n```\n", size/10),
		"growing fences":      growingFences(size),
		"braces":              strings.Repeat("{", size),
		"objects":             strings.Repeat(`{"a":1}`, size/7),
		"invalid UTF-8":       strings.Repeat("\xff{\xfe[", size/4),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			// The decoder's buffers grow with what it reads, so the bytes
			// allocated measure the work: a search that read MaxStarts
			// candidates to the end of the text would allocate over
			// MaxStarts times its length. The searches may read twice the
			// length plus 1 MiB, which growing buffers allocate up to
			// four times over, besides a copy for the whole-text check.
			limit := uint64(12*len(in) + 8<<20)
			var v textjson.Value
			var ok bool
			if n := allocated(func() { v, ok = textjson.Find(in) }); n > limit {
				t.Errorf("Find allocated %d bytes for %d bytes of text", n, len(in))
			}
			if ok && !json.Valid([]byte(v.Text)) {
				t.Errorf("found invalid JSON %.40q", v.Text)
			}
			n := allocated(func() {
				for v := range textjson.Objects(in) {
					if !json.Valid([]byte(v.Text)) {
						t.Errorf("Objects yielded invalid JSON %.40q", v.Text)
					}
				}
			})
			if n > limit+uint64(len(in)) { // json.Valid's copies
				t.Errorf("Objects allocated %d bytes for %d bytes of text", n, len(in))
			}
		})
	}
	// A large value is still found whole, fenced or embedded.
	big := `{"list": [` + strings.Repeat(`"item",`, size/7) + `"end"]}`
	for _, in := range []string{big, "```json\n" + big + "\n```", "The data: " + big + " -- done."} {
		if v, ok := textjson.Find(in); !ok || v.Text != big {
			t.Errorf("a %d-byte value was not found (%v, %s)", len(big), ok, v.Source)
		}
	}
}

func growingFences(size int) string {
	var b strings.Builder
	for n := 3; b.Len() < size; n++ {
		b.WriteString(strings.Repeat("`", n%200+3))
		b.WriteString("\n{x}\n")
	}
	return b.String()
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
