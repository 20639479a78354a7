package engine_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/regexeval"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

func toolDefs() *defs {
	d := newDefs()
	d.s.Tools = []harness.ToolDefinition{
		{ID: "weather", Name: "Weather", Function: harness.FunctionDef{Name: "get_weather", Description: "Weather of a city.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}},
			MockResponse: map[string]any{"temperature": 21, "unit": "celsius"}},
		{ID: "lookup", Name: "Lookup", Function: harness.FunctionDef{Name: "lookup_word", Description: "Define a word."},
			MockResponse: map[string]any{"definition": "a mock"}},
	}
	d.domain("tools", "Use the tools.", true).level("tools", 1, "", harness.PromptAppend, 0.5, "weather")
	d.test(harness.Test{ID: "tools-weather", DomainID: "tools", Level: 1, Prompt: "[tools-weather] Call get_weather for Paris.",
		Expected: harness.Expected{Type: "tool_call", Answer: "get_weather", Arguments: map[string]any{"city": "Paris"}}})
	d.test(harness.Test{ID: "tools-lookup", DomainID: "tools", Level: 1, Tools: []string{"lookup"},
		Prompt:   "[tools-lookup] Use lookup_word on gauntlet.",
		Expected: harness.Expected{Type: "tool_call", Answer: "lookup_word"}})
	return d
}

// recorder is an llmtest Respond that records requests by test id and may
// answer some itself.
func recorder(seen *requestLog, answer func(req *llmtest.Request) *llmtest.Reply) func(*llmtest.Request) *llmtest.Reply {
	return func(req *llmtest.Request) *llmtest.Reply {
		seen.respond(req)
		if answer != nil {
			return answer(req)
		}
		return nil
	}
}

// toolCallsOf returns details.tool_calls as stored (decoded JSON).
func toolCallsOf(t *testing.T, r runs.Result) []map[string]any {
	t.Helper()
	b, err := json.Marshal(r.Details["tool_calls"])
	if err != nil {
		t.Fatal(err)
	}
	var calls []map[string]any
	if err := json.Unmarshal(b, &calls); err != nil {
		t.Fatalf("%s: tool_calls %s: %v", r.TestID, b, err)
	}
	return calls
}

func resultByID(t *testing.T, f *fixture, runID string) map[string]runs.Result {
	t.Helper()
	results, err := f.runs.Results(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]runs.Result{}
	for _, r := range results {
		out[r.TestID] = r
	}
	return out
}

// TestToolsMock: the model calls the tools its level and its test offer,
// the engine answers with each tool's mock_response, records the calls,
// and tool_call tests pass.
func TestToolsMock(t *testing.T) {
	t.Parallel()
	var seen requestLog
	f := newFixture(t, fixtureOpts{snap: toolDefs().snap(), llm: llmtest.Options{
		Respond:       recorder(&seen, nil),
		ToolArguments: map[string]map[string]any{"get_weather": {"city": "Paris"}},
	}})
	id := f.start(t, engine.StartRequest{})
	if info, _ := f.wait(t, id); info.Status != runs.StatusCompleted {
		t.Fatalf("info = %+v", info)
	}
	res := resultByID(t, f, id)

	for _, tc := range []struct {
		test, fn string
		tools    []string
		args     map[string]any
		output   map[string]any
	}{
		{"tools-weather", "get_weather", []string{"get_weather"}, map[string]any{"city": "Paris"}, map[string]any{"temperature": 21.0, "unit": "celsius"}},
		{"tools-lookup", "lookup_word", []string{"get_weather", "lookup_word"}, map[string]any{}, map[string]any{"definition": "a mock"}},
	} {
		t.Run(tc.test, func(t *testing.T) {
			r := res[tc.test]
			if r.Status != runs.TestPassed {
				t.Errorf("%s %v", r.Status, r.Details)
			}
			calls := toolCallsOf(t, r)
			if len(calls) != 1 || calls[0]["name"] != tc.fn || !reflect.DeepEqual(calls[0]["arguments"], tc.args) || !reflect.DeepEqual(calls[0]["output"], tc.output) {
				t.Errorf("tool_calls = %v", calls)
			}
			reqs := seen.get(tc.test)
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want the question and the tool answer", len(reqs))
			}
			var offered []string
			for _, fd := range reqs[0].Tools {
				offered = append(offered, fd.Name)
			}
			if !reflect.DeepEqual(offered, tc.tools) {
				t.Errorf("tools offered %v, want %v", offered, tc.tools)
			}
			last := reqs[1].Messages[len(reqs[1].Messages)-1]
			var got map[string]any
			if last.Role != harness.RoleTool || json.Unmarshal([]byte(last.Content), &got) != nil || !reflect.DeepEqual(got, tc.output) {
				t.Errorf("the model got %+v, want the mock response", last)
			}
			if !strings.HasPrefix(r.Response, "The result of "+tc.fn) {
				t.Errorf("response %q", r.Response)
			}
			if r.PromptTokens <= 0 || r.CompletionTokens <= 0 {
				t.Errorf("tokens %d+%d", r.PromptTokens, r.CompletionTokens)
			}
		})
	}
}

