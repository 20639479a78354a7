package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestEvaluators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("list empty", func(t *testing.T) {
		r := must(t, e.get("/api/settings/evaluators"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"evaluators":[],"total":0}` {
			t.Fatalf("body %s", got)
		}
	})

	body := map[string]any{
		"id": "final", "name": "Final answer", "type": "regex",
		"extraction_regex": `Final answer:\s*(?<answer>.+)$`, "uses_pass2": true,
	}
	t.Run("create returns 201 with the record", func(t *testing.T) {
		got := must(t, e.post("/api/settings/evaluators", body), http.StatusCreated).object(t)
		for k, v := range body {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if !strings.Contains(e.readFile("evaluators/final.yaml"), "Final answer") {
			t.Errorf("evaluators/final.yaml: %s", e.readFile("evaluators/final.yaml"))
		}
	})

	t.Run("create defaults the type to regex", func(t *testing.T) {
		got := must(t, e.post("/api/settings/evaluators", map[string]any{"id": "plain", "name": "Plain", "ignored": 1}), http.StatusCreated).object(t)
		if got["type"] != "regex" || got["uses_pass2"] != false || got["extraction_regex"] != "" {
			t.Fatalf("record %v", got)
		}
	})

	t.Run("get one", func(t *testing.T) {
		got := must(t, e.get("/api/settings/evaluators/final"), http.StatusOK).object(t)
		for k, v := range body {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
	})

	t.Run("list", func(t *testing.T) {
		var list struct {
			Evaluators []map[string]any `json:"evaluators"`
		}
		must(t, e.get("/api/settings/evaluators"), http.StatusOK).decode(t, &list)
		if got := ids(list.Evaluators); !slices.Equal(got, []string{"final", "plain"}) {
			t.Fatalf("ids %v", got)
		}
		for _, ev := range list.Evaluators {
			for _, k := range []string{"id", "name", "type", "extraction_regex", "uses_pass2"} {
				if _, ok := ev[k]; !ok {
					t.Errorf("evaluator %v has no %q", ev["id"], k)
				}
			}
		}
	})

	t.Run("put changes only the fields present", func(t *testing.T) {
		got := must(t, e.put("/api/settings/evaluators/final", map[string]any{"uses_pass2": false}), http.StatusOK).object(t)
		want := map[string]any{}
		for k, v := range body {
			want[k] = v
		}
		want["uses_pass2"] = false
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		got = must(t, e.put("/api/settings/evaluators/final", map[string]any{"id": "final", "extraction_regex": `(\d+)`}), http.StatusOK).object(t)
		if got["extraction_regex"] != `(\d+)` || got["name"] != "Final answer" || got["uses_pass2"] != false {
			t.Fatalf("record %v", got)
		}
		again := must(t, e.get("/api/settings/evaluators/final"), http.StatusOK).object(t)
		if again["extraction_regex"] != `(\d+)` {
			t.Fatalf("after GET: %v", again)
		}
	})

	t.Run("regexp2 syntax beyond RE2 is accepted", func(t *testing.T) {
		// Lookbehind and backreferences: .NET syntax, as the evaluator runs it.
		must(t, e.post("/api/settings/evaluators", map[string]any{
			"id": "dotnet", "name": "Lookbehind", "extraction_regex": `(?<=Answer: )(\w)\1?`,
		}), http.StatusCreated)
	})

	t.Run("delete", func(t *testing.T) {
		r := must(t, e.del("/api/settings/evaluators/plain"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Fatalf("body %s", got)
		}
		mustProblem(t, e.get("/api/settings/evaluators/plain"), http.StatusNotFound)
		if e.exists("evaluators/plain.yaml") {
			t.Fatalf("evaluators/plain.yaml still on disk")
		}
	})

	t.Run("delete after its users are gone", func(t *testing.T) {
		must(t, e.post("/api/settings/domains", map[string]any{"id": "d", "name": "D", "evaluator_id": "dotnet"}), http.StatusCreated)
		mustProblem(t, e.del("/api/settings/evaluators/dotnet"), http.StatusConflict)
		must(t, e.put("/api/settings/domains/d", map[string]any{"evaluator_id": ""}), http.StatusOK)
		must(t, e.del("/api/settings/evaluators/dotnet"), http.StatusOK)
	})
}

func TestEvaluatorFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	// "used" is named by a test only; "num" by the domain math.
	must(t, e.post("/api/settings/evaluators", map[string]any{"id": "used", "name": "Used"}), http.StatusCreated)
	must(t, e.put("/api/settings/tests/l1", map[string]any{"evaluator_id": "used"}), http.StatusOK)

	const list = "/api/settings/evaluators"
	runFailures(t, e, []failCase{
		{"create malformed JSON", "POST", list, rawBody(`{"id":"x" "name":"X"}`), 400, nil},
		{"create wrong field type", "POST", list, map[string]any{"id": "x", "name": "X", "uses_pass2": "yes"}, 422, []string{"body.uses_pass2"}},
		{"create without id", "POST", list, map[string]any{"name": "X"}, 422, []string{"body.id"}},
		{"create bad id", "POST", list, map[string]any{"id": "-x", "name": "X"}, 422, []string{"body.id"}},
		{"create without name", "POST", list, map[string]any{"id": "x"}, 422, []string{"body.name"}},
		{"create regex that does not compile", "POST", list, map[string]any{"id": "x", "name": "X", "extraction_regex": `(?<answer>\d+`}, 422, []string{"body.extraction_regex"}},
		{"create unknown type", "POST", list, map[string]any{"id": "x", "name": "X", "type": "telepathy"}, 422, []string{"body.type"}},
		{"create duplicate", "POST", list, map[string]any{"id": "num", "name": "Again"}, 409, nil},
		{"create body over 1 MiB", "POST", list, map[string]any{"id": "x", "name": "X", "description": strings.Repeat("d", 1<<20)}, 413, nil},
		{"get unknown", "GET", list + "/nope", nil, 404, nil},
		{"put unknown", "PUT", list + "/nope", map[string]any{"name": "X"}, 404, nil},
		{"put malformed JSON", "PUT", list + "/num", rawBody(`{`), 400, nil},
		{"put id differs from path", "PUT", list + "/num", map[string]any{"id": "other"}, 422, []string{"body.id"}},
		{"put regex that does not compile", "PUT", list + "/num", map[string]any{"extraction_regex": `[`}, 422, []string{"body.extraction_regex"}},
		{"put unknown type", "PUT", list + "/num", map[string]any{"type": "telepathy"}, 422, []string{"body.type"}},
		{"put empty name", "PUT", list + "/num", map[string]any{"name": ""}, 422, []string{"body.name"}},
		{"delete unknown", "DELETE", list + "/nope", nil, 404, nil},
		{"delete in use by a domain", "DELETE", list + "/num", nil, 409, nil},
		{"delete in use by a test", "DELETE", list + "/used", nil, 409, nil},
	})
	t.Run("a 409 names the users", func(t *testing.T) {
		p := mustProblem(t, e.del(list+"/num"), http.StatusConflict)
		if !strings.Contains(p.Detail, "domain math") {
			t.Errorf("detail %q does not name domain math", p.Detail)
		}
		p = mustProblem(t, e.del(list+"/used"), http.StatusConflict)
		if !strings.Contains(p.Detail, "test l1") {
			t.Errorf("detail %q does not name test l1", p.Detail)
		}
	})
}
