package harness

import (
	"context"
	"encoding/json"
)

// ToolCallRequest is one call of a tool by a model.
type ToolCallRequest struct {
	// Arguments is the JSON object of arguments the model sent.
	Arguments json.RawMessage
	// AgentID and UserID are set when the call comes from an agent's chat.
	AgentID string
	UserID  string
}

// ToolResult is a tool's output, returned to the model as JSON.
type ToolResult struct {
	Output json.RawMessage
}

// Tool is a function a model may call. A registered Tool answers calls
// with real output instead of the tool record's mock_response.
type Tool interface {
	Definition() FunctionDef
	Call(ctx context.Context, req *ToolCallRequest) (*ToolResult, error)
}
