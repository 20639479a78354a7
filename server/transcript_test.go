package server_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// tourFiles add a domain "tour" whose tests exercise every part of a
// transcript: a tool round trip then a second pass (tour-tools), a
// request retried after a 429 (tour-retry), and an answer with a NUL
// byte (tour-bytes; bytes that are not UTF-8 cannot cross the wire's
// JSON, see TestTranscriptContentBase64).
var tourFiles = map[string]string{
	"domains/tour/domain.yaml": "id: tour\nname: Transcript tour\nevaluator_id: number\nenabled: true\n",
	"domains/tour/level-1.yaml": "system_prompt: Answer with a number.\ntools:\n  - get_weather\ntests:\n" +
		"  - id: tour-tools\n    name: Tools then a second pass\n    prompt: '[tour-tools] How warm is Paris?'\n    expected:\n      answer: '21'\n      type: numeric\n" +
		"  - id: tour-retry\n    name: Retried\n    prompt: '[tour-retry] What is 2 + 2?'\n    expected:\n      answer: '4'\n      type: numeric\n" +
		"  - id: tour-bytes\n    name: Odd bytes\n    prompt: '[tour-bytes] What is 6 x 7?'\n    expected:\n      answer: '42'\n      type: numeric\n",
}

// tourWarm is tour-tools' answer after the tool's: markup that must stay
// text.
const tourWarm = `It is <b id="injected">warm</b> in Paris.`

// tourBytes is tour-bytes' answer.
const tourBytes = "Answer: 42 \x00 end"

var tourID = regexp.MustCompile(`^\[(tour-[a-z]+)\]`)

// tourModel answers the tour's tests as their names say.
type tourModel struct {
	mu      sync.Mutex
	retried bool
}

