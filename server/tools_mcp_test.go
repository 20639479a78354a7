package server_test

import (
	"net/http"
	"strings"
	"testing"
)

func mcpTool() map[string]any {
	return map[string]any{
		"id": "calc", "name": "Calculator", "description": "Adds numbers",
		"function": map[string]any{"name": "add", "description": "Add two numbers"},
		"mcp": map[string]any{"command": []any{"./bin/mcp-calc", "--quiet"},
			"env": map[string]any{"CALC_TOKEN": "${CALC_TOKEN}"}, "tool": "add"},
	}
}

// TestToolsMCP: a tool's mcp block goes through create, read, update,
// the definition file, export and import as written (its ${VAR}
// references unresolved).
func TestToolsMCP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := mcpTool()
	got := must(t, e.post("/api/settings/tools", body), http.StatusCreated).object(t)
	want := mcpTool()
	want["mcp"].(map[string]any)["transport"] = "stdio"
	if !jsonEqual(t, got, want) {
		t.Fatalf("record %v\nwant   %v", got, body)
	}
	file := e.readFile("tools/calc.yaml")
	if !strings.Contains(file, "${CALC_TOKEN}") || !strings.Contains(file, "mcp:") {
		t.Errorf("tools/calc.yaml:\n%s", file)
	}
	if got := must(t, e.get("/api/settings/tools/calc"), http.StatusOK).object(t); !jsonEqual(t, got, want) {
		t.Errorf("get %v", got)
	}
	// Switch to a server over HTTP, then to a mock response.
	upd := must(t, e.put("/api/settings/tools/calc", map[string]any{"mcp": map[string]any{"url": "http://127.0.0.1:9/mcp"}}), http.StatusOK).object(t)
	if m, _ := upd["mcp"].(map[string]any); m["url"] != "http://127.0.0.1:9/mcp" || m["command"] != nil || m["transport"] != "http" {
		t.Errorf("after update: %v", upd)
	}
	upd = must(t, e.put("/api/settings/tools/calc", map[string]any{"mcp": nil, "mock_response": map[string]any{"sum": 3}}), http.StatusOK).object(t)
	if _, has := upd["mcp"]; has {
		t.Errorf("mcp: null kept the block: %v", upd)
	}
	must(t, e.put("/api/settings/tools/calc", map[string]any{"mcp": body["mcp"], "mock_response": nil}), http.StatusOK)

	// Export and import carry it.
	export := must(t, e.get("/api/settings/export"), http.StatusOK)
	if !strings.Contains(string(export.body), `"mcp":{"transport":"stdio","command":["./bin/mcp-calc","--quiet"],"env":{"CALC_TOKEN":"${CALC_TOKEN}"},"tool":"add"}`) {
		t.Errorf("export: %s", export.body)
	}
	var snap map[string]any
	export.decode(t, &snap)
	snap["merge"] = false
	dst := newEnv(t)
	must(t, dst.post("/api/settings/import", snap), http.StatusOK)
	if got := must(t, dst.get("/api/settings/tools/calc"), http.StatusOK).object(t); !jsonEqual(t, got, want) {
		t.Errorf("imported %v\nwant     %v", got, body)
	}
}

func TestToolsMCPFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.post("/api/settings/tools", map[string]any{"id": "mocked", "function": map[string]any{"name": "mocked"}, "mock_response": map[string]any{"a": 1}}), http.StatusCreated)
	const list = "/api/settings/tools"
	tool := func(mcp map[string]any, extra ...any) map[string]any {
		t := map[string]any{"id": "x", "function": map[string]any{"name": "x"}, "mcp": mcp}
		for i := 0; i+1 < len(extra); i += 2 {
			t[extra[i].(string)] = extra[i+1]
		}
		return t
	}
	runFailures(t, e, []failCase{
		{"mcp and mock_response", "POST", list, tool(map[string]any{"command": []string{"calc"}}, "mock_response", map[string]any{"a": 1}), 422, []string{"body.mcp"}},
		{"command and url", "POST", list, tool(map[string]any{"command": []string{"calc"}, "url": "http://127.0.0.1:9/mcp"}), 422, []string{"body.mcp"}},
		{"neither command nor url", "POST", list, tool(map[string]any{}), 422, []string{"body.mcp"}},
		{"empty command", "POST", list, tool(map[string]any{"command": []string{}}), 422, []string{"body.mcp.command"}},
		{"empty program", "POST", list, tool(map[string]any{"command": []string{""}}), 422, []string{"body.mcp.command[0]"}},
		{"bad URL scheme", "POST", list, tool(map[string]any{"url": "ws://127.0.0.1:9/mcp"}), 422, []string{"body.mcp.url"}},
		{"bad env reference", "POST", list, tool(map[string]any{"command": []string{"calc"}, "env": map[string]any{"K": "${not valid}"}}), 422, []string{"body.mcp.env.K"}},
		{"mcp not an object", "POST", list, tool(nil, "mcp", "calc"), 422, []string{"body.mcp"}},
		{"update adds mcp beside the mock response", "PUT", list + "/mocked", map[string]any{"mcp": map[string]any{"command": []string{"calc"}}}, 422, []string{"body.mcp"}},
	})
}
