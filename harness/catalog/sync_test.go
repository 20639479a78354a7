package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// copyDefinitions copies testdata/definitions (hand-written files) to a
// temporary directory and returns it.
func copyDefinitions(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "definitions")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "definitions"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func doSync(t testing.TB, c *Catalog) *SyncResult {
	t.Helper()
	res, err := c.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func export(t testing.TB, c *Catalog) *harness.Snapshot {
	t.Helper()
	s, err := c.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The counts of testdata/definitions.
var testdataCounts = Counts{Domains: 2, Levels: 3, Tests: 6, Evaluators: 2, Tools: 1}

func TestSyncLoadsHandWrittenFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, res := openAt(t, copyDefinitions(t))
	if len(res.Errors) != 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	if res.Loaded != testdataCounts {
		t.Fatalf("loaded %+v, want %+v", res.Loaded, testdataCounts)
	}
	checks := []struct {
		name  string
		check func() error
	}{
		{"domain", func() error {
			d, err := c.Domain(ctx, "math")
			want := harness.Domain{ID: "math", Name: "Mathematics", Description: "Arithmetic and algebra.",
				EvaluatorID: "number", Enabled: true, SystemPrompt: "You are a careful mathematician.\nEnd with \"Answer: <number>\".\n",
				Icon: "calculator", Color: "#1A2B3C"}
			if err != nil || d != want {
				return fmt.Errorf("got %+v, %v; want %+v", d, err, want)
			}
			return nil
		}},
		{"disabled domain", func() error {
			d, err := c.Domain(ctx, "geo")
			if err != nil || d.Enabled {
				return fmt.Errorf("got %+v, %v", d, err)
			}
			return nil
		}},
		{"evaluator id from the file name, config map", func() error {
			e, err := c.Evaluator(ctx, "judge")
			w, _ := e.Config["weights"].(map[string]any)
			if err != nil || e.Type != "regex" || w["accuracy"] != 0.7 || len(e.Config["models"].([]any)) != 2 {
				return fmt.Errorf("got %+v, %v", e, err)
			}
			return nil
		}},
		{"evaluator regex", func() error {
			e, err := c.Evaluator(ctx, "number")
			if err != nil || e.ExtractionRegex != `Answer:\s*(?<answer>-?[\d,./%]+)` || !e.UsesPass2 {
				return fmt.Errorf("got %+v, %v", e, err)
			}
			return nil
		}},
		{"tool with nested mock_response", func() error {
			tl, err := c.Tool(ctx, "weather")
			mock, _ := tl.MockResponse.(map[string]any)
			conds, _ := mock["conditions"].([]any)
			props, _ := tl.Function.Parameters["properties"].(map[string]any)
			if err != nil || len(conds) != 2 || mock["temperature"] != 21.5 || len(props) != 2 {
				return fmt.Errorf("got %+v, %v", tl, err)
			}
			return nil
		}},
		{"level configuration", func() error {
			l, err := c.Level(ctx, "math", 2)
			want := harness.LevelConfig{DomainID: "math", Level: 2, SystemPrompt: "Show your work.",
				SystemPromptMode: harness.PromptPrepend, PassThreshold: 0.75, Tools: []string{}}
			if err != nil || !reflect.DeepEqual(l, want) {
				return fmt.Errorf("got %+v, %v; want %+v", l, err, want)
			}
			return nil
		}},
		{"level defaults", func() error {
			l, err := c.Level(ctx, "math", 1)
			if err != nil || l.SystemPromptMode != harness.PromptAppend || l.PassThreshold != harness.DefaultPassThreshold {
				return fmt.Errorf("got %+v, %v", l, err)
			}
			return nil
		}},
		{"tests in file order", func() error {
			ts, err := c.Tests(ctx, TestFilter{})
			want := []string{"capital", "weather-call", "add-small", "add-large", "half", "is-prime"}
			if err != nil || !slices.Equal(testIDs(ts), want) {
				return fmt.Errorf("got %v, %v; want %v", testIDs(ts), err, want)
			}
			return nil
		}},
		{"multi-line prompt and tolerance", func() error {
			h, err := c.Test(ctx, "half")
			a, _ := c.Test(ctx, "add-large")
			if err != nil || h.Prompt != "What is one half\nas a fraction?" || a.Expected.Tolerance == nil || *a.Expected.Tolerance != 0.001 {
				return fmt.Errorf("got %+v and %+v, %v", h, a, err)
			}
			return nil
		}},
		{"tool_call with arguments", func() error {
			x, err := c.Test(ctx, "weather-call")
			if err != nil || x.Expected.Arguments["city"] != "Paris" || x.EvaluatorID != "judge" || !slices.Equal(x.Tools, []string{"weather"}) {
				return fmt.Errorf("got %+v, %v", x, err)
			}
			return nil
		}},
		{"a quoted yes stays a string", func() error {
			x, err := c.Test(ctx, "is-prime")
			if err != nil || x.Expected.Answer != "yes" {
				return fmt.Errorf("got %+v, %v", x, err)
			}
			return nil
		}},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("sync is idempotent", func(t *testing.T) {
		before := stateOf(t, c)
		if res := doSync(t, c); len(res.Errors) != 0 || res.Loaded != testdataCounts {
			t.Fatalf("second sync: %+v", res)
		}
		assertUnchanged(t, c, before)
	})
	t.Run("API writes to hand-written files", func(t *testing.T) {
		if _, err := c.UpdateTest(ctx, "add-small", func(x *harness.Test) error { x.Name = "Tiny sum"; return nil }); err != nil {
			t.Fatal(err)
		}
		f := readFile(t, c, "domains/math/level-1.yaml")
		if !strings.Contains(f, "Tiny sum") || !strings.Contains(f, "add-large") || strings.Contains(f, "# Level 1") {
			t.Fatalf("level-1.yaml:\n%s", f)
		}
		want := exportJSON(t, c)
		if res := doSync(t, c); len(res.Errors) != 0 {
			t.Fatalf("sync: %+v", res)
		}
		if got := exportJSON(t, c); got != want {
			t.Fatalf("after sync:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestSyncPicksUpHandEdits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		edit  func(t *testing.T, dir string)
		check func(t *testing.T, c *Catalog)
	}{
		{"a new domain with a level", func(t *testing.T, dir string) {
			writeFile(t, dir, "domains/history/domain.yaml", "name: History\ncolor: '#AABBCC'\n")
			writeFile(t, dir, "domains/history/level-3.yaml", "tests:\n  - id: wwii\n    prompt: When did WWII end?\n    expected: {answer: '1945', type: integer}\n")
		}, func(t *testing.T, c *Catalog) {
			d, err := c.Domain(ctx, "history")
			if err != nil || d.Name != "History" || !d.Enabled || d.Color != "#AABBCC" {
				t.Fatalf("got %+v, %v", d, err)
			}
			x, err := c.Test(ctx, "wwii")
			if err != nil || x.DomainID != "history" || x.Level != 3 || x.Expected.Answer != "1945" {
				t.Fatalf("got %+v, %v", x, err)
			}
		}},
		{"a new evaluator and tool", func(t *testing.T, dir string) {
			writeFile(t, dir, "evaluators/letters.yaml", "name: Letters\nextraction_regex: '\\b([A-E])\\b'\n")
			writeFile(t, dir, "tools/clock.yaml", "function: {name: now}\n")
		}, func(t *testing.T, c *Catalog) {
			if e, err := c.Evaluator(ctx, "letters"); err != nil || e.ExtractionRegex != `\b([A-E])\b` || e.Type != "regex" {
				t.Fatalf("got %+v, %v", e, err)
			}
			if tl, err := c.Tool(ctx, "clock"); err != nil || tl.Name != "now" {
				t.Fatalf("got %+v, %v", tl, err)
			}
		}},
		{"an edited test", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "domains", "math", "level-1.yaml")
			b, _ := os.ReadFile(path)
			writeFile(t, dir, "domains/math/level-1.yaml", strings.Replace(string(b), "What is 2 + 2?", "What is 2 + 5?", 1))
		}, func(t *testing.T, c *Catalog) {
			if x, err := c.Test(ctx, "add-small"); err != nil || x.Prompt != "What is 2 + 5?" {
				t.Fatalf("got %+v, %v", x, err)
			}
		}},
		{"a test added and one removed in an existing file", func(t *testing.T, dir string) {
			writeFile(t, dir, "domains/math/level-1.yaml", "tests:\n  - id: mul\n    prompt: 6 x 7?\n    expected: {answer: '42', type: integer}\n  - id: add-small\n    prompt: 2 + 2?\n    expected: {answer: '4'}\n")
		}, func(t *testing.T, c *Catalog) {
			ts, _ := c.Tests(ctx, TestFilter{DomainID: "math", Level: ptr(1)})
			if ids := testIDs(ts); !slices.Equal(ids, []string{"mul", "add-small"}) {
				t.Fatalf("tests = %v", ids)
			}
			if _, err := c.Test(ctx, "add-large"); !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("add-large: %v", err)
			}
		}},
		{"tests without ids get ids from their place", func(t *testing.T, dir string) {
			writeFile(t, dir, "domains/geo/level-4.yaml", "tests:\n  - prompt: Tallest mountain?\n    expected: {answer: Everest}\n")
		}, func(t *testing.T, c *Catalog) {
			if x, err := c.Test(ctx, "geo-l4-1"); err != nil || x.Expected.Answer != "Everest" || x.Expected.Type != "exact" {
				t.Fatalf("got %+v, %v", x, err)
			}
		}},
		{"a level file removed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "domains", "math", "level-2.yaml"))
		}, func(t *testing.T, c *Catalog) {
			if ls, _ := c.Levels(ctx, "math"); len(ls) != 1 {
				t.Fatalf("levels = %+v", ls)
			}
			if _, err := c.Test(ctx, "half"); !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("half: %v", err)
			}
		}},
		{"a domain removed", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "domains", "geo"))
		}, func(t *testing.T, c *Catalog) {
			if _, err := c.Domain(ctx, "geo"); !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("geo: %v", err)
			}
			if ts, _ := c.Tests(ctx, TestFilter{DomainID: "geo"}); len(ts) != 0 {
				t.Fatalf("tests of geo: %v", testIDs(ts))
			}
		}},
		{"files the layout does not name are ignored", func(t *testing.T, dir string) {
			for _, rel := range []string{"README.md", "domains/math/notes.txt", "domains/math/level-01.yaml",
				"domains/math/level-x.yaml", "domains/math/.level-5.yaml", "evaluators/.tmp-x.yaml-123",
				"evaluators/readme.txt", "domains/.hidden/domain.yaml"} {
				writeFile(t, dir, rel, "{{{ not yaml")
			}
		}, func(t *testing.T, c *Catalog) {
			if got := countsOf(export(t, c)); got != testdataCounts {
				t.Fatalf("counts = %+v", got)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDefinitions(t)
			c, _ := openAt(t, dir)
			tc.edit(t, dir)
			res := doSync(t, c)
			if len(res.Errors) != 0 {
				t.Fatalf("errors: %+v", res.Errors)
			}
			if got := countsOf(export(t, c)); got != res.Loaded {
				t.Fatalf("loaded %+v, cache holds %+v", res.Loaded, got)
			}
			tc.check(t, c)
			// A write after the sync is accepted: the catalog knows the
			// edited files now.
			if _, err := c.CreateTest(ctx, harness.Test{ID: "after-sync", DomainID: "math", Level: 1, Prompt: "p",
				Expected: harness.Expected{Answer: "a"}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSyncReportsBrokenFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		rel  string // written over the testdata tree; empty content removes the file
		body string
		// errs maps each file reported to a fragment of its error.
		errs map[string]string
		// gone are test ids that must not be loaded; kept ones must be.
		gone, kept []string
		loaded     Counts
	}{
		{
			name: "bad YAML", rel: "domains/math/level-1.yaml",
			body: "tests:\n  - id: add-small\n    prompt: [unclosed\n",
			errs: map[string]string{"domains/math/level-1.yaml": "']' not found"},
			gone: []string{"add-small", "add-large"}, kept: []string{"half", "capital"},
			loaded: Counts{Domains: 2, Levels: 2, Tests: 4, Evaluators: 2, Tools: 1},
		},
		{
			name: "wrong shape", rel: "domains/math/level-1.yaml",
			body:   "tests:\n  id: add-small\n",
			errs:   map[string]string{"domains/math/level-1.yaml": ""},
			gone:   []string{"add-small", "add-large"},
			loaded: Counts{Domains: 2, Levels: 2, Tests: 4, Evaluators: 2, Tools: 1},
		},
		{
			name: "empty file", rel: "evaluators/extra.yaml", body: "\n \n",
			errs:   map[string]string{"evaluators/extra.yaml": "empty"},
			loaded: testdataCounts,
		},
		{
			name: "invalid field: the valid tests of the file do not load either", rel: "domains/math/level-1.yaml",
			body: "tests:\n  - id: ok\n    prompt: fine\n    expected: {answer: x}\n  - id: bad\n    prompt: p\n    expected: {answer: x, type: telepathy}\n",
			errs: map[string]string{"domains/math/level-1.yaml": "tests[1].expected.type"},
			gone: []string{"ok", "bad", "add-small"}, kept: []string{"half"},
			loaded: Counts{Domains: 2, Levels: 2, Tests: 4, Evaluators: 2, Tools: 1},
		},
		{
			name: "bad system_prompt_mode", rel: "domains/math/level-2.yaml",
			body:   "system_prompt_mode: sideways\ntests: []\n",
			errs:   map[string]string{"domains/math/level-2.yaml": "system_prompt_mode"},
			gone:   []string{"half", "is-prime"},
			loaded: Counts{Domains: 2, Levels: 2, Tests: 4, Evaluators: 2, Tools: 1},
		},
		{
			name: "duplicate test id across files", rel: "domains/math/level-3.yaml",
			body: "tests:\n  - id: capital\n    prompt: again\n    expected: {answer: x}\n  - id: fresh\n    prompt: p\n    expected: {answer: x}\n",
			errs: map[string]string{"domains/math/level-3.yaml": "domains/geo/level-1.yaml"},
			gone: []string{"fresh"}, kept: []string{"capital"},
			loaded: testdataCounts,
		},
		{
			name: "duplicate test id in one file", rel: "domains/math/level-3.yaml",
			body:   "tests:\n  - id: twice\n    prompt: p\n    expected: {answer: x}\n  - id: twice\n    prompt: q\n    expected: {answer: y}\n",
			errs:   map[string]string{"domains/math/level-3.yaml": "tests[1].id"},
			gone:   []string{"twice"},
			loaded: testdataCounts,
		},
		{
			name: "domain with an unknown evaluator skips its levels", rel: "domains/math/domain.yaml",
			body: "name: Mathematics\nevaluator_id: ghost\n",
			errs: map[string]string{
				"domains/math/domain.yaml":  "evaluator_id",
				"domains/math/level-1.yaml": "skipped",
				"domains/math/level-2.yaml": "skipped",
			},
			gone: []string{"add-small", "half"}, kept: []string{"capital", "weather-call"},
			loaded: Counts{Domains: 1, Levels: 1, Tests: 2, Evaluators: 2, Tools: 1},
		},
		{
			name: "domain with a bad colour", rel: "domains/geo/domain.yaml",
			body: "name: Geography\ncolor: blue\n",
			errs: map[string]string{"domains/geo/domain.yaml": "color", "domains/geo/level-1.yaml": "skipped"},
			gone: []string{"capital"}, kept: []string{"add-small"},
			loaded: Counts{Domains: 1, Levels: 2, Tests: 4, Evaluators: 2, Tools: 1},
		},
		{
			name: "domain id differs from its directory", rel: "domains/geo/domain.yaml",
			body:   "id: geography\nname: Geography\n",
			errs:   map[string]string{"domains/geo/domain.yaml": "file name", "domains/geo/level-1.yaml": "skipped"},
			gone:   []string{"capital"},
			loaded: Counts{Domains: 1, Levels: 2, Tests: 4, Evaluators: 2, Tools: 1},
		},
		{
			name: "level files without a domain.yaml", rel: "domains/orphan/level-1.yaml",
			body: "tests:\n  - id: lost\n    prompt: p\n    expected: {answer: x}\n",
			errs: map[string]string{"domains/orphan/domain.yaml": "", "domains/orphan/level-1.yaml": "skipped"},
			gone: []string{"lost"}, loaded: testdataCounts,
		},
		{
			name: "a folder with no definition file is not a domain", rel: "domains/retired/NOTES.md",
			body:   "Retired domain; notes kept.\n",
			errs:   map[string]string{},
			loaded: testdataCounts,
		},
		{
			name: "evaluator with a bad regex, and the domain and test that use it", rel: "evaluators/number.yaml",
			body: "name: Number\nextraction_regex: '(?<answer>\\d+'\n",
			errs: map[string]string{
				"evaluators/number.yaml":    "extraction_regex",
				"domains/math/domain.yaml":  "evaluator_id",
				"domains/math/level-1.yaml": "skipped",
				"domains/math/level-2.yaml": "skipped",
			},
			kept:   []string{"capital"},
			loaded: Counts{Domains: 1, Levels: 1, Tests: 2, Evaluators: 1, Tools: 1},
		},
		{
			name: "evaluator id differs from its file name", rel: "evaluators/judge.yaml",
			body: "id: other\nname: Judge\n",
			errs: map[string]string{"evaluators/judge.yaml": "file name", "domains/geo/level-1.yaml": "evaluator_id"},
			gone: []string{"capital", "weather-call"}, kept: []string{"half"},
			loaded: Counts{Domains: 2, Levels: 2, Tests: 4, Evaluators: 1, Tools: 1},
		},
		{
			name: "level with a NaN threshold", rel: "domains/math/level-2.yaml",
			body:   "pass_threshold: .nan\ntests: []\n",
			errs:   map[string]string{"domains/math/level-2.yaml": "pass_threshold"},
			gone:   []string{"half"},
			loaded: Counts{Domains: 2, Levels: 2, Tests: 4, Evaluators: 2, Tools: 1},
		},
		{
			name: "test with an infinite tolerance", rel: "domains/math/level-3.yaml",
			body:   "tests:\n  - id: inf\n    prompt: p\n    expected: {answer: '1', type: numeric, tolerance: .inf}\n",
			errs:   map[string]string{"domains/math/level-3.yaml": "tests[0].expected"},
			gone:   []string{"inf"},
			loaded: testdataCounts,
		},
		{
			name: "test with NaN in its arguments", rel: "domains/math/level-3.yaml",
			body:   "tests:\n  - id: nan\n    prompt: p\n    expected: {answer: f, type: tool_call, arguments: {x: .nan}}\n",
			errs:   map[string]string{"domains/math/level-3.yaml": "tests[0].expected"},
			gone:   []string{"nan"},
			loaded: testdataCounts,
		},
		{
			name: "evaluator with NaN in its config", rel: "evaluators/extra.yaml",
			body:   "name: Extra\nconfig: {weight: .nan}\n",
			errs:   map[string]string{"evaluators/extra.yaml": "config"},
			loaded: testdataCounts,
		},
		{
			name: "tool with an infinite mock_response", rel: "tools/extra.yaml",
			body:   "function: {name: extra}\nmock_response: {x: -.inf}\n",
			errs:   map[string]string{"tools/extra.yaml": "mock_response"},
			loaded: testdataCounts,
		},
		{
			name: "tool with a bad function name, and the level that lists it", rel: "tools/weather.yaml",
			body: "function: {name: 'get weather'}\n",
			errs: map[string]string{"tools/weather.yaml": "function.name", "domains/geo/level-1.yaml": "tools[0]"},
			gone: []string{"capital"}, kept: []string{"half"},
			loaded: Counts{Domains: 2, Levels: 2, Tests: 4, Evaluators: 2, Tools: 0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := copyDefinitions(t)
			c, _ := openAt(t, dir)
			writeFile(t, dir, tc.rel, tc.body)
			res := doSync(t, c)
			got := map[string]string{}
			for _, fe := range res.Errors {
				got[fe.File] = fe.Error
			}
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tc.errs))) {
				t.Fatalf("errors for %v, want %v: %+v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tc.errs)), res.Errors)
			}
			for rel, frag := range tc.errs {
				if got[rel] == "" || !strings.Contains(got[rel], frag) {
					t.Errorf("error for %s = %q, want it to mention %q", rel, got[rel], frag)
				}
			}
			if res.Loaded != tc.loaded {
				t.Errorf("loaded %+v, want %+v", res.Loaded, tc.loaded)
			}
			if cached := countsOf(export(t, c)); cached != res.Loaded {
				t.Errorf("cache holds %+v, sync reports %+v", cached, res.Loaded)
			}
			for _, id := range tc.gone {
				if x, err := c.Test(ctx, id); err == nil {
					t.Errorf("test %s loaded: %+v", id, x)
				}
			}
			for _, id := range tc.kept {
				if _, err := c.Test(ctx, id); err != nil {
					t.Errorf("test %s: %v", id, err)
				}
			}
			// Open reports the same errors.
			_, res2 := openAt(t, dir)
			if !reflect.DeepEqual(res2, res) {
				t.Errorf("Open reported %+v, Sync %+v", res2, res)
			}
			// Once the file is fixed, everything loads again.
			orig, err := os.ReadFile(filepath.Join("testdata", "definitions", filepath.FromSlash(tc.rel)))
			if err == nil {
				writeFile(t, dir, tc.rel, string(orig))
			} else {
				os.Remove(filepath.Join(dir, filepath.FromSlash(tc.rel)))
			}
			os.RemoveAll(filepath.Join(dir, "domains", "orphan"))
			if res := doSync(t, c); len(res.Errors) != 0 || res.Loaded != testdataCounts {
				t.Fatalf("after the fix: %+v", res)
			}
		})
	}
}

// TestWriteOverHandEditIsConflict checks that a write through the API to a
// file changed on disk since the last sync is refused and leaves the file
// alone, and that it goes through once the catalog has synced.
func TestWriteOverHandEditIsConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		edit func(t *testing.T, dir string)
		op   func(c *Catalog) error
		// then is the error of op after a sync, when it is not nil.
		then error
	}{
		{"update a test in an edited level file", editLevel1, func(c *Catalog) error {
			_, err := c.UpdateTest(ctx, "add-small", func(x *harness.Test) error { x.Name = "n"; return nil })
			return err
		}, nil},
		{"create a test in an edited level file", editLevel1, func(c *Catalog) error {
			_, err := c.CreateTest(ctx, harness.Test{ID: "n", DomainID: "math", Level: 1, Prompt: "p", Expected: harness.Expected{Answer: "a"}})
			return err
		}, nil},
		{"delete a test from an edited level file", editLevel1, func(c *Catalog) error {
			return c.DeleteTest(ctx, "add-large")
		}, nil},
		{"move a test out of an edited level file", editLevel1, func(c *Catalog) error {
			_, err := c.MoveTest(ctx, "add-small", "geo", 1)
			return err
		}, nil},
		{"move a test into an edited level file", editLevel1, func(c *Catalog) error {
			_, err := c.MoveTest(ctx, "capital", "math", 1)
			return err
		}, nil},
		{"update an edited level", editLevel1, func(c *Catalog) error {
			_, err := c.UpdateLevel(ctx, "math", 1, func(l *harness.LevelConfig) error { l.SystemPrompt = "x"; return nil })
			return err
		}, nil},
		{"delete a domain with an edited level file", editLevel1, func(c *Catalog) error {
			return c.DeleteDomain(ctx, "math")
		}, nil},
		{"create a level over a file added by hand", func(t *testing.T, dir string) {
			writeFile(t, dir, "domains/math/level-7.yaml", "tests: []\n")
		}, func(c *Catalog) error {
			_, err := c.UpdateLevel(ctx, "math", 7, func(l *harness.LevelConfig) error { l.SystemPrompt = "x"; return nil })
			return err
		}, nil},
		{"update an edited domain", func(t *testing.T, dir string) {
			writeFile(t, dir, "domains/geo/domain.yaml", "name: Geo by hand\n")
		}, func(c *Catalog) error {
			_, err := c.UpdateDomain(ctx, "geo", func(d *harness.Domain) error { d.Icon = "x"; return nil })
			return err
		}, nil},
		{"update an edited evaluator", func(t *testing.T, dir string) {
			writeFile(t, dir, "evaluators/judge.yaml", "name: Judge by hand\n")
		}, func(c *Catalog) error {
			_, err := c.UpdateEvaluator(ctx, "judge", func(e *harness.EvaluatorConfig) error { e.Description = "x"; return nil })
			return err
		}, nil},
		{"create an evaluator over a file added by hand", func(t *testing.T, dir string) {
			writeFile(t, dir, "evaluators/new.yaml", "name: New by hand\n")
		}, func(c *Catalog) error {
			_, err := c.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "new", Name: "New"})
			return err
		}, harness.ErrConflict}, // now a duplicate: the file defines it
		{"update a tool whose file was removed by hand", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "tools", "weather.yaml"))
		}, func(c *Catalog) error {
			_, err := c.UpdateTool(ctx, "weather", func(x *harness.ToolDefinition) error { x.Description = "x"; return nil })
			return err
		}, harness.ErrNotFound},
		{"merge an import into an edited file", editLevel1, func(c *Catalog) error {
			_, err := c.Import(ctx, &harness.Snapshot{Tests: []harness.Test{{ID: "add-small", DomainID: "math", Level: 1,
				Prompt: "p", Expected: harness.Expected{Answer: "a"}}}}, true)
			return err
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDefinitions(t)
			c, _ := openAt(t, dir)
			tc.edit(t, dir)
			before := stateOf(t, c)
			err := tc.op(c)
			if !errors.Is(err, harness.ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
			if !strings.Contains(err.Error(), "sync") {
				t.Errorf("error %q does not say to sync", err)
			}
			assertUnchanged(t, c, before)
			if res := doSync(t, c); len(res.Errors) != 0 && tc.then == nil {
				t.Fatalf("sync: %+v", res.Errors)
			}
			if err := tc.op(c); !errors.Is(err, tc.then) || (err != nil && strings.Contains(err.Error(), "changed on disk")) {
				t.Fatalf("after sync: err = %v, want %v", err, tc.then)
			}
		})
	}
	t.Run("replacing import overwrites hand edits", func(t *testing.T) {
		dir := copyDefinitions(t)
		c, _ := openAt(t, dir)
		s := export(t, c)
		editLevel1(t, dir)
		if _, err := c.Import(ctx, s, false); err != nil {
			t.Fatal(err)
		}
		if f := readFile(t, c, "domains/math/level-1.yaml"); strings.Contains(f, "by hand") {
			t.Fatalf("level-1.yaml kept the hand edit:\n%s", f)
		}
		if res := doSync(t, c); len(res.Errors) != 0 || exportJSON(t, c) != mustJSON(t, s) {
			t.Fatalf("sync: %+v", res.Errors)
		}
	})
}

