package mcptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary is also the MCP servers the tests start: run with
// MCP_TEST_SERVER set, it serves MCP on stdin/stdout in that mode instead
// of running the tests (the helper-process pattern).
func TestMain(m *testing.M) {
	if mode := os.Getenv("MCP_TEST_SERVER"); mode != "" {
		os.Exit(serveHelper(mode))
	}
	os.Exit(m.Run())
}

func serveHelper(mode string) int {
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: no configuration")
		return 2
	case "big", "garbage":
		return serveRaw(mode)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, nil)
	// echo answers with its arguments, unless they ask it to misbehave.
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes its arguments"},
		func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			switch {
			case in["hang"] == true:
				<-ctx.Done()
				return nil, nil, ctx.Err()
			case in["crash"] == true:
				fmt.Fprintln(os.Stderr, "crashing now")
				os.Exit(3)
			case in["crash_once"] == true:
				marker := os.Getenv("MCP_TEST_MARKER")
				if _, err := os.Stat(marker); err != nil {
					_ = os.WriteFile(marker, nil, 0o600)
					os.Exit(3)
				}
			case in["fail"] == true:
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such city"}}}, nil, nil
			case in["say"] != nil:
				n, _ := in["say"].(float64)
				for i := range max(int(n), 1) {
					fmt.Fprintf(os.Stderr, "line %d of the helper\n", i)
				}
			}
			b, _ := json.Marshal(map[string]any{"echo": in, "pid": os.Getpid(), "secret": os.Getenv("MCP_TEST_SECRET"),
				"api_key_seen": os.Getenv("LLM_API_KEY") != ""})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	type addOut struct {
		Sum float64 `json:"sum"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "adds two numbers"},
		func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	err := srv.Run(context.Background(), &mcp.StdioTransport{})
	if mode == "stubborn" {
		// A server that outlives its input: only a kill ends it.
		time.Sleep(time.Hour)
	}
	if err != nil {
		return 1
	}
	return 0
}

// serveRaw speaks just enough MCP by hand to misbehave on tools/call:
// "big" answers with a 100 MiB text, written as it goes (never held
// whole); "garbage" floods stdout with lines that are not JSON.
func serveRaw(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // notifications
		}
		switch req.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`+"\n", req.ID, req.Params.ProtocolVersion)
		case "tools/call":
			if mode == "garbage" {
				line := strings.Repeat("garbage! ", 100) + "\n"
				for {
					if _, err := out.WriteString(line); err != nil {
						return 0
					}
				}
			}
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, req.ID)
			chunk := strings.Repeat("x", 1<<20)
			for range 100 {
				if _, err := out.WriteString(chunk); err != nil {
					return 0
				}
			}
			out.WriteString(`"}]}}` + "\n")
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
		}
		if err := out.Flush(); err != nil {
			return 0
		}
	}
	return 0
}
