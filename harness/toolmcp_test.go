package harness

import (
	"strings"
	"testing"
)

func TestValidatorToolMCP(t *testing.T) {
	tool := func(m *ToolMCP) ToolDefinition {
		return ToolDefinition{ID: "calc", Function: FunctionDef{Name: "calc"}, MCP: m}
	}
	cases := []struct {
		name  string
		t     ToolDefinition
		field string
	}{
		{"command", tool(&ToolMCP{Command: []string{"./mcp-calc", "--verbose"}, Env: map[string]string{"TOKEN": "${CALC_TOKEN}", "MODE": "a${X}b", "PLAIN": "$HOME is kept"}}), ""},
		{"url", tool(&ToolMCP{URL: "https://tools.example.com/mcp", Tool: "add"}), ""},
		{"mcp and mock_response", ToolDefinition{ID: "calc", Function: FunctionDef{Name: "calc"}, MockResponse: map[string]any{"x": 1},
			MCP: &ToolMCP{Command: []string{"calc"}}}, "mcp"},
		{"command and url", tool(&ToolMCP{Command: []string{"calc"}, URL: "http://127.0.0.1:9/mcp"}), "mcp"},
		{"neither", tool(&ToolMCP{}), "mcp"},
		{"empty command", tool(&ToolMCP{Command: []string{}}), "mcp.command"},
		{"empty program", tool(&ToolMCP{Command: []string{" ", "x"}}), "mcp.command[0]"},
		{"NUL in an argument", tool(&ToolMCP{Command: []string{"calc", "a\x00b"}}), "mcp.command[1]"},
		{"bad URL scheme", tool(&ToolMCP{URL: "ftp://example.com/mcp"}), "mcp.url"},
		{"stdio URL scheme", tool(&ToolMCP{URL: "file:///usr/bin/calc"}), "mcp.url"},
		{"URL without a host", tool(&ToolMCP{URL: "http:///mcp"}), "mcp.url"},
		{"not a URL", tool(&ToolMCP{URL: "http://[::1"}), "mcp.url"},
		{"env with a url", tool(&ToolMCP{URL: "http://127.0.0.1:9/mcp", Env: map[string]string{"A": "b"}}), "mcp.env"},
		{"bad env name", tool(&ToolMCP{Command: []string{"calc"}, Env: map[string]string{"A-B": "x"}}), "mcp.env.A-B"},
		{"bad reference", tool(&ToolMCP{Command: []string{"calc"}, Env: map[string]string{"A": "${1X}"}}), "mcp.env.A"},
		{"empty reference", tool(&ToolMCP{Command: []string{"calc"}, Env: map[string]string{"A": "${}"}}), "mcp.env.A"},
		{"unclosed reference", tool(&ToolMCP{Command: []string{"calc"}, Env: map[string]string{"A": "x${TOKEN"}}), "mcp.env.A"},
		{"tool name too long", tool(&ToolMCP{Command: []string{"calc"}, Tool: strings.Repeat("t", 129)}), "mcp.tool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFieldError(t, Validator{}.Tool(&tc.t), tc.field)
		})
	}
}

func TestToolMCPEnviron(t *testing.T) {
	m := &ToolMCP{Env: map[string]string{"TOKEN": "Bearer ${CALC_TOKEN}", "PLAIN": "$HOME stays", "TWO": "${A}-${B}"}}
	vars := map[string]string{"CALC_TOKEN": "s3cr3t", "A": "1", "B": "2"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	got, err := m.Environ(lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PLAIN=$HOME stays", "TOKEN=Bearer s3cr3t", "TWO=1-2"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Environ = %q, want %q", got, want)
	}
	if m.Env["TOKEN"] != "Bearer ${CALC_TOKEN}" {
		t.Error("Environ changed the record")
	}
	delete(vars, "B")
	_, err = m.Environ(lookup)
	if err == nil || !strings.Contains(err.Error(), "${B}") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("an unset variable: %v; want an error naming it and no value", err)
	}
	if (&ToolMCP{Tool: "add"}).ToolName(FunctionDef{Name: "calc"}) != "add" || (&ToolMCP{}).ToolName(FunctionDef{Name: "calc"}) != "calc" {
		t.Error("ToolName")
	}
}
