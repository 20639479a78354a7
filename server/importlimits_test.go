package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportersLimitedLikeTheAPI checks that every way of bringing tests
// in holds a test to the size the create-test operation takes (1 MiB): a
// dataset row with a cell one byte over it is a row error naming its row
// and column, a definitions import with such a prompt or system prompt is
// a 422 naming the field, and a definitions file with one is a file error
// of the sync. (One byte over, not more: every byte of these bodies costs
// several times over under the race detector.)
func TestImportersLimitedLikeTheAPI(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1<<20+1)
	e := newEnv(t)
	e.fixture()

	// Directly, the body limit refuses it.
	mustProblem(t, e.post("/api/settings/tests", map[string]any{"id": "direct", "domain_id": "math", "level": 1,
		"prompt": big, "expected": map[string]any{"answer": "1"}}), http.StatusRequestEntityTooLarge)

	t.Run("dataset", func(t *testing.T) {
		for _, format := range []string{"csv", "jsonl"} {
			data := "prompt,answer\nsmall?,1\n" + big + ",2\n"
			if format == "jsonl" {
				data = `{"prompt":"small?","answer":"1"}` + "\n" + `{"prompt":"` + big + `","answer":"2"}` + "\n"
			}
			res := e.importTests(map[string]any{"domain_id": "math", "level": 7, "format": format, "data": data})
			if res.Success || len(res.Errors) != 1 || res.Errors[0].Row != 2 || res.Errors[0].Column != "prompt" ||
				!strings.Contains(res.Errors[0].Message, "1048577 bytes") {
				t.Fatalf("%s: %+v", format, res)
			}
			if len(e.levelTests("math", "7")) != 0 {
				t.Fatalf("%s: tests were written", format)
			}
		}
		res := e.importTests(map[string]any{"domain_id": "math", "level": 7, "format": "csv", "skip_invalid": true,
			"data": "question,target\nsmall?,1\nbig?," + big + "\n"})
		if !res.Success || res.Created != 1 || len(res.Errors) != 1 || res.Errors[0].Row != 2 || res.Errors[0].Column != "target" {
			t.Fatalf("skip_invalid: %+v", res)
		}
		for _, test := range e.levelTests("math", "7") {
			if test["prompt"] != "small?" {
				t.Errorf("stored %v", test["id"])
			}
		}
	})

	t.Run("definitions import", func(t *testing.T) {
		p := mustProblem(t, e.post("/api/settings/import", map[string]any{"merge": true,
			"tests": []any{map[string]any{"id": "fine", "domain_id": "math", "level": 1, "prompt": "ok?", "expected": map[string]any{"answer": "1"}},
				map[string]any{"id": "huge", "domain_id": "math", "level": 1, "prompt": big, "expected": map[string]any{"answer": "1"}}}}),
			http.StatusUnprocessableEntity, "body.tests[1].prompt")
		if !strings.Contains(p.Detail, "1048576") {
			t.Errorf("detail %q", p.Detail)
		}
		mustProblem(t, e.post("/api/settings/import", map[string]any{"merge": true,
			"domains": []any{map[string]any{"id": "huge", "name": "Huge", "system_prompt": big}}}),
			http.StatusUnprocessableEntity, "body.domains[0].system_prompt")
		mustProblem(t, e.get("/api/settings/tests/fine"), http.StatusNotFound)
		mustProblem(t, e.get("/api/settings/domains/huge"), http.StatusNotFound)
	})

	t.Run("definitions file", func(t *testing.T) {
		file := filepath.Join(e.defsDir, "domains", "math", "level-9.yaml")
		yaml := "tests:\n  - id: fromfile\n    prompt: " + big + "\n    expected:\n      answer: '1'\n"
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		r := must(t, e.post("/api/settings/sync", nil), http.StatusOK)
		var res struct {
			Success bool `json:"success"`
			Errors  []struct {
				File  string `json:"file"`
				Error string `json:"error"`
			} `json:"errors"`
		}
		r.decode(t, &res)
		if res.Success || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].File, "level-9.yaml") || !strings.Contains(res.Errors[0].Error, "1048576") {
			t.Fatalf("sync: %s", r.body)
		}
		mustProblem(t, e.get("/api/settings/tests/fromfile"), http.StatusNotFound)
	})
}
