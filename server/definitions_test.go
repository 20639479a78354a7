package server_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// richFixture adds to fixture what a round trip must keep: level
// settings, tool lists, evaluator overrides, tolerances, tool-call
// arguments, multi-line and non-ASCII text, a disabled domain.
func (e *testEnv) richFixture() {
	e.t.Helper()
	e.fixture()
	must(e.t, e.put("/api/settings/levels/math/1", map[string]any{
		"system_prompt": "Think step by step.\nThen answer.", "system_prompt_mode": "prepend",
		"pass_threshold": 0.8, "tools": []string{"calc"},
	}), http.StatusOK)
	must(e.t, e.put("/api/settings/levels/logic/3", map[string]any{"system_prompt_mode": "replace"}), http.StatusOK)
	must(e.t, e.put("/api/settings/domains/logic", map[string]any{"enabled": false, "description": "Déduction — «logique»"}), http.StatusOK)
	must(e.t, e.post("/api/settings/tests", map[string]any{
		"id": "m5", "domain_id": "math", "level": 2, "name": "Call add",
		"prompt": "Use the tool.\n\n  Indented line.\tTab.", "evaluator_id": "num", "tools": []string{"calc"},
		"expected": map[string]any{"answer": "add", "type": "tool_call", "arguments": map[string]any{"a": 2, "b": 2.5, "deep": map[string]any{"x": []any{"y"}}}},
	}), http.StatusCreated)
	must(e.t, e.post("/api/settings/tests", map[string]any{
		"id": "m6", "domain_id": "math", "level": 2, "prompt": "Pi?",
		"expected": map[string]any{"answer": "3.14159", "type": "numeric", "tolerance": 0.001},
	}), http.StatusCreated)
}

// topKeys returns the sorted top-level keys of a JSON object.
func topKeys(t *testing.T, r *response) []string {
	t.Helper()
	return slices.Sorted(maps.Keys(r.object(t)))
}

