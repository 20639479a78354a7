package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	res, err := tl.Call(t.Context(), &harness.ToolCallRequest{CallID: "c1", Arguments: json.RawMessage(`{"text":"hi"}`), AgentID: "a1", UserID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `{"agent_id":"a1","call_id":"c1","echo":"hi","user_id":"u1"}` {
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
	if out != `{"agent_id":"","call_id":"1","echo":"yo","user_id":""}` {
		t.Errorf("AnswerToolCall: %s", out)
	}
	if s := status(t, m, "gauntlet-tool-echo"); s.Health != HealthRunning || s.Kind != plugin.KindTool {
		t.Errorf("status %+v", s)
	}
}

// toolCaller is a harness.ChatModel that calls tools with the calls of
// its first answer, then says "done".
type toolCaller struct {
	mu    sync.Mutex
	calls []harness.ToolCall
	asked int
}

func (m *toolCaller) Chat(_ context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked++
	if m.asked == 1 {
		return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, ToolCalls: m.calls}}, nil
	}
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: "done"}}, nil
}

// A tool plugin's Call gets the id the tool loop records for the call:
// the model's, or the one generated when the model sent none.
func TestToolGetsCallID(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "tool", "gauntlet-tool-echo")
	_, reg := newManager(t, Options{Dir: dir})
	model := &toolCaller{calls: []harness.ToolCall{
		{Name: "echo", Arguments: `{"text":"a"}`},
		{ID: "model-7", Name: "echo", Arguments: `{"text":"b"}`},
	}}
	res, err := harness.RunToolLoop(t.Context(), &harness.ToolLoopRequest{Client: model, Registry: reg,
		Tools: []harness.ToolDefinition{{ID: "echo", Function: harness.FunctionDef{Name: "echo"}}},
		Chat:  harness.ChatRequest{Messages: []harness.Message{{Role: harness.RoleUser, Content: "echo twice"}}},
		Call:  harness.ToolCallRequest{AgentID: "ag", UserID: "us"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range res.Messages {
		if m.Role != harness.RoleTool {
			continue
		}
		var out struct {
			CallID  string `json:"call_id"`
			AgentID string `json:"agent_id"`
			UserID  string `json:"user_id"`
		}
		if err := json.Unmarshal([]byte(m.Content), &out); err != nil {
			t.Fatalf("tool message %q: %v", m.Content, err)
		}
		if out.CallID != m.ToolCallID || out.AgentID != "ag" || out.UserID != "us" {
			t.Errorf("the plugin got %+v for the call the transcript names %q", out, m.ToolCallID)
		}
		ids = append(ids, m.ToolCallID)
	}
	if want := []string{"call_1", "model-7"}; !slices.Equal(ids, want) || !slices.Equal(ids, []string{res.ToolCalls[0].Call.ID, res.ToolCalls[1].Call.ID}) {
		t.Errorf("tool messages answer %q, want %q (calls %+v)", ids, want, res.ToolCalls)
	}
}

// A call in flight when the plugin's process dies is retried on a
// restarted process with the same call id, so that the tool can recognise
// it: here the plugin records each attempt in a file named by the id, and
// the first attempt ends its process.
func TestToolRetryKeepsCallID(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "tool", "gauntlet-tool-echo")
	m, reg := newManager(t, Options{Dir: dir, RestartBackoff: 20 * time.Millisecond})
	tl, _ := reg.Tool("echo")
	if _, err := tl.Call(t.Context(), &harness.ToolCallRequest{CallID: "warm", Arguments: json.RawMessage(`{"text":"hi"}`)}); err != nil {
		t.Fatal(err)
	}
	first := status(t, m, "gauntlet-tool-echo").PID

	calls := t.TempDir()
	args, _ := json.Marshal(map[string]string{"text": "crash-once", "dir": calls})
	res, err := tl.Call(t.Context(), &harness.ToolCallRequest{CallID: "call_7", Arguments: args, AgentID: "ag", UserID: "us"})
	if err != nil {
		t.Fatalf("the retried call: %v", err)
	}
	var out struct {
		CallID   string   `json:"call_id"`
		AgentID  string   `json:"agent_id"`
		UserID   string   `json:"user_id"`
		Attempts []string `json:"attempts"`
	}
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	second := status(t, m, "gauntlet-tool-echo")
	want := []string{fmt.Sprintf("call_7.%d", first), fmt.Sprintf("call_7.%d", second.PID)}
	slices.Sort(want)
	if out.CallID != "call_7" || out.AgentID != "ag" || out.UserID != "us" || !slices.Equal(out.Attempts, want) {
		t.Errorf("output %s, want call_7 attempted on pids %d then %d", res.Output, first, second.PID)
	}
	if second.PID == first || second.Restarts != 1 {
		t.Errorf("status after the retry %+v (first pid %d)", second, first)
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
