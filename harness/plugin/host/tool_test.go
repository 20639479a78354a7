package host

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

func TestTool(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "tool", "gauntlet-tool-echo")
	m, reg := newManager(t, Options{Dir: dir})
	tl, ok := reg.Tool("echo")
	if !ok {
		t.Fatalf("tool echo not registered (tools %v)", reg.ToolNames())
	}
	// Registered by file name, without starting the plugin.
	if def := tl.Definition(); def.Name != "echo" || def.Parameters != nil {
		t.Errorf("definition before start %+v", def)
	}
	if s := status(t, m, "gauntlet-tool-echo"); s.PID != 0 {
		t.Errorf("started at registration: %+v", s)
	}
	res, err := tl.Call(t.Context(), &harness.ToolCallRequest{Arguments: json.RawMessage(`{"text":"hi"}`), AgentID: "a1", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"agent_id":"a1","echo":"hi","user_id":"u1"}` {
		t.Errorf("output %s", res.Output)
	}
	def := tl.Definition()
	if def.Description != "Echoes its text." || def.Parameters["type"] != "object" {
		t.Errorf("definition after start %+v", def)
	}
	if err := (harness.Validator{}).Tool(&harness.ToolDefinition{ID: "echo", Function: def}); err != nil {
		t.Errorf("definition does not validate: %v", err)
	}

	_, err = tl.Call(t.Context(), &harness.ToolCallRequest{Arguments: json.RawMessage(`{}`)})
	var ve *harness.ValidationError
	if !errors.As(err, &ve) || ve.Fields[0].Field != "arguments.text" {
		t.Errorf("missing argument: %v", err)
	}
	if _, err := tl.Call(t.Context(), nil); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("nil request: %v", err)
	}

	// The way the engine and the agents answer a model's tool call.
	out := harness.AnswerToolCall(t.Context(), reg, []harness.ToolDefinition{{ID: "echo", Function: def}},
		harness.ToolCall{ID: "1", Name: "echo", Arguments: `{"text":"yo"}`}, harness.ToolCallRequest{})
	if out != `{"agent_id":"","echo":"yo","user_id":""}` {
		t.Errorf("AnswerToolCall: %s", out)
	}
	if s := status(t, m, "gauntlet-tool-echo"); s.Health != HealthRunning || s.Kind != plugin.KindTool {
		t.Errorf("status %+v", s)
	}
}

// A tool plugin whose definition names another function than its file
// name, and an executable of the wrong kind, are refused at start.
func TestWrongPlugin(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "tool", "gauntlet-tool-other")
	install(t, dir, "evaluator", "gauntlet-channel-notachannel")
	m, reg := newManager(t, Options{Dir: dir})

	tl, _ := reg.Tool("other")
	_, err := tl.Call(t.Context(), &harness.ToolCallRequest{Arguments: json.RawMessage(`{"text":"hi"}`)})
	if !errors.Is(err, plugin.ErrUnavailable) || !contains(err, `the tool's definition names function "echo"; the file name says "other"`) {
		t.Errorf("misnamed tool: %v", err)
	}
	ch, _ := reg.Channel("notachannel")
	err = ch.Run(t.Context(), &harness.ChannelRun{Host: newFakeHost()})
	if !errors.Is(err, plugin.ErrUnavailable) || !contains(err, `serves a "evaluator" plugin, its name says "channel"`) {
		t.Errorf("evaluator as a channel: %v", err)
	}
	for _, s := range m.List() {
		if s.Health != HealthCrashed || s.PID != 0 {
			t.Errorf("status %+v", s)
		}
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