func TestExport(t *testing.T) {
	t.Parallel()
	t.Run("empty", func(t *testing.T) {
		e := newEnv(t)
		r := must(t, e.get("/api/settings/export"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"domains":[],"levels":[],"tests":[],"evaluators":[],"tools":[],"targets":[]}` {
			t.Fatalf("body %s", got)
		}
	})
	t.Run("top-level keys and counts", func(t *testing.T) {
		e := newEnv(t)
		e.fixture()
		r := must(t, e.get("/api/settings/export"), http.StatusOK)
		if got := topKeys(t, r); !slices.Equal(got, []string{"domains", "evaluators", "levels", "targets", "tests", "tools"}) {
			t.Fatalf("keys %v", got)
		}
		var snap map[string][]map[string]any
		r.decode(t, &snap)
		want := map[string]int{"domains": 2, "levels": 3, "tests": 4, "evaluators": 1, "tools": 1, "targets": 0}
		for k, n := range want {
			if len(snap[k]) != n {
				t.Errorf("%s: %d items, want %d", k, len(snap[k]), n)
			}
		}
	})
}

func TestImportRoundTrip(t *testing.T) {
	t.Parallel()
	src := newEnv(t)
	src.richFixture()
	export := must(t, src.get("/api/settings/export"), http.StatusOK)

	var body map[string]any
	export.decode(t, &body)
	body["merge"] = false

	t.Run("into a fresh server", func(t *testing.T) {
		dst := newEnv(t)
		r := must(t, dst.post("/api/settings/import", body), http.StatusOK)
		res := r.object(t)
		if res["success"] != true || res["merge"] != false {
			t.Fatalf("result %s", r.body)
		}
		got := must(t, dst.get("/api/settings/export"), http.StatusOK)
		if string(got.body) != string(export.body) {
			t.Fatalf("export after import differs:\nsource %s\nimport %s", export.body, got.body)
		}
		if !maps.Equal(dst.files(), src.files()) {
			t.Errorf("definition files differ:\nsource %v\nimport %v", src.files(), dst.files())
			for f := range src.files() {
				if src.readFile(f) != dst.readFile(f) {
					t.Errorf("%s:\nsource:\n%s\nimport:\n%s", f, src.readFile(f), dst.readFile(f))
				}
			}
		}
		// The cache matches the files: a sync changes nothing.
		must(t, dst.post("/api/settings/sync", nil), http.StatusOK)
		if again := must(t, dst.get("/api/settings/export"), http.StatusOK); string(again.body) != string(export.body) {
			t.Fatalf("export after sync differs:\nbefore %s\nafter  %s", export.body, again.body)
		}
	})

	t.Run("replaces everything in a server with other definitions", func(t *testing.T) {
		dst := newEnv(t)
		must(t, dst.post("/api/settings/evaluators", map[string]any{"id": "old", "name": "Old"}), http.StatusCreated)
		must(t, dst.post("/api/settings/domains", map[string]any{"id": "old", "name": "Old", "evaluator_id": "old"}), http.StatusCreated)
		must(t, dst.post("/api/settings/tests", map[string]any{"id": "m1", "domain_id": "old", "level": 4, "prompt": "p", "expected": map[string]any{"answer": "a"}}), http.StatusCreated)
		must(t, dst.post("/api/settings/import", body), http.StatusOK)
		if got := must(t, dst.get("/api/settings/export"), http.StatusOK); string(got.body) != string(export.body) {
			t.Fatalf("export after import differs:\nsource %s\nimport %s", export.body, got.body)
		}
		for _, f := range []string{"domains/old/domain.yaml", "domains/old/level-4.yaml", "evaluators/old.yaml"} {
			if dst.exists(f) {
				t.Errorf("%s survived an import with merge false", f)
			}
		}
		mustProblem(t, dst.get("/api/settings/domains/old"), http.StatusNotFound)
	})

	t.Run("into itself changes nothing", func(t *testing.T) {
		before := src.state()
		must(t, src.post("/api/settings/import", body), http.StatusOK)
		src.assertUnchanged(t, before)
	})

	t.Run("replace with an empty import empties domains and tests, keeps evaluators and tools", func(t *testing.T) {
		dst := newEnv(t)
		dst.fixture()
		r := must(t, dst.post("/api/settings/import", map[string]any{"merge": false}), http.StatusOK)
		if total, _ := r.object(t)["total"].(map[string]any); total["domains"] != 0.0 || total["tests"] != 0.0 ||
			total["evaluators"] != 1.0 || total["tools"] != 1.0 {
			t.Fatalf("result %s", r.body)
		}
		if files := slices.Sorted(maps.Keys(dst.files())); !slices.Equal(files, []string{"evaluators/num.yaml", "tools/calc.yaml"}) {
			t.Fatalf("files left: %v", files)
		}
	})

	t.Run("replace with empty lists of every kind empties everything", func(t *testing.T) {
		dst := newEnv(t)
		dst.fixture()
		r := must(t, dst.post("/api/settings/import", map[string]any{"merge": false, "evaluators": []any{}, "tools": []any{}}), http.StatusOK)
		if total, _ := r.object(t)["total"].(map[string]any); total["domains"] != 0.0 || total["tests"] != 0.0 || total["evaluators"] != 0.0 {
			t.Fatalf("result %s", r.body)
		}
		if got := must(t, dst.get("/api/settings/export"), http.StatusOK); strings.TrimSpace(string(got.body)) != `{"domains":[],"levels":[],"tests":[],"evaluators":[],"tools":[],"targets":[]}` {
			t.Fatalf("export %s", got.body)
		}
		if files := dst.files(); len(files) != 0 {
			t.Fatalf("files left: %v", files)
		}
	})
}

func TestImportMerge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		merge any // true, or nil: merge is the default
	}{{"merge true", true}, {"merge absent", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.fixture()
			body := map[string]any{
				"domains": []any{
					map[string]any{"id": "math", "name": "Mathematics", "evaluator_id": "num", "enabled": true},
					map[string]any{"id": "geo", "name": "Geography", "color": "#00ff00", "enabled": true},
				},
				"tests": []any{
					map[string]any{"id": "m1", "domain_id": "math", "level": 1, "prompt": "Changed", "expected": map[string]any{"answer": "5", "type": "integer"}},
					map[string]any{"id": "g1", "domain_id": "geo", "level": 1, "prompt": "Capital of France?", "expected": map[string]any{"answer": "Paris"}},
				},
				"levels": []any{
					map[string]any{"domain_id": "geo", "level": 1, "system_prompt": "One word.", "system_prompt_mode": "append", "pass_threshold": 1},
				},
			}
			if tc.merge != nil {
				body["merge"] = tc.merge
			}
			r := must(t, e.post("/api/settings/import", body), http.StatusOK)
			var res struct {
				Success  bool           `json:"success"`
				Merge    bool           `json:"merge"`
				Imported map[string]int `json:"imported"`
				Total    map[string]int `json:"total"`
			}
			r.decode(t, &res)
			if !res.Success || !res.Merge {
				t.Fatalf("result %s", r.body)
			}
			if res.Imported["domains"] != 2 || res.Imported["tests"] != 2 || res.Imported["levels"] != 1 {
				t.Errorf("imported %v", res.Imported)
			}
			if res.Total["domains"] != 3 || res.Total["tests"] != 5 || res.Total["evaluators"] != 1 || res.Total["tools"] != 1 {
				t.Errorf("total %v", res.Total)
			}
			if d := must(t, e.get("/api/settings/domains/math"), http.StatusOK).object(t); d["name"] != "Mathematics" {
				t.Errorf("math not updated: %v", d)
			}
			must(t, e.get("/api/settings/domains/logic"), http.StatusOK)
			if tt := must(t, e.get("/api/settings/tests/m1"), http.StatusOK).object(t); tt["prompt"] != "Changed" {
				t.Errorf("m1 not updated: %v", tt)
			}
			if got := listTests(t, e, ""); !slices.Equal(got, []string{"g1", "l1", "m1", "m2", "m3"}) {
				t.Errorf("tests %v", got)
			}
			if got := listTests(t, e, "?domain=math&level=1"); !slices.Equal(got, []string{"m1", "m2"}) {
				t.Errorf("an upserted test keeps its place: %v", got)
			}
			if l := must(t, e.get("/api/settings/levels/geo/1"), http.StatusOK).object(t); l["system_prompt"] != "One word." || l["pass_threshold"] != 1.0 {
				t.Errorf("level geo/1: %v", l)
			}
			for _, f := range []string{"domains/geo/domain.yaml", "domains/geo/level-1.yaml"} {
				if !e.exists(f) {
					t.Errorf("%s not written", f)
				}
			}
			if !strings.Contains(e.readFile("domains/math/level-1.yaml"), "Changed") {
				t.Errorf("level-1.yaml not updated")
			}
		})
	}
}

func TestImportEvaluatorsAndTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := map[string]any{
		"merge": false,
		"evaluators": []any{
			map[string]any{"id": "letter", "name": "Letter", "type": "regex", "extraction_regex": `\b([A-D])\b`, "uses_pass2": true},
		},
		"tools": []any{
			map[string]any{"id": "search", "function": map[string]any{"name": "search", "parameters": map[string]any{"type": "object"}}, "mock_response": []any{"r1"}},
		},
		"domains": []any{map[string]any{"id": "quiz", "name": "Quiz", "evaluator_id": "letter", "enabled": true}},
		"tests": []any{
			map[string]any{"domain_id": "quiz", "level": 1, "prompt": "A, B, C or D?", "tools": []string{"search"}, "expected": map[string]any{"answer": "C", "type": "choice"}},
		},
	}
	r := must(t, e.post("/api/settings/import", body), http.StatusOK)
	if total, _ := r.object(t)["total"].(map[string]any); total["evaluators"] != 1.0 || total["tools"] != 1.0 || total["tests"] != 1.0 || total["levels"] != 1.0 {
		t.Fatalf("result %s", r.body)
	}
	if ev := must(t, e.get("/api/settings/evaluators/letter"), http.StatusOK).object(t); ev["uses_pass2"] != true {
		t.Errorf("evaluator %v", ev)
	}
	if tool := must(t, e.get("/api/settings/tools/search"), http.StatusOK).object(t); tool["name"] != "search" {
		t.Errorf("tool %v", tool)
	}
	var tests struct {
		Tests []map[string]any `json:"tests"`
	}
	must(t, e.get("/api/settings/tests?domain=quiz"), http.StatusOK).decode(t, &tests)
	if len(tests.Tests) != 1 || tests.Tests[0]["id"] == "" {
		t.Fatalf("tests %v: a test imported without an id gets one", tests.Tests)
	}
	for _, f := range []string{"evaluators/letter.yaml", "tools/search.yaml", "domains/quiz/domain.yaml", "domains/quiz/level-1.yaml"} {
		if !e.exists(f) {
			t.Errorf("%s not written", f)
		}
	}
}

func TestImportFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	okTest := map[string]any{"id": "n1", "domain_id": "math", "level": 1, "prompt": "p", "expected": map[string]any{"answer": "1", "type": "numeric"}}
	const path = "/api/settings/import"
	cases := []failCase{
		{"malformed JSON", "POST", path, rawBody(`{"merge": false, "domains": [`), 400, nil},
		{"domains not an array", "POST", path, map[string]any{"domains": "math"}, 422, []string{"body.domains"}},
		{"merge not a boolean", "POST", path, map[string]any{"merge": "no"}, 422, []string{"body.merge"}},
		{"unknown expected type", "POST", path, map[string]any{"tests": []any{
			map[string]any{"id": "n1", "domain_id": "math", "level": 1, "prompt": "p", "expected": map[string]any{"answer": "1", "type": "fuzzy"}},
		}}, 422, []string{"body.tests[0].expected.type"}},
		{"the second test is invalid", "POST", path, map[string]any{"tests": []any{okTest,
			map[string]any{"id": "n2", "domain_id": "math", "level": 1, "prompt": "", "expected": map[string]any{"answer": "1"}},
		}}, 422, []string{"body.tests[1].prompt"}},
		{"test of a missing domain", "POST", path, map[string]any{"tests": []any{
			map[string]any{"id": "n1", "domain_id": "nope", "level": 1, "prompt": "p", "expected": map[string]any{"answer": "1"}},
		}}, 422, []string{"body.tests[0].domain_id"}},
		{"bad colour", "POST", path, map[string]any{"domains": []any{
			map[string]any{"id": "ok", "name": "OK"}, map[string]any{"id": "x", "name": "X", "color": "blue"},
		}}, 422, []string{"body.domains[1].color"}},
		{"domain with an unknown evaluator", "POST", path, map[string]any{"domains": []any{
			map[string]any{"id": "x", "name": "X", "evaluator_id": "nope"},
		}}, 422, []string{"body.domains[0].evaluator_id"}},
		{"duplicate ids in the import", "POST", path, map[string]any{"domains": []any{
			map[string]any{"id": "x", "name": "X"}, map[string]any{"id": "x", "name": "X again"},
		}}, 422, []string{"body.domains[1]"}},
		{"evaluator regex does not compile", "POST", path, map[string]any{"evaluators": []any{
			map[string]any{"id": "x", "name": "X", "extraction_regex": "(?<a"},
		}}, 422, []string{"body.evaluators[0].extraction_regex"}},
		{"tool without a function name", "POST", path, map[string]any{"tools": []any{
			map[string]any{"id": "x", "function": map[string]any{}},
		}}, 422, []string{"body.tools[0].function.name"}},
		{"level with a bad mode", "POST", path, map[string]any{"levels": []any{
			map[string]any{"domain_id": "math", "level": 1, "system_prompt_mode": "sideways"},
		}}, 422, []string{"body.levels[0].system_prompt_mode"}},
		{"level without a domain", "POST", path, map[string]any{"levels": []any{
			map[string]any{"level": 1},
		}}, 422, []string{"body.levels[0].domain_id"}},
		{"test without a level", "POST", path, map[string]any{"tests": []any{okTest,
			map[string]any{"id": "n2", "domain_id": "math", "prompt": "p", "expected": map[string]any{"answer": "1", "type": "fuzzy"}},
		}}, 422, []string{"body.tests[1].level", "body.tests[1].expected.type"}},
		{"level config without a level", "POST", path, map[string]any{"levels": []any{
			map[string]any{"domain_id": "math", "system_prompt": "x"},
		}}, 422, []string{"body.levels[0].level"}},
		{"several errors at once", "POST", path, map[string]any{
			"domains": []any{map[string]any{"id": "bad id", "name": "X"}},
			"tests":   []any{okTest, map[string]any{"id": "n2", "domain_id": "math", "level": -1, "prompt": "p", "expected": map[string]any{"answer": "x", "type": "integer"}}},
		}, 422, []string{"body.domains[0].id", "body.tests[1].level", "body.tests[1].expected.answer"}},
	}
	// Every case again with merge false: a refused replace must not wipe
	// anything either.
	for _, tc := range slices.Clone(cases) {
		m, ok := tc.body.(map[string]any)
		if !ok || m["merge"] != nil {
			continue
		}
		m2 := maps.Clone(m)
		m2["merge"] = false
		tc.name += " (merge false)"
		tc.body = m2
		cases = append(cases, tc)
	}
	runFailures(t, e, cases)

	t.Run("a test of a domain removed by a replace", func(t *testing.T) {
		before := e.state()
		// merge false drops math, so a test of math is refused.
		mustProblem(t, e.post(path, map[string]any{"merge": false, "tests": []any{okTest}}), http.StatusUnprocessableEntity, "body.tests[0].domain_id")
		e.assertUnchanged(t, before)
	})
}

func TestImportLargeBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.post("/api/settings/domains", map[string]any{"id": "big", "name": "Big"}), http.StatusCreated)
	tests := make([]any, 0, 600)
	for i := range 600 {
		tests = append(tests, map[string]any{
			"id": fmt.Sprintf("t%03d", i), "domain_id": "big", "level": i % 3, "prompt": strings.Repeat("q", 2000),
			"expected": map[string]any{"answer": "a"},
		})
	}
	body, _ := json.Marshal(map[string]any{"tests": tests})
	if len(body) <= 1<<20 {
		t.Fatalf("body of %d bytes is not over 1 MiB", len(body))
	}
	r := must(t, e.post("/api/settings/import", body), http.StatusOK)
	if total, _ := r.object(t)["total"].(map[string]any); total["tests"] != 600.0 {
		t.Fatalf("result %s", r.body)
	}
	if got := listTests(t, e, "?domain=big&level=2"); len(got) != 200 {
		t.Fatalf("%d tests in big/2, want 200", len(got))
	}
}

func TestSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()

	t.Run("nothing changed", func(t *testing.T) {
		before := e.state()
		r := must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		var res struct {
			Success bool             `json:"success"`
			Loaded  map[string]int   `json:"loaded"`
			Errors  []map[string]any `json:"errors"`
		}
		r.decode(t, &res)
		if !res.Success || res.Errors == nil || len(res.Errors) != 0 {
			t.Fatalf("result %s", r.body)
		}
		want := map[string]int{"domains": 2, "levels": 3, "tests": 4, "evaluators": 1, "tools": 1, "targets": 0}
		if !maps.Equal(res.Loaded, want) {
			t.Errorf("loaded %v, want %v", res.Loaded, want)
		}
		e.assertUnchanged(t, before)
	})

	t.Run("a domain written by hand appears", func(t *testing.T) {
		e.writeFile("domains/x/domain.yaml", "id: x\nname: Hand-written\ndescription: Written in an editor\nevaluator_id: num\nenabled: true\ncolor: \"#abcdef\"\n")
		e.writeFile("domains/x/level-1.yaml", `system_prompt: Be brief.
system_prompt_mode: replace
tests:
  - id: x1
    name: First
    prompt: |
      Two lines
      of prompt.
    expected:
      answer: "42"
      type: integer
  - id: x2
    prompt: Second
    expected:
      answer: "B"
      type: choice
    tools: [calc]
`)
		mustProblem(t, e.get("/api/settings/domains/x"), http.StatusNotFound)
		r := must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		if res := r.object(t); res["success"] != true {
			t.Fatalf("result %s", r.body)
		}
		d := must(t, e.get("/api/settings/domains/x"), http.StatusOK).object(t)
		if d["name"] != "Hand-written" || d["evaluator_id"] != "num" || d["color"] != "#abcdef" {
			t.Errorf("domain %v", d)
		}
		if got := listTests(t, e, "?domain=x"); !slices.Equal(got, []string{"x1", "x2"}) {
			t.Errorf("tests %v", got)
		}
		x1 := must(t, e.get("/api/settings/tests/x1"), http.StatusOK).object(t)
		if x1["prompt"] != "Two lines\nof prompt.\n" || x1["level"] != 1.0 || x1["domain_id"] != "x" {
			t.Errorf("x1 %v", x1)
		}
		l := must(t, e.get("/api/settings/levels/x/1"), http.StatusOK).object(t)
		if l["system_prompt"] != "Be brief." || l["system_prompt_mode"] != "replace" {
			t.Errorf("level %v", l)
		}
		var domains struct {
			Domains []map[string]any `json:"domains"`
		}
		must(t, e.get("/api/settings/domains"), http.StatusOK).decode(t, &domains)
		if got := ids(domains.Domains); !slices.Equal(got, []string{"logic", "math", "x"}) {
			t.Errorf("domains %v", got)
		}
		// The API can now write the hand-written files.
		must(t, e.put("/api/settings/tests/x2", map[string]any{"name": "Second"}), http.StatusOK)
		if !strings.Contains(e.readFile("domains/x/level-1.yaml"), "Two lines") {
			t.Errorf("level-1.yaml lost x1")
		}
	})

	t.Run("a hand edit is picked up", func(t *testing.T) {
		content := strings.Replace(e.readFile("domains/math/domain.yaml"), "name: Math", "name: Edited by hand", 1)
		e.writeFile("domains/math/domain.yaml", content)
		must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		if d := must(t, e.get("/api/settings/domains/math"), http.StatusOK).object(t); d["name"] != "Edited by hand" {
			t.Fatalf("domain %v", d)
		}
	})

	t.Run("a file removed by hand disappears", func(t *testing.T) {
		if err := os.Remove(filepath.Join(e.defsDir, "domains", "math", "level-2.yaml")); err != nil {
			t.Fatal(err)
		}
		must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		mustProblem(t, e.get("/api/settings/tests/m3"), http.StatusNotFound)
		must(t, e.get("/api/settings/tests/m1"), http.StatusOK)
	})

	t.Run("a write over an unsynced hand edit is refused", func(t *testing.T) {
		edited := strings.Replace(e.readFile("domains/logic/domain.yaml"), "name: Logic", "name: Unsynced", 1)
		e.writeFile("domains/logic/domain.yaml", edited)
		before := e.state()
		mustProblem(t, e.put("/api/settings/domains/logic", map[string]any{"description": "API"}), http.StatusConflict)
		e.assertUnchanged(t, before)
		if e.readFile("domains/logic/domain.yaml") != edited {
			t.Fatalf("the hand edit was overwritten")
		}
		must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		d := must(t, e.put("/api/settings/domains/logic", map[string]any{"description": "API"}), http.StatusOK).object(t)
		if d["name"] != "Unsynced" || d["description"] != "API" {
			t.Fatalf("domain %v", d)
		}
	})
}

func TestSyncBrokenFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	e.writeFile("domains/good/domain.yaml", "id: good\nname: Good\n")
	e.writeFile("domains/good/level-1.yaml", "tests:\n  - id: g1\n    prompt: p\n    expected:\n      answer: a\n")
	e.writeFile("domains/good/level-2.yaml", "tests:\n  - id: g2\n    prompt: p\n    expected:\n      answer: a\n      type: fuzzy\n")
	e.writeFile("domains/bad/domain.yaml", "id: bad\nname: [unclosed\n")
	e.writeFile("domains/bad/level-1.yaml", "tests:\n  - id: b1\n    prompt: p\n    expected:\n      answer: a\n")
	e.writeFile("domains/badcolor/domain.yaml", "id: badcolor\nname: Bad colour\ncolor: red\n")
	e.writeFile("evaluators/broken.yaml", "id: broken\nname: Broken\nextraction_regex: \"(unclosed\"\n")
	e.writeFile("tools/misnamed.yaml", "id: other\nfunction:\n  name: f\n")

	r := must(t, e.post("/api/settings/sync", nil), http.StatusOK)
	var res struct {
		Success bool           `json:"success"`
		Loaded  map[string]int `json:"loaded"`
		Errors  []struct {
			File  string `json:"file"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	r.decode(t, &res)
	if res.Success {
		t.Errorf("success true with broken files: %s", r.body)
	}
	reported := map[string]string{}
	for _, fe := range res.Errors {
		reported[fe.File] = fe.Error
	}
	for file, mention := range map[string]string{
		"domains/good/level-2.yaml":    "expected.type",
		"domains/bad/domain.yaml":      "",
		"domains/bad/level-1.yaml":     "domains/bad/domain.yaml",
		"domains/badcolor/domain.yaml": "color",
		"evaluators/broken.yaml":       "extraction_regex",
		"tools/misnamed.yaml":          "file name",
	} {
		msg, ok := reported[file]
		if !ok {
			t.Errorf("%s not reported; errors: %s", file, r.body)
			continue
		}
		if !strings.Contains(msg, mention) {
			t.Errorf("%s: error %q does not mention %q", file, msg, mention)
		}
	}
	if len(res.Errors) != 6 {
		t.Errorf("%d errors, want 6: %s", len(res.Errors), r.body)
	}
	want := map[string]int{"domains": 3, "levels": 4, "tests": 5, "evaluators": 1, "tools": 1, "targets": 0}
	if !maps.Equal(res.Loaded, want) {
		t.Errorf("loaded %v, want %v", res.Loaded, want)
	}

	t.Run("the rest stays loaded", func(t *testing.T) {
		for _, p := range []string{"domains/math", "domains/logic", "domains/good", "tests/m1", "tests/l1", "tests/g1", "evaluators/num", "tools/calc"} {
			must(t, e.get("/api/settings/"+p), http.StatusOK)
		}
	})
	t.Run("broken files load nothing", func(t *testing.T) {
		for _, p := range []string{"domains/bad", "domains/badcolor", "tests/g2", "tests/b1", "evaluators/broken", "tools/misnamed", "tools/other"} {
			mustProblem(t, e.get("/api/settings/"+p), http.StatusNotFound)
		}
	})
	t.Run("broken files are left as they are", func(t *testing.T) {
		if got := e.readFile("domains/bad/domain.yaml"); got != "id: bad\nname: [unclosed\n" {
			t.Fatalf("domains/bad/domain.yaml rewritten: %q", got)
		}
	})
	t.Run("writing over a broken file is refused", func(t *testing.T) {
		before := e.state()
		mustProblem(t, e.post("/api/settings/tests", map[string]any{
			"domain_id": "good", "level": 2, "prompt": "p", "expected": map[string]any{"answer": "a"},
		}), http.StatusConflict)
		e.assertUnchanged(t, before)
	})
	t.Run("fixing the file and syncing loads it", func(t *testing.T) {
		e.writeFile("domains/good/level-2.yaml", "tests:\n  - id: g2\n    prompt: p\n    expected:\n      answer: a\n      type: exact\n")
		r := must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		if strings.Contains(string(r.body), "domains/good/level-2.yaml") {
			t.Fatalf("still reported: %s", r.body)
		}
		must(t, e.get("/api/settings/tests/g2"), http.StatusOK)
	})
}

// TestConcurrentWriters runs many writers over HTTP at once: creating
// domains and tests (some with the same id), updating levels, moving tests,
// deleting a domain others write into, and reading. Every request succeeds
// or fails cleanly, the successes are all there afterwards, and the cache
// agrees with the files: a sync does not change the export.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	must(t, e.post("/api/settings/domains", map[string]any{"id": "doomed", "name": "Doomed"}), http.StatusCreated)

	type outcome struct {
		what   string
		id     string
		status int
		ok     bool // a problem+json body with success false, for errors
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		errs     []error
	)
	record := func(what, id string, r *response, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			return
		}
		o := outcome{what: what, id: id, status: r.status, ok: true}
		if r.status >= 400 {
			var p problem
			o.ok = json.Unmarshal(r.body, &p) == nil && p.Success != nil && !*p.Success &&
				p.Status == r.status && r.contentType() == "application/problem+json"
		}
		outcomes = append(outcomes, o)
	}

	const workers, perWorker = 12, 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				// A domain of its own.
				id := fmt.Sprintf("d-%d-%d", w, i)
				r, err := e.try("POST", "/api/settings/domains", map[string]any{"id": id, "name": "D " + id, "color": "#010203"})
				record("domain", id, r, err)
				// A test in a shared level, with a unique id.
				tid := fmt.Sprintf("t-%d-%d", w, i)
				domain := []string{"math", "logic"}[(w+i)%2]
				r, err = e.try("POST", "/api/settings/tests", map[string]any{
					"id": tid, "domain_id": domain, "level": 1 + i%3, "prompt": "Q " + tid,
					"expected": map[string]any{"answer": fmt.Sprint(w*100 + i), "type": "integer"},
				})
				record("test", tid, r, err)
				// A test without an id.
				r, err = e.try("POST", "/api/settings/tests", map[string]any{
					"domain_id": "math", "level": 3, "prompt": "generated", "expected": map[string]any{"answer": "x"},
				})
				record("generated test", "", r, err)
				// The same id from every worker: one wins.
				did := fmt.Sprintf("dup-%d", i)
				r, err = e.try("POST", "/api/settings/tests", map[string]any{
					"id": did, "domain_id": "logic", "level": 2, "prompt": "dup", "expected": map[string]any{"answer": "d"},
				})
				record("duplicate test", did, r, err)
				// Writes into a domain another worker deletes.
				r, err = e.try("POST", "/api/settings/tests", map[string]any{
					"id": fmt.Sprintf("doomed-%d-%d", w, i), "domain_id": "doomed", "level": 1, "prompt": "p", "expected": map[string]any{"answer": "a"},
				})
				record("doomed test", "", r, err)
				if w == 3 && i == 2 {
					r, err = e.try("DELETE", "/api/settings/domains/doomed", nil)
					record("delete doomed", "", r, err)
				}
				// Level updates and moves on shared levels.
				r, err = e.try("PUT", "/api/settings/levels/math/1", map[string]any{"system_prompt": fmt.Sprintf("by %d/%d", w, i)})
				record("level", "", r, err)
				r, err = e.try("POST", "/api/settings/tests/m1/move", map[string]any{"domain_id": []string{"math", "logic"}[i%2], "level": 1 + w%2})
				record("move", "", r, err)
				// Readers.
				for _, p := range []string{"/api/settings/tests?domain=math", "/api/settings/export", "/api/settings/domains"} {
					r, err = e.try("GET", p, nil)
					record("read", "", r, err)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	allowed := map[string][]int{
		"domain":         {201},
		"test":           {201},
		"generated test": {201},
		"duplicate test": {201, 409},
		"doomed test":    {201, 404, 409, 422},
		"delete doomed":  {200},
		"level":          {200},
		"move":           {200},
		"read":           {200},
	}
	dupWins := map[string]int{}
	var created []string
	generated := 0
	for _, o := range outcomes {
		if !slices.Contains(allowed[o.what], o.status) {
			t.Errorf("%s %s: status %d, want one of %v", o.what, o.id, o.status, allowed[o.what])
		}
		if !o.ok {
			t.Errorf("%s %s: status %d without a problem+json body", o.what, o.id, o.status)
		}
		switch {
		case o.what == "duplicate test" && o.status == 201:
			dupWins[o.id]++
		case o.what == "test" && o.status == 201:
			created = append(created, o.id)
		case o.what == "generated test" && o.status == 201:
			generated++
		}
	}
	for i := range perWorker {
		if n := dupWins[fmt.Sprintf("dup-%d", i)]; n != 1 {
			t.Errorf("dup-%d created %d times, want once", i, n)
		}
	}

	all := listTests(t, e, "")
	for _, id := range created {
		if !slices.Contains(all, id) {
			t.Errorf("created test %s is missing", id)
		}
	}
	if got := len(listTests(t, e, "?domain=math&level=3")); got < generated {
		t.Errorf("%d tests in math/3, want at least %d generated", got, generated)
	}
	var domains struct {
		Domains []map[string]any `json:"domains"`
	}
	must(t, e.get("/api/settings/domains"), http.StatusOK).decode(t, &domains)
	if got := len(domains.Domains); got != 2+workers*perWorker {
		t.Errorf("%d domains, want %d", got, 2+workers*perWorker)
	}
	if slices.Contains(ids(domains.Domains), "doomed") || e.exists("domains/doomed/domain.yaml") {
		t.Errorf("doomed survived its deletion")
	}
	for _, id := range all {
		if strings.HasPrefix(id, "doomed-") {
			t.Errorf("test %s of a deleted domain is still listed", id)
		}
	}

	before := must(t, e.get("/api/settings/export"), http.StatusOK)
	r := must(t, e.post("/api/settings/sync", nil), http.StatusOK)
	if res := r.object(t); res["success"] != true {
		t.Fatalf("sync after concurrent writes: %s", r.body)
	}
	after := must(t, e.get("/api/settings/export"), http.StatusOK)
	if string(before.body) != string(after.body) {
		t.Fatalf("sync changed the export:\nbefore %s\nafter  %s", before.body, after.body)
	}
}

// TestImportDefaults checks that definitions imported without optional
// fields get the defaults a file without them gets, not zero values: a
// domain is enabled, a level has pass_threshold 0.5 and mode append.
func TestImportDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.post("/api/settings/import", map[string]any{"domains": []any{
		map[string]any{"id": "d", "name": "D"},
		map[string]any{"id": "off", "name": "Off", "enabled": false},
	}}), http.StatusOK)
	if d := must(t, e.get("/api/settings/domains/d"), http.StatusOK).object(t); d["enabled"] != true {
		t.Errorf("domain imported without enabled: %v, want enabled", d)
	}
	if d := must(t, e.get("/api/settings/domains/off"), http.StatusOK).object(t); d["enabled"] != false {
		t.Errorf("domain imported with enabled false: %v", d)
	}
	e.writeFile("domains/hand/domain.yaml", "id: hand\nname: Hand\n")
	must(t, e.post("/api/settings/sync", nil), http.StatusOK)
	if d := must(t, e.get("/api/settings/domains/hand"), http.StatusOK).object(t); d["enabled"] != true {
		t.Errorf("hand-written domain without enabled: %v, want enabled", d)
	}

	must(t, e.post("/api/settings/import", map[string]any{"levels": []any{
		map[string]any{"domain_id": "d", "level": 1, "system_prompt": "From import"},
		map[string]any{"domain_id": "d", "level": 2, "pass_threshold": 0},
	}}), http.StatusOK)
	l1 := must(t, e.get("/api/settings/levels/d/1"), http.StatusOK).object(t)
	if l1["pass_threshold"] != 0.5 || l1["system_prompt_mode"] != "append" || l1["system_prompt"] != "From import" {
		t.Errorf("level 1 %v, want pass_threshold 0.5, mode append", l1)
	}
	if l2 := must(t, e.get("/api/settings/levels/d/2"), http.StatusOK).object(t); l2["pass_threshold"] != 0.0 {
		t.Errorf("level 2 %v, want the explicit pass_threshold 0", l2)
	}
	// The same level written by hand loads the same way.
	e.writeFile("domains/d/level-3.yaml", "system_prompt: From import\ntests: []\n")
	must(t, e.post("/api/settings/sync", nil), http.StatusOK)
	l3 := must(t, e.get("/api/settings/levels/d/3"), http.StatusOK).object(t)
	if l3["pass_threshold"] != l1["pass_threshold"] || l3["system_prompt_mode"] != l1["system_prompt_mode"] {
		t.Errorf("hand-written level %v differs from the imported %v", l3, l1)
	}
}

// TestRestart checks that the definitions outlive the server: a new server
// on the same directories, or on the definition files alone with a new
// database, gives the same export.
func TestRestart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	first := newEnvIn(t, root)
	first.richFixture()
	want := must(t, first.get("/api/settings/export"), http.StatusOK)

	t.Run("same data and definitions", func(t *testing.T) {
		again := newEnvIn(t, root)
		if got := must(t, again.get("/api/settings/export"), http.StatusOK); string(got.body) != string(want.body) {
			t.Fatalf("export after restart:\n%s\nwant\n%s", got.body, want.body)
		}
	})
	t.Run("definitions only, new database", func(t *testing.T) {
		other := t.TempDir()
		if err := os.CopyFS(filepath.Join(other, "definitions"), os.DirFS(first.defsDir)); err != nil {
			t.Fatal(err)
		}
		fresh := newEnvIn(t, other)
		if got := must(t, fresh.get("/api/settings/export"), http.StatusOK); string(got.body) != string(want.body) {
			t.Fatalf("export from the files alone:\n%s\nwant\n%s", got.body, want.body)
		}
	})
}

// syncBody is the body of GET and POST /api/settings/sync.
type syncBody struct {
	Success bool           `json:"success"`
	Loaded  map[string]int `json:"loaded"`
	Errors  []struct {
		File  string `json:"file"`
		Line  int    `json:"line"`
		Key   string `json:"key"`
		Error string `json:"error"`
	} `json:"errors"`
}

func TestGetSyncResult(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	defs := filepath.Join(root, "definitions")
	for rel, content := range map[string]string{
		"domains/x/domain.yaml":  "id: x\nnmae: X\n",
		"domains/x/level-1.yaml": "tests:\n  - id: x1\n    prompt: p\n    expected: {answer: a}\n",
		"domains/y/domain.yaml":  "id: y\nname: Y\n",
		"domains/y/level-1.yaml": "tests:\n  - id: y1\n    prompt: p\n    expected:\n      answer: a\n      typ: exact\n",
		"domains/z/domain.yaml":  "id: z\nname: Z\n",
		"domains/z/level-1.yaml": "tests:\n  - id: z1\n    prompt: [oops\n",
		"domains/ok/domain.yaml": "id: ok\nname: OK\n",
	} {
		p := filepath.Join(defs, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvIn(t, root)

	t.Run("the errors of the start-up sync, with line and key", func(t *testing.T) {
		var res syncBody
		must(t, e.get("/api/settings/sync"), http.StatusOK).decode(t, &res)
		if res.Success || res.Loaded["domains"] != 3 || res.Loaded["tests"] != 0 {
			t.Fatalf("result %+v", res)
		}
		type key struct {
			file string
			line int
			key  string
		}
		got := map[key]string{}
		for _, fe := range res.Errors {
			got[key{fe.File, fe.Line, fe.Key}] = fe.Error
		}
		for k, mention := range map[key]string{
			{"domains/x/domain.yaml", 2, "nmae"}: `unknown key "nmae" (did you mean "name"?)`,
			{"domains/x/level-1.yaml", 0, ""}:    "skipped",
			{"domains/y/level-1.yaml", 6, "typ"}: `unknown key "typ" (did you mean "type"?)`,
			{"domains/z/level-1.yaml", 3, ""}:    "not found",
		} {
			if msg, ok := got[k]; !ok || !strings.Contains(msg, mention) {
				t.Errorf("%+v: got %q, want it to mention %q; all: %+v", k, msg, mention, res.Errors)
			}
		}
		if len(res.Errors) != 4 {
			t.Errorf("%d errors, want 4: %+v", len(res.Errors), res.Errors)
		}
	})

	t.Run("GET does not read the files again", func(t *testing.T) {
		e.writeFile("domains/x/domain.yaml", "id: x\nname: X\n")
		r := must(t, e.get("/api/settings/sync"), http.StatusOK)
		if !strings.Contains(string(r.body), `"nmae"`) {
			t.Fatalf("the fixed file is no longer reported before a sync: %s", r.body)
		}
	})

	t.Run("after POST, GET returns what POST returned", func(t *testing.T) {
		posted := must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		got := must(t, e.get("/api/settings/sync"), http.StatusOK)
		if string(got.body) != string(posted.body) {
			t.Fatalf("GET %s\nPOST %s", got.body, posted.body)
		}
		var res syncBody
		got.decode(t, &res)
		if len(res.Errors) != 2 || res.Loaded["tests"] != 1 {
			t.Fatalf("result %s", got.body)
		}
		e.writeFile("domains/y/level-1.yaml", "tests:\n  - id: y1\n    prompt: p\n    expected: {answer: a}\n")
		e.writeFile("domains/z/level-1.yaml", "tests: []\n")
		must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		must(t, e.get("/api/settings/sync"), http.StatusOK).decode(t, &res)
		if !res.Success || res.Errors == nil || len(res.Errors) != 0 {
			t.Fatalf("result %+v", res)
		}
	})
}

func TestGetSyncResultNeedsTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withToken("s3cret"))
	r := must(t, e.request(http.MethodGet, "/api/settings/sync", nil, "Authorization", "Bearer s3cret"), http.StatusOK)
	if res := r.object(t); res["success"] != true {
		t.Fatalf("result %s", r.body)
	}
	mustProblem(t, e.request(http.MethodGet, "/api/settings/sync", nil, "Authorization", "Bearer wrong"), http.StatusUnauthorized)
}

// A replace import shaped as the service describes it, {merge, domains,
// tests}, keeps the evaluators and tools its domains and tests use.
func TestReplaceImportKeepsEvaluatorsAndTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	body := map[string]any{
		"merge":   false,
		"domains": []any{map[string]any{"id": "geo", "name": "Geography", "evaluator_id": "num"}},
		"tests": []any{map[string]any{"id": "g1", "domain_id": "geo", "level": 1, "prompt": "p",
			"expected": map[string]any{"answer": "1"}, "tools": []string{"calc"}}},
	}
	r := must(t, e.post("/api/settings/import", body), http.StatusOK)
	total, _ := r.object(t)["total"].(map[string]any)
	if total["domains"] != 1.0 || total["tests"] != 1.0 || total["evaluators"] != 1.0 || total["tools"] != 1.0 {
		t.Fatalf("result %s", r.body)
	}
	for _, p := range []string{"evaluators/num", "tools/calc", "domains/geo", "tests/g1"} {
		must(t, e.get("/api/settings/"+p), http.StatusOK)
	}
	for _, p := range []string{"domains/math", "domains/logic", "tests/m1", "tests/l1"} {
		mustProblem(t, e.get("/api/settings/"+p), http.StatusNotFound)
	}
	if !strings.Contains(e.readFile("evaluators/num.yaml"), "Numbers") {
		t.Fatal("evaluators/num.yaml was not kept")
	}

	t.Run("an empty evaluators list replaces them: a domain using one is refused", func(t *testing.T) {
		before := e.state()
		body := map[string]any{
			"merge": false, "evaluators": []any{},
			"domains": []any{map[string]any{"id": "geo", "name": "Geography", "evaluator_id": "num"}},
		}
		mustProblem(t, e.post("/api/settings/import", body), http.StatusUnprocessableEntity, "body.domains[0].evaluator_id")
		e.assertUnchanged(t, before)
	})
	t.Run("an unknown evaluator is refused", func(t *testing.T) {
		before := e.state()
		body := map[string]any{"merge": false,
			"domains": []any{map[string]any{"id": "geo", "name": "Geography", "evaluator_id": "ghost"}}}
		mustProblem(t, e.post("/api/settings/import", body), http.StatusUnprocessableEntity, "body.domains[0].evaluator_id")
		e.assertUnchanged(t, before)
	})
}