// weatherTool is a registered implementation of get_weather.
type weatherTool struct {
	mu   sync.Mutex
	args []string
}

func (w *weatherTool) Definition() harness.FunctionDef {
	return harness.FunctionDef{Name: "get_weather"}
}

func (w *weatherTool) Call(_ context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	w.mu.Lock()
	w.args = append(w.args, string(req.Arguments))
	w.mu.Unlock()
	return &harness.ToolResult{Output: json.RawMessage(`{"source":"registry","temperature":9}`)}, nil
}

// TestToolsRegistered: a tool registered in the Registry answers instead
// of the mock_response.
func TestToolsRegistered(t *testing.T) {
	t.Parallel()
	reg := harness.NewRegistry()
	impl := &weatherTool{}
	if err := reg.RegisterTool(impl); err != nil {
		t.Fatal(err)
	}
	var seen requestLog
	f := newFixture(t, fixtureOpts{snap: toolDefs().snap(), registry: reg, llm: llmtest.Options{
		Respond:       recorder(&seen, nil),
		ToolArguments: map[string]map[string]any{"get_weather": {"city": "Oslo"}},
	}})
	id := f.start(t, engine.StartRequest{Domains: []string{"tools"}})
	f.wait(t, id)
	r := resultByID(t, f, id)["tools-weather"]
	calls := toolCallsOf(t, r)
	want := map[string]any{"source": "registry", "temperature": 9.0}
	if len(calls) != 1 || !reflect.DeepEqual(calls[0]["output"], want) {
		t.Errorf("tool_calls = %v, want the registered tool's output", calls)
	}
	if len(impl.args) != 1 || impl.args[0] != `{"city":"Oslo"}` {
		t.Errorf("registered tool called with %q", impl.args)
	}
	reqs := seen.get("tools-weather")
	if last := reqs[len(reqs)-1].Messages; !strings.Contains(last[len(last)-1].Content, "registry") {
		t.Errorf("the model got %q", last[len(last)-1].Content)
	}
	// expected.arguments {"city": "Paris"} is not a subset of Oslo's.
	if r.Status != runs.TestFailed {
		t.Errorf("status %s, want failed (wrong city): %v", r.Status, r.Details)
	}
	// The test with a mock-only tool still gets its mock.
	if calls := toolCallsOf(t, resultByID(t, f, id)["tools-lookup"]); len(calls) != 1 || calls[0]["output"].(map[string]any)["definition"] != "a mock" {
		t.Errorf("lookup tool_calls = %v", calls)
	}
}