func editLevel1(t *testing.T, dir string) {
	writeFile(t, dir, "domains/math/level-1.yaml",
		"tests:\n  - id: add-small\n    prompt: edited by hand\n    expected: {answer: '4'}\n  - id: add-large\n    prompt: p\n    expected: {answer: '5'}\n")
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// richSnapshot is a set of definitions with the awkward values: multi-line
// and special-character strings, integer and float arguments, nested
// mock responses.
func richCatalog(t testing.TB) *Catalog {
	t.Helper()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	tests := []harness.Test{
		{ID: "multi", DomainID: "math", Level: 3, Name: "Multi-line: yes",
			Prompt:   "Line one\n  indented line\n\ttabbed line\n\nLast line with trailing space \n",
			Expected: harness.Expected{Answer: "42", Type: "integer"}},
		{ID: "special", DomainID: "math", Level: 3, Name: "#1 - \"quotes\" & 'apostrophes'",
			Prompt:   "Characters: : # - ? | > { } [ ] , & * ! % @ ` ~ \\ é 中文 😀 \r\n windows",
			Expected: harness.Expected{Answer: "null", Type: "exact"}},
		{ID: "lead", DomainID: "math", Level: 3, Prompt: "  leading spaces\nsecond",
			Expected: harness.Expected{Answer: "yes", Type: "boolean"}},
		{ID: "args", DomainID: "math", Level: 3, Prompt: "Book a table.",
			Expected: harness.Expected{Answer: "book", Type: "tool_call", Arguments: map[string]any{
				"people": 4, "price": 12.5, "big": 123456789, "when": "2024-01-01", "tags": []any{"a", 1, true, nil},
				"nested": map[string]any{"ok": false, "note": "x: y"}}}},
		{ID: "json", DomainID: "geo", Level: 2, Prompt: "Give JSON.",
			Expected: harness.Expected{Answer: `{"a": [1, 2]}`, Type: "json"}},
		{ID: "rx", DomainID: "geo", Level: 2, Prompt: "Pick.",
			Expected: harness.Expected{Answer: `^(?i)b\)?$`, Type: "regex"}},
	}
	for _, x := range tests {
		if _, err := c.CreateTest(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateTool(ctx, harness.ToolDefinition{ID: "book", Description: "Books a table.\nReturns a code.",
		Function: harness.FunctionDef{Name: "book", Parameters: map[string]any{"type": "object",
			"properties": map[string]any{"people": map[string]any{"type": "integer", "minimum": 1}}}},
		MockResponse: []any{map[string]any{"code": "A1", "seats": 4}, "ok", 3.5, nil}}); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sources := []struct {
		name string
		open func(t *testing.T) *Catalog
		// canonical: the source files were written by the catalog, so an
		// import reproduces them byte for byte.
		canonical bool
	}{
		{"written through the API", func(t *testing.T) *Catalog { return richCatalog(t) }, true},
		{"hand-written files", func(t *testing.T) *Catalog { c, _ := openAt(t, copyDefinitions(t)); return c }, false},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			c1 := src.open(t)
			want := exportJSON(t, c1)

			t.Run("files re-read by sync give the same export", func(t *testing.T) {
				c, res := openAt(t, c1.Dir())
				if len(res.Errors) != 0 {
					t.Fatalf("sync errors: %+v", res.Errors)
				}
				if got := exportJSON(t, c); got != want {
					t.Fatalf("got:\n%s\nwant:\n%s", got, want)
				}
			})
			for _, via := range []string{"Go value", "JSON"} {
				t.Run("import into a fresh catalog via "+via, func(t *testing.T) {
					s := export(t, c1)
					if via == "JSON" {
						s = &harness.Snapshot{}
						if err := json.Unmarshal([]byte(want), s); err != nil {
							t.Fatal(err)
						}
					}
					c2 := newCatalog(t)
					res, err := c2.Import(ctx, s, false)
					if err != nil {
						t.Fatal(err)
					}
					if res.Merge || res.Total != countsOf(export(t, c1)) || res.Imported != res.Total {
						t.Fatalf("result %+v", res)
					}
					if got := exportJSON(t, c2); got != want {
						t.Fatalf("got:\n%s\nwant:\n%s", got, want)
					}
					if src.canonical {
						assertSameFiles(t, dirFiles(t, c1.Dir()), dirFiles(t, c2.Dir()))
					}
					// The imported files load back to the same export.
					c3, sres := openAt(t, c2.Dir())
					if len(sres.Errors) != 0 || exportJSON(t, c3) != want {
						t.Fatalf("sync of the imported files: %+v", sres.Errors)
					}
					// Importing the same export again writes nothing.
					before := dirFiles(t, c2.Dir())
					if _, err := c2.Import(ctx, export(t, c2), false); err != nil {
						t.Fatal(err)
					}
					assertSameFiles(t, before, dirFiles(t, c2.Dir()))
				})
			}
		})
	}
}

func assertSameFiles(t testing.TB, want, got map[string]string) {
	t.Helper()
	for rel, w := range want {
		if g, ok := got[rel]; !ok {
			t.Errorf("%s is missing", rel)
		} else if g != w {
			t.Errorf("%s differs:\n%s\nwant:\n%s", rel, g, w)
		}
	}
	for rel := range got {
		if _, ok := want[rel]; !ok {
			t.Errorf("unexpected file %s", rel)
		}
	}
}

func TestImportMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	in := &harness.Snapshot{
		Domains: []harness.Domain{{ID: "geo", Name: "World geography", Enabled: true}},
		Levels: []harness.LevelConfig{{DomainID: "geo", Level: 1, SystemPrompt: "Answer with a letter.",
			PassThreshold: 0.6}},
		Tests: []harness.Test{
			{ID: "add", DomainID: "math", Level: 1, Prompt: "What is 3 + 4?", Expected: harness.Expected{Answer: "7", Type: "numeric"}},
			{ID: "river", DomainID: "geo", Level: 2, Prompt: "Longest river?", Expected: harness.Expected{Answer: "Nile"}},
			{DomainID: "geo", Level: 2, Prompt: "No id.", Expected: harness.Expected{Answer: "x"}},
		},
		Evaluators: []harness.EvaluatorConfig{{ID: "letters", Name: "Letters", ExtractionRegex: `\b([A-E])\b`}},
		Tools:      []harness.ToolDefinition{{ID: "clock", Function: harness.FunctionDef{Name: "now"}}},
	}
	res, err := c.Import(ctx, in, true)
	if err != nil {
		t.Fatal(err)
	}
	wantImported := Counts{Domains: 1, Levels: 1, Tests: 3, Evaluators: 1, Tools: 1}
	wantTotal := Counts{Domains: 2, Levels: 4, Tests: 6, Evaluators: 3, Tools: 2}
	if !res.Merge || res.Imported != wantImported || res.Total != wantTotal {
		t.Fatalf("result %+v, want imported %+v total %+v", res, wantImported, wantTotal)
	}
	checks := []struct {
		name string
		ok   func() bool
	}{
		{"existing test replaced in place", func() bool {
			x, err := c.Test(ctx, "add")
			ts, _ := c.Tests(ctx, TestFilter{DomainID: "math", Level: ptr(1)})
			return err == nil && x.Prompt == "What is 3 + 4?" && x.Expected.Tolerance == nil &&
				slices.Equal(testIDs(ts), []string{"add", "half"})
		}},
		{"other tests kept", func() bool {
			_, e1 := c.Test(ctx, "half")
			_, e2 := c.Test(ctx, "capital")
			_, e3 := c.Test(ctx, "call")
			return e1 == nil && e2 == nil && e3 == nil
		}},
		{"new tests added, one with a generated id", func() bool {
			ts, _ := c.Tests(ctx, TestFilter{DomainID: "geo", Level: ptr(2)})
			return len(ts) == 2 && ts[0].ID == "river" && harness.ValidID(ts[1].ID) && ts[1].Prompt == "No id."
		}},
		{"domain replaced", func() bool {
			d, _ := c.Domain(ctx, "geo")
			return d.Name == "World geography" && d.Enabled && d.Icon == ""
		}},
		{"other domain kept", func() bool {
			d, _ := c.Domain(ctx, "math")
			return d.Name == "Mathematics" && d.EvaluatorID == "number"
		}},
		{"level replaced, its tests kept", func() bool {
			l, _ := c.Level(ctx, "geo", 1)
			ts, _ := c.Tests(ctx, TestFilter{DomainID: "geo", Level: ptr(1)})
			return l.SystemPrompt == "Answer with a letter." && l.PassThreshold == 0.6 &&
				l.SystemPromptMode == harness.PromptAppend && slices.Equal(testIDs(ts), []string{"capital"})
		}},
		{"other level kept", func() bool {
			l, _ := c.Level(ctx, "math", 2)
			return l.PassThreshold == 0.75 && slices.Equal(l.Tools, []string{"weather"})
		}},
		{"evaluators and tools merged", func() bool {
			es, _ := c.Evaluators(ctx)
			ts, _ := c.Tools(ctx)
			return len(es) == 3 && len(ts) == 2 && exists(c, "evaluators/letters.yaml") && exists(c, "tools/clock.yaml")
		}},
		{"files agree with the cache", func() bool {
			c2, res := openAt(t, c.Dir())
			return len(res.Errors) == 0 && exportJSON(t, c2) == exportJSON(t, c)
		}},
	}
	for _, tc := range checks {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok() {
				t.Fatalf("export:\n%s", exportJSON(t, c))
			}
		})
	}
}

