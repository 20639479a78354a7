package catalog

import (
	"reflect"
	"testing"

	"github.com/goccy/go-yaml"
)

type encDoc struct {
	S    string         `yaml:"s"`
	L    []string       `yaml:"l,omitempty"`
	M    map[string]any `yaml:"m,omitempty"`
	Skip string         `yaml:"-"`
	Opt  string         `yaml:"opt,omitempty"`
	N    *float64       `yaml:"num,omitempty"`
	B    bool           `yaml:"b"`
	Sub  []encDoc       `yaml:"sub,omitempty"`
}

var trickyStrings = []string{
	"", "plain", "with space", "a: b", "a #b", "- x", "? x", "x:", "{x}", "[x]", "'q'", `"dq"`,
	"it's", "#hash", "&anchor", "*alias", "!tag", "%dir", "@at", "`tick`", "|pipe", ">fold",
	"true", "False", "yes", "NO", "on", "off", "y", "n", "null", "~", "NULL",
	"123", "-1", "+1", "1.5", ".5", "1e3", "0x1F", "0o17", "1_000", "2024-01-01", ".inf", "-.inf", ".nan",
	" leading", "trailing ", "\ttab", "a\tb", "line\r\nx", "nul\x00", "esc\x1b[0m", "bom\uFEFF",
	"u2028\u2028x", "emoji 😀", "é", "\\", `\b(?<answer>[A-E])\b`, "<<", "<<: x",
	"multi\nline", "multi\nline\n", "multi\nline\n\n", "\n", "\n\n", "  \n  ", "a\n\nb", "a\n \nb",
	" indented\nfirst", "x\n  indented\n", "trailing \nspace", "last\n  ", "\nleading newline",
	"a\r", "café\nmenu", "invalid \xff utf8",
}

func roundTrip(t *testing.T, in encDoc) {
	t.Helper()
	b1, err := encodeYAML(in)
	if err != nil {
		t.Fatal(err)
	}
	var out encDoc
	if err := yaml.Unmarshal(b1, &out); err != nil {
		t.Fatalf("read back: %v\n%s", err, b1)
	}
	b2, err := encodeYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(b1) != string(b2) {
		t.Fatalf("not stable:\n%s\n---\n%s", b1, b2)
	}
	if out.S != in.S || !reflect.DeepEqual(out.L, in.L) {
		t.Fatalf("changed: %q %q -> %q %q\n%s", in.S, in.L, out.S, out.L, b1)
	}
}

func TestEncodeYAMLStrings(t *testing.T) {
	t.Parallel()
	for _, s := range trickyStrings {
		if !validUTF8(s) {
			continue // JSON and YAML both need UTF-8; validation refuses the rest
		}
		t.Run(s, func(t *testing.T) {
			roundTrip(t, encDoc{S: s, L: []string{s, "x"}, Sub: []encDoc{{S: s, L: []string{s}}}})
			doc := encDoc{S: "k", M: map[string]any{s: s, "nested": map[string]any{"v": []any{s}}}}
			b, err := encodeYAML(doc)
			if err != nil {
				t.Fatal(err)
			}
			var out encDoc
			if err := yaml.Unmarshal(b, &out); err != nil {
				t.Fatalf("read back: %v\n%s", err, b)
			}
			if out.M[s] != s {
				t.Fatalf("map value %q read back as %q\n%s", s, out.M[s], b)
			}
		})
	}
}

func TestEncodeYAMLShapes(t *testing.T) {
	t.Parallel()
	half := 0.5
	doc := encDoc{
		S: "top", Skip: "never written", N: &half, B: true,
		M: map[string]any{
			"z": 1.0, "a": []any{1.5, "x", true, nil, map[string]any{}, []any{}},
			"m": map[string]any{"q": nil, "deep": map[string]any{"list": []any{map[string]any{"k": "v", "k2": 2.0}}}},
		},
		Sub: []encDoc{{S: "child", L: []string{"a", "b"}}, {S: "two"}},
	}
	got, err := encodeYAML(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := `s: top
m:
  a:
    - 1.5
    - x
    - true
    - null
    - {}
    - []
  m:
    deep:
      list:
        - k: v
          k2: 2
    q: null
  z: 1
num: 0.5
b: true
sub:
  - s: child
    l:
      - a
      - b
    b: false
  - s: two
    b: false
`
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	var back encDoc
	if err := yaml.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := encodeYAML(back)
	if string(again) != want {
		t.Fatalf("not stable:\n%s", again)
	}
}

func FuzzEncodeYAMLString(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !validUTF8(s) {
			return
		}
		roundTrip(t, encDoc{S: s, L: []string{s}})
	})
}
