package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// scripted is a ChatModel that answers from a script, one step per
// request, and records what it was asked. A request past the script's
// end is an error.
type scripted struct {
	mu    sync.Mutex
	steps []func(req *harness.ChatRequest) (*harness.ChatResponse, error)
	got   []harness.ChatRequest
}

func (s *scripted) Chat(_ context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := *req
	cp.Messages = slices.Clone(req.Messages)
	cp.Tools = slices.Clone(req.Tools)
	s.got = append(s.got, cp)
	n := len(s.got) - 1
	if n >= len(s.steps) {
		return nil, fmt.Errorf("unscripted request %d", n+1)
	}
	return s.steps[n](req)
}

func (s *scripted) requests() []harness.ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// say answers with text.
func say(text string) func(*harness.ChatRequest) (*harness.ChatResponse, error) {
	return func(*harness.ChatRequest) (*harness.ChatResponse, error) {
		return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: text},
			Usage: harness.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}, Model: "m", FinishReason: "stop"}, nil
	}
}

// call answers with tool calls, given as "id:name:arguments" ("" id for
// none).
func call(calls ...string) func(*harness.ChatRequest) (*harness.ChatResponse, error) {
	return func(*harness.ChatRequest) (*harness.ChatResponse, error) {
		m := harness.Message{Content: "calling"}
		for _, c := range calls {
			p := strings.SplitN(c, ":", 3)
			m.ToolCalls = append(m.ToolCalls, harness.ToolCall{ID: p[0], Name: p[1], Arguments: p[2]})
		}
		return &harness.ChatResponse{Message: m, Usage: harness.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13},
			Model: "m", FinishReason: "tool_calls"}, nil
	}
}

func fail(err error) func(*harness.ChatRequest) (*harness.ChatResponse, error) {
	return func(*harness.ChatRequest) (*harness.ChatResponse, error) { return nil, err }
}

var loopTools = []harness.ToolDefinition{
	{ID: "weather", Function: harness.FunctionDef{Name: "get_weather"}, MockResponse: map[string]any{"temperature": 21}},
	{ID: "lookup", Function: harness.FunctionDef{Name: "lookup"}, MockResponse: map[string]any{"status": "shipped"}},
	{ID: "broken", Function: harness.FunctionDef{Name: "broken"}},
	{ID: "stopper", Function: harness.FunctionDef{Name: "stopper"}},
}

// brokenTool always fails.
type brokenTool struct{}

func (brokenTool) Definition() harness.FunctionDef { return harness.FunctionDef{Name: "broken"} }
func (brokenTool) Call(context.Context, *harness.ToolCallRequest) (*harness.ToolResult, error) {
	return nil, errors.New("the backend is down")
}

// stopperTool cancels the loop's context while it answers, and records
// who called it.
type stopperTool struct {
	cancel context.CancelFunc
	got    []harness.ToolCallRequest
}

func (s *stopperTool) Definition() harness.FunctionDef { return harness.FunctionDef{Name: "stopper"} }
func (s *stopperTool) Call(_ context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	s.got = append(s.got, *req)
	if s.cancel != nil {
		s.cancel()
	}
	return &harness.ToolResult{Output: json.RawMessage(`{"stopped":true}`)}, nil
}

// checkTranscript checks the loop's rules on a transcript: every
// assistant message that calls tools is followed at once by one tool
// message per call, in order, with the call's id; ids are set and unique.
func checkTranscript(t *testing.T, msgs []harness.Message) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == harness.RoleTool {
			t.Fatalf("message %d: a tool message that answers no call just before it: %+v", i, m)
		}
		for j, c := range m.ToolCalls {
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("message %d: call %d has id %q (empty or used before)", i, j, c.ID)
			}
			seen[c.ID] = true
			k := i + 1 + j
			if k >= len(msgs) || msgs[k].Role != harness.RoleTool || msgs[k].ToolCallID != c.ID {
				t.Fatalf("message %d: call %s (%s) has no answer right after it", i, c.ID, c.Name)
			}
		}
		i += len(m.ToolCalls)
	}
}

