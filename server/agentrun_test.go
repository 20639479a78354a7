package server_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// supportSuite is a domain of a support agent's questions: one the
// knowledge base answers, one that needs the agent's weather tool (the
// example get_weather, which the level does not offer).
var supportSuite = map[string]string{
	"domains/support/domain.yaml": `id: support
name: Support
evaluator_id: number
enabled: true
system_prompt: DOMAIN PROMPT
`,
	"domains/support/level-1.yaml": `system_prompt: LEVEL PROMPT
tests:
  - id: refund
    name: Refund window
    prompt: How many days is the refund window?
    expected:
      answer: "30"
      type: numeric
  - id: weather
    name: Weather for a customer
    prompt: What's the weather like in Paris right now?
    expected:
      answer: get_weather
      type: tool_call
      arguments:
        city: Paris
`,
}

// kbRefundRE finds the refund window in a system message's knowledge base.
var kbRefundRE = regexp.MustCompile(`refunds within (\d+) days`)

// supportEndpoint records the evaluation requests and answers the refund
// question from the knowledge base in the system message, as a model
// reading it would.
type supportEndpoint struct {
	mu   sync.Mutex
	reqs []*llmtest.Request
}

func (s *supportEndpoint) respond(req *llmtest.Request) *llmtest.Reply {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if !strings.Contains(req.LastUser(), "refund window") {
		return nil
	}
	for _, m := range req.Messages {
		if m.Role == harness.RoleSystem {
			if sub := kbRefundRE.FindStringSubmatch(m.Content); sub != nil {
				return &llmtest.Reply{Content: "The refund window is " + sub[1] + " days."}
			}
		}
	}
	return &llmtest.Reply{Content: "I do not know."}
}

// asked returns the requests whose user message holds s.
func (s *supportEndpoint) asked(sub string) []*llmtest.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*llmtest.Request
	for _, r := range s.reqs {
		if strings.Contains(r.LastUser(), sub) {
			out = append(out, r)
		}
	}
	return out
}

// newSupportEnv starts a server with the examples and the support suite,
// and agent helpdesk: a system prompt, the get_weather tool and a
// knowledge base saying refunds take 30 days.
func newSupportEnv(t *testing.T) (*testEnv, *supportEndpoint) {
	t.Helper()
	ep := &supportEndpoint{}
	e := newEngineEnv(t, engineConfig{files: supportSuite, llm: llmtest.Options{Respond: ep.respond}})
	e.createAgent("helpdesk", "AGENT PROMPT")
	must(t, e.put("/api/agents/helpdesk/tools", map[string]any{"tools": []string{"get_weather"}}), http.StatusOK)
	must(t, e.post("/api/agents/helpdesk/kb", map[string]any{"filename": "policy.md",
		"content": "Our policy: refunds within 30 days of purchase."}), http.StatusCreated)
	return e, ep
}

// runConfigBody is the config of GET /api/run/{id}'s run_info.
type runConfigBody struct {
	Model   string `json:"model"`
	AgentID string `json:"agent_id"`
	Agent   *struct {
		ID            string   `json:"id"`
		Name          string   `json:"name"`
		SystemPrompt  string   `json:"system_prompt"`
		Model         *string  `json:"model"`
		Tools         []string `json:"tools"`
		KnowledgeBase []struct {
			File   string `json:"file"`
			SHA256 string `json:"sha256"`
			Bytes  int64  `json:"bytes"`
		} `json:"knowledge_base"`
	} `json:"agent"`
}

// runInfoOf reads a run's label, counts and config.
func (e *testEnv) runInfoOf(id string) (label string, passed, failed int, cfg runConfigBody) {
	e.t.Helper()
	var out struct {
		RunInfo struct {
			ModelName string        `json:"model_name"`
			Passed    int           `json:"passed"`
			Failed    int           `json:"failed"`
			Config    runConfigBody `json:"config"`
		} `json:"run_info"`
	}
	must(e.t, e.get("/api/run/"+id), http.StatusOK).decode(e.t, &out)
	ri := out.RunInfo
	return ri.ModelName, ri.Passed, ri.Failed, ri.Config
}

func TestStartAgentRunRefused(t *testing.T) {
	t.Parallel()
	e, _ := newSupportEnv(t)
	for _, tc := range []struct {
		name  string
		body  map[string]any
		where string
	}{
		{"unknown agent", map[string]any{"agent_id": "nobody", "domains": []string{"support"}}, "body.agent_id"},
		{"agent and model", map[string]any{"agent_id": "helpdesk", "model": "other"}, "body.model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustProblem(t, e.post("/api/start", tc.body), http.StatusUnprocessableEntity, tc.where)
		})
	}
	if st := e.status(); st.Status != "idle" {
		t.Errorf("a refused start left the engine %s", st.Status)
	}
}

