package agent_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// userIDs returns the user ids of a page, in order.
func userIDs(l *agent.ConversationList) []string {
	var out []string
	for _, c := range l.Conversations {
		out = append(out, c.UserID)
	}
	return out
}

func TestConversations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The telegram channel names its users "telegram:<id>", but a chat
	// through the API is one whatever its user id: the channel of a
	// message is recorded, not guessed from the id.
	if err := e.reg.RegisterChannel("telegram", plainChannel{}); err != nil {
		t.Fatal(err)
	}
	e.createAgent("a", "")
	e.createAgent("b", "")
	ctx := e.ctx

	t.Run("an agent without conversations has none", func(t *testing.T) {
		l, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{})
		if err != nil || len(l.Conversations) != 0 || l.Conversations == nil || l.Total != 0 {
			t.Fatalf("Conversations = %+v, %v", l, err)
		}
	})

	long := strings.Repeat("é", agent.PreviewChars+5)
	e.chat("a", "alice", "one")
	e.chat("a", "telegram:42", "hello from telegram")
	e.chat("a", "alice", "two")
	e.chat("a", "nochannel:7", long)
	e.chat("b", "alice", "elsewhere")

	t.Run("most recent first, with counts, previews and channels", func(t *testing.T) {
		l, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(userIDs(l), ","); got != "nochannel:7,alice,telegram:42" || l.Total != 3 {
			t.Fatalf("users %s, total %d", got, l.Total)
		}
		byUser := map[string]agent.ConversationSummary{}
		for _, c := range l.Conversations {
			byUser[c.UserID] = c
			if c.UpdatedAt == "" || c.LastRole != harness.RoleAssistant {
				t.Errorf("%s: updated %q, last role %q", c.UserID, c.UpdatedAt, c.LastRole)
			}
		}
		// llmtest echoes the user's message.
		if c := byUser["alice"]; c.Messages != 4 || c.LastMessage != "two" || c.LastMessageTruncated || c.Channel != "" {
			t.Errorf("alice %+v", c)
		}
		if c := byUser["telegram:42"]; c.Messages != 2 || c.Channel != "" || c.ChannelID != "" {
			t.Errorf("telegram:42 %+v", c)
		}
		if c := byUser["nochannel:7"]; c.LastMessage != strings.Repeat("é", agent.PreviewChars) || !c.LastMessageTruncated || c.Channel != "" {
			t.Errorf("nochannel:7 preview %d characters, truncated %v, channel %q",
				len([]rune(c.LastMessage)), c.LastMessageTruncated, c.Channel)
		}
	})

	t.Run("pages", func(t *testing.T) {
		var got []string
		for off := 0; off < 4; off += 2 {
			l, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Limit: 2, Offset: off})
			if err != nil || l.Total != 3 {
				t.Fatalf("page at %d: %+v, %v", off, l, err)
			}
			got = append(got, userIDs(l)...)
		}
		if strings.Join(got, ",") != "nochannel:7,alice,telegram:42" {
			t.Errorf("pages gave %v", got)
		}
	})

	t.Run("a new message moves its conversation first", func(t *testing.T) {
		e.chat("a", "telegram:42", "again")
		l, _ := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Limit: 1})
		if got := userIDs(l); len(got) != 1 || got[0] != "telegram:42" || l.Conversations[0].Messages != 4 {
			t.Errorf("first %+v", l.Conversations)
		}
	})

	t.Run("bad queries and unknown agents", func(t *testing.T) {
		_, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Limit: agent.MaxConversationsLimit + 1})
		wantInvalid(t, err, "limit")
		_, err = e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Offset: -1})
		wantInvalid(t, err, "offset")
		if _, err := e.svc.Conversations(ctx, "ghost", agent.ConversationsQuery{}); !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("unknown agent: %v", err)
		}
	})
}

func TestConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tools.put(weatherTool)
	e.createAgent("a", "")
	if _, err := e.svc.SetTools(e.ctx, "a", []string{"weather"}); err != nil {
		t.Fatal(err)
	}
	ctx := e.ctx
	e.chat("a", "u/1", "Call get_weather for Paris.")
	e.chat("a", "u/1", "thanks")

	t.Run("every message in order, tool calls and answers as such", func(t *testing.T) {
		c, err := e.svc.Conversation(ctx, "a", "u/1", agent.MessagesQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range c.Messages {
			roles = append(roles, m.Role)
			if m.CreatedAt == "" || m.ID == 0 {
				t.Errorf("message %+v lacks its id or time", m)
			}
		}
		if strings.Join(roles, ",") != "user,assistant,tool,assistant,user,assistant" || c.Total != 6 || c.Before != 0 || c.UserID != "u/1" {
			t.Fatalf("roles %v, total %d, before %d", roles, c.Total, c.Before)
		}
		call, answer := c.Messages[1], c.Messages[2]
		if len(call.ToolCalls) != 1 || call.ToolCalls[0].Name != "get_weather" || !strings.Contains(call.ToolCalls[0].Arguments, "Paris") {
			t.Errorf("the call %+v", call)
		}
		if answer.ToolCallID == "" || answer.ToolCallID != call.ToolCalls[0].ID || !strings.Contains(answer.Content, "celsius") {
			t.Errorf("the answer %+v to %+v", answer, call.ToolCalls)
		}
	})

	t.Run("pages back from the most recent", func(t *testing.T) {
		var pages [][]string
		var before int64
		for range 4 {
			c, err := e.svc.Conversation(ctx, "a", "u/1", agent.MessagesQuery{Limit: 4, Before: before})
			if err != nil {
				t.Fatal(err)
			}
			var roles []string
			for _, m := range c.Messages {
				roles = append(roles, m.Role)
			}
			pages = append(pages, roles)
			if before = c.Before; before == 0 {
				break
			}
		}
		if got := fmt.Sprint(pages); got != "[[tool assistant user assistant] [user assistant]]" {
			t.Errorf("pages %s", got)
		}
	})

	t.Run("bad ids and queries are invalid", func(t *testing.T) {
		for _, id := range []string{"", " ", "a\x00b", "bad\xffutf8", strings.Repeat("u", agent.MaxUserIDBytes+1)} {
			_, err := e.svc.Conversation(ctx, "a", id, agent.MessagesQuery{})
			wantInvalid(t, err, "user_id")
			wantInvalid(t, e.svc.DeleteConversation(ctx, "a", id), "user_id")
		}
		_, err := e.svc.Conversation(ctx, "a", "u/1", agent.MessagesQuery{Limit: agent.MaxMessagesLimit + 1})
		wantInvalid(t, err, "limit")
		_, err = e.svc.Conversation(ctx, "a", "u/1", agent.MessagesQuery{Before: -1})
		wantInvalid(t, err, "before")
	})

	t.Run("unknown agents and users are not found", func(t *testing.T) {
		for _, c := range [][2]string{{"ghost", "u/1"}, {"a", "nobody"}} {
			if _, err := e.svc.Conversation(ctx, c[0], c[1], agent.MessagesQuery{}); !errors.Is(err, harness.ErrNotFound) {
				t.Errorf("Conversation(%s, %s): %v", c[0], c[1], err)
			}
			if err := e.svc.DeleteConversation(ctx, c[0], c[1]); !errors.Is(err, harness.ErrNotFound) {
				t.Errorf("DeleteConversation(%s, %s): %v", c[0], c[1], err)
			}
		}
	})

	t.Run("a failed turn keeps the user's message", func(t *testing.T) {
		e.setRespond(func(*llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Status: 500} })
		defer e.setRespond(nil)
		if _, err := e.svc.Chat(ctx, "a", "v", "anyone there?"); err == nil {
			t.Fatal("chat with a failing model succeeded")
		}
		l, _ := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{})
		if c := l.Conversations[0]; c.UserID != "v" || c.Messages != 1 || c.LastRole != harness.RoleUser || c.LastMessage != "anyone there?" {
			t.Errorf("first conversation %+v", c)
		}
	})

	t.Run("delete removes one conversation only", func(t *testing.T) {
		e.chat("a", "w", "stay")
		if err := e.svc.DeleteConversation(ctx, "a", "u/1"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Conversation(ctx, "a", "u/1", agent.MessagesQuery{}); !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if c, err := e.svc.Conversation(ctx, "a", "w", agent.MessagesQuery{}); err != nil || c.Total != 2 {
			t.Errorf("the other user's: %+v, %v", c, err)
		}
		l, _ := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{})
		if got := strings.Join(userIDs(l), ","); got != "w,v" || l.Total != 2 {
			t.Errorf("left %s (total %d)", got, l.Total)
		}
	})
}
