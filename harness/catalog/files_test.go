package catalog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// awkwardStrings are values a YAML writer easily gets wrong: indicators,
// words YAML reads as other types, leading and trailing blanks, line
// breaks of every kind, control characters, non-ASCII text.
var awkwardStrings = []string{
	"plain", "with space", "a: b", "a #b", "#hash", "- dash", "-", "? q", "?q", "x:", ": x",
	"{a: 1}", "[1, 2]", "'single'", `"double"`, "it's", "&anchor", "*alias", "!tag", "!!str x",
	"%percent", "@at", "`tick`", "|pipe", ">fold", "<<", "a<<b", "A<<", "<<: x", "=", "~",
	"yes", "No", "ON", "off", "y", "n", "true", "False", "null", "NULL", "Null",
	"0", "4", "-3.5", "+1", "1,234", "1/2", "50%", "$12", "1e3", "0x1F", "0o17", "0b101", "1_000",
	".5", "1.", ".inf", "-.Inf", ".nan", "2024-01-01", "2001-12-14t21:59:43.10-05:00", "12:30",
	" leading", "trailing ", "  ", " ", "\ttab first", "tab\tinside", "tab last\t",
	"line\nbreak", "trailing newline\n", "two trailing\n\n", "\nleading newline", "\n", "\n\n",
	"a\n\nb", "a\n \nb", "  indented\nfirst line", "x\n  indented\nback", "trailing space \nnext",
	"last line blank\n  ", "crlf\r\nline", "cr\ronly", "\r", "mixed\r\nand\nbreaks",
	"tabs\n\tin a block\n", "code:\n    def f():\n        return 1\n",
	"--- doc", "---", "...", "a\n---\nb", "a\n...\nb", "# comment\nnot", "- item\n- item",
	"nul\x00byte", "bell\a", "esc\x1b[0m", "del\x7f", "bom\ufeff", "nbsp\u00a0", "nel\u0085x",
	"ls\u2028ps\u2029", "zwsp\u200b", "é", "中文", "emoji 😀", "\\", `\n literal backslash-n`,
	`Answer:\s*(?<answer>-?[\d,./%]+)`, `^(?i)b\)?$`, `{"a": [1, 2]}`,
}

// roundTripLevel writes a level file holding s in every string field,
// reads it back and writes it again.
func roundTripLevel(t *testing.T, s string) {
	t.Helper()
	l := harness.LevelConfig{DomainID: "d", Level: 3, SystemPrompt: s, SystemPromptMode: harness.PromptReplace,
		PassThreshold: 0.5}
	tests := []harness.Test{{ID: "t1", DomainID: "d", Level: 3, Name: s, Prompt: s,
		Expected: harness.Expected{Answer: s, Type: "exact",
			Arguments: map[string]any{s: s, "list": []any{s, 1.5}, "n": 7}}}}
	b1, err := encodeLevel(l, tests)
	if err != nil {
		t.Fatal(err)
	}
	l2, tests2, err := decodeLevel(b1, "d", 3)
	if err != nil {
		t.Fatalf("read back: %v\n%s", err, b1)
	}
	if l2.SystemPrompt != s || len(tests2) != 1 || tests2[0].Prompt != s || tests2[0].Name != s ||
		tests2[0].Expected.Answer != s {
		t.Fatalf("value changed: wrote %q, read system_prompt %q, prompt %q\n%s", s, l2.SystemPrompt, tests2[0].Prompt, b1)
	}
	if got, want := mustJSON(t, tests2[0].Expected.Arguments), mustJSON(t, tests[0].Expected.Arguments); got != want {
		t.Fatalf("arguments changed:\n%s\nwant:\n%s\nfile:\n%s", got, want, b1)
	}
	b2, err := encodeLevel(l2, tests2)
	if err != nil {
		t.Fatal(err)
	}
	if string(b1) != string(b2) {
		t.Fatalf("not stable under a round trip:\n%s\n---\n%s", b1, b2)
	}
}

func TestStringsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range awkwardStrings {
		t.Run(s, func(t *testing.T) { roundTripLevel(t, s) })
	}
}

// FuzzStringsRoundTrip checks the round trip of any valid UTF-8 string;
// its seeds run with the other tests. Run it with
// go test -fuzz FuzzStringsRoundTrip ./harness/catalog/
func FuzzStringsRoundTrip(f *testing.F) {
	for _, s := range awkwardStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || s == "" {
			t.Skip("definitions hold UTF-8 text (JSON requires it)")
		}
		roundTripLevel(t, s)
	})
}