func TestRunToolLoop(t *testing.T) {
	temp := 0.2
	retries := 1
	base := harness.ChatRequest{Model: "test-model", Temperature: &temp, MaxTokens: 64, Timeout: 3 * time.Second, MaxRetries: &retries,
		Messages: []harness.Message{{Role: harness.RoleSystem, Content: "Be brief."}, {Role: harness.RoleUser, Content: "Weather in Paris?"}}}
	errDown := errors.New("endpoint down")

	for _, tc := range []struct {
		name      string
		steps     []func(*harness.ChatRequest) (*harness.ChatResponse, error)
		tools     []harness.ToolDefinition
		maxRounds int
		history   []harness.Message // before base's messages
		cancelIn  bool              // the stopper tool cancels the context
		wantErr   error
		// what the result holds
		response  string
		roles     string // of Messages
		outputs   []string
		toolsSent []int // tools offered, by request
		ids       []string
		exceeded  bool
		dropped   int
		failed    []string // Error of each call ("" for none)
	}{
		{
			name:  "no tools",
			steps: steps(say("Sunny.")), response: "Sunny.", roles: "assistant", toolsSent: []int{0},
		},
		{
			name:  "no tools offered, but the model calls one",
			steps: steps(call("x:get_weather:{}")), response: "calling", roles: "assistant", toolsSent: []int{0}, dropped: 1,
		},
		{
			name: "one round", tools: loopTools,
			steps:    steps(call(`c1:get_weather:{"city":"Paris"}`), say("21 degrees.")),
			response: "21 degrees.", roles: "assistant,tool,assistant", outputs: []string{`{"temperature":21}`},
			toolsSent: []int{4, 4}, ids: []string{"c1"}, failed: []string{""},
		},
		{
			name: "several calls in one round", tools: loopTools,
			steps:    steps(call(`a:get_weather:{"city":"Paris"}`, `b:lookup:{"id":42}`, `c:nowhere:{}`), say("Done.")),
			response: "Done.", roles: "assistant,tool,tool,tool,assistant",
			outputs:   []string{`{"temperature":21}`, `{"status":"shipped"}`, `{"error":"unknown function \"nowhere\""}`},
			toolsSent: []int{4, 4}, ids: []string{"a", "b", "c"}, failed: []string{"", "", `unknown function "nowhere"`},
		},
		{
			name: "calls without ids", tools: loopTools,
			// call_1 is taken by the history, call_3 by the model itself.
			history: []harness.Message{{Role: harness.RoleUser, Content: "earlier"},
				{Role: harness.RoleAssistant, ToolCalls: []harness.ToolCall{{ID: "call_1", Name: "lookup", Arguments: "{}"}}},
				{Role: harness.RoleTool, ToolCallID: "call_1", Content: "{}"}, {Role: harness.RoleAssistant, Content: "ok"}},
			steps:    steps(call(`:get_weather:{}`, `call_3:lookup:{}`, `:lookup:{}`), call(`:get_weather:{}`), say("Done.")),
			response: "Done.", roles: "assistant,tool,tool,tool,assistant,tool,assistant",
			outputs:   []string{`{"temperature":21}`, `{"status":"shipped"}`, `{"status":"shipped"}`, `{"temperature":21}`},
			toolsSent: []int{4, 4, 4}, ids: []string{"call_2", "call_3", "call_4", "call_5"}, failed: []string{"", "", "", ""},
		},
		{
			name: "ids used twice", tools: loopTools,
			// x is the history's; the second a repeats the first's.
			history: []harness.Message{{Role: harness.RoleUser, Content: "earlier"},
				{Role: harness.RoleAssistant, ToolCalls: []harness.ToolCall{{ID: "x", Name: "lookup", Arguments: "{}"}}},
				{Role: harness.RoleTool, ToolCallID: "x", Content: "{}"}, {Role: harness.RoleAssistant, Content: "ok"}},
			steps:    steps(call(`x:lookup:{}`, `a:get_weather:{}`, `a:lookup:{}`, `:lookup:{}`, `call_2:lookup:{}`), call(`a:get_weather:{}`), say("Done.")),
			response: "Done.", roles: "assistant,tool,tool,tool,tool,tool,assistant,tool,assistant",
			outputs:   []string{`{"status":"shipped"}`, `{"temperature":21}`, `{"status":"shipped"}`, `{"status":"shipped"}`, `{"status":"shipped"}`, `{"temperature":21}`},
			toolsSent: []int{4, 4, 4}, ids: []string{"call_1", "a", "call_3", "call_4", "call_2", "call_5"}, failed: []string{"", "", "", "", "", ""},
		},
		{
			name: "round limit", tools: loopTools, maxRounds: 2,
			steps:    steps(call(`:get_weather:{}`), call(`:get_weather:{}`), call(`:get_weather:{}`)),
			response: "calling", roles: "assistant,tool,assistant,tool,assistant",
			outputs:   []string{`{"temperature":21}`, `{"temperature":21}`},
			toolsSent: []int{4, 4, 0}, ids: []string{"call_1", "call_2"}, exceeded: true, dropped: 1, failed: []string{"", ""},
		},
		{
			name: "round limit, then an answer", tools: loopTools, maxRounds: 1,
			steps:    steps(call(`r1:lookup:{}`), say("Shipped.")),
			response: "Shipped.", roles: "assistant,tool,assistant", outputs: []string{`{"status":"shipped"}`},
			toolsSent: []int{4, 0}, ids: []string{"r1"}, exceeded: true, failed: []string{""},
		},
		{
			name: "a failing tool", tools: loopTools,
			steps:    steps(call(`f:broken:{}`), say("The backend is down, sorry.")),
			response: "The backend is down, sorry.", roles: "assistant,tool,assistant",
			outputs: []string{`{"error":"the backend is down"}`}, toolsSent: []int{4, 4}, ids: []string{"f"}, failed: []string{"the backend is down"},
		},
		{
			name: "context cancelled during a round", tools: loopTools, cancelIn: true,
			steps:   steps(call(`a:get_weather:{}`), call(`b:lookup:{}`, `c:stopper:{}`, `d:lookup:{}`), say("never asked")),
			wantErr: context.Canceled,
			// The first round is kept; the second, cut short, is left out whole.
			roles: "assistant,tool", outputs: []string{`{"temperature":21}`}, toolsSent: []int{4, 4}, ids: []string{"a"}, failed: []string{""},
		},
		{
			name: "a model error in round 2", tools: loopTools,
			steps:   steps(call(`a:get_weather:{}`), fail(fmt.Errorf("status 503: %w", errDown))),
			wantErr: errDown,
			roles:   "assistant,tool", outputs: []string{`{"temperature":21}`}, toolsSent: []int{4, 4}, ids: []string{"a"}, failed: []string{""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reg := harness.NewRegistry()
			stopper := &stopperTool{}
			if tc.cancelIn {
				stopper.cancel = cancel
			}
			for _, tool := range []harness.Tool{brokenTool{}, stopper} {
				if err := reg.RegisterTool(tool); err != nil {
					t.Fatal(err)
				}
			}
			model := &scripted{steps: tc.steps}
			chat := base
			chat.Messages = append(slices.Clone(tc.history), base.Messages...)
			sent := slices.Clone(chat.Messages)
			chat.Tools = []harness.FunctionDef{{Name: "ignored"}}
			res, err := harness.RunToolLoop(ctx, &harness.ToolLoopRequest{Client: model, Chat: chat, Tools: tc.tools,
				Registry: reg, MaxRounds: tc.maxRounds, Call: harness.ToolCallRequest{AgentID: "ag", UserID: "us"}})
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("error %v, want one wrapping %v", err, tc.wantErr)
			}
			if res == nil {
				t.Fatal("no result")
			}
			if !reflect.DeepEqual(chat.Messages, sent) {
				t.Error("the request's messages were changed")
			}
			// The transcript: the request's messages, then those exchanged.
			if !reflect.DeepEqual(res.Transcript[:len(sent)], sent) || len(res.Transcript) != len(sent)+len(res.Messages) {
				t.Fatalf("transcript of %d messages does not start with the %d sent", len(res.Transcript), len(sent))
			}
			if !reflect.DeepEqual(res.Transcript[len(sent):], res.Messages) {
				t.Error("Messages is not the tail of Transcript")
			}
			checkTranscript(t, res.Transcript)
			var roles []string
			for _, m := range res.Messages {
				roles = append(roles, m.Role)
			}
			if got := strings.Join(roles, ","); got != tc.roles {
				t.Errorf("roles %s, want %s", got, tc.roles)
			}
			if res.Response != tc.response {
				t.Errorf("response %q, want %q", res.Response, tc.response)
			}
			if err == nil && res.Messages[len(res.Messages)-1].Content != res.Response {
				t.Error("the response is not the last message")
			}
			var outputs, ids, failed []string
			for i, c := range res.ToolCalls {
				outputs, ids, failed = append(outputs, c.Output), append(ids, c.Call.ID), append(failed, c.Error)
				if c.Call != res.Calls()[i] {
					t.Errorf("Calls()[%d] = %+v", i, res.Calls()[i])
				}
			}
			if !slices.Equal(outputs, tc.outputs) || !slices.Equal(ids, tc.ids) || !slices.Equal(failed, tc.failed) {
				t.Errorf("calls: outputs %q ids %q errors %q; want %q %q %q", outputs, ids, failed, tc.outputs, tc.ids, tc.failed)
			}
			if details := res.DetailsOfCalls(); len(details) != len(res.ToolCalls) || details == nil {
				t.Errorf("details %v", details)
			}
			if res.RoundsExceeded != tc.exceeded || len(res.Dropped) != tc.dropped {
				t.Errorf("exceeded %v, dropped %v; want %v, %d", res.RoundsExceeded, res.Dropped, tc.exceeded, tc.dropped)
			}
			// Every request: the base's parameters, the transcript so far.
			reqs := model.requests()
			var toolsSent []int
			var want harness.Usage
			for i, r := range reqs {
				toolsSent = append(toolsSent, len(r.Tools))
				if r.Model != "test-model" || r.Temperature != &temp || r.MaxTokens != 64 || r.Timeout != 3*time.Second || r.MaxRetries != &retries {
					t.Errorf("request %d lost the base's parameters: %+v", i, r)
				}
				if !reflect.DeepEqual(r.Messages, res.Transcript[:len(r.Messages)]) {
					t.Errorf("request %d was not sent the transcript so far", i)
				}
				if res.Requests[i].Tools != len(r.Tools) || res.Requests[i].Round != i {
					t.Errorf("request info %d = %+v", i, res.Requests[i])
				}
				want = want.Add(res.Requests[i].Usage)
			}
			if !slices.Equal(toolsSent, tc.toolsSent) {
				t.Errorf("tools offered by request %v, want %v", toolsSent, tc.toolsSent)
			}
			if len(res.Requests) != len(reqs) || res.Usage != want {
				t.Errorf("%d request infos for %d requests; usage %+v, want %+v", len(res.Requests), len(reqs), res.Usage, want)
			}
			if last := res.Requests[len(res.Requests)-1]; (last.Err != nil) != (tc.wantErr != nil && !tc.cancelIn) {
				t.Errorf("last request's error %v", last.Err)
			}
			for _, r := range stopper.got {
				if r.AgentID != "ag" || r.UserID != "us" || string(r.Arguments) != "{}" || r.CallID == "" {
					t.Errorf("the tool got %+v", r)
				}
			}
		})
	}
}

