package agent_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

// TestEvalTarget: an evaluation target's system message is the one a chat
// sends for the same message; its definition lists the tools and hashes
// the knowledge base; building it stores no conversation.
func TestEvalTarget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tools.put(harness.ToolDefinition{ID: "orders", Function: harness.FunctionDef{Name: "lookup_order"}})
	e.createAgent("a", "Be brief.")
	if _, err := e.svc.SetTools(e.ctx, "a", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	e.writeKB("a", "hours.md", "We open at 9 am.")

	tg, err := e.svc.EvalTarget(e.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	reply := e.chat("a", "u", "When do you open?")
	got, retrieved := tg.System(context.Background(), "When do you open?")
	if want := systemOf(e.lastRequest()); got != want || !strings.Contains(got, "9 am") {
		t.Errorf("target's system message %q, chat's %q", got, want)
	}
	if len(retrieved.Sources) != 1 || retrieved.Sources[0].File != "hours.md" || retrieved.Mode != "bm25" ||
		!strings.Contains(retrieved.Text, "9 am") || fmt.Sprint(retrieved.Sources) != fmt.Sprint(reply.Sources) {
		t.Errorf("target's retrieval %+v, chat's sources %+v", retrieved, reply.Sources)
	}
	d := tg.Definition
	if tg.Model != "test-model" || d.ID != "a" || d.SystemPrompt != "Be brief." || len(d.Tools) != 1 || d.Tools[0] != "orders" ||
		len(tg.Tools) != 1 || tg.Tools[0].Function.Name != "lookup_order" ||
		len(d.KnowledgeBase) != 1 || d.KnowledgeBase[0].File != "hours.md" || d.KnowledgeBase[0].Bytes != 16 ||
		d.KnowledgeBase[0].SHA256 != fmt.Sprintf("%x", sha256.Sum256([]byte("We open at 9 am."))) {
		t.Errorf("target: model %q, definition %+v, tools %+v", tg.Model, d, tg.Tools)
	}
	e.writeKB("a", "hours.md", "We open at 10 am.")
	tg2, err := e.svc.EvalTarget(e.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if ch := d.Changes(tg2.Definition); len(ch) != 1 || ch[0] != "knowledge_base" {
		t.Errorf("changes %v, want knowledge_base", ch)
	}
	if h, _ := e.svc.History(e.ctx, "a", "u"); len(h) != 2 {
		t.Errorf("the chat's conversation has %d messages, want 2 (targets add none)", len(h))
	}
	if _, err := e.svc.EvalTarget(e.ctx, "nobody"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown agent: %v", err)
	}
}

// TestLeaveChannels: a service opened with LeaveChannels leaves a channel
// recorded running as it is.
func TestLeaveChannels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	registerFake(t, e)
	e.createAgent("a", "")
	ch, err := e.svc.Supervisor().Create(e.ctx, "a", harness.ChannelConfig{ID: "on", Type: "fake", Config: map[string]any{"bot_token": botToken}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Supervisor().Start(e.ctx, "a", ch.ID); err != nil {
		t.Fatal(err)
	}
	opts := e.opts
	opts.LeaveChannels = true
	other, err := agent.Open(e.ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if st := e.channelStatus("a", ch.ID); st.Status != harness.ChannelRunning {
		t.Errorf("after an Open with LeaveChannels the channel reads %s, want running", st.Status)
	}
}
