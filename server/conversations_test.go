package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// conversationList is the body of list-conversations.
type conversationList struct {
	Conversations []struct {
		UserID               string  `json:"user_id"`
		Messages             int     `json:"messages"`
		UpdatedAt            string  `json:"updated_at"`
		Channel              *string `json:"channel"`
		ChannelID            *string `json:"channel_id"`
		LastRole             string  `json:"last_role"`
		LastMessage          string  `json:"last_message"`
		LastMessageTruncated bool    `json:"last_message_truncated"`
	} `json:"conversations"`
	Total int `json:"total"`
}

// users lists "user_id messages channel" per conversation, in order.
func (l conversationList) users() []string {
	var out []string
	for _, c := range l.Conversations {
		ch := "-"
		if c.Channel != nil {
			ch = *c.Channel
		}
		out = append(out, fmt.Sprintf("%s %d %s", c.UserID, c.Messages, ch))
	}
	return out
}

// conversationBody is the body of get-conversation.
type conversationBody struct {
	UserID    string  `json:"user_id"`
	Channel   *string `json:"channel"`
	ChannelID *string `json:"channel_id"`
	Messages  []struct {
		ID        int64  `json:"id"`
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			ID        string `json:"id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"tool_calls"`
		ToolCallID string  `json:"tool_call_id"`
		CreatedAt  string  `json:"created_at"`
		Channel    *string `json:"channel"`
		ChannelID  *string `json:"channel_id"`
	} `json:"messages"`
	Total      int    `json:"total"`
	NextBefore *int64 `json:"next_before"`
}

