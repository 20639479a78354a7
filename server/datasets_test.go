package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type importResult struct {
	Success bool `json:"success"`
	Rows    int  `json:"rows"`
	Created int  `json:"created"`
	Updated int  `json:"updated"`
	Skipped int  `json:"skipped"`
	Errors  []struct {
		Row     int    `json:"row"`
		Line    int    `json:"line"`
		Column  string `json:"column"`
		Message string `json:"message"`
	} `json:"errors"`
}

func (e *testEnv) importTests(body map[string]any) *importResult {
	e.t.Helper()
	var res importResult
	must(e.t, e.post("/api/settings/tests/import", body), http.StatusOK).decode(e.t, &res)
	return &res
}

func (e *testEnv) levelTests(domain string, level string) []map[string]any {
	e.t.Helper()
	var list struct {
		Tests []map[string]any `json:"tests"`
	}
	must(e.t, e.get("/api/settings/tests?domain="+domain+"&level="+level), http.StatusOK).decode(e.t, &list)
	return list.Tests
}

func TestImportTests(t *testing.T) {
	t.Parallel()
	t.Run("csv with BOM, quoted newlines and a semicolon", func(t *testing.T) {
		e := newEnv(t)
		e.fixture()
		res := e.importTests(map[string]any{"domain_id": "math", "level": 3, "format": "csv", "delimiter": ";",
			"data": "\uFEFFid;question;answer;type\nc1;\"Two lines;\nof text\";7;numeric\nc2;Plain;x;\n"})
		if !res.Success || res.Created != 2 || res.Rows != 2 || len(res.Errors) != 0 {
			t.Fatalf("result %+v", res)
		}
		tests := e.levelTests("math", "3")
		if len(tests) != 2 || tests[0]["id"] != "c1" || tests[0]["prompt"] != "Two lines;\nof text" {
			t.Fatalf("tests %v", tests)
		}
		// Files first: the level's file holds them.
		data, err := os.ReadFile(filepath.Join(e.defsDir, "domains", "math", "level-3.yaml"))
		if err != nil || !strings.Contains(string(data), "id: c2") {
			t.Fatalf("level file: %v\n%s", err, data)
		}
		// A re-import replaces the same tests.
		res = e.importTests(map[string]any{"domain_id": "math", "level": 3, "format": "csv", "delimiter": ";",
			"data": "id;question;answer\nc1;Changed;8\n"})
		if res.Created != 0 || res.Updated != 1 || len(e.levelTests("math", "3")) != 2 {
			t.Fatalf("re-import %+v", res)
		}
	})
	t.Run("gsm8k and mmlu presets", func(t *testing.T) {
		e := newEnv(t)
		e.fixture()
		res := e.importTests(map[string]any{"domain_id": "math", "level": 4, "format": "jsonl", "preset": "gsm8k",
			"data": `{"question":"1,000 + 1?","answer":"<<1000+1=1001>>\n#### 1,001"}` + "\n"})
		if res.Created != 1 {
			t.Fatalf("gsm8k %+v", res)
		}
		if got := e.levelTests("math", "4")[0]["expected"].(map[string]any); got["answer"] != "1001" || got["type"] != "numeric" {
			t.Fatalf("expected %v", got)
		}
		res = e.importTests(map[string]any{"domain_id": "logic", "level": 1, "format": "csv", "preset": "mmlu",
			"data": "Which?,a,b,c,d,C\n"})
		if res.Created != 1 {
			t.Fatalf("mmlu %+v", res)
		}
	})
	t.Run("a refused row writes nothing", func(t *testing.T) {
		e := newEnv(t)
		e.fixture()
		body := map[string]any{"domain_id": "math", "level": 5, "format": "jsonl",
			"data": "{\"prompt\":\"ok\",\"answer\":\"1\"}\n\n{\"prompt\":\"no answer\"}\n{\"answer\":\"no prompt\"}\n"}
		res := e.importTests(body)
		if res.Success || res.Created != 0 || res.Skipped != 3 || len(res.Errors) != 2 {
			t.Fatalf("result %+v", res)
		}
		if er := res.Errors[0]; er.Row != 2 || er.Line != 3 || er.Column != "answer" || er.Message != "missing" {
			t.Fatalf("error %+v", er)
		}
		if er := res.Errors[1]; er.Row != 3 || er.Column != "prompt" {
			t.Fatalf("error %+v", er)
		}
		if n := len(e.levelTests("math", "5")); n != 0 {
			t.Fatalf("%d tests written", n)
		}
		body["skip_invalid"] = true
		res = e.importTests(body)
		if !res.Success || res.Created != 1 || res.Skipped != 2 || len(res.Errors) != 2 {
			t.Fatalf("skip_invalid %+v", res)
		}
		if n := len(e.levelTests("math", "5")); n != 1 {
			t.Fatalf("%d tests written", n)
		}
	})
	t.Run("an id of another level is refused", func(t *testing.T) {
		e := newEnv(t)
		e.fixture()
		res := e.importTests(map[string]any{"domain_id": "math", "level": 2, "format": "jsonl",
			"data": `{"id":"l1","prompt":"p","answer":"a"}`})
		if res.Success || len(res.Errors) != 1 || res.Errors[0].Column != "id" {
			t.Fatalf("result %+v", res)
		}
	})
	for _, tc := range []struct {
		name     string
		body     map[string]any
		status   int
		location string
	}{
		{"bad format", map[string]any{"domain_id": "math", "level": 1, "format": "xml", "data": "x"}, 422, "body.format"},
		{"bad preset", map[string]any{"domain_id": "math", "level": 1, "format": "jsonl", "preset": "squad", "data": "x"}, 422, "body.preset"},
		{"unknown domain", map[string]any{"domain_id": "nope", "level": 1, "format": "jsonl", "data": `{"prompt":"p","answer":"a"}`}, 422, "body.domain_id"},
		{"missing level", map[string]any{"domain_id": "math", "format": "jsonl", "data": "x"}, 422, "body.level"},
		{"bad delimiter", map[string]any{"domain_id": "math", "level": 1, "format": "csv", "delimiter": ";;", "data": "x"}, 422, "body.delimiter"},
		{"header without prompt", map[string]any{"domain_id": "math", "level": 1, "format": "csv", "data": "q,a\n1,2\n"}, 422, "body.mapping.prompt"},
		{"no rows", map[string]any{"domain_id": "math", "level": 1, "format": "jsonl", "data": "\n"}, 422, "body.data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.fixture()
			mustProblem(t, e.post("/api/settings/tests/import", tc.body), tc.status, tc.location)
		})
	}
	t.Run("body too large", func(t *testing.T) {
		e := newEnv(t)
		e.fixture()
		big := `{"domain_id":"math","level":1,"format":"jsonl","data":"` + strings.Repeat("x", 64<<20) + `"}`
		mustProblem(t, e.post("/api/settings/tests/import", rawBody(big)), http.StatusRequestEntityTooLarge)
	})
	t.Run("malformed JSON", func(t *testing.T) {
		e := newEnv(t)
		mustProblem(t, e.post("/api/settings/tests/import", rawBody(`{"domain_id":`)), http.StatusBadRequest)
	})
}