// sameJSON compares two values the way clients see them.
func sameJSON(t *testing.T, got, want any) {
	t.Helper()
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("read back:\n%s\nwant:\n%s", g, w)
	}
}

func TestFileRoundTrip(t *testing.T) {
	t.Parallel()
	multi := "You are an expert.\nAnswer briefly.\n\nEnd with \"Answer: X\"."
	type roundTrip struct {
		name string
		// write encodes the value; read decodes a file and returns the
		// value and its re-encoding.
		write func() ([]byte, error)
		read  func([]byte) (any, []byte, error)
		want  any
		// has and hasNot are fragments the file must and must not hold.
		has, hasNot []string
	}
	domain := func(name string, d harness.Domain, has, hasNot []string) roundTrip {
		return roundTrip{name: "domain: " + name,
			write: func() ([]byte, error) { return encodeDomain(d) },
			read: func(b []byte) (any, []byte, error) {
				d, err := decodeDomain(b)
				if err != nil {
					return nil, nil, err
				}
				b2, err := encodeDomain(d)
				return d, b2, err
			}, want: d, has: has, hasNot: hasNot}
	}
	level := func(name string, l harness.LevelConfig, tests []harness.Test, has, hasNot []string) roundTrip {
		type levelFile struct {
			Level harness.LevelConfig
			Tests []harness.Test
		}
		return roundTrip{name: "level: " + name,
			write: func() ([]byte, error) { return encodeLevel(l, tests) },
			read: func(b []byte) (any, []byte, error) {
				l2, tests2, err := decodeLevel(b, l.DomainID, l.Level)
				if err != nil {
					return nil, nil, err
				}
				v := harness.Validator{}
				if err := v.Level(&l2); err != nil {
					return nil, nil, err
				}
				b2, err := encodeLevel(l2, tests2)
				return levelFile{l2, tests2}, b2, err
			}, want: levelFile{l, tests}, has: has, hasNot: hasNot}
	}
	evaluator := func(name string, e harness.EvaluatorConfig, has []string) roundTrip {
		return roundTrip{name: "evaluator: " + name,
			write: func() ([]byte, error) { return encodeEvaluator(e) },
			read: func(b []byte) (any, []byte, error) {
				e, err := decodeEvaluator(b)
				if err != nil {
					return nil, nil, err
				}
				b2, err := encodeEvaluator(e)
				return e, b2, err
			}, want: e, has: has}
	}
	tool := func(name string, x harness.ToolDefinition, has []string) roundTrip {
		return roundTrip{name: "tool: " + name,
			write: func() ([]byte, error) { return encodeTool(x) },
			read: func(b []byte) (any, []byte, error) {
				x, err := decodeTool(b)
				if err != nil {
					return nil, nil, err
				}
				b2, err := encodeTool(x)
				return x, b2, err
			}, want: x, has: has}
	}
	cases := []roundTrip{
		domain("every field", harness.Domain{ID: "math", Name: "Mathematics: the basics", Description: "Sums & fractions #1",
			EvaluatorID: "number", Enabled: true, SystemPrompt: multi, Icon: "🧮", Color: "#1A2b3C"},
			[]string{"id: math", "enabled: true", "system_prompt: |"}, nil),
		domain("disabled, minimal", harness.Domain{ID: "geo", Name: "Geo"},
			[]string{"enabled: false"}, []string{"description", "evaluator_id", "color", "icon"}),
		level("defaults are left out", harness.LevelConfig{DomainID: "math", Level: 1, SystemPromptMode: harness.PromptAppend,
			PassThreshold: harness.DefaultPassThreshold},
			[]harness.Test{{ID: "a", DomainID: "math", Level: 1, Prompt: "2 + 2?", Expected: harness.Expected{Answer: "4", Type: "numeric"}}},
			[]string{"tests:", "id: a"}, []string{"system_prompt_mode", "pass_threshold", "tools", "domain_id", "level:", "params"}),
		level("sampling parameters", harness.LevelConfig{DomainID: "math", Level: 3, SystemPromptMode: harness.PromptAppend,
			PassThreshold: harness.DefaultPassThreshold,
			Params:        &harness.Params{Temperature: ptr(0.7), TopP: ptr(1.0), MaxTokens: ptr(256), Seed: ptr(int64(1)<<62 + 1)}},
			[]harness.Test{},
			[]string{"params:\n  temperature: 0.7\n  top_p: 1\n  max_tokens: 256\n  seed: 4611686018427387905\n"}, nil),
		level("one sampling parameter", harness.LevelConfig{DomainID: "math", Level: 4, SystemPromptMode: harness.PromptAppend,
			PassThreshold: harness.DefaultPassThreshold, Params: &harness.Params{Temperature: ptr(0.0)}},
			[]harness.Test{}, []string{"params:\n  temperature: 0\n"}, []string{"top_p", "seed", "max_tokens"}),
		level("every field", harness.LevelConfig{DomainID: "math", Level: 2, SystemPrompt: multi, SystemPromptMode: harness.PromptPrepend,
			PassThreshold: 0.75, Tools: []string{"weather", "clock"}},
			[]harness.Test{
				{ID: "multi", DomainID: "math", Level: 2, Name: "Multi-line", Prompt: "First line\nsecond line\n  indented\n",
					Expected: harness.Expected{Answer: "1,234", Type: "numeric", Tolerance: ptr(0.01)}},
				{ID: "special", DomainID: "math", Level: 2, Prompt: `Quote "this" & 'that': #1 - [x] {y} é 😀`,
					Expected: harness.Expected{Answer: "yes", Type: "boolean"}, EvaluatorID: "judge", Tools: []string{"clock"}},
				{ID: "call", DomainID: "math", Level: 2, Prompt: "Weather in Paris?",
					Expected: harness.Expected{Answer: "get_weather", Type: "tool_call", Arguments: map[string]any{
						"city": "Paris", "days": 3, "units": map[string]any{"temp": "C", "wind": 1.5}, "flags": []any{true, nil},
						"eps": 1e-6, "huge": 1e21, "neg": -2.5e-7, "big": 123456789}}},
				{ID: "tiny", DomainID: "math", Level: 2, Prompt: "1/3?",
					Expected: harness.Expected{Answer: "0.333", Type: "numeric", Tolerance: ptr(1e-6)}},
			},
			[]string{"system_prompt_mode: prepend", "pass_threshold: 0.75", "prompt: |", "tolerance: 0.01"}, nil),
		level("zero threshold and no tests", harness.LevelConfig{DomainID: "math", Level: 0, SystemPromptMode: harness.PromptReplace},
			[]harness.Test{}, []string{"pass_threshold: 0", "tests: []"}, nil),
		level("threshold of one", harness.LevelConfig{DomainID: "math", Level: 5, SystemPromptMode: harness.PromptAppend, PassThreshold: 1},
			[]harness.Test{}, []string{"pass_threshold: 1"}, nil),
		evaluator("regex", harness.EvaluatorConfig{ID: "number", Name: "Number", Type: "regex",
			ExtractionRegex: `Answer:\s*(?<answer>-?[\d,./%]+)`, UsesPass2: true}, []string{"uses_pass2: true"}),
		evaluator("config map", harness.EvaluatorConfig{ID: "judge", Name: "Judge", Description: "Grades with a rubric.", Type: "judge",
			Config: map[string]any{"rubric": "Line one.\nLine two.", "weights": map[string]any{"accuracy": 0.7, "style": 0.3},
				"models": []any{"small", "large"}, "max_tokens": 256, "strict": false}},
			[]string{"config:", "max_tokens: 256"}),
		tool("nested mock_response and parameters", harness.ToolDefinition{ID: "weather", Name: "Weather", Description: "Weather now.",
			Function: harness.FunctionDef{Name: "get_weather", Description: "Returns the weather.",
				Parameters: map[string]any{"type": "object", "required": []any{"city"},
					"properties": map[string]any{"city": map[string]any{"type": "string", "description": "City: name"},
						"unit": map[string]any{"type": "string", "enum": []any{"c", "f"}}}}},
			MockResponse: map[string]any{"city": "Paris", "temperature": 21.5, "humidity": 40,
				"forecast": []any{map[string]any{"day": "mon", "sky": "sunny"}, map[string]any{"day": "tue", "sky": nil}}}},
			[]string{"mock_response:", "function:"}),
		tool("scalar mock_response", harness.ToolDefinition{ID: "echo", Name: "echo", Function: harness.FunctionDef{Name: "echo"},
			MockResponse: "true"}, nil),
		tool("list mock_response", harness.ToolDefinition{ID: "list", Name: "list", Function: harness.FunctionDef{Name: "list"},
			MockResponse: []any{1, "two", 3.5, []any{}, map[string]any{}}}, nil),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b1, err := tc.write()
			if err != nil {
				t.Fatal(err)
			}
			got, b2, err := tc.read(b1)
			if err != nil {
				t.Fatalf("read back: %v\n%s", err, b1)
			}
			if string(b1) != string(b2) {
				t.Fatalf("write → read → write changed the bytes:\n%s\n---\n%s", b1, b2)
			}
			sameJSON(t, got, tc.want)
			for _, frag := range tc.has {
				if !strings.Contains(string(b1), frag) {
					t.Errorf("file lacks %q:\n%s", frag, b1)
				}
			}
			for _, frag := range tc.hasNot {
				if strings.Contains(string(b1), frag) {
					t.Errorf("file holds %q:\n%s", frag, b1)
				}
			}
		})
	}
}

