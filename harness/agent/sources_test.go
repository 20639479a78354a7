package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"

	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// TestReplySourcesStored checks that the reply of a turn keeps the
// knowledge-base chunks its model was given, and how they were found, and
// that every other message, and a reply stored before sources were
// recorded, reads with none.
func TestReplySourcesStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tools.put(weatherTool)
	e.createAgent("a", "Answer from the knowledge base.")
	e.createAgent("plain", "No knowledge base.")
	if _, err := e.svc.SetTools(e.ctx, "a", []string{"weather"}); err != nil {
		t.Fatal(err)
	}
	e.writeKB("a", "faq.md", "# Opening hours\n\nThe shop opens at nine on weekdays.")
	e.writeKB("a", "pets.md", "# Pets\n\nThe office cat is called Biscuit.")

	res := e.chat("a", "u", "Call get_weather for Paris, and tell me what the cat is called.")
	if len(res.Sources) == 0 || res.Retrieval == nil || res.Retrieval.Mode == "" {
		t.Fatalf("the chat result has sources %+v, retrieval %+v; want some, and a mode", res.Sources, res.Retrieval)
	}
	c, err := e.svc.Conversation(e.ctx, "a", "u", agent.MessagesQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range c.Messages {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"user", "assistant", "tool", "assistant"}) {
		t.Fatalf("stored roles %v", roles)
	}
	for _, m := range c.Messages[:3] {
		if m.Sources != nil || m.Retrieval != nil {
			t.Errorf("the %s message (calls %d) has sources %+v, retrieval %+v; want none", m.Role, len(m.ToolCalls), m.Sources, m.Retrieval)
		}
	}
	reply := c.Messages[3]
	if !slices.Equal(reply.Sources, res.Sources) {
		t.Errorf("stored sources %+v, want the chat's %+v", reply.Sources, res.Sources)
	}
	if reply.Retrieval == nil || *reply.Retrieval != *res.Retrieval {
		t.Errorf("stored retrieval %+v, want %+v", reply.Retrieval, res.Retrieval)
	}
	if reply.Sources[0].File != "pets.md" {
		t.Errorf("best source %+v, want pets.md first", reply.Sources[0])
	}

	t.Run("a reply without a knowledge base has an empty list", func(t *testing.T) {
		res := e.chat("plain", "u", "hello")
		if res.Sources == nil || len(res.Sources) != 0 || res.Retrieval != nil {
			t.Errorf("chat result sources %#v, retrieval %+v; want [] and nil", res.Sources, res.Retrieval)
		}
		c, err := e.svc.Conversation(e.ctx, "plain", "u", agent.MessagesQuery{})
		if err != nil || len(c.Messages) != 2 {
			t.Fatalf("conversation %+v, %v", c, err)
		}
		if c.Messages[0].Sources != nil {
			t.Errorf("the user's message has sources %#v", c.Messages[0].Sources)
		}
		if r := c.Messages[1]; r.Sources == nil || len(r.Sources) != 0 || r.Retrieval != nil {
			t.Errorf("the reply has sources %#v, retrieval %+v; want [] and nil", r.Sources, r.Retrieval)
		}
	})

	t.Run("a reply stored before sources were recorded has none", func(t *testing.T) {
		ctx := context.Background()
		_, err := sqldb.Bun(e.db).ExecContext(ctx, `INSERT INTO chat_messages (agent_id, user_id, session_id, role, content, tool_call_id, created_at)
			VALUES ('a', 'old', 's_old', 'user', 'hi', '', '2026-11-25 08:30:00'), ('a', 'old', 's_old', 'assistant', 'hello', '', '2026-11-25 08:30:01')`)
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.svc.Conversation(ctx, "a", "old", agent.MessagesQuery{})
		if err != nil || len(c.Messages) != 2 {
			t.Fatalf("conversation %+v, %v", c, err)
		}
		for _, m := range c.Messages {
			if m.Sources != nil || m.Retrieval != nil {
				t.Errorf("old %s message has sources %#v, retrieval %+v", m.Role, m.Sources, m.Retrieval)
			}
		}
	})

}

// TestChannelReplySources checks that a running channel gets a reply's
// sources from the agent: a Telegram channel with show_sources, on the
// fake Bot API, ends its reply with them.
func TestChannelReplySources(t *testing.T) {
	t.Parallel()
	const token = "4242:sources-channel"
	e := newEnv(t)
	registerRealChannels(t, e.reg)
	e.createAgent("a", "Answer from the knowledge base.")
	e.writeKB("a", "pets.md", "# Pets\n\nThe office cat is called Biscuit.")
	e.writeKB("a", "hours.md", "# Opening hours\n\nThe shop opens at nine.")
	e.setRespond(func(*llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "Biscuit."} })
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	tg := telegramtest.NewServer(token)
	t.Cleanup(tg.Close)
	sv := e.svc.Supervisor()
	c, err := sv.Create(ctx, "a", harness.ChannelConfig{Type: "telegram",
		Config: map[string]any{"bot_token": token, "api_url": tg.URL, "show_sources": true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sv.Start(ctx, "a", c.ID); err != nil {
		t.Fatal(err)
	}
	tg.SendUserMessage(42, 42, "Biscuit cat?")
	sent, err := tg.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Biscuit.\n\nSources: pets.md (part 1)"; sent[0].Text != want {
		t.Errorf("sent %q, want %q", sent[0].Text, want)
	}
}