// TestToolRoundsBounded: a model that calls tools whenever it may is
// answered for MaxToolRounds rounds, then asked once more without tools
// for its answer (before the shared tool loop, the engine stopped there
// and left the last calls unanswered); the result says the rounds ran out.
func TestToolRoundsBounded(t *testing.T) {
	t.Parallel()
	var seen requestLog
	f := newFixture(t, fixtureOpts{snap: toolDefs().snap(), maxToolRounds: 2, llm: llmtest.Options{
		Respond: recorder(&seen, func(req *llmtest.Request) *llmtest.Reply {
			if len(req.Tools) == 0 {
				return nil // the fake's own answer: a summary of the tool results
			}
			return llmtest.CallTool("get_weather", map[string]any{"city": "Paris"})
		}),
	}})
	id := f.start(t, engine.StartRequest{})
	if info, _ := f.wait(t, id); info.Status != runs.StatusCompleted {
		t.Fatalf("info = %+v", info)
	}
	r := resultByID(t, f, id)["tools-weather"]
	reqs := seen.get("tools-weather")
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (the question, 1 more tool round, the answer without tools)", len(reqs))
	}
	for i, want := range []int{1, 1, 0} {
		if len(reqs[i].Tools) != want {
			t.Errorf("request %d offered %d tools, want %d", i, len(reqs[i].Tools), want)
		}
	}
	checkAnswered(t, reqs[2].Messages)
	if r.Details["tool_rounds_exceeded"] != true || len(toolCallsOf(t, r)) != 2 {
		t.Errorf("details = %v", r.Details)
	}
	if !strings.HasPrefix(r.Response, "The result of get_weather") {
		t.Errorf("response %q, want the answer to the tool-less request", r.Response)
	}
	if r.Status != runs.TestPassed {
		t.Errorf("status %s: the model did call get_weather with Paris", r.Status)
	}
}

// checkAnswered fails unless every assistant message that calls tools is
// followed by one tool message per call, with the call's id, and no id is
// empty or used twice.
func checkAnswered(t *testing.T, msgs []harness.Message) {
	t.Helper()
	seen := map[string]bool{}
	for i, m := range msgs {
		for j, c := range m.ToolCalls {
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("message %d: call id %q empty or used twice", i, c.ID)
			}
			seen[c.ID] = true
			if k := i + 1 + j; k >= len(msgs) || msgs[k].Role != harness.RoleTool || msgs[k].ToolCallID != c.ID {
				t.Fatalf("message %d: call %q has no answer after it: %+v", i, c.ID, msgs)
			}
		}
	}
}

// idless is a model whose tool calls come without ids, as some
// OpenAI-compatible servers send them.
type idless struct{ inner harness.ChatModel }

func (m idless) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	resp, err := m.inner.Chat(ctx, req)
	if err == nil {
		for i := range resp.Message.ToolCalls {
			resp.Message.ToolCalls[i].ID = ""
		}
	}
	return resp, err
}

// TestToolCallsWithoutIDs: calls the model sent without ids get
// generated ones, the same on the call and on its answer; the evaluator
// is given the whole conversation (here seen through the second pass,
// which sends it back to the model).
func TestToolCallsWithoutIDs(t *testing.T) {
	t.Parallel()
	d := toolDefs()
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "restate", Name: "Restate", Type: harness.EvaluatorTypeRegex,
		ExtractionRegex: `(?<answer>NEVER-MATCHES)`, UsesPass2: true})
	d.test(harness.Test{ID: "tools-ids", DomainID: "tools", Level: 1, EvaluatorID: "restate", Tools: []string{"lookup"},
		Prompt:   "[tools-ids] Use lookup_word on gauntlet, then get_weather for Paris.",
		Expected: harness.Expected{Type: "exact", Answer: "x"}})
	var seen requestLog
	f := newFixture(t, fixtureOpts{snap: d.snap(), model: func(m harness.ChatModel) harness.ChatModel { return idless{m} },
		llm: llmtest.Options{Respond: recorder(&seen, func(req *llmtest.Request) *llmtest.Reply {
			if len(req.Tools) > 0 && !strings.Contains(req.Messages[len(req.Messages)-1].Role, harness.RoleTool) {
				return &llmtest.Reply{ToolCalls: []harness.ToolCall{
					{Name: "lookup_word", Arguments: `{"word":"gauntlet"}`}, {Name: "get_weather", Arguments: `{"city":"Paris"}`}}}
			}
			return nil
		})}})
	id := f.start(t, engine.StartRequest{Domains: []string{"tools"}})
	f.wait(t, id)
	r := resultByID(t, f, id)["tools-ids"]
	if calls := toolCallsOf(t, r); len(calls) != 2 || calls[0]["name"] != "lookup_word" || calls[1]["name"] != "get_weather" {
		t.Errorf("tool_calls = %v", calls)
	}
	reqs := seen.get("tools-ids")
	if len(reqs) != 3 || !llmtest.IsRestate(reqs[2].LastUser()) {
		t.Fatalf("%d requests, want the question, the tool answers and the second pass", len(reqs))
	}
	msgs := reqs[2].Messages
	checkAnswered(t, msgs)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,tool,assistant,user" {
		t.Fatalf("the evaluator saw %s, want the whole conversation", got)
	}
	if ids := []string{msgs[2].ToolCalls[0].ID, msgs[2].ToolCalls[1].ID}; ids[0] != "call_1" || ids[1] != "call_2" {
		t.Errorf("generated ids %v, want call_1 and call_2", ids)
	}
	if msgs[5].Content != r.Response || !strings.HasPrefix(r.Response, "The result of lookup_word") {
		t.Errorf("final answer %q, response %q", msgs[5].Content, r.Response)
	}
}