// recorder is a tool that records the requests it gets.
type recorder struct {
	name string
	mu   sync.Mutex
	got  []harness.ToolCallRequest
}

func (r *recorder) Definition() harness.FunctionDef { return harness.FunctionDef{Name: r.name} }
func (r *recorder) Call(_ context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, *req)
	return &harness.ToolResult{Output: json.RawMessage(`{"id":` + strconv.Quote(req.CallID) + `}`)}, nil
}

// A registered tool gets, as CallID, the id the transcript gives its
// call: the model's, or the one generated for a call sent without one.
func TestRunToolLoopGivesToolsTheCallID(t *testing.T) {
	weather, lookup := &recorder{name: "get_weather"}, &recorder{name: "lookup"}
	reg := harness.NewRegistry()
	for _, tool := range []harness.Tool{weather, lookup} {
		if err := reg.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	model := &scripted{steps: steps(call(`m1:get_weather:{"city":"Paris"}`, `:lookup:{"id":7}`), call(`:get_weather:{}`), say("Done."))}
	res, err := harness.RunToolLoop(t.Context(), &harness.ToolLoopRequest{Client: model, Tools: loopTools, Registry: reg,
		Chat: harness.ChatRequest{Messages: []harness.Message{{Role: harness.RoleUser, Content: "hi"}}},
		Call: harness.ToolCallRequest{CallID: "ignored", AgentID: "ag", UserID: "us"}})
	if err != nil {
		t.Fatal(err)
	}
	checkTranscript(t, res.Transcript)
	// Each tool message answers its call, and names it as the tool was told.
	var answered []string
	for _, m := range res.Messages {
		if m.Role == harness.RoleTool {
			var out struct{ ID string }
			if err := json.Unmarshal([]byte(m.Content), &out); err != nil || out.ID != m.ToolCallID {
				t.Errorf("tool message for %s: %s (%v)", m.ToolCallID, m.Content, err)
			}
			answered = append(answered, m.ToolCallID)
		}
	}
	var got []string
	for _, r := range []*recorder{weather, lookup} {
		for _, req := range r.got {
			got = append(got, req.CallID)
			if req.AgentID != "ag" || req.UserID != "us" {
				t.Errorf("%s got %+v", r.name, req)
			}
		}
	}
	if want := []string{"m1", "call_1", "call_2"}; !slices.Equal(answered, want) || !slices.Equal(got, []string{"m1", "call_2", "call_1"}) {
		t.Errorf("transcript ids %q (want %q), tools got %q", answered, want, got)
	}
	for i, c := range res.ToolCalls {
		if c.Call.ID != answered[i] {
			t.Errorf("call %d recorded as %q", i, c.Call.ID)
		}
	}

	// AnswerToolCall passes the call's id, whatever the request says.
	harness.AnswerToolCall(t.Context(), reg, loopTools, harness.ToolCall{ID: "z9", Name: "lookup", Arguments: "{}"},
		harness.ToolCallRequest{CallID: "stale"})
	if last := lookup.got[len(lookup.got)-1]; last.CallID != "z9" {
		t.Errorf("AnswerToolCall gave CallID %q", last.CallID)
	}
}

func steps(s ...func(*harness.ChatRequest) (*harness.ChatResponse, error)) []func(*harness.ChatRequest) (*harness.ChatResponse, error) {
	return s
}

func TestRunToolLoopRefusesNoClient(t *testing.T) {
	if _, err := harness.RunToolLoop(context.Background(), &harness.ToolLoopRequest{}); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("error %v, want ErrInvalid", err)
	}
}

func TestRunToolLoopCancelledBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	model := &scripted{steps: steps(say("never"))}
	res, err := harness.RunToolLoop(ctx, &harness.ToolLoopRequest{Client: model, Chat: harness.ChatRequest{
		Messages: []harness.Message{{Role: harness.RoleUser, Content: "hi"}}}})
	if !errors.Is(err, context.Canceled) || len(model.requests()) != 0 || len(res.Transcript) != 1 || len(res.Messages) != 0 {
		t.Errorf("error %v, %d requests, result %+v", err, len(model.requests()), res)
	}
}
