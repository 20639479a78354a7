package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

var _ engine.Agents = (*agent.Service)(nil)

// supportDefs is a support suite: a domain whose own system prompt must
// not reach an agent, a question the knowledge base answers, and a test
// that expects the agent's own tool to be called.
func supportDefs() *defs {
	d := newDefs()
	d.s.Tools = []harness.ToolDefinition{
		{ID: "orders", Name: "Orders", Function: harness.FunctionDef{Name: "lookup_order", Description: "Look an order up.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"order": map[string]any{"type": "string"}}}},
			MockResponse: map[string]any{"status": "shipped"}},
	}
	d.domain("support", "DOMAIN PROMPT", true).level("support", 1, "LEVEL PROMPT", harness.PromptAppend, 0.5)
	d.test(harness.Test{ID: "refund", DomainID: "support", Level: 1, Prompt: "[refund] How many days is the refund window?",
		Expected: harness.Expected{Type: "numeric", Answer: "30"}})
	d.test(harness.Test{ID: "order", DomainID: "support", Level: 1, Prompt: "[order] Use lookup_order for order 42.",
		Expected: harness.Expected{Type: "tool_call", Answer: "lookup_order"}})
	return d
}

// refundDays answers the refund question with the number of days the
// system message's knowledge base gives, the way a model reading it
// would; other requests get the endpoint's default answers.
var refundRE = regexp.MustCompile(`refunds within (\d+) days`)

func refundDays(req *llmtest.Request) *llmtest.Reply {
	if !strings.Contains(req.LastUser(), "refund window") {
		return nil
	}
	for _, m := range req.Messages {
		if m.Role == harness.RoleSystem {
			if sub := refundRE.FindStringSubmatch(m.Content); sub != nil {
				return &llmtest.Reply{Content: "The refund window is " + sub[1] + " days."}
			}
		}
	}
	return &llmtest.Reply{Content: "I do not know."}
}

// orderTool is a registered implementation of lookup_order that records
// who called it.
type orderTool struct {
	mu    sync.Mutex
	calls []harness.ToolCallRequest
}

func (o *orderTool) Definition() harness.FunctionDef {
	return harness.FunctionDef{Name: "lookup_order"}
}

func (o *orderTool) Call(_ context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	o.mu.Lock()
	o.calls = append(o.calls, *req)
	o.mu.Unlock()
	return &harness.ToolResult{Output: json.RawMessage(`{"status":"delivered"}`)}, nil
}

// agentFixture is an engine whose agents are a real agent.Service on the
// same database, with agent "helpdesk" (system prompt, model, the orders
// tool, a knowledge base saying refunds take 30 days).
type agentFixture struct {
	*fixture
	svc  *agent.Service
	seen *requestLog
	tool *orderTool
	// failing makes the endpoint refuse the refund question.
	failing atomic.Bool
}

func newAgentFixture(t *testing.T) *agentFixture {
	t.Helper()
	af := &agentFixture{seen: &requestLog{}, tool: &orderTool{}}
	reg := harness.NewRegistry()
	if err := reg.RegisterTool(af.tool); err != nil {
		t.Fatal(err)
	}
	af.fixture = newFixture(t, fixtureOpts{snap: supportDefs().snap(), registry: reg,
		llm: llmtest.Options{Respond: recorder(af.seen, func(req *llmtest.Request) *llmtest.Reply {
			if af.failing.Load() && strings.Contains(req.LastUser(), "refund window") {
				return &llmtest.Reply{Status: 400, Content: "refused"}
			}
			return refundDays(req)
		})},
		agents: openAgents(t, reg, &af.svc)})
	ctx := context.Background()
	model := "agent-model"
	if _, err := af.svc.Create(ctx, harness.Agent{ID: "helpdesk", Name: "Help desk", SystemPrompt: "AGENT PROMPT", Model: &model}); err != nil {
		t.Fatal(err)
	}
	if _, err := af.svc.SetTools(ctx, "helpdesk", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	af.writeKB(t, "policy.md", "Our policy: refunds within 30 days of purchase.")
	return af
}

// writeKB creates or replaces a knowledge-base file of helpdesk.
func (af *agentFixture) writeKB(t *testing.T, name, text string) {
	t.Helper()
	_, err := af.svc.KB().Write(context.Background(), "helpdesk", name, strings.NewReader(text), true)
	if errors.Is(err, harness.ErrConflict) {
		_, err = af.svc.KB().Write(context.Background(), "helpdesk", name, strings.NewReader(text), false)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestAgentRun: a run that targets an agent sends each test through the
// agent's pipeline (its system prompt with the knowledge base, its model,
// its tools, tool calls on its behalf), stores no conversation, and
// records the agent and its definition.
func TestAgentRun(t *testing.T) {
	t.Parallel()
	af := newAgentFixture(t)
	id := af.start(t, engine.StartRequest{AgentID: "helpdesk"})
	info, _ := af.wait(t, id)
	if info.Status != runs.StatusCompleted || info.Passed != 2 || !info.Complete {
		t.Fatalf("run: %+v", info)
	}
	if info.ModelName != "Help desk" || info.Model != "agent-model" {
		t.Errorf("label %q, model %q; want the agent's name and model", info.ModelName, info.Model)
	}

	refund := af.seen.get("refund")
	if len(refund) != 1 {
		t.Fatalf("refund: %d requests", len(refund))
	}
	req := refund[0]
	if req.Model != "agent-model" {
		t.Errorf("model %q, want the agent's", req.Model)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != harness.RoleSystem || req.Messages[1].Role != harness.RoleUser {
		t.Fatalf("messages: %+v", req.Messages)
	}
	sys := req.Messages[0].Content
	if !strings.HasPrefix(sys, "AGENT PROMPT") || !strings.Contains(sys, "refunds within 30 days") {
		t.Errorf("system message lacks the agent's prompt or its knowledge base: %q", sys)
	}
	if strings.Contains(sys, "DOMAIN PROMPT") || strings.Contains(sys, "LEVEL PROMPT") {
		t.Errorf("system message holds the domain's or level's prompt: %q", sys)
	}
	if !slices.ContainsFunc(req.Tools, func(f harness.FunctionDef) bool { return f.Name == "lookup_order" }) {
		t.Errorf("the agent's tool was not offered: %+v", req.Tools)
	}

	af.tool.mu.Lock()
	calls := slices.Clone(af.tool.calls)
	af.tool.mu.Unlock()
	if len(calls) != 1 || calls[0].AgentID != "helpdesk" || calls[0].UserID != "eval/"+id+"/order/0" {
		t.Errorf("tool calls: %+v", calls)
	}
	results := resultByID(t, af.fixture, id)
	if got := toolCallsOf(t, results["order"]); len(got) != 1 || got[0]["name"] != "lookup_order" {
		t.Errorf("order's tool calls: %+v", got)
	}
	if sp := results["refund"].SystemPrompt; sp != sys {
		t.Errorf("result's system prompt %q, want the system message sent %q", sp, sys)
	}

	n, err := sqldb.Bun(af.db).NewSelect().Table("chat_messages").Count(context.Background())
	if err != nil || n != 0 {
		t.Errorf("chat messages stored: %d (%v); an evaluation stores no conversation", n, err)
	}

	c := info.Config
	if c == nil || c.AgentID != "helpdesk" || c.Agent == nil || c.Model != "agent-model" {
		t.Fatalf("config: %+v", c)
	}
	a := c.Agent
	if a.ID != "helpdesk" || a.Name != "Help desk" || a.SystemPrompt != "AGENT PROMPT" || a.Model == nil || *a.Model != "agent-model" ||
		!slices.Equal(a.Tools, []string{"orders"}) || len(a.KnowledgeBase) != 1 || a.KnowledgeBase[0].File != "policy.md" ||
		len(a.KnowledgeBase[0].SHA256) != 64 || a.KnowledgeBase[0].Bytes != int64(len("Our policy: refunds within 30 days of purchase.")) {
		t.Errorf("agent definition: %+v", a)
	}
	// The store gives the definition back.
	stored, err := af.runs.Run(context.Background(), id)
	if err != nil || stored.Config == nil || stored.Config.Agent == nil || len(stored.Config.Agent.Changes(*a)) != 0 {
		t.Errorf("stored config: %+v (%v)", stored.Config, err)
	}
}

// TestAgentRunKBVersions: the same suite against one agent with its
// knowledge base changed between runs scores differently, and the two
// runs' definitions tell the versions apart.
func TestAgentRunKBVersions(t *testing.T) {
	t.Parallel()
	af := newAgentFixture(t)
	v1, _ := af.wait(t, af.start(t, engine.StartRequest{AgentID: "helpdesk", ModelName: "kb v1"}))
	af.writeKB(t, "policy.md", "Our policy: refunds within 14 days of purchase.")
	v2, _ := af.wait(t, af.start(t, engine.StartRequest{AgentID: "helpdesk", ModelName: "kb v2"}))
	if v1.Passed != 2 || v2.Passed != 1 || v2.Failed != 1 {
		t.Errorf("v1 %d passed; v2 %d passed, %d failed", v1.Passed, v2.Passed, v2.Failed)
	}
	if ch := v1.Config.Agent.Changes(*v2.Config.Agent); !slices.Equal(ch, []string{"knowledge_base"}) {
		t.Errorf("changes %v, want the knowledge base", ch)
	}
	if v1.ModelName != "kb v1" {
		t.Errorf("label %q", v1.ModelName)
	}
}

// TestAgentRunErrors: an unknown agent, an agent with a model, or an
// engine without agents are refused, naming the field.
func TestAgentRunErrors(t *testing.T) {
	t.Parallel()
	af := newAgentFixture(t)
	plain := newFixture(t, fixtureOpts{snap: supportDefs().snap()})
	for _, tc := range []struct {
		name  string
		eng   *engine.Engine
		req   engine.StartRequest
		field string
	}{
		{"unknown agent", af.eng, engine.StartRequest{AgentID: "nobody"}, "agent_id"},
		{"agent and model", af.eng, engine.StartRequest{AgentID: "helpdesk", Model: "other"}, "model"},
		{"no agents", plain.eng, engine.StartRequest{AgentID: "helpdesk"}, "agent_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.eng.Start(context.Background(), tc.req)
			var ve *harness.ValidationError
			if !errors.Is(err, harness.ErrInvalid) || !errors.As(err, &ve) || ve.Fields[0].Field != tc.field {
				t.Fatalf("err %v, want ErrInvalid naming %s", err, tc.field)
			}
		})
	}
	if af.eng.Running() {
		t.Error("a refused start left a run going")
	}
}

// TestAgentRunResume: a resumed agent run uses the agent as it is now and
// says what changed; a deleted agent cannot be resumed.
func TestAgentRunResume(t *testing.T) {
	t.Parallel()
	af := newAgentFixture(t)
	ctx := context.Background()
	af.failing.Store(true)
	id := af.start(t, engine.StartRequest{AgentID: "helpdesk"})
	info, _ := af.wait(t, id)
	if info.Errors != 1 || info.Passed != 1 {
		t.Fatalf("first session: %+v", info)
	}
	af.failing.Store(false)
	if _, err := af.svc.Update(ctx, "helpdesk", func(a *harness.Agent) error {
		a.SystemPrompt = "AGENT PROMPT, revised"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := af.eng.Resume(ctx, id); err != nil {
		t.Fatalf("resume: %v", err)
	}
	info, _ = af.wait(t, id)
	if !info.Complete || info.Passed != 2 {
		t.Fatalf("resumed: %+v", info)
	}
	reqs := af.seen.get("refund")
	if sys := reqs[len(reqs)-1].Messages[0].Content; !strings.HasPrefix(sys, "AGENT PROMPT, revised") {
		t.Errorf("the resumed test did not use the agent as it is now: %q", sys)
	}
	if log := logText(t, af.fixture, id); !strings.Contains(log, "agent helpdesk changed since the run started (system_prompt)") {
		t.Errorf("the log does not say the agent changed:\n%s", log)
	}

	af.failing.Store(true)
	id2 := af.start(t, engine.StartRequest{AgentID: "helpdesk"})
	if info, _ := af.wait(t, id2); info.Errors != 1 {
		t.Fatalf("second run: %+v", info)
	}
	if err := af.svc.Delete(ctx, "helpdesk"); err != nil {
		t.Fatal(err)
	}
	err := af.eng.Resume(ctx, id2)
	var ve *harness.ValidationError
	if !errors.As(err, &ve) || ve.Fields[0].Field != "run_id" || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("resume with the agent deleted: %v", err)
	}
}

// logText returns a run's log file.
func logText(t *testing.T, f *fixture, runID string) string {
	t.Helper()
	b, err := os.ReadFile(f.eng.LogFile(runID))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// openAgents is a fixture's agents: the agent service over the fixture's
// database, catalog and data directory, with reg's tools and the model
// "configured-model", kept in *svc and closed when the test ends.
func openAgents(t *testing.T, reg *harness.Registry, svc **agent.Service) func(*fixture) engine.Agents {
	return func(f *fixture) engine.Agents {
		s, err := agent.Open(context.Background(), agent.Options{DB: f.db, DataDir: f.dir, Tools: f.cat,
			Registry: reg, Model: "configured-model"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		*svc = s
		return s
	}
}
