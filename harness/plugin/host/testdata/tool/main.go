// Command tool is the tool plugin of the host's tests: echo.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

type echo struct{}

func (echo) Definition() harness.FunctionDef {
	return harness.FunctionDef{
		Name:        "echo",
		Description: "Echoes its text.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string"}},
			"required":   []any{"text"},
		},
	}
}

func (echo) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, fmt.Errorf("nil request: %w", harness.ErrInvalid)
	}
	var args struct{ Text *string }
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return nil, harness.Invalid("arguments", "are not a JSON object: %v", err)
	}
	if args.Text == nil {
		return nil, harness.Invalid("arguments.text", "is required")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := json.Marshal(map[string]string{"echo": *args.Text, "agent_id": req.AgentID, "user_id": req.UserID})
	if err != nil {
		return nil, err
	}
	return &harness.ToolResult{Output: out}, nil
}

func main() { plugin.ServeTool(echo{}) }
