// Command mcpfault is an MCP server that misbehaves as its first argument
// says, for the end-to-end tests of tools over MCP: "exit" exits at start,
// "hang" never answers a call, "flood" answers a call with garbage on
// stdout.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "mcpfault: no configuration, giving up")
		os.Exit(2)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpfault", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "fault"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		switch mode {
		case "hang":
			<-ctx.Done()
			return nil, nil, ctx.Err()
		case "flood":
			line := strings.Repeat("garbage ", 64) + "\n"
			for range 20000 {
				if _, err := os.Stdout.WriteString(line); err != nil {
					os.Exit(0)
				}
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}
