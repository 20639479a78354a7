package server_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// listTests returns the ids of GET /api/settings/tests with a query.
func listTests(t *testing.T, e *testEnv, query string) []string {
	t.Helper()
	var body struct {
		Tests []map[string]any `json:"tests"`
	}
	r := must(t, e.get("/api/settings/tests"+query), http.StatusOK)
	r.decode(t, &body)
	if body.Tests == nil {
		t.Fatalf("tests is not an array: %s", r.body)
	}
	return ids(body.Tests)
}

func TestTestsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"neither filter", "", []string{"l1", "m1", "m2", "m3"}},
		{"domain only", "?domain=math", []string{"m1", "m2", "m3"}},
		{"other domain", "?domain=logic", []string{"l1"}},
		{"level only", "?level=1", []string{"l1", "m1", "m2"}},
		{"level only, another", "?level=2", []string{"m3"}},
		{"both", "?domain=math&level=1", []string{"m1", "m2"}},
		{"both, in the other order", "?level=2&domain=math", []string{"m3"}},
		{"both, nothing matches", "?domain=logic&level=2", []string{}},
		{"unknown domain", "?domain=nope", []string{}},
		{"empty level means all", "?domain=math&level=", []string{"m1", "m2", "m3"}},
		{"level -1 means all", "?level=-1", []string{"l1", "m1", "m2", "m3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := listTests(t, e, tc.query); !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("bad level", func(t *testing.T) {
		mustProblem(t, e.get("/api/settings/tests?level=abc"), http.StatusUnprocessableEntity, "query.level")
		mustProblem(t, e.get("/api/settings/tests?level=-2"), http.StatusUnprocessableEntity, "query.level")
	})
	t.Run("list items carry every field", func(t *testing.T) {
		var body struct {
			Tests []map[string]any `json:"tests"`
		}
		must(t, e.get("/api/settings/tests?domain=math&level=2"), http.StatusOK).decode(t, &body)
		m3 := body.Tests[0]
		for _, k := range []string{"id", "domain_id", "level", "name", "prompt", "expected", "evaluator_id"} {
			if _, ok := m3[k]; !ok {
				t.Errorf("test has no %q: %v", k, m3)
			}
		}
		if exp, _ := m3["expected"].(map[string]any); exp["answer"] != "10" || exp["type"] != "numeric" {
			t.Errorf("expected %v", m3["expected"])
		}
	})
}

