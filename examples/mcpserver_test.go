package examples

import (
	"context"
	"testing"
)

// TestMCPServerDefinitionsLoad checks that the definitions of the example
// MCP server load cleanly, in canonical form, with the tool's mcp block.
func TestMCPServerDefinitionsLoad(t *testing.T) {
	ctx := context.Background()
	defs, c, _ := openCopy(t, "mcp-server/definitions")
	tool, err := c.Tool(ctx, "multiply")
	if err != nil || tool.MCP == nil || len(tool.MCP.Command) != 1 || tool.MCP.Command[0] != "./bin/mcp-calculator" {
		t.Fatalf("multiply = %+v, %v", tool, err)
	}
	before := readTree(t, defs)
	snap, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Import(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	after := readTree(t, defs)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s is not in canonical form:\n--- file\n%s\n--- rewritten\n%s", name, b, after[name])
		}
	}
}
