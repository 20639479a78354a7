package catalog

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestChunkedDecodeMatchesWhole: wherever a level file decodes test by
// test, it decodes to exactly what the whole file decodes to, and it
// never decodes where the whole file does not (that file's error comes
// from the whole decode, with its line). Checked on every level file of
// the repository, on files the package's emitter writes of awkward
// strings, and on hand-written shapes: anchors and aliases across tests,
// flow sequences, comments and blank lines anywhere, block scalars whose
// lines look like items, quoted scalars running over lines, CRLF, a
// sequence at column 0, keys after the tests, errors in one test.
func TestChunkedDecodeMatchesWhole(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{}
	for _, root := range []string{"../../examples", "testdata", "../../cmd/gauntlet/testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "level-") || !strings.HasSuffix(p, ".yaml") {
				return err
			}
			data, err := os.ReadFile(p)
			files[p] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 10 {
		t.Fatalf("only %d level files found", len(files))
	}
	strs := append(append([]string{}, awkwardStrings...), trickyStrings...)
	for i := 0; i < len(strs); i += 7 {
		var tests []harness.Test
		for j, s := range strs[i:min(i+7, len(strs))] {
			tests = append(tests, harness.Test{ID: fmt.Sprintf("t%d", j), Name: s, Prompt: s + "\n- " + s + "\n  - x",
				Expected: harness.Expected{Answer: s, Type: "exact"}})
		}
		data, err := encodeLevel(harness.LevelConfig{SystemPrompt: strs[i], SystemPromptMode: harness.PromptAppend}, tests)
		if err != nil {
			t.Fatal(err)
		}
		files[fmt.Sprintf("emitted-%d", i)] = data
	}
	const two = "- id: a\n  prompt: one\n  expected: {answer: \"1\", type: exact}\n- id: b\n  prompt: two\n  expected: {answer: \"2\", type: exact}\n"
	for name, text := range map[string]string{
		"column 0":         "system_prompt: s\ntests:\n" + two,
		"indented":         "tests:\n" + indentBy(two, "  ") + "pass_threshold: 0.5\n",
		"comments":         "# top\ntests:   # the tests\n\n  # first\n" + indentBy(two, "  ") + "# between\n\n",
		"crlf":             strings.ReplaceAll("tests:\n"+indentBy(two, "  "), "\n", "\r\n"),
		"anchor across":    "tests:\n  - id: a\n    prompt: &p hello\n  - id: b\n    prompt: *p\n",
		"anchor in head":   "system_prompt: &s hi\ntests:\n  - id: a\n    prompt: *s\n",
		"merge key":        "tests:\n  - &base\n    id: a\n    prompt: x\n  - <<: *base\n    id: b\n",
		"flow sequence":    "tests: [{id: a, prompt: x}, {id: b, prompt: y}]\n",
		"flow over lines":  "tests:\n  [\n  {id: a, prompt: x},\n  {id: b, prompt: y}]\n",
		"block scalar":     "tests:\n  - id: a\n    prompt: |\n      - id: fake\n        prompt: no\n  - id: b\n    prompt: y\n",
		"quoted lines":     "tests:\n  - id: a\n    prompt: \"one\n      - two\"\n  - id: b\n    prompt: y\n",
		"quoted low":       "tests:\n  - id: a\n    prompt: \"one\n  - id: two\"\n  - id: b\n    prompt: y\n",
		"dash alone":       "tests:\n  -\n    id: a\n    prompt: x\n  -\n    id: b\n    prompt: y\n",
		"unknown key":      "tests:\n  - id: a\n    promt: x\n  - id: b\n    prompt: y\n",
		"duplicate key":    "tests:\n  - id: a\n    prompt: x\n    prompt: z\n",
		"two tests keys":   "tests:\n  - id: a\n    prompt: x\ntests:\n  - id: b\n    prompt: y\n",
		"document marker":  "---\ntests:\n  - id: a\n    prompt: x\n",
		"tab indent":       "tests:\n\t- id: a\n",
		"not a sequence":   "tests:\n  id: a\n",
		"no tests":         "system_prompt: x\n",
		"empty item":       "tests:\n  -\n  - id: b\n    prompt: y\n",
		"nested list":      "tools:\n  - weather\n  - clock\ntests:\n  - id: a\n    prompt: x\n    expected: {answer: \"1\", type: exact}\n  - id: b\n    expected:\n      answer: \"3\"\n      type: exact\n",
		"bad answer":       "tests:\n  - id: a\n    prompt: x\n    expected: {answer: [\"1\", \"2\"], type: choice}\n",
		"head after":       "tests:\n  - id: a\n    prompt: x\nsystem_prompt: after\nsystem_prompt_mode: replace\n",
		"wrong head value": "pass_threshold: lots\ntests:\n  - id: a\n    prompt: x\n",
		"deeper items":     "tests:\n    - id: a\n      prompt: x\n    - id: b\n      prompt: y\n",
	} {
		files["shape "+name] = []byte(text)
	}
	chunked := 0
	for name, data := range files {
		got, ok := decodeTestsChunked(data)
		var want levelDoc
		err := unmarshal(data, &want)
		switch {
		case ok && err != nil:
			t.Errorf("%s: decoded test by test, but whole it fails: %v", name, err)
		case ok && !reflect.DeepEqual(got, want):
			t.Errorf("%s: test by test\n%+v\nwhole\n%+v", name, got, want)
		case ok:
			chunked++
		}
	}
	if chunked < len(files)/2 {
		t.Errorf("only %d of %d files decoded test by test", chunked, len(files))
	}
	// The shapes that must take the whole path.
	for _, name := range []string{"anchor across", "anchor in head", "flow sequence", "flow over lines", "document marker", "tab indent",
		"not a sequence", "no tests", "unknown key", "duplicate key", "two tests keys", "bad answer"} {
		if _, ok := decodeTestsChunked(files["shape "+name]); ok {
			t.Errorf("%s: decoded test by test", name)
		}
	}
	for _, name := range []string{"column 0", "indented", "comments", "crlf", "block scalar", "dash alone", "nested list", "head after", "deeper items"} {
		if _, ok := decodeTestsChunked(files["shape "+name]); !ok {
			t.Errorf("%s: not decoded test by test", name)
		}
	}
}

func indentBy(s, by string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = by + l
		}
	}
	return strings.Join(lines, "")
}
