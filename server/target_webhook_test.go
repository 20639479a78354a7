package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/target"
)

// TestWebhookChannelAsTarget: the example target
// examples/definitions/targets/support-agent.yaml reaches an agent of a
// running server through its own webhook channel: each turn is signed
// with the channel's secret (read from the environment), the answer and
// the knowledge-base sources come back at the target's pointers, and the
// turns of one conversation id are one conversation for the agent.
func TestWebhookChannelAsTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const secret = "whsec-target-test-7f3a"
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("support", "You answer support questions.")
	must(t, e.post("/api/agents/support/kb", map[string]any{"filename": "refunds.md",
		"content": "# Refunds\n\nRefunds take 14 days to reach your account after the return arrives.\n"}), http.StatusCreated)
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
		users := 0
		for _, m := range req.Messages {
			if m.Role == harness.RoleUser {
				users++
			}
		}
		return &llmtest.Reply{Content: fmt.Sprintf("answer %d to %q", users, req.LastUser())}
	})
	ch := e.createChannel("support", map[string]any{"type": "webhook", "config": map[string]any{"secret": secret}})
	channelID := ch["id"].(string)
	e.channelAction("support", channelID, "start")

	defs, res, err := catalog.Load(ctx, os.DirFS("../examples/definitions"), catalog.LoadOptions{})
	if err != nil || len(res.Errors) != 0 {
		t.Fatalf("example definitions: %+v, %v", res, err)
	}
	def, err := defs.Target(ctx, "support-agent")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"GAUNTLET_URL": e.url, "SUPPORT_CHANNEL_ID": channelID, "GAUNTLET_WEBHOOK_SECRET": secret}
	c, err := target.New(def, target.Options{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}

	conv := target.ConversationID("run-1", "refunds", 0)
	first := &target.Turn{ConversationID: conv, Messages: []harness.Message{{Role: harness.RoleUser, Content: "How long do refunds take?"}}}
	reply, err := c.Send(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Answer != `answer 1 to "How long do refunds take?"` || reply.StatusCode != http.StatusOK {
		t.Errorf("first reply = %+v", reply)
	}
	if len(reply.Sources) == 0 || reply.Sources[0].File != "refunds.md" || reply.Sources[0].Score <= 0 {
		t.Errorf("sources = %+v; want refunds.md", reply.Sources)
	}

	second := &target.Turn{ConversationID: conv, Messages: append(first.Messages,
		harness.Message{Role: harness.RoleAssistant, Content: reply.Answer},
		harness.Message{Role: harness.RoleUser, Content: "And for a gift?"})}
	reply, err = c.Send(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Answer != `answer 2 to "And for a gift?"` {
		t.Errorf("second reply = %q; want the agent to see the first turn", reply.Answer)
	}
	if h, err := e.agents.History(ctx, "support", conv); err != nil || len(h) != 4 {
		t.Errorf("the agent's conversation %s = %d messages, %v; want 4", conv, len(h), err)
	}

	// With the wrong secret the channel refuses the turn, and the error
	// says so without the secret.
	vars["GAUNTLET_WEBHOOK_SECRET"] = "not-the-secret"
	bad, err := target.New(def, target.Options{Getenv: func(k string) string { return vars[k] }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Send(ctx, &target.Turn{ConversationID: "other", Messages: first.Messages})
	var te *target.Error
	if !errors.As(err, &te) || te.StatusCode != http.StatusUnauthorized || !strings.Contains(err.Error(), "X-Gauntlet-Signature") ||
		strings.Contains(err.Error(), "not-the-secret") {
		t.Errorf("wrong secret = %v", err)
	}
}
