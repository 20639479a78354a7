package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ToolCallRequest is one call of a tool by a model.
type ToolCallRequest struct {
	// CallID is the id of the call, as the transcript records it: on the
	// call in the assistant message and on the tool message answering it.
	// It is the model's own id, or "call_<n>" that RunToolLoop generates
	// when the model sent none or one already used. It is unique within
	// the conversation the model is sent (a test's, in an evaluation; a
	// chat turn's, with the history sent along): other conversations may
	// use the same id — generated ones start again at call_1 — so it
	// names a call only together with its conversation. A call that is
	// repeated because a tool plugin's process died under it carries the
	// same CallID (and the same Arguments, AgentID and UserID) both
	// times, so a tool with side effects can tell a repeat from a new
	// call by it.
	CallID string
	// Arguments is the JSON object of arguments the model sent.
	Arguments json.RawMessage
	// AgentID and UserID are set when the call comes from an agent's chat,
	// or from a run that evaluates an agent: then UserID is
	// "eval/<run_id>/<test_id>/<repeat>", each test a user of its own.
	AgentID string
	UserID  string
}

// ToolResult is a tool's output, returned to the model as JSON.
type ToolResult struct {
	Output json.RawMessage
}

// ErrToolUnavailable is wrapped by the error of a Tool whose
// implementation could not answer at all: its server did not start, died
// under the call, broke its protocol, went over the answer limit or did
// not answer within its timeout. Unlike a tool's own error (which the
// model reads as {"error": "..."} and the loop goes on), it ends
// RunToolLoop with an error: an evaluation's test is then an error, not a
// score of the model, and an agent's chat fails saying which tool.
var ErrToolUnavailable = errors.New("tool unavailable")

// Tool is a function a model may call. A registered Tool answers calls
// with real output instead of the tool record's mock_response.
type Tool interface {
	Definition() FunctionDef
	Call(ctx context.Context, req *ToolCallRequest) (*ToolResult, error)
}

// AnswerToolCall answers a model's tool call against the tools it was
// offered: a record with an MCP block has the call answered by its MCP
// server (through the Registry's ToolConnector), otherwise a Tool
// registered under the call's function name gives its real output,
// otherwise the tool record's mock_response ("{}" when it has none). A function that was not offered, or a Tool that fails, gets
// {"error": "..."}, which the model reads like any other output. AgentID
// and UserID of req are passed to a registered Tool; its CallID and
// Arguments are set from the call (call.ID, call.Arguments).
func AnswerToolCall(ctx context.Context, reg *Registry, offered []ToolDefinition, call ToolCall, req ToolCallRequest) string {
	out, _ := answerToolCall(ctx, reg, offered, call, req)
	return out
}

// answerToolCall is AnswerToolCall that also says why a call failed: the
// function was not offered, or its Tool returned an error. The output is
// then {"error": "..."}.
func answerToolCall(ctx context.Context, reg *Registry, offered []ToolDefinition, call ToolCall, req ToolCallRequest) (string, error) {
	var def *ToolDefinition
	for i := range offered {
		if offered[i].Function.Name == call.Name {
			def = &offered[i]
			break
		}
	}
	if def == nil {
		err := fmt.Errorf("unknown function %q", call.Name)
		return toolError(err.Error()), err
	}
	var impl Tool
	switch {
	case def.MCP != nil:
		// The record names its server: its calls go there, never to a
		// mock or to a Tool registered under the same function name.
		var conn ToolConnector
		if reg != nil {
			conn = reg.ToolConnector()
		}
		if conn == nil {
			err := fmt.Errorf("tool %s: its calls go to an MCP server, and this program has no MCP client", def.ID)
			return toolError(err.Error()), err
		}
		t, err := conn.ToolFor(def)
		if err != nil {
			return toolError(err.Error()), err
		}
		impl = t
	case reg != nil:
		impl, _ = reg.Tool(call.Name)
	}
	if impl != nil {
		req.CallID = call.ID
		req.Arguments = json.RawMessage(call.Arguments)
		if len(req.Arguments) == 0 {
			req.Arguments = json.RawMessage("{}")
		}
		out, err := impl.Call(ctx, &req)
		if err != nil {
			return toolError(err.Error()), err
		}
		if out == nil || len(out.Output) == 0 {
			return "{}", nil
		}
		return string(out.Output), nil
	}
	if def.MockResponse == nil {
		return "{}", nil
	}
	b, err := json.Marshal(def.MockResponse)
	if err != nil {
		return toolError(err.Error()), err
	}
	return string(b), nil
}

func toolError(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
}

// JSONOrText returns s as raw JSON when it is valid JSON, else as a
// string: tool arguments and outputs kept readable in result details.
func JSONOrText(s string) any {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return s
}
