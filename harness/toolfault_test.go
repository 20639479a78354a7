package harness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// downTool's implementation cannot answer at all.
type downTool struct{}

func (downTool) Definition() harness.FunctionDef { return harness.FunctionDef{Name: "down"} }
func (downTool) Call(context.Context, *harness.ToolCallRequest) (*harness.ToolResult, error) {
	return nil, fmt.Errorf("its server exited at start: %w", harness.ErrToolUnavailable)
}

// TestToolLoopEndsOnUnavailableTool: a tool that fails as tools do is
// answered {"error": ...} and the loop goes on; one whose implementation
// could not answer at all (ErrToolUnavailable) ends the loop with its
// error, the round it cut short left out, so that an evaluation's test is
// an error rather than a score of the model.
func TestToolLoopEndsOnUnavailableTool(t *testing.T) {
	reg := harness.NewRegistry()
	for _, tool := range []harness.Tool{downTool{}, brokenTool{}} {
		if err := reg.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	tools := []harness.ToolDefinition{
		{ID: "down", Function: harness.FunctionDef{Name: "down"}},
		{ID: "broken", Function: harness.FunctionDef{Name: "broken"}},
		{ID: "weather", Function: harness.FunctionDef{Name: "get_weather"}, MockResponse: map[string]any{"t": 21}},
	}
	model := &scripted{steps: steps(call(`a:broken:{}`), call(`b:get_weather:{}`, `c:down:{}`), say("never"))}
	res, err := harness.RunToolLoop(context.Background(), &harness.ToolLoopRequest{Client: model,
		Chat: harness.ChatRequest{Messages: []harness.Message{{Role: harness.RoleUser, Content: "go"}}}, Tools: tools, Registry: reg})
	if !errors.Is(err, harness.ErrToolUnavailable) || !strings.Contains(err.Error(), "tool call down") || !strings.Contains(err.Error(), "exited at start") {
		t.Fatalf("err = %v; want the unavailable tool's, naming it", err)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Call.Name != "broken" || res.ToolCalls[0].Error == "" {
		t.Errorf("calls = %+v; want only round 0's failed call to broken", res.ToolCalls)
	}
	if len(res.Messages) != 2 {
		t.Errorf("messages = %+v; want round 0 only (the cut round left out)", res.Messages)
	}
	checkTranscript(t, res.Transcript)
	if n := len(model.requests()); n != 2 {
		t.Errorf("%d model requests, want 2", n)
	}
}