func (m *tourModel) respond(req *llmtest.Request) *llmtest.Reply {
	id := ""
	for _, msg := range req.Messages {
		if msg.Role == harness.RoleUser {
			if s := tourID.FindStringSubmatch(msg.Content); s != nil {
				id = s[1]
			}
			break
		}
	}
	last := req.Messages[len(req.Messages)-1]
	switch id {
	case "tour-tools":
		switch {
		case llmtest.IsRestate(req.LastUser()):
			return &llmtest.Reply{Content: "21"}
		case last.Role == harness.RoleTool:
			return &llmtest.Reply{Content: tourWarm}
		default:
			return &llmtest.Reply{ToolCalls: []harness.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`}}}
		}
	case "tour-retry":
		m.mu.Lock()
		defer m.mu.Unlock()
		if !m.retried {
			m.retried = true
			return &llmtest.Reply{Status: http.StatusTooManyRequests, Content: "slow down"}
		}
		return &llmtest.Reply{Content: "The answer is 4."}
	case "tour-bytes":
		return &llmtest.Reply{Content: tourBytes}
	}
	return nil
}

// apiTranscriptResult is the part of a result the transcript tests read.
type apiTranscriptResult struct {
	TestID           string `json:"test_id"`
	Status           string `json:"status"`
	Response         string `json:"response"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	Transcript       []struct {
		Role          string `json:"role"`
		Content       string `json:"content"`
		ContentBase64 string `json:"content_base64"`
		ToolCalls     []struct {
			ID, Name, Arguments string
		} `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
		Pass2      *bool  `json:"pass2"`
		Truncated  *bool  `json:"truncated"`
	} `json:"transcript"`
	Calls []struct {
		Purpose          string `json:"purpose"`
		Round            int    `json:"round"`
		Attempt          int    `json:"attempt"`
		StartMS          int64  `json:"start_ms"`
		DurationMS       int64  `json:"duration_ms"`
		PromptTokens     int    `json:"prompt_tokens"`
		CompletionTokens int    `json:"completion_tokens"`
		Status           string `json:"status"`
		HTTPStatus       int    `json:"http_status"`
		Error            string `json:"error"`
	} `json:"calls"`
}

// TestResultTranscripts: each result of a run, through the results
// endpoints, carries its transcript (tool round trip, second pass
// marked, exact bytes) and its calls (retries, tool rounds, second pass).
func TestResultTranscripts(t *testing.T) {
	t.Parallel()
	m := &tourModel{}
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: m.respond}, files: tourFiles})
	id := e.runToEnd(map[string]any{"domains": []string{"tour"}})

	var cell struct {
		Tests []apiTranscriptResult `json:"tests"`
	}
	must(t, e.get("/api/run/"+id+"/tests/tour/1"), http.StatusOK).decode(t, &cell)
	var whole struct {
		TestResults []apiTranscriptResult `json:"test_results"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &whole)
	if len(cell.Tests) != 3 || len(whole.TestResults) != 3 {
		t.Fatalf("%d results in the cell, %d in the run; want 3", len(cell.Tests), len(whole.TestResults))
	}
	by := map[string]apiTranscriptResult{}
	for _, r := range cell.Tests {
		by[r.TestID] = r
	}
	for _, r := range whole.TestResults {
		if len(r.Transcript) != len(by[r.TestID].Transcript) || len(r.Calls) != len(by[r.TestID].Calls) {
			t.Errorf("%s: the run's result and the cell's differ", r.TestID)
		}
	}
	for _, r := range cell.Tests {
		var p, c int
		for _, call := range r.Calls {
			p, c = p+call.PromptTokens, c+call.CompletionTokens
		}
		if p != r.PromptTokens || c != r.CompletionTokens {
			t.Errorf("%s: calls count %d+%d tokens, the result %d+%d", r.TestID, p, c, r.PromptTokens, r.CompletionTokens)
		}
		for i, m := range r.Transcript {
			if m.Pass2 == nil || m.Truncated == nil || *m.Truncated {
				t.Errorf("%s: message %d: pass2 %v, truncated %v", r.TestID, i, m.Pass2, m.Truncated)
			}
		}
	}

	tools := by["tour-tools"]
	var shape []string
	for _, m := range tools.Transcript {
		s := m.Role
		if *m.Pass2 {
			s += "*"
		}
		shape = append(shape, s)
	}
	if got := strings.Join(shape, ","); got != "system,user,assistant,tool,assistant,user*,assistant*" {
		t.Fatalf("tour-tools transcript %s", got)
	}
	tr := tools.Transcript
	if tr[0].Content != "Answer with a number." || tr[1].Content != "[tour-tools] How warm is Paris?" ||
		len(tr[2].ToolCalls) != 1 || tr[2].ToolCalls[0].Name != "get_weather" || tr[2].ToolCalls[0].Arguments != `{"city":"Paris","unit":"celsius"}` ||
		tr[3].ToolCallID != tr[2].ToolCalls[0].ID || tr[4].Content != tourWarm || tools.Response != tr[4].Content ||
		!llmtest.IsRestate(tr[5].Content) || tr[6].Content != "21" || tools.Status != "passed" {
		t.Errorf("tour-tools: %s, transcript %+v", tools.Status, tr)
	}
	var calls []string
	for _, c := range tools.Calls {
		calls = append(calls, c.Purpose+":"+c.Status)
	}
	if got := strings.Join(calls, " "); got != "test:ok tool_round:ok pass2:ok" || tools.Calls[1].Round != 1 {
		t.Errorf("tour-tools calls %s", got)
	}

	retry := by["tour-retry"]
	if len(retry.Calls) != 2 || retry.Calls[0].Status != "http_error" || retry.Calls[0].HTTPStatus != 429 || retry.Calls[0].Attempt != 1 ||
		!strings.Contains(retry.Calls[0].Error, "slow down") || retry.Calls[1].Status != "ok" || retry.Calls[1].Attempt != 2 ||
		retry.Calls[1].StartMS < retry.Calls[0].StartMS+retry.Calls[0].DurationMS || retry.Status != "passed" {
		t.Errorf("tour-retry: %s, calls %+v", retry.Status, retry.Calls)
	}

	odd := by["tour-bytes"]
	final := odd.Transcript[len(odd.Transcript)-1]
	if final.Content != tourBytes || final.ContentBase64 != "" || odd.Response != tourBytes {
		t.Errorf("tour-bytes: final message %+v, response %q", final, odd.Response)
	}
}