func TestImportReplace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	in := &harness.Snapshot{
		Domains:    []harness.Domain{{ID: "math", Name: "Maths", EvaluatorID: "number", Enabled: true}},
		Tests:      []harness.Test{{ID: "add", DomainID: "math", Level: 1, Prompt: "1 + 1?", Expected: harness.Expected{Answer: "2", Type: "integer"}}},
		Evaluators: []harness.EvaluatorConfig{{ID: "number", Name: "Number", ExtractionRegex: `(\d+)`}},
	}
	res, err := c.Import(ctx, in, false)
	if err != nil {
		t.Fatal(err)
	}
	// The import carries evaluators, not tools: the tool stays.
	want := Counts{Domains: 1, Levels: 1, Tests: 1, Evaluators: 1, Tools: 1}
	if res.Merge || res.Total != want {
		t.Fatalf("result %+v, want total %+v", res, want)
	}
	files := slices.Sorted(maps.Keys(dirFiles(t, c.Dir())))
	wantFiles := []string{"domains/math/domain.yaml", "domains/math/level-1.yaml", "evaluators/number.yaml", "tools/weather.yaml"}
	if !slices.Equal(files, wantFiles) {
		t.Fatalf("files %v, want %v", files, wantFiles)
	}
	if exists(c, "domains/geo") {
		t.Fatal("domains/geo is left")
	}
	for _, id := range []string{"half", "call", "capital"} {
		if _, err := c.Test(ctx, id); !errors.Is(err, harness.ErrNotFound) {
			t.Fatalf("test %s: %v", id, err)
		}
	}
	if got := countsOf(export(t, c)); got != want {
		t.Fatalf("cache holds %+v", got)
	}
	c2, sres := openAt(t, c.Dir())
	if len(sres.Errors) != 0 || exportJSON(t, c2) != exportJSON(t, c) {
		t.Fatalf("files and cache disagree: %+v", sres.Errors)
	}
	t.Run("an import with empty lists of every kind empties the catalog", func(t *testing.T) {
		empty := &harness.Snapshot{Evaluators: []harness.EvaluatorConfig{}, Tools: []harness.ToolDefinition{}}
		if _, err := c.Import(ctx, empty, false); err != nil {
			t.Fatal(err)
		}
		if got := countsOf(export(t, c)); got != (Counts{}) {
			t.Fatalf("cache holds %+v", got)
		}
		if files := dirFiles(t, c.Dir()); len(files) != 0 {
			t.Fatalf("files left: %v", slices.Sorted(maps.Keys(files)))
		}
	})
}