// TestPass2 covers the second pass of the regex evaluator: a response with
// no number is rescued by asking for the final answer, and the second
// request's tokens count.
func TestPass2(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("p2", "", true).level("p2", 1, "", harness.PromptAppend, 0.5)
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "rescue", Name: "With pass 2",
		Type: harness.EvaluatorTypeRegex, ExtractionRegex: `(?<answer>-?\d+)`, UsesPass2: true})
	for _, tc := range []struct{ id, evaluator string }{
		{"p2-rescued", "rescue"}, {"p2-off", "number"}, {"p2-hopeless", "rescue"},
	} {
		d.test(harness.Test{ID: tc.id, DomainID: "p2", Level: 1, EvaluatorID: tc.evaluator,
			Prompt: "[" + tc.id + "] How many legs has a spider?", Expected: harness.Expected{Answer: "8", Type: "numeric"}})
	}
	var seen requestLog
	f := newFixture(t, fixtureOpts{snap: d.snap(), llm: llmtest.Options{
		Answers: map[string]string{"spider": "Eight, of course."},
		Respond: recorder(&seen, func(req *llmtest.Request) *llmtest.Reply {
			if !llmtest.IsRestate(req.LastUser()) {
				return nil
			}
			if strings.Contains(req.Messages[0].Content, "hopeless") {
				return &llmtest.Reply{Content: "Lots."}
			}
			return &llmtest.Reply{Content: "8"}
		}),
	}})
	id := f.start(t, engine.StartRequest{})
	f.wait(t, id)
	res := resultByID(t, f, id)

	r := res["p2-rescued"]
	if r.Status != runs.TestPassed || r.Details["pass2_used"] != true || r.Details["pass2_response"] != "8" || r.Details["extracted_answer"] != "8" {
		t.Errorf("rescued: %s %v", r.Status, r.Details)
	}
	reqs := seen.get("p2-rescued")
	if len(reqs) != 2 {
		t.Fatalf("rescued: %d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	if len(msgs) != 3 || msgs[1].Role != harness.RoleAssistant || msgs[1].Content != "Eight, of course." || msgs[2].Content != regexeval.Pass2Prompt {
		t.Errorf("second request: %+v", msgs)
	}
	// Both answers' tokens count: "Eight, of course." is 5, "8" is 1.
	if want := llmtest.CountTokens("Eight, of course.") + llmtest.CountTokens("8"); r.CompletionTokens != want {
		t.Errorf("completion tokens %d, want %d", r.CompletionTokens, want)
	}
	if r.Response != "Eight, of course." {
		t.Errorf("response %q, want the first answer", r.Response)
	}

	r = res["p2-off"]
	if r.Status != runs.TestFailed || r.Details["pass2_used"] != false || len(seen.get("p2-off")) != 1 {
		t.Errorf("without pass 2: %s %v, %d requests", r.Status, r.Details, len(seen.get("p2-off")))
	}
	r = res["p2-hopeless"]
	if r.Status != runs.TestFailed || r.Details["pass2_used"] != true || r.Details["pass2_response"] != "Lots." {
		t.Errorf("hopeless: %s %v", r.Status, r.Details)
	}
}