func TestTests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()

	t.Run("create returns 201 with the record", func(t *testing.T) {
		body := map[string]any{
			"id": "m4", "domain_id": "math", "level": 1, "name": "Sum", "prompt": "What is 3 + 4?",
			"expected": map[string]any{"answer": "7", "type": "integer"}, "evaluator_id": "num", "tools": []string{"calc"},
		}
		got := must(t, e.post("/api/settings/tests", body), http.StatusCreated).object(t)
		for _, k := range []string{"id", "domain_id", "name", "prompt", "evaluator_id"} {
			if got[k] != body[k] {
				t.Errorf("%s = %v, want %v", k, got[k], body[k])
			}
		}
		if got["level"] != 1.0 {
			t.Errorf("level = %v", got["level"])
		}
		if exp, _ := got["expected"].(map[string]any); exp["answer"] != "7" || exp["type"] != "integer" {
			t.Errorf("expected = %v", got["expected"])
		}
		if tools, _ := got["tools"].([]any); len(tools) != 1 || tools[0] != "calc" {
			t.Errorf("tools = %v", got["tools"])
		}
		if got := listTests(t, e, "?domain=math&level=1"); !slices.Equal(got, []string{"m1", "m2", "m4"}) {
			t.Errorf("a new test goes at the end of its level: %v", got)
		}
		if !strings.Contains(e.readFile("domains/math/level-1.yaml"), "What is 3 + 4?") {
			t.Errorf("level-1.yaml lacks the new test")
		}
	})

	t.Run("create without id generates one", func(t *testing.T) {
		got := must(t, e.post("/api/settings/tests", map[string]any{
			"domain_id": "logic", "level": 3, "prompt": "True?", "expected": map[string]any{"answer": "true"},
		}), http.StatusCreated).object(t)
		id, _ := got["id"].(string)
		if !regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`).MatchString(id) {
			t.Fatalf("generated id %q", id)
		}
		if exp, _ := got["expected"].(map[string]any); exp["type"] != "exact" {
			t.Errorf("default expected type %v, want exact", exp["type"])
		}
		must(t, e.get("/api/settings/tests/"+id), http.StatusOK)
		if !e.exists("domains/logic/level-3.yaml") {
			t.Errorf("level-3.yaml not written")
		}
	})

	t.Run("unknown fields are ignored", func(t *testing.T) {
		must(t, e.post("/api/settings/tests", map[string]any{
			"id": "x1", "domain_id": "logic", "level": 1, "prompt": "p", "expected": map[string]any{"answer": "a", "hint": "h"},
			"difficulty": "hard",
		}), http.StatusCreated)
	})

	t.Run("every expected type is accepted", func(t *testing.T) {
		for i, exp := range []map[string]any{
			{"type": "exact", "answer": "Paris"},
			{"type": "numeric", "answer": "1,234.5", "tolerance": 0.01},
			{"type": "integer", "answer": "42"},
			{"type": "choice", "answer": "B"},
			{"type": "contains", "answer": "blue"},
			{"type": "regex", "answer": `^\d+$`},
			{"type": "boolean", "answer": "yes"},
			{"type": "json", "answer": `{"a": [1, 2]}`},
			{"type": "tool_call", "answer": "add", "arguments": map[string]any{"a": 2}},
		} {
			t.Run(exp["type"].(string), func(t *testing.T) {
				got := must(t, e.post("/api/settings/tests", map[string]any{
					"id": "ty" + string(rune('a'+i)), "domain_id": "logic", "level": 5, "prompt": "p", "expected": exp,
				}), http.StatusCreated).object(t)
				gotExp, _ := got["expected"].(map[string]any)
				if gotExp["type"] != exp["type"] || gotExp["answer"] != exp["answer"] {
					t.Fatalf("expected %v, want %v", gotExp, exp)
				}
			})
		}
	})

	t.Run("get one", func(t *testing.T) {
		got := must(t, e.get("/api/settings/tests/m3"), http.StatusOK).object(t)
		if got["id"] != "m3" || got["domain_id"] != "math" || got["level"] != 2.0 || got["prompt"] != "Question m3" {
			t.Fatalf("test %v", got)
		}
	})

	t.Run("put changes only the fields present", func(t *testing.T) {
		got := must(t, e.put("/api/settings/tests/m1", map[string]any{"prompt": "What is 2 + 2?"}), http.StatusOK).object(t)
		if got["prompt"] != "What is 2 + 2?" || got["name"] != "Test m1" || got["domain_id"] != "math" || got["level"] != 1.0 {
			t.Fatalf("test %v", got)
		}
		if exp, _ := got["expected"].(map[string]any); exp["answer"] != "4" || exp["type"] != "numeric" {
			t.Fatalf("expected %v", got["expected"])
		}
		// Only the expected fields present change too.
		got = must(t, e.put("/api/settings/tests/m1", map[string]any{"expected": map[string]any{"type": "integer"}}), http.StatusOK).object(t)
		if exp, _ := got["expected"].(map[string]any); exp["answer"] != "4" || exp["type"] != "integer" {
			t.Fatalf("expected %v, want answer 4 type integer", got["expected"])
		}
		if got["prompt"] != "What is 2 + 2?" {
			t.Fatalf("prompt %v", got["prompt"])
		}
		again := must(t, e.get("/api/settings/tests/m1"), http.StatusOK).object(t)
		if exp, _ := again["expected"].(map[string]any); exp["type"] != "integer" || again["prompt"] != "What is 2 + 2?" {
			t.Fatalf("after GET: %v", again)
		}
		// Position in the level is kept.
		if got := listTests(t, e, "?domain=math&level=1"); got[0] != "m1" {
			t.Fatalf("order after PUT: %v", got)
		}
	})

	t.Run("put with null clears tolerance and arguments", func(t *testing.T) {
		got := must(t, e.put("/api/settings/tests/m2", map[string]any{"expected": map[string]any{"tolerance": 0.1, "arguments": map[string]any{"a": 1}}}), http.StatusOK).object(t)
		if exp, _ := got["expected"].(map[string]any); exp["tolerance"] != 0.1 || exp["arguments"] == nil {
			t.Fatalf("expected %v, want tolerance and arguments set", got["expected"])
		}
		// Absent keeps them.
		got = must(t, e.put("/api/settings/tests/m2", map[string]any{"expected": map[string]any{"answer": "5"}}), http.StatusOK).object(t)
		if exp, _ := got["expected"].(map[string]any); exp["tolerance"] != 0.1 || exp["arguments"] == nil || exp["answer"] != "5" {
			t.Fatalf("expected %v, want tolerance and arguments kept", got["expected"])
		}
		got = must(t, e.put("/api/settings/tests/m2", rawBody(`{"expected": {"tolerance": null, "arguments": null}}`)), http.StatusOK).object(t)
		exp, _ := got["expected"].(map[string]any)
		if _, ok := exp["tolerance"]; ok {
			t.Errorf("tolerance %v after null", exp["tolerance"])
		}
		if _, ok := exp["arguments"]; ok {
			t.Errorf("arguments %v after null", exp["arguments"])
		}
		if exp["answer"] != "5" {
			t.Errorf("answer %v", exp["answer"])
		}
		if strings.Contains(e.readFile("domains/math/level-1.yaml"), "tolerance") {
			t.Errorf("level-1.yaml still has a tolerance")
		}
	})

	t.Run("put with the same id in the body", func(t *testing.T) {
		must(t, e.put("/api/settings/tests/m1", map[string]any{"id": "m1", "name": "Two plus two"}), http.StatusOK)
	})

	t.Run("put with a new level moves the test", func(t *testing.T) {
		got := must(t, e.put("/api/settings/tests/m2", map[string]any{"level": 2}), http.StatusOK).object(t)
		if got["level"] != 2.0 || got["domain_id"] != "math" {
			t.Fatalf("test %v", got)
		}
		if got := listTests(t, e, "?domain=math&level=2"); !slices.Equal(got, []string{"m3", "m2"}) {
			t.Fatalf("math/2: %v", got)
		}
		if strings.Contains(e.readFile("domains/math/level-1.yaml"), "id: m2") {
			t.Fatalf("m2 still in level-1.yaml")
		}
	})

	t.Run("move", func(t *testing.T) {
		got := must(t, e.post("/api/settings/tests/m2/move", map[string]any{"domain_id": "logic", "level": 1}), http.StatusOK).object(t)
		if got["domain_id"] != "logic" || got["level"] != 1.0 || got["id"] != "m2" || got["prompt"] != "Question m2" {
			t.Fatalf("moved test %v", got)
		}
		if got := listTests(t, e, "?domain=logic&level=1"); !slices.Equal(got, []string{"l1", "x1", "m2"}) {
			t.Fatalf("logic/1: %v", got)
		}
		if got := listTests(t, e, "?domain=math&level=2"); !slices.Equal(got, []string{"m3"}) {
			t.Fatalf("math/2: %v", got)
		}
		if !strings.Contains(e.readFile("domains/logic/level-1.yaml"), "id: m2") ||
			strings.Contains(e.readFile("domains/math/level-2.yaml"), "id: m2") {
			t.Fatalf("files do not reflect the move")
		}
	})

	t.Run("move to a new level of the same domain", func(t *testing.T) {
		got := must(t, e.post("/api/settings/tests/m2/move", map[string]any{"domain_id": "logic", "level": 9, "extra": 1}), http.StatusOK).object(t)
		if got["level"] != 9.0 {
			t.Fatalf("moved test %v", got)
		}
		if !e.exists("domains/logic/level-9.yaml") {
			t.Fatalf("level-9.yaml not written")
		}
	})

	t.Run("delete", func(t *testing.T) {
		r := must(t, e.del("/api/settings/tests/m2"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Fatalf("body %s", got)
		}
		mustProblem(t, e.get("/api/settings/tests/m2"), http.StatusNotFound)
		if strings.Contains(e.readFile("domains/logic/level-9.yaml"), "id: m2") {
			t.Fatalf("m2 still in level-9.yaml")
		}
		mustProblem(t, e.del("/api/settings/tests/m2"), http.StatusNotFound)
	})
}

func TestTestFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	const list = "/api/settings/tests"
	valid := func(change map[string]any) map[string]any {
		body := map[string]any{
			"id": "new", "domain_id": "math", "level": 1, "prompt": "p",
			"expected": map[string]any{"answer": "1", "type": "numeric"},
		}
		for k, v := range change {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		return body
	}
	exp := func(answer, typ string) map[string]any { return map[string]any{"answer": answer, "type": typ} }
	runFailures(t, e, []failCase{
		{"create malformed JSON", "POST", list, rawBody(`{"domain_id": "math",`), 400, nil},
		{"create wrong field type", "POST", list, valid(map[string]any{"level": "one"}), 422, []string{"body.level"}},
		{"create without domain", "POST", list, valid(map[string]any{"domain_id": nil}), 422, []string{"body.domain_id"}},
		{"create unknown domain", "POST", list, valid(map[string]any{"domain_id": "nope"}), 422, []string{"body.domain_id"}},
		{"create without level", "POST", list, valid(map[string]any{"level": nil}), 422, []string{"body.level"}},
		{"create negative level", "POST", list, valid(map[string]any{"level": -1}), 422, []string{"body.level"}},
		{"create level over the maximum", "POST", list, valid(map[string]any{"level": 1001}), 422, []string{"body.level"}},
		{"create without prompt", "POST", list, valid(map[string]any{"prompt": nil}), 422, []string{"body.prompt"}},
		{"create without expected", "POST", list, valid(map[string]any{"expected": nil}), 422, []string{"body.expected.answer"}},
		{"create unknown expected type", "POST", list, valid(map[string]any{"expected": exp("1", "fuzzy")}), 422, []string{"body.expected.type"}},
		{"create numeric answer not a number", "POST", list, valid(map[string]any{"expected": exp("abc", "numeric")}), 422, []string{"body.expected.answer"}},
		{"create regex answer does not compile", "POST", list, valid(map[string]any{"expected": exp("(", "regex")}), 422, []string{"body.expected.answer"}},
		{"create json answer not JSON", "POST", list, valid(map[string]any{"expected": exp("{", "json")}), 422, []string{"body.expected.answer"}},
		{"create negative tolerance", "POST", list, valid(map[string]any{"expected": map[string]any{"answer": "1", "type": "numeric", "tolerance": -1}}), 422, []string{"body.expected.tolerance"}},
		{"create bad id", "POST", list, valid(map[string]any{"id": "a b"}), 422, []string{"body.id"}},
		{"create duplicate id", "POST", list, valid(map[string]any{"id": "m1"}), 409, nil},
		{"create duplicate id of another domain", "POST", list, valid(map[string]any{"id": "l1"}), 409, nil},
		{"create unknown evaluator", "POST", list, valid(map[string]any{"evaluator_id": "nope"}), 422, []string{"body.evaluator_id"}},
		{"create unknown tool", "POST", list, valid(map[string]any{"tools": []string{"calc", "nope"}}), 422, []string{"body.tools[1]"}},
		{"create several errors", "POST", list, map[string]any{"id": "a b", "domain_id": "nope", "level": 1, "expected": exp("x", "fuzzy")}, 422,
			[]string{"body.id", "body.domain_id", "body.prompt", "body.expected.type"}},
		{"create body over 1 MiB", "POST", list, valid(map[string]any{"prompt": strings.Repeat("p", 1<<20)}), 413, nil},
		{"get unknown", "GET", list + "/nope", nil, 404, nil},
		{"put unknown", "PUT", list + "/nope", map[string]any{"prompt": "x"}, 404, nil},
		{"put malformed JSON", "PUT", list + "/m1", rawBody(`{"prompt"}`), 400, nil},
		{"put id differs from path", "PUT", list + "/m1", map[string]any{"id": "m9"}, 422, []string{"body.id"}},
		{"put unknown expected type", "PUT", list + "/m1", map[string]any{"expected": map[string]any{"type": "fuzzy"}}, 422, []string{"body.expected.type"}},
		{"put answer invalid for the type", "PUT", list + "/m1", map[string]any{"expected": map[string]any{"type": "choice", "answer": "??"}}, 422, []string{"body.expected.answer"}},
		{"put empty prompt", "PUT", list + "/m1", map[string]any{"prompt": ""}, 422, []string{"body.prompt"}},
		{"put to a missing domain", "PUT", list + "/m1", map[string]any{"domain_id": "nope"}, 422, []string{"body.domain_id"}},
		{"put unknown evaluator", "PUT", list + "/m1", map[string]any{"evaluator_id": "nope"}, 422, []string{"body.evaluator_id"}},
		{"put unknown tool", "PUT", list + "/m1", map[string]any{"tools": []string{"nope"}}, 422, []string{"body.tools[0]"}},
		{"put body over 1 MiB", "PUT", list + "/m1", map[string]any{"prompt": strings.Repeat("p", 1<<20)}, 413, nil},
		{"move to a missing domain", "POST", list + "/m1/move", map[string]any{"domain_id": "nope", "level": 1}, 422, []string{"body.domain_id"}},
		{"move without domain", "POST", list + "/m1/move", map[string]any{"level": 1}, 422, []string{"body.domain_id"}},
		{"move without level", "POST", list + "/m1/move", map[string]any{"domain_id": "logic"}, 422, []string{"body.level"}},
		{"move to a negative level", "POST", list + "/m1/move", map[string]any{"domain_id": "logic", "level": -3}, 422, []string{"body.level"}},
		{"move malformed JSON", "POST", list + "/m1/move", rawBody(`{"domain_id":`), 400, nil},
		{"move unknown test", "POST", list + "/nope/move", map[string]any{"domain_id": "logic", "level": 1}, 404, nil},
		{"delete unknown", "DELETE", list + "/nope", nil, 404, nil},
	})
}