// TestStartAgentRun: a run that targets an agent goes through its
// pipeline, and its config records the agent and its definition.
func TestStartAgentRun(t *testing.T) {
	t.Parallel()
	e, ep := newSupportEnv(t)
	id := e.runToEnd(map[string]any{"agent_id": "helpdesk", "domains": []string{"support"}})

	label, passed, failed, cfg := e.runInfoOf(id)
	if label != "Agent helpdesk" || passed != 2 || failed != 0 {
		t.Errorf("label %q, %d passed, %d failed", label, passed, failed)
	}
	a := cfg.Agent
	if cfg.AgentID != "helpdesk" || a == nil || a.ID != "helpdesk" || a.SystemPrompt != "AGENT PROMPT" || a.Model != nil ||
		!slices.Equal(a.Tools, []string{"get_weather"}) || len(a.KnowledgeBase) != 1 || a.KnowledgeBase[0].File != "policy.md" ||
		len(a.KnowledgeBase[0].SHA256) != 64 {
		t.Fatalf("config: %+v agent %+v", cfg, a)
	}
	if cfg.Model != agentModel {
		t.Errorf("model %q: an agent without a model of its own uses the configured one", cfg.Model)
	}

	refund := ep.asked("refund window")
	if len(refund) != 1 || len(refund[0].Messages) != 2 {
		t.Fatalf("refund requests: %d", len(refund))
	}
	sys := refund[0].Messages[0]
	if sys.Role != harness.RoleSystem || !strings.HasPrefix(sys.Content, "AGENT PROMPT") ||
		!strings.Contains(sys.Content, "refunds within 30 days") || strings.Contains(sys.Content, "DOMAIN PROMPT") {
		t.Errorf("system message: %+v", sys)
	}
	weather := ep.asked("weather like in Paris")
	if len(weather) == 0 || !slices.ContainsFunc(weather[0].Tools, func(f harness.FunctionDef) bool { return f.Name == "get_weather" }) {
		t.Fatalf("the agent's tool was not offered: %+v", weather)
	}
	var cell cellBody
	must(t, e.get("/api/run/"+id+"/tests/support/1"), http.StatusOK).decode(t, &cell)
	for _, r := range cell.Tests {
		if r.TestID == "weather" && (r.Status != "passed" || r.Details["tool_calls"] == nil) {
			t.Errorf("weather: %+v", r)
		}
		if r.TestID == "refund" && r.SystemPrompt != sys.Content {
			t.Errorf("refund's system_prompt %q, want the message sent", r.SystemPrompt)
		}
	}
	// Nothing went to the agent's conversations.
	for _, test := range []string{"refund", "weather"} {
		h, err := e.agents.History(context.Background(), "helpdesk", "eval/"+id+"/"+test+"/0")
		if err != nil || len(h) != 0 {
			t.Errorf("%s: conversation %v (%v)", test, h, err)
		}
	}
}

// TestCompareAgentKBVersions: the same suite against one agent with
// knowledge base v1, then v2, compared with GET /api/compare.
func TestCompareAgentKBVersions(t *testing.T) {
	t.Parallel()
	e, _ := newSupportEnv(t)
	v1 := e.runToEnd(map[string]any{"agent_id": "helpdesk", "domains": []string{"support"}, "model_name": "helpdesk kb v1"})
	must(t, e.put("/api/agents/helpdesk/kb/policy.md", map[string]any{
		"content": "Our policy: refunds within 14 days of purchase."}), http.StatusOK)
	v2 := e.runToEnd(map[string]any{"agent_id": "helpdesk", "domains": []string{"support"}, "model_name": "helpdesk kb v2"})

	_, _, _, c1 := e.runInfoOf(v1)
	label, _, failed, c2 := e.runInfoOf(v2)
	if label != "helpdesk kb v2" || failed != 1 {
		t.Errorf("v2: label %q, %d failed", label, failed)
	}
	if c1.Agent.KnowledgeBase[0].SHA256 == c2.Agent.KnowledgeBase[0].SHA256 {
		t.Error("the two knowledge-base versions have the same hash")
	}
	var c comparison
	must(t, e.get("/api/compare?base="+v1+"&head="+v2), http.StatusOK).decode(t, &c)
	cell := c.Cells["support"]["1"]
	if cell.BaseScore != 1 || cell.HeadScore != 0.5 || cell.Delta != -0.5 {
		t.Errorf("support/1: %+v", cell)
	}
	if len(c.Flipped) != 1 || c.Flipped[0].TestID != "refund" || c.Flipped[0].BaseStatus != "passed" || c.Flipped[0].HeadStatus != "failed" {
		t.Errorf("flipped: %+v", c.Flipped)
	}
	if c.Summary["regressed"] != 1 || c.Summary["unchanged"] != 1 {
		t.Errorf("summary: %v", c.Summary)
	}
}