// A replace import of domains and tests alone keeps the evaluators and
// tools, so its domains and tests may use them; those of other kinds stay
// on disk even when they did not load.
func TestImportReplaceKeepsEvaluatorsAndTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	writeFile(t, c.Dir(), "tools/broken.yaml", "function: {name: 'no spaces allowed'}\n")
	in := &harness.Snapshot{
		Domains: []harness.Domain{{ID: "qa", Name: "QA", EvaluatorID: "strict", Enabled: true}},
		Tests: []harness.Test{{ID: "q1", DomainID: "qa", Level: 1, Prompt: "p", Tools: []string{"weather"},
			Expected: harness.Expected{Answer: "a"}}},
	}
	res, err := c.Import(ctx, in, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{Domains: 1, Levels: 1, Tests: 1, Evaluators: 2, Tools: 1}); res.Total != want {
		t.Fatalf("total %+v, want %+v", res.Total, want)
	}
	files := slices.Sorted(maps.Keys(dirFiles(t, c.Dir())))
	wantFiles := []string{"domains/qa/domain.yaml", "domains/qa/level-1.yaml", "evaluators/number.yaml",
		"evaluators/strict.yaml", "tools/broken.yaml", "tools/weather.yaml"}
	if !slices.Equal(files, wantFiles) {
		t.Fatalf("files %v, want %v", files, wantFiles)
	}
	for _, id := range []string{"add", "capital"} {
		if _, err := c.Test(ctx, id); !errors.Is(err, harness.ErrNotFound) {
			t.Fatalf("test %s: %v", id, err)
		}
	}
	t.Run("an evaluator it does not carry and no longer has is refused", func(t *testing.T) {
		in := &harness.Snapshot{
			Domains:    []harness.Domain{{ID: "qa", Name: "QA", EvaluatorID: "strict", Enabled: true}},
			Evaluators: []harness.EvaluatorConfig{{ID: "number", Name: "Number"}},
		}
		if _, err := c.Import(ctx, in, false); !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "evaluator_id") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestImportInvalidChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := func(id string) harness.Test {
		return harness.Test{ID: id, DomainID: "math", Level: 1, Prompt: "p", Expected: harness.Expected{Answer: "a"}}
	}
	cases := []struct {
		name  string
		in    harness.Snapshot
		field string
	}{
		{"unknown expected type", harness.Snapshot{Tests: []harness.Test{good("t0"),
			{ID: "t1", DomainID: "math", Level: 1, Prompt: "p", Expected: harness.Expected{Answer: "a", Type: "telepathy"}}}},
			"tests[1].expected.type"},
		{"duplicate test id", harness.Snapshot{Tests: []harness.Test{good("t0"), good("t0")}}, "tests[1]"},
		{"test in an unknown domain", harness.Snapshot{Tests: []harness.Test{{ID: "t0", DomainID: "ghost", Prompt: "p",
			Expected: harness.Expected{Answer: "a"}}}}, "tests[0].domain_id"},
		{"level without a domain", harness.Snapshot{Levels: []harness.LevelConfig{{Level: 1}}}, "levels[0].domain_id"},
		{"level with a bad mode", harness.Snapshot{Levels: []harness.LevelConfig{{DomainID: "math", Level: 1,
			SystemPromptMode: "sideways"}}}, "levels[0].system_prompt_mode"},
		{"domain with an unknown evaluator", harness.Snapshot{Domains: []harness.Domain{{ID: "d", Name: "D",
			EvaluatorID: "ghost"}}}, "domains[0].evaluator_id"},
		{"domain with a bad colour", harness.Snapshot{Domains: []harness.Domain{{ID: "d", Name: "D",
			Color: "#12345"}}}, "domains[0].color"},
		{"evaluator with a bad regex", harness.Snapshot{Evaluators: []harness.EvaluatorConfig{{ID: "e", Name: "E",
			ExtractionRegex: "(?<answer>"}}}, "evaluators[0].extraction_regex"},
		{"tool with a bad function name", harness.Snapshot{Tools: []harness.ToolDefinition{{ID: "x",
			Function: harness.FunctionDef{Name: "a b"}}}}, "tools[0].function.name"},
	}
	for _, tc := range cases {
		for _, merge := range []bool{true, false} {
			name := tc.name + map[bool]string{true: " (merge)", false: " (replace)"}[merge]
			t.Run(name, func(t *testing.T) {
				c := newCatalog(t)
				seed(t, c)
				in := tc.in
				if !merge {
					// A replacing import must carry what the tests refer to.
					base := export(t, c)
					in.Domains = append(base.Domains, in.Domains...)
					in.Evaluators = append(base.Evaluators, in.Evaluators...)
					in.Tools = append(base.Tools, in.Tools...)
					tc.field = shiftIndex(tc.field, "domains", len(base.Domains))
					tc.field = shiftIndex(tc.field, "evaluators", len(base.Evaluators))
					tc.field = shiftIndex(tc.field, "tools", len(base.Tools))
				}
				before := stateOf(t, c)
				_, err := c.Import(ctx, &in, merge)
				assertInvalid(t, err, tc.field)
				if !strings.Contains(err.Error(), tc.field) {
					t.Errorf("error %q does not name %s", err, tc.field)
				}
				assertUnchanged(t, c, before)
			})
		}
	}
}

// shiftIndex turns "kind[i].x" into "kind[i+n].x".
func shiftIndex(field, kind string, n int) string {
	rest, ok := strings.CutPrefix(field, kind+"[")
	if !ok {
		return field
	}
	i := 0
	for rest[0] >= '0' && rest[0] <= '9' {
		i = i*10 + int(rest[0]-'0')
		rest = rest[1:]
	}
	return fmt.Sprintf("%s[%d%s", kind, i+n, rest)
}
