// Command tool is the tool plugin of the host's tests: echo. It answers
// with its text and the request's ids; given a "dir", it first records
// the call there (see Call), as a tool keeping its calls safe to repeat
// would.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// Call echoes the text. With a "dir" argument, it first writes a file
// "<call id>.<pid>" there; with the text "crash-once", a call whose id has
// no file there yet ends the process after writing its own, so that the
// host's retry of the same call finds it, and answers. The output then
// lists the files of the call: one per attempt.
func (echo) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, fmt.Errorf("nil request: %w", harness.ErrInvalid)
	}
	var args struct {
		Text *string
		Dir  string
	}
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return nil, harness.Invalid("arguments", "are not a JSON object: %v", err)
	}
	if args.Text == nil {
		return nil, harness.Invalid("arguments.text", "is required")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[string]any{"echo": *args.Text, "call_id": req.CallID, "agent_id": req.AgentID, "user_id": req.UserID}
	if args.Dir != "" {
		if req.CallID == "" || strings.ContainsAny(req.CallID, `/\`) {
			return nil, harness.Invalid("call_id", "%q cannot name a file", req.CallID)
		}
		seen, err := filepath.Glob(filepath.Join(args.Dir, req.CallID+".*"))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(args.Dir, req.CallID+"."+strconv.Itoa(os.Getpid())), nil, 0o644); err != nil {
			return nil, err
		}
		if *args.Text == "crash-once" && len(seen) == 0 {
			os.Exit(2)
		}
		if seen, err = filepath.Glob(filepath.Join(args.Dir, req.CallID+".*")); err != nil {
			return nil, err
		}
		for i := range seen {
			seen[i] = filepath.Base(seen[i])
		}
		out["attempts"] = seen
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &harness.ToolResult{Output: b}, nil
}

func main() { plugin.ServeTool(echo{}) }
