package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestDomains(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("list empty", func(t *testing.T) {
		r := must(t, e.get("/api/settings/domains"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"domains":[],"total":0}` {
			t.Fatalf("body %s, want {\"domains\":[],\"total\":0}", got)
		}
	})

	must(t, e.post("/api/settings/evaluators", map[string]any{"id": "num", "name": "Numbers"}), http.StatusCreated)

	full := map[string]any{
		"id": "math", "name": "Math", "description": "Arithmetic", "evaluator_id": "num",
		"system_prompt": "Answer with a number.", "icon": "calc", "color": "#A1b2C3",
	}
	t.Run("create returns 201 with the record", func(t *testing.T) {
		r := must(t, e.post("/api/settings/domains", full), http.StatusCreated)
		got := r.object(t)
		for k, v := range full {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if got["enabled"] != true {
			t.Errorf("enabled = %v, want true by default", got["enabled"])
		}
		if !e.exists("domains/math/domain.yaml") {
			t.Errorf("domains/math/domain.yaml not written")
		}
	})

	t.Run("create with only id and name", func(t *testing.T) {
		r := must(t, e.post("/api/settings/domains", map[string]any{"id": "logic", "name": "Logic", "enabled": false}), http.StatusCreated)
		got := r.object(t)
		if got["enabled"] != false || got["description"] != "" || got["evaluator_id"] != "" || got["color"] != "" {
			t.Fatalf("record %v", got)
		}
	})

	t.Run("unknown fields are ignored", func(t *testing.T) {
		r := must(t, e.post("/api/settings/domains", map[string]any{
			"id": "extra", "name": "Extra", "future_field": map[string]any{"x": 1}, "tags": []string{"a"},
		}), http.StatusCreated)
		if _, ok := r.object(t)["future_field"]; ok {
			t.Errorf("unknown field echoed back: %s", r.body)
		}
		must(t, e.put("/api/settings/domains/extra", map[string]any{"name": "Extra 2", "other": true}), http.StatusOK)
		if !strings.Contains(e.readFile("domains/extra/domain.yaml"), "Extra 2") ||
			strings.Contains(e.readFile("domains/extra/domain.yaml"), "future_field") {
			t.Errorf("domain.yaml: %s", e.readFile("domains/extra/domain.yaml"))
		}
	})

	t.Run("get one", func(t *testing.T) {
		got := must(t, e.get("/api/settings/domains/math"), http.StatusOK).object(t)
		for k, v := range full {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
	})

	t.Run("list shape", func(t *testing.T) {
		var body struct {
			Domains []map[string]any `json:"domains"`
		}
		must(t, e.get("/api/settings/domains"), http.StatusOK).decode(t, &body)
		if got := ids(body.Domains); !slices.Equal(got, []string{"extra", "logic", "math"}) {
			t.Fatalf("ids %v, want [extra logic math]", got)
		}
		for _, d := range body.Domains {
			for _, k := range []string{"id", "name", "description", "evaluator_id", "enabled"} {
				if _, ok := d[k]; !ok {
					t.Errorf("domain %v has no %q", d["id"], k)
				}
			}
		}
		if body.Domains[2]["evaluator_id"] != "num" || body.Domains[2]["enabled"] != true {
			t.Errorf("math in list: %v", body.Domains[2])
		}
	})

	t.Run("put changes only the fields present", func(t *testing.T) {
		r := must(t, e.put("/api/settings/domains/math", map[string]any{"description": "Sums", "enabled": false}), http.StatusOK)
		got := r.object(t)
		want := map[string]any{}
		for k, v := range full {
			want[k] = v
		}
		want["description"], want["enabled"] = "Sums", false
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		again := must(t, e.get("/api/settings/domains/math"), http.StatusOK).object(t)
		for k, v := range want {
			if again[k] != v {
				t.Errorf("after GET: %s = %v, want %v", k, again[k], v)
			}
		}
	})

	t.Run("put with the same id in the body", func(t *testing.T) {
		r := must(t, e.put("/api/settings/domains/math", map[string]any{"id": "math", "icon": "sigma"}), http.StatusOK)
		if got := r.object(t); got["icon"] != "sigma" || got["name"] != "Math" {
			t.Fatalf("record %v", got)
		}
	})

	t.Run("put clears a field sent empty", func(t *testing.T) {
		r := must(t, e.put("/api/settings/domains/math", map[string]any{"evaluator_id": ""}), http.StatusOK)
		if got := r.object(t); got["evaluator_id"] != "" {
			t.Fatalf("evaluator_id %v, want empty", got["evaluator_id"])
		}
	})

	t.Run("delete removes tests and level configs", func(t *testing.T) {
		must(t, e.post("/api/settings/tests", map[string]any{
			"id": "t1", "domain_id": "math", "level": 1, "prompt": "2+2?", "expected": map[string]any{"answer": "4"},
		}), http.StatusCreated)
		must(t, e.put("/api/settings/levels/math/2", map[string]any{"system_prompt": "Hard"}), http.StatusOK)
		must(t, e.post("/api/settings/tests", map[string]any{
			"id": "t2", "domain_id": "logic", "level": 1, "prompt": "p", "expected": map[string]any{"answer": "a"},
		}), http.StatusCreated)

		r := must(t, e.del("/api/settings/domains/math"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Fatalf("body %s, want {\"success\":true}", got)
		}
		mustProblem(t, e.get("/api/settings/domains/math"), http.StatusNotFound)
		mustProblem(t, e.get("/api/settings/tests/t1"), http.StatusNotFound)
		mustProblem(t, e.get("/api/settings/levels/math/2"), http.StatusNotFound)
		must(t, e.get("/api/settings/tests/t2"), http.StatusOK)
		for _, f := range []string{"domains/math/domain.yaml", "domains/math/level-1.yaml", "domains/math/level-2.yaml"} {
			if e.exists(f) {
				t.Errorf("%s still on disk", f)
			}
		}
		var tests struct {
			Tests []map[string]any `json:"tests"`
		}
		must(t, e.get("/api/settings/tests"), http.StatusOK).decode(t, &tests)
		if got := ids(tests.Tests); !slices.Equal(got, []string{"t2"}) {
			t.Fatalf("tests after delete: %v", got)
		}
		// The id is free again.
		must(t, e.post("/api/settings/domains", map[string]any{"id": "math", "name": "Math again"}), http.StatusCreated)
	})
}

// failCase is one failing request: what to send and the error expected.
type failCase struct {
	name      string
	method    string
	path      string
	body      any
	status    int
	locations []string
}

// runFailures sends each case to a server with the fixture and checks the
// error and that nothing changed.
func runFailures(t *testing.T, e *testEnv, cases []failCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.state()
			r := e.request(tc.method, tc.path, tc.body)
			mustProblem(t, r, tc.status, tc.locations...)
			e.assertUnchanged(t, before)
		})
	}
}

// bigBody is a JSON object a little over 1 MiB.
func bigBody(fields map[string]any) rawBody {
	var b strings.Builder
	b.WriteString(`{`)
	for k, v := range fields {
		b.WriteString(`"` + k + `":"` + v.(string) + `",`)
	}
	b.WriteString(`"description":"` + strings.Repeat("x", 1<<20+10) + `"}`)
	return rawBody(b.String())
}

func TestDomainFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	const list = "/api/settings/domains"
	runFailures(t, e, []failCase{
		{"create malformed JSON", "POST", list, rawBody(`{"id": "x", "name": `), 400, nil},
		{"create not an object", "POST", list, rawBody(`[1,2]`), 422, nil},
		{"create wrong field type", "POST", list, rawBody(`{"id":"x","name":5}`), 422, []string{"body.name"}},
		{"create without id", "POST", list, map[string]any{"name": "X"}, 422, []string{"body.id"}},
		{"create bad id", "POST", list, map[string]any{"id": "bad id", "name": "X"}, 422, []string{"body.id"}},
		{"create id with slash", "POST", list, map[string]any{"id": "../x", "name": "X"}, 422, []string{"body.id"}},
		{"create id too long", "POST", list, map[string]any{"id": strings.Repeat("a", 129), "name": "X"}, 422, []string{"body.id"}},
		{"create without name", "POST", list, map[string]any{"id": "x"}, 422, []string{"body.name"}},
		{"create bad colour", "POST", list, map[string]any{"id": "x", "name": "X", "color": "red"}, 422, []string{"body.color"}},
		{"create short colour", "POST", list, map[string]any{"id": "x", "name": "X", "color": "#abc"}, 422, []string{"body.color"}},
		{"create unknown evaluator", "POST", list, map[string]any{"id": "x", "name": "X", "evaluator_id": "nope"}, 422, []string{"body.evaluator_id"}},
		{"create several errors", "POST", list, map[string]any{"id": "bad id", "color": "#12345G"}, 422, []string{"body.id", "body.name", "body.color"}},
		{"create duplicate", "POST", list, map[string]any{"id": "math", "name": "Other"}, 409, nil},
		{"create body over 1 MiB", "POST", list, bigBody(map[string]any{"id": "big", "name": "Big"}), 413, nil},
		{"get unknown", "GET", list + "/nope", nil, 404, nil},
		{"put unknown", "PUT", list + "/nope", map[string]any{"name": "X"}, 404, nil},
		{"put malformed JSON", "PUT", list + "/math", rawBody(`{"name":`), 400, nil},
		{"put id differs from path", "PUT", list + "/math", map[string]any{"id": "other"}, 422, []string{"body.id"}},
		{"put bad colour", "PUT", list + "/math", map[string]any{"color": "#12345"}, 422, []string{"body.color"}},
		{"put empty name", "PUT", list + "/math", map[string]any{"name": " "}, 422, []string{"body.name"}},
		{"put unknown evaluator", "PUT", list + "/math", map[string]any{"evaluator_id": "nope"}, 422, []string{"body.evaluator_id"}},
		{"put body over 1 MiB", "PUT", list + "/math", bigBody(map[string]any{}), 413, nil},
		{"delete unknown", "DELETE", list + "/nope", nil, 404, nil},
	})
}