// channels lists "user type/id" per conversation, in order; null is "-".
func (l conversationList) channels() []string {
	var out []string
	for _, c := range l.Conversations {
		out = append(out, c.UserID+" "+orDash(c.Channel)+"/"+orDash(c.ChannelID))
	}
	return out
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// messageChannels lists "type/id" per message, in order; null is "-".
func (c conversationBody) messageChannels() string {
	var out []string
	for _, m := range c.Messages {
		out = append(out, orDash(m.Channel)+"/"+orDash(m.ChannelID))
	}
	return strings.Join(out, ",")
}

func (c conversationBody) roles() string {
	var out []string
	for _, m := range c.Messages {
		out = append(out, m.Role)
	}
	return strings.Join(out, ",")
}

func (e *testEnv) conversations(agentID, query string) conversationList {
	e.t.Helper()
	var l conversationList
	must(e.t, e.get("/api/agents/"+agentID+"/conversations"+query), http.StatusOK).decode(e.t, &l)
	return l
}

// conversationPath is the path of a user's conversation, the user id
// escaped as a client must.
func conversationPath(agentID, userID string) string {
	return "/api/agents/" + agentID + "/conversations/" + url.PathEscape(userID)
}

func (e *testEnv) conversation(agentID, userID, query string) conversationBody {
	e.t.Helper()
	var c conversationBody
	must(e.t, e.get(conversationPath(agentID, userID)+query), http.StatusOK).decode(e.t, &c)
	return c
}

// TestConversations lists conversations made through the chat endpoint,
// a webhook channel and a Telegram channel, and reads and clears them.
func TestConversations(t *testing.T) {
	t.Parallel()
	const token = "123456:conversations-test-token"
	const secret = "whsec-conversations"
	tg := telegramtest.NewServer(token)
	t.Cleanup(tg.Close)
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "")
	e.createAgent("quiet", "")
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "re: " + req.LastUser()} })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("an agent without conversations lists none", func(t *testing.T) {
		r := must(t, e.get("/api/agents/quiet/conversations"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"conversations":[],"total":0}` {
			t.Errorf("body %s", got)
		}
	})

	// Through the API, as two users; one id needs escaping in a path.
	e.chat("bot", "alice", "hello")
	e.chat("bot", "team/bob smith", "hi there")
	e.chat("bot", "alice", "again")
	// Through a webhook channel.
	hook := e.createChannel("bot", map[string]any{"type": "webhook", "config": map[string]any{"secret": secret}})["id"].(string)
	e.channelAction("bot", hook, "start")
	body := []byte(`{"user_id": "ext-7", "message": "from the webhook"}`)
	must(t, e.webhookPost(hook, body, webhook.Sign(secret, body)), http.StatusOK)
	// Through Telegram.
	tgID := e.createChannel("bot", map[string]any{"type": "telegram", "config": map[string]any{"bot_token": token, "api_url": tg.URL}})["id"].(string)
	e.channelAction("bot", tgID, "start")
	tg.SendUserMessage(42, 42, "from telegram")
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.channelAction("bot", tgID, "stop")

	t.Run("every conversation, most recent first, with counts and channels", func(t *testing.T) {
		l := e.conversations("bot", "")
		want := []string{"telegram:42 2 telegram", "ext-7 2 webhook", "alice 4 -", "team/bob smith 2 -"}
		if got := l.users(); strings.Join(got, "|") != strings.Join(want, "|") || l.Total != 4 {
			t.Fatalf("conversations %q (total %d), want %q", got, l.Total, want)
		}
		want = []string{"telegram:42 telegram/" + tgID, "ext-7 webhook/" + hook, "alice -/-", "team/bob smith -/-"}
		if got := l.channels(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("channels %q, want %q", got, want)
		}
		for _, c := range l.Conversations {
			if _, err := time.Parse("2006-01-02 15:04:05", c.UpdatedAt); err != nil {
				t.Errorf("%s: updated_at %q", c.UserID, c.UpdatedAt)
			}
		}
		if c := l.Conversations[2]; c.LastRole != "assistant" || c.LastMessage != "re: again" || c.LastMessageTruncated {
			t.Errorf("alice's last message %+v", c)
		}
		if got := e.conversations("quiet", ""); got.Total != 0 {
			t.Errorf("another agent lists %v", got.users())
		}
	})

	t.Run("pages", func(t *testing.T) {
		first, second := e.conversations("bot", "?limit=3"), e.conversations("bot", "?limit=3&offset=3")
		if len(first.Conversations) != 3 || len(second.Conversations) != 1 || first.Total != 4 || second.Total != 4 ||
			second.Conversations[0].UserID != "team/bob smith" {
			t.Errorf("pages %v and %v", first.users(), second.users())
		}
	})

	t.Run("a conversation's messages in order", func(t *testing.T) {
		c := e.conversation("bot", "team/bob smith", "")
		if c.UserID != "team/bob smith" || c.roles() != "user,assistant" || c.Total != 2 || c.NextBefore != nil ||
			c.Messages[0].Content != "hi there" || c.Messages[1].Content != "re: hi there" {
			t.Errorf("conversation %+v", c)
		}
		if c.Channel != nil || c.ChannelID != nil || c.messageChannels() != "-/-,-/-" {
			t.Errorf("an API conversation has channel %s/%s, messages %s", orDash(c.Channel), orDash(c.ChannelID), c.messageChannels())
		}
		if tgc := e.conversation("bot", "telegram:42", ""); tgc.Messages[0].Content != "from telegram" ||
			orDash(tgc.Channel) != "telegram" || orDash(tgc.ChannelID) != tgID ||
			tgc.messageChannels() != "telegram/"+tgID+",telegram/"+tgID {
			t.Errorf("telegram conversation %+v", tgc)
		}
		if hc := e.conversation("bot", "ext-7", ""); orDash(hc.Channel) != "webhook" || orDash(hc.ChannelID) != hook ||
			hc.messageChannels() != "webhook/"+hook+",webhook/"+hook {
			t.Errorf("webhook conversation %+v", hc)
		}
	})

	t.Run("filter by channel", func(t *testing.T) {
		for q, want := range map[string]string{
			"?channel=webhook":                   "ext-7 2 webhook",
			"?channel=telegram":                  "telegram:42 2 telegram",
			"?channel=telegram&limit=1&offset=1": "",
			"?channel=nope":                      "",
			"?channel=":                          "telegram:42 2 telegram|ext-7 2 webhook|alice 4 -|team/bob smith 2 -",
		} {
			l := e.conversations("bot", q)
			total := strings.Count(want, "|") + 1
			if want == "" {
				total = 0
			}
			if strings.HasPrefix(q, "?channel=telegram&") {
				total = 1
			}
			if got := strings.Join(l.users(), "|"); got != want || l.Total != total || l.Conversations == nil {
				t.Errorf("%s: %q (total %d), want %q (total %d)", q, got, l.Total, want, total)
			}
		}
		mustProblem(t, e.get("/api/agents/ghost/conversations?channel=webhook"), http.StatusNotFound)
		for _, bad := range []string{"%00", "a%FFb"} {
			mustProblem(t, e.get("/api/agents/bot/conversations?channel="+bad), http.StatusUnprocessableEntity, "query.channel")
		}
		mustProblem(t, e.get("/api/agents/bot/conversations?channel=webhook&limit=0"), http.StatusUnprocessableEntity, "query.limit")
	})

	t.Run("an API user whose id looks like a channel's has no channel", func(t *testing.T) {
		e.chat("quiet", "telegram:77", "typed into the API")
		l := e.conversations("quiet", "")
		if got := l.channels(); len(got) != 1 || got[0] != "telegram:77 -/-" {
			t.Errorf("channels %q", got)
		}
		if l := e.conversations("quiet", "?channel=telegram"); l.Total != 0 {
			t.Errorf("listed as telegram: %v", l.users())
		}
		must(t, e.del(conversationPath("quiet", "telegram:77")), http.StatusOK)
	})

	t.Run("a user who changes channel is listed with the latest", func(t *testing.T) {
		e.chat("bot", "ext-7", "now through the API")
		l := e.conversations("bot", "?limit=1")
		if got := l.channels(); len(got) != 1 || got[0] != "ext-7 -/-" {
			t.Errorf("first conversation %q", got)
		}
		c := e.conversation("bot", "ext-7", "")
		if c.Channel != nil || c.ChannelID != nil || c.messageChannels() != "webhook/"+hook+",webhook/"+hook+",-/-,-/-" {
			t.Errorf("conversation channel %s, messages %s", orDash(c.Channel), c.messageChannels())
		}
		// An older page says the conversation's channel: the latest.
		older := e.conversation("bot", "ext-7", fmt.Sprintf("?before=%d", c.Messages[2].ID))
		if older.Channel != nil || older.messageChannels() != "webhook/"+hook+",webhook/"+hook {
			t.Errorf("older page channel %s, messages %s", orDash(older.Channel), older.messageChannels())
		}
		body := []byte(`{"user_id": "ext-7", "message": "back to the webhook"}`)
		must(t, e.webhookPost(hook, body, webhook.Sign(secret, body)), http.StatusOK)
		if got := e.conversations("bot", "?channel=webhook").channels(); len(got) != 1 || got[0] != "ext-7 webhook/"+hook {
			t.Errorf("webhook conversations %q", got)
		}
	})

	t.Run("a long conversation pages back", func(t *testing.T) {
		c := e.conversation("bot", "alice", "?limit=3")
		if c.roles() != "assistant,user,assistant" || c.Total != 4 || c.NextBefore == nil || c.Messages[1].Content != "again" {
			t.Fatalf("first page %+v", c)
		}
		older := e.conversation("bot", "alice", fmt.Sprintf("?limit=3&before=%d", *c.NextBefore))
		if older.roles() != "user" || older.Messages[0].Content != "hello" || older.NextBefore != nil {
			t.Errorf("older page %+v", older)
		}
	})

	t.Run("bad user ids and queries are 422", func(t *testing.T) {
		for _, id := range []string{"%00", "a%00b", "%FF", "bad%C3", "%20", strings.Repeat("u", 257)} {
			p := "/api/agents/bot/conversations/" + id
			mustProblem(t, e.get(p), http.StatusUnprocessableEntity, "path.user_id")
			mustProblem(t, e.del(p), http.StatusUnprocessableEntity, "path.user_id")
		}
		for q, loc := range map[string]string{
			"?limit=0": "query.limit", "?limit=1001": "query.limit", "?before=-1": "query.before", "?limit=x": "query.limit",
		} {
			mustProblem(t, e.get(conversationPath("bot", "alice")+q), http.StatusUnprocessableEntity, loc)
		}
		for q, loc := range map[string]string{"?limit=0": "query.limit", "?offset=-1": "query.offset"} {
			mustProblem(t, e.get("/api/agents/bot/conversations"+q), http.StatusUnprocessableEntity, loc)
		}
	})

	t.Run("unknown agents and users are 404", func(t *testing.T) {
		mustProblem(t, e.get("/api/agents/ghost/conversations"), http.StatusNotFound)
		mustProblem(t, e.get(conversationPath("ghost", "alice")), http.StatusNotFound)
		mustProblem(t, e.del(conversationPath("ghost", "alice")), http.StatusNotFound)
		mustProblem(t, e.get(conversationPath("bot", "nobody")), http.StatusNotFound)
		mustProblem(t, e.del(conversationPath("bot", "nobody")), http.StatusNotFound)
		mustProblem(t, e.get(conversationPath("quiet", "alice")), http.StatusNotFound)
	})

	t.Run("delete clears one conversation", func(t *testing.T) {
		r := must(t, e.del(conversationPath("bot", "team/bob smith")), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Errorf("body %s", got)
		}
		mustProblem(t, e.get(conversationPath("bot", "team/bob smith")), http.StatusNotFound)
		mustProblem(t, e.del(conversationPath("bot", "team/bob smith")), http.StatusNotFound)
		want := []string{"ext-7 6 webhook", "telegram:42 2 telegram", "alice 4 -"}
		if got := e.conversations("bot", "").users(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("after delete %q, want %q", got, want)
		}
		// The user's next message starts a new conversation.
		e.chat("bot", "team/bob smith", "back")
		if c := e.conversation("bot", "team/bob smith", ""); c.Total != 2 || c.Messages[0].Content != "back" {
			t.Errorf("new conversation %+v", c)
		}
	})

	t.Run("clearing through chat/clear removes it from the list", func(t *testing.T) {
		must(t, e.post("/api/agents/bot/chat/clear", map[string]any{"user_id": "ext-7"}), http.StatusOK)
		mustProblem(t, e.get(conversationPath("bot", "ext-7")), http.StatusNotFound)
		if got := e.conversations("bot", "").Total; got != 3 {
			t.Errorf("total %d after clearing ext-7", got)
		}
	})

	t.Run("deleting the agent deletes its conversations", func(t *testing.T) {
		must(t, e.del("/api/agents/bot"), http.StatusOK)
		e.createAgent("bot", "")
		if got := e.conversations("bot", ""); got.Total != 0 {
			t.Errorf("a new agent of the same id lists %v", got.users())
		}
	})
}

// TestConversationToolCalls checks that a tool call shows as an assistant
// message with tool_calls, answered by a tool message.
func TestConversationToolCalls(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	must(t, e.post("/api/settings/tools", weatherTool()), http.StatusCreated)
	e.createAgent("bot", "Use your tools.")
	must(t, e.put("/api/agents/bot/tools", map[string]any{"tools": []string{"weather"}}), http.StatusOK)
	e.chat("bot", "alice", `Call get_weather for "Paris" please.`)

	c := e.conversation("bot", "alice", "")
	if c.roles() != "user,assistant,tool,assistant" {
		t.Fatalf("roles %s", c.roles())
	}
	call, answer, reply := c.Messages[1], c.Messages[2], c.Messages[3]
	if len(call.ToolCalls) != 1 || call.ToolCalls[0].Name != "get_weather" || call.ToolCalls[0].ID == "" ||
		!strings.Contains(call.ToolCalls[0].Arguments, `"Paris"`) {
		t.Errorf("the call %+v", call)
	}
	if answer.ToolCallID != call.ToolCalls[0].ID || !strings.Contains(answer.Content, `"temp_c":21.5`) || len(answer.ToolCalls) != 0 {
		t.Errorf("the answer %+v", answer)
	}
	if reply.ToolCallID != "" || len(reply.ToolCalls) != 0 || !strings.Contains(reply.Content, "21.5") {
		t.Errorf("the reply %+v", reply)
	}
	for i := 1; i < len(c.Messages); i++ {
		if c.Messages[i].ID <= c.Messages[i-1].ID {
			t.Errorf("ids out of order: %d then %d", c.Messages[i-1].ID, c.Messages[i].ID)
		}
	}
	l := e.conversations("bot", "")
	if got := l.users(); len(got) != 1 || got[0] != "alice 4 -" {
		t.Errorf("list %v", got)
	}
}