// TestHandWrittenFilesRoundTrip reads each testdata file, writes it in the
// catalog's form and checks that this form is stable and means the same.
func TestHandWrittenFilesRoundTrip(t *testing.T) {
	t.Parallel()
	root := filepath.Join("testdata", "definitions")
	l, err := readDir(os.DirFS(root), testRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.errs) != 0 {
		t.Fatalf("errors: %+v", l.errs)
	}
	files, err := render(&l.snap)
	if err != nil {
		t.Fatal(err)
	}
	layout, err := layoutFiles(os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(layout) {
		t.Fatalf("rendered %d files, the directory has %d", len(files), len(layout))
	}
	dir := t.TempDir()
	for rel, data := range files {
		writeFile(t, dir, rel, string(data))
	}
	l2, err := readDir(os.DirFS(dir), testRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(l2.errs) != 0 {
		t.Fatalf("errors: %+v", l2.errs)
	}
	sameJSON(t, l2.snap, l.snap)
	again, err := render(&l2.snap)
	if err != nil {
		t.Fatal(err)
	}
	for rel := range files {
		if string(again[rel]) != string(files[rel]) {
			t.Errorf("%s is not stable:\n%s\n---\n%s", rel, files[rel], again[rel])
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		read func() error
	}{
		{"empty domain", func() error { _, err := decodeDomain([]byte("  \n")); return err }},
		{"domain: bad YAML", func() error { _, err := decodeDomain([]byte("name: [x\n")); return err }},
		{"domain: enabled is not a boolean", func() error { _, err := decodeDomain([]byte("name: x\nenabled: maybe\n")); return err }},
		{"level: tests is not a list", func() error { _, _, err := decodeLevel([]byte("tests: 3\n"), "d", 1); return err }},
		{"level: threshold is not a number", func() error {
			_, _, err := decodeLevel([]byte("pass_threshold: high\ntests: []\n"), "d", 1)
			return err
		}},
		{"evaluator: a list", func() error { _, err := decodeEvaluator([]byte("- a\n- b\n")); return err }},
		{"tool: bad indentation", func() error { _, err := decodeTool([]byte("function:\n  name: a\n bad: b\n")); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.read(); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestDecodeDefaults(t *testing.T) {
	t.Parallel()
	d, err := decodeDomain([]byte("name: X\n"))
	if err != nil || !d.Enabled || d.ID != "" {
		t.Fatalf("domain %+v, %v", d, err)
	}
	l, tests, err := decodeLevel([]byte("tests:\n  - prompt: a\n  - id: named\n    prompt: b\n  - prompt: c\n"), "geo", 4)
	if err != nil {
		t.Fatal(err)
	}
	if l.PassThreshold != harness.DefaultPassThreshold || l.DomainID != "geo" || l.Level != 4 {
		t.Fatalf("level %+v", l)
	}
	if got := testIDs(tests); strings.Join(got, " ") != "geo-l4-1 named geo-l4-3" {
		t.Fatalf("ids %v", got)
	}
	for _, x := range tests {
		if x.DomainID != "geo" || x.Level != 4 {
			t.Fatalf("test %+v", x)
		}
	}
}

func TestParseLevelName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		n    int
		ok   bool
	}{
		{"level-1.yaml", 1, true},
		{"level-0.yaml", 0, true},
		{"level-42.yaml", 42, true},
		{"level-1000.yaml", 1000, true},
		{"level-1001.yaml", 0, false},
		{"level-01.yaml", 0, false},
		{"level--1.yaml", 0, false},
		{"level-+1.yaml", 0, false},
		{"level-.yaml", 0, false},
		{"level-1.yml", 0, false},
		{"level-1.yaml.bak", 0, false},
		{"level-x.yaml", 0, false},
		{"Level-1.yaml", 0, false},
		{"domain.yaml", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := parseLevelName(tc.name)
			if n != tc.n || ok != tc.ok {
				t.Fatalf("got %d, %v; want %d, %v", n, ok, tc.n, tc.ok)
			}
			if ok && filepath.Base(levelPath("d", n)) != tc.name {
				t.Fatalf("levelPath(d, %d) = %s", n, levelPath("d", n))
			}
		})
	}
}

func TestFileTx(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) string {
		dir := t.TempDir()
		writeFile(t, dir, "evaluators/keep.yaml", "name: keep\n")
		writeFile(t, dir, "evaluators/gone.yaml", "name: gone\n")
		return dir
	}
	t.Run("rollback puts everything back", func(t *testing.T) {
		dir := setup(t)
		before := dirHash(t, dir)
		tx := newFileTx(dir, nil)
		steps := []error{
			tx.write("evaluators/keep.yaml", []byte("name: changed\n")),
			tx.write("evaluators/keep.yaml", []byte("name: changed twice\n")),
			tx.remove("evaluators/gone.yaml"),
			tx.write("domains/new/level-1.yaml", []byte("tests: []\n")),
			tx.write("tools/new.yaml", []byte("function: {name: x}\n")),
			tx.remove("tools/never-existed.yaml"),
		}
		for i, err := range steps {
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if err := tx.rollback(); err != nil {
			t.Fatal(err)
		}
		if after := dirHash(t, dir); after != before {
			t.Fatalf("directory differs after rollback: %v", dirFiles(t, dir))
		}
	})
	t.Run("check refuses before anything is written", func(t *testing.T) {
		dir := setup(t)
		before := dirHash(t, dir)
		refuse := func(rel string, cur []byte, exists bool) error {
			if rel == "evaluators/keep.yaml" && exists && string(cur) == "name: keep\n" {
				return os.ErrPermission
			}
			return nil
		}
		tx := newFileTx(dir, refuse)
		if err := tx.write("evaluators/keep.yaml", []byte("x")); err != os.ErrPermission {
			t.Fatalf("err = %v", err)
		}
		if after := dirHash(t, dir); after != before {
			t.Fatal("directory changed")
		}
	})
	t.Run("writes are atomic and leave no temporary files", func(t *testing.T) {
		dir := setup(t)
		path := filepath.Join(dir, "evaluators", "keep.yaml")
		if err := writeAtomic(path, []byte("name: new\n")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("stat: %v, %v", fi, err)
		}
		files := dirFiles(t, dir)
		if len(files) != 2 || files["evaluators/keep.yaml"] != "name: new\n" {
			t.Fatalf("files %v", files)
		}
	})
}

// TestJSONNumbersKeepTheirFileForm checks that a number read from a file
// is written back in the same form after a trip through JSON (the cache,
// an HTTP client), which reads every number as a float64.
func TestJSONNumbersKeepTheirFileForm(t *testing.T) {
	t.Parallel()
	src := "tests:\n  - id: a\n    prompt: p\n    expected:\n      answer: f\n      type: tool_call\n      arguments:\n        big: 123456789\n        count: 3\n        neg: -40\n        ratio: 0.25\n        small: 1.0e-06\n"
	_, tests, err := decodeLevel([]byte(src), "d", 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(tests)
	var viaJSON []harness.Test
	if err := json.Unmarshal(b, &viaJSON); err != nil {
		t.Fatal(err)
	}
	for i := range viaJSON {
		viaJSON[i].DomainID, viaJSON[i].Level = "d", 1
	}
	out, err := encodeLevel(defaultLevel("d", 1), viaJSON)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != src {
		t.Fatalf("got:\n%s\nwant:\n%s", out, src)
	}
}
