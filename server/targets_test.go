package server_test

import (
	"net/http"
	"strings"
	"testing"
)

const supportTargetFile = `id: support
description: The support agent's chat API
url: https://support.example.com/api/chat
method: POST
headers:
  Authorization: Bearer ${SUPPORT_TOKEN}
body:
  messages: '{{messages}}'
  session: '{{conversation_id}}'
response:
  answer: /reply/text
  sources: /reply/citations
`

// TestTargets: targets are read from targets/*.yaml, listed and read one
// by one with their ${VAR} references as written, 404 for an unknown id;
// a bad file is a sync error at its line; export and import carry them.
func TestTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	if got := strings.TrimSpace(string(must(t, e.get("/api/settings/targets"), http.StatusOK).body)); got != `{"targets":[],"total":0}` {
		t.Fatalf("empty list: %s", got)
	}
	e.writeFile("targets/support.yaml", supportTargetFile)
	e.writeFile("targets/broken.yaml", "url: http://127.0.0.1:9/c\nbody: '{{promt}}'\nresponse: /a\n")
	var sync struct {
		Loaded struct{ Targets int }
		Errors []struct {
			File  string
			Line  int
			Error string
		}
	}
	must(t, e.post("/api/settings/sync", nil), http.StatusOK).decode(t, &sync)
	if sync.Loaded.Targets != 1 || len(sync.Errors) != 1 || sync.Errors[0].File != "targets/broken.yaml" || sync.Errors[0].Line != 2 ||
		!strings.Contains(sync.Errors[0].Error, "did you mean {{prompt}}?") {
		t.Fatalf("sync = %+v", sync)
	}

	want := map[string]any{
		"id": "support", "description": "The support agent's chat API", "url": "https://support.example.com/api/chat", "method": "POST",
		"headers":  map[string]any{"Authorization": "Bearer ${SUPPORT_TOKEN}"},
		"body":     map[string]any{"messages": "{{messages}}", "session": "{{conversation_id}}"},
		"response": map[string]any{"answer": "/reply/text", "sources": "/reply/citations"},
	}
	got := must(t, e.get("/api/settings/targets/support"), http.StatusOK)
	if !jsonEqual(t, got.object(t), want) {
		t.Errorf("get = %s", got.body)
	}
	if got.header.Get("ETag") == "" {
		t.Error("no ETag")
	}
	var list struct {
		Targets []map[string]any
		Total   int
	}
	must(t, e.get("/api/settings/targets"), http.StatusOK).decode(t, &list)
	if list.Total != 1 || len(list.Targets) != 1 || !jsonEqual(t, list.Targets[0], want) {
		t.Errorf("list = %+v", list)
	}

	p := mustProblem(t, e.get("/api/settings/targets/nope"), http.StatusNotFound)
	if !strings.Contains(p.Detail, `target "nope"`) {
		t.Errorf("404 detail %q", p.Detail)
	}

	// The export carries the targets; an import of a bad one is refused
	// whole, naming its field.
	var export struct{ Targets []map[string]any }
	must(t, e.get("/api/settings/export"), http.StatusOK).decode(t, &export)
	if len(export.Targets) != 1 || !jsonEqual(t, export.Targets[0], want) {
		t.Errorf("export targets = %+v", export.Targets)
	}
	before := e.state()
	mustProblem(t, e.post("/api/settings/import", map[string]any{"merge": true, "targets": []any{
		map[string]any{"id": "bad", "url": "ftp://x/y", "body": "{{prompt}}", "response": "/a"},
	}}), http.StatusUnprocessableEntity, "body.targets[0].url")
	mustProblem(t, e.post("/api/settings/import", map[string]any{"merge": true, "targets": []any{
		map[string]any{"id": "bad", "url": "http://x/y", "body": "{{prompt}}", "response": map[string]any{"answr": "/a"}},
	}}), http.StatusUnprocessableEntity, "body.targets[0].response.answr")
	mustProblem(t, e.post("/api/settings/import", map[string]any{"merge": true, "targets": []any{
		map[string]any{"id": "bad", "url": "http://x/y", "body": "{{prompt}}", "response": "/a",
			"headers": map[string]any{"Authorization": "Bearer sk-live-123"}},
	}}), http.StatusUnprocessableEntity, "body.targets[0].headers.Authorization")
	e.assertUnchanged(t, before)

	// A good one is stored as a file, its response in the short form.
	var res struct{ Imported, Total struct{ Targets int } }
	must(t, e.post("/api/settings/import", map[string]any{"merge": true, "targets": []any{
		map[string]any{"id": "echo", "url": "http://127.0.0.1:9/echo", "body": map[string]any{"q": "{{prompt}}"}, "response": "/answer"},
	}}), http.StatusOK).decode(t, &res)
	if res.Imported.Targets != 1 || res.Total.Targets != 2 {
		t.Errorf("import result = %+v", res)
	}
	if f := e.readFile("targets/echo.yaml"); !strings.Contains(f, "response: /answer\n") || !strings.Contains(f, "method: POST\n") {
		t.Errorf("targets/echo.yaml:\n%s", f)
	}
}
