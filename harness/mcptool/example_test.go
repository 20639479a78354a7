package mcptool_test

import (
	"context"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/mcptool"
)

// A program registers a Manager in its Registry; from then on, the tool
// loop of evaluations and chats sends the calls of records with an mcp
// block to their servers.
func ExampleManager() {
	tools := mcptool.New(mcptool.Options{}) // --tool-timeout and the answer limit go here
	defer tools.Close()
	reg := harness.NewRegistry()
	if err := reg.RegisterToolConnector(tools); err != nil {
		panic(err)
	}
	multiply := harness.ToolDefinition{ID: "multiply", Function: harness.FunctionDef{Name: "multiply"},
		MCP: &harness.ToolMCP{Command: []string{"./bin/mcp-calculator"}}}
	call := harness.ToolCall{ID: "call_1", Name: "multiply", Arguments: `{"a": 6, "b": 7}`}
	// {"result":42} from examples/mcp-server, built into ./bin.
	fmt.Println(harness.AnswerToolCall(context.Background(), reg, []harness.ToolDefinition{multiply}, call, harness.ToolCallRequest{}))
}
