package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// inboundServer serves POST /channels/{id}/webhook on loopback as the
// HTTP server does: the body and the headers go to Supervisor.Inbound,
// its answer back as JSON.
func inboundServer(t *testing.T, e *env) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /channels/{id}/webhook", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := e.svc.Supervisor().Inbound(r.Context(), r.PathValue("id"), &harness.InboundRequest{Body: body, Header: r.Header})
		switch {
		case errors.Is(err, harness.ErrUnauthorized):
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		status := resp.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(resp.Body)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// postWebhook sends a user's message to a webhook channel over HTTP,
// signed with secret, and returns the agent's reply.
func postWebhook(t *testing.T, base, channelID, secret, userID, message string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"user_id": userID, "message": message})
	req, _ := http.NewRequest(http.MethodPost, base+"/channels/"+channelID+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Success  bool   `json:"success"`
		Response string `json:"response"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || !out.Success {
		t.Fatalf("webhook POST: %d %s", resp.StatusCode, raw)
	}
	return out.Response
}

// registerRealChannels registers the telegram and webhook channel types.
func registerRealChannels(t *testing.T, reg *harness.Registry) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if err := reg.RegisterChannel("telegram", telegram.New(telegram.Options{Logger: log})); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterChannel("webhook", webhook.New(webhook.Options{Logger: log})); err != nil {
		t.Fatal(err)
	}
}

// channelLabel returns "type/id" of a channel, "-" for none.
func channelLabel(typ, id string) string {
	if typ == "" && id == "" {
		return "-"
	}
	return typ + "/" + id
}

// listed returns "user channel/id" per conversation of a page, in order.
func listed(l *agent.ConversationList) string {
	var out []string
	for _, c := range l.Conversations {
		out = append(out, c.UserID+" "+channelLabel(c.Channel, c.ChannelID))
	}
	return strings.Join(out, "|")
}

// TestConversationChannels runs a webhook channel (over HTTP, signed), a
// telegram channel (against the fake Bot API on loopback) and a channel
// whose user ids have no prefix, beside chats through the API, and reads
// back the channel of every message and conversation.
func TestConversationChannels(t *testing.T) {
	t.Parallel()
	const secret = "whsec-channels"
	const token = "4242:channel-of-conversations"
	e := newEnv(t)
	registerRealChannels(t, e.reg)
	fake := registerFake(t, e)
	e.tools.put(weatherTool)
	e.createAgent("a", "")
	if _, err := e.svc.SetTools(e.ctx, "a", []string{"weather"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	sv := e.svc.Supervisor()
	tg := telegramtest.NewServer(token)
	t.Cleanup(tg.Close)
	hook, err := sv.Create(ctx, "a", harness.ChannelConfig{Type: "webhook", Name: "site", Config: map[string]any{"secret": secret}})
	if err != nil {
		t.Fatal(err)
	}
	tgc, err := sv.Create(ctx, "a", harness.ChannelConfig{Type: "telegram", Config: map[string]any{"bot_token": token, "api_url": tg.URL}})
	if err != nil {
		t.Fatal(err)
	}
	fc, err := sv.Create(ctx, "a", harness.ChannelConfig{Type: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{hook.ID, tgc.ID, fc.ID} {
		if _, err := sv.Start(ctx, "a", id); err != nil {
			t.Fatal(err)
		}
	}
	fake.waitRuns(t, 1)
	base := inboundServer(t, e).URL

	// Through the API, as a user whose id looks like a Telegram user's.
	e.chat("a", "telegram:99", "not from telegram")
	// Through the webhook, with a tool call.
	if got := postWebhook(t, base, hook.ID, secret, "ext-7", "Call get_weather for Paris."); !strings.Contains(got, "21") {
		t.Errorf("webhook reply %q", got)
	}
	// Through Telegram.
	tg.SendUserMessage(42, 42, "from telegram")
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Through a channel that passes user ids as they are.
	if _, err := fake.lastRun().Host.Chat(ctx, &harness.InboundMessage{UserID: "u-plain", Text: "plain hello"}); err != nil {
		t.Fatal(err)
	}
	e.chat("a", "alice", "hello")

	t.Run("each conversation has the channel it came through", func(t *testing.T) {
		l, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{"alice -", "u-plain fake/" + fc.ID, "telegram:42 telegram/" + tgc.ID,
			"ext-7 webhook/" + hook.ID, "telegram:99 -"}, "|")
		if got := listed(l); got != want {
			t.Errorf("conversations\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("every message of a turn has the turn's channel", func(t *testing.T) {
		c, err := e.svc.Conversation(ctx, "a", "ext-7", agent.MessagesQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range c.Messages {
			roles = append(roles, m.Role)
			if m.Channel != "webhook" || m.ChannelID != hook.ID {
				t.Errorf("%s message %q has channel %q/%q", m.Role, m.Content, m.Channel, m.ChannelID)
			}
		}
		if strings.Join(roles, ",") != "user,assistant,tool,assistant" || c.Channel != "webhook" || c.ChannelID != hook.ID {
			t.Errorf("roles %v, channel %q/%q", roles, c.Channel, c.ChannelID)
		}
		tc, err := e.svc.Conversation(ctx, "a", "telegram:99", agent.MessagesQuery{})
		if err != nil || tc.Channel != "" || tc.ChannelID != "" || tc.Messages[0].Channel != "" {
			t.Errorf("the API user named telegram:99: %+v, %v", tc, err)
		}
	})

	t.Run("a user who changes channel is listed with the latest", func(t *testing.T) {
		e.chat("a", "ext-7", "now through the API")
		c, err := e.svc.Conversation(ctx, "a", "ext-7", agent.MessagesQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Channel != "" || c.ChannelID != "" || c.Messages[0].Channel != "webhook" || c.Messages[len(c.Messages)-1].Channel != "" {
			t.Errorf("after an API chat: channel %q/%q, first message %q, last %q", c.Channel, c.ChannelID,
				c.Messages[0].Channel, c.Messages[len(c.Messages)-1].Channel)
		}
		l, _ := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Limit: 1})
		if got := listed(l); got != "ext-7 -" {
			t.Errorf("first conversation %s", got)
		}
		// An older page still says the conversation's channel, the latest.
		older, err := e.svc.Conversation(ctx, "a", "ext-7", agent.MessagesQuery{Limit: 2, Before: c.Messages[2].ID})
		if err != nil || len(older.Messages) != 2 || older.Channel != "" || older.Messages[0].Channel != "webhook" {
			t.Errorf("older page %+v, %v", older, err)
		}
		postWebhook(t, base, hook.ID, secret, "ext-7", "and back")
		older, err = e.svc.Conversation(ctx, "a", "ext-7", agent.MessagesQuery{Limit: 2, Before: c.Messages[2].ID})
		if err != nil || older.Channel != "webhook" || older.ChannelID != hook.ID {
			t.Errorf("older page after the webhook again %+v, %v", older, err)
		}
	})

	t.Run("filter by channel", func(t *testing.T) {
		for typ, want := range map[string]string{
			"webhook":  "ext-7 webhook/" + hook.ID,
			"telegram": "telegram:42 telegram/" + tgc.ID,
			"fake":     "u-plain fake/" + fc.ID,
			"nope":     "",
			"tele%":    "",
		} {
			l, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Channel: typ})
			if err != nil {
				t.Fatal(err)
			}
			if got := listed(l); got != want || l.Total != strings.Count(want, "/") {
				t.Errorf("channel %s: %q (total %d), want %q", typ, got, l.Total, want)
			}
		}
		for _, bad := range []string{"a\x00b", "bad\xffutf8"} {
			_, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Channel: bad})
			wantInvalid(t, err, "channel")
		}
		postWebhook(t, base, hook.ID, secret, "ext-8", "another")
		var pages []string
		for off := range 3 {
			l, err := e.svc.Conversations(ctx, "a", agent.ConversationsQuery{Channel: "webhook", Limit: 1, Offset: off})
			if err != nil || l.Total != 2 {
				t.Fatalf("page %d: %+v, %v", off, l, err)
			}
			pages = append(pages, fmt.Sprintf("%d %s", len(l.Conversations), listed(l)))
		}
		if got := strings.Join(pages, "|"); got != "1 ext-8 webhook/"+hook.ID+"|1 ext-7 webhook/"+hook.ID+"|0 " {
			t.Errorf("pages %s", got)
		}
	})

	t.Run("a deleted channel stays on its messages", func(t *testing.T) {
		if err := sv.Delete(ctx, "a", tgc.ID); err != nil {
			t.Fatal(err)
		}
		c, err := e.svc.Conversation(ctx, "a", "telegram:42", agent.MessagesQuery{})
		if err != nil || c.Channel != "telegram" || c.ChannelID != tgc.ID {
			t.Errorf("after deleting the channel: %+v, %v", c, err)
		}
	})
}

// openFixture030 copies the database made by Gauntlet 0.3.0 (agent schema
// 1: no channel recorded on messages) and opens the copy; the file itself
// is never opened in place.
func openFixture030(t *testing.T) *store.DB {
	t.Helper()
	db, _ := dbtest.OpenFixture(t, "gauntlet-0.3.0.db")
	return db
}

// TestConversationChannelsFromFixture030 migrates a 0.3.0 database: its
// messages have no channel recorded, so a conversation's channel is the
// guess from the user id (carol wrote through the webhook channel, which
// passes ids as they are: unknowable, ""; a Telegram user's
// "telegram:<id>" still says telegram), and the messages stored after the
// migration have theirs.
func TestConversationChannelsFromFixture030(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openFixture030(t)
	if v, err := store.Version(ctx, db, "agent"); v != 1 || err != nil {
		t.Fatalf("the fixture's agent schema = %d, %v; want 1", v, err)
	}
	// A Telegram user's message as 0.3.0 stored it, before the migration.
	_, err := sqldb.Bun(db).ExecContext(ctx, `INSERT INTO chat_messages (agent_id, user_id, session_id, role, content, tool_call_id, created_at)
		VALUES ('support', 'telegram:5', 's_old', 'user', 'hello from an old telegram', '', '2026-11-25 08:30:00')`)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withOptions(func(o *agent.Options) { o.DB = db }))
	registerRealChannels(t, e.reg)
	if v, err := store.Version(ctx, db, "agent"); v != 3 || err != nil {
		t.Fatalf("agent schema after opening = %d, %v; want 3", v, err)
	}
	var unrecorded int
	if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT COUNT(*) FROM chat_messages WHERE channel_type IS NULL AND channel_id IS NULL`).Scan(&unrecorded); err != nil || unrecorded != 9 {
		t.Fatalf("messages without a channel after the migration = %d, %v; want all 9", unrecorded, err)
	}
	const hookID, tgID = "ch_830cfc40fc8b", "ch_53ffb32ead06"

	t.Run("messages stored before have the channel their user id names", func(t *testing.T) {
		l, err := e.svc.Conversations(ctx, "support", agent.ConversationsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := listed(l), "telegram:5 telegram/|carol -|bob -|alice -"; got != want {
			t.Errorf("conversations %s, want %s", got, want)
		}
		c, err := e.svc.Conversation(ctx, "support", "carol", agent.MessagesQuery{})
		if err != nil || c.Total != 2 || c.Channel != "" || c.Messages[0].Channel != "" || c.Messages[0].ChannelID != "" {
			t.Errorf("carol's conversation %+v, %v", c, err)
		}
		tl, err := e.svc.Conversations(ctx, "support", agent.ConversationsQuery{Channel: "telegram"})
		if err != nil || listed(tl) != "telegram:5 telegram/" || tl.Total != 1 {
			t.Errorf("telegram conversations %s (total %d), %v", listed(tl), tl.Total, err)
		}
	})

	t.Run("messages stored after have their channel", func(t *testing.T) {
		// The fixture's webhook channel, signed with its secret.
		if _, err := e.svc.Supervisor().Start(ctx, "support", hookID); err != nil {
			t.Fatal(err)
		}
		postWebhook(t, inboundServer(t, e).URL, hookID, "s3cret", "carol", "Are you open on Sunday?")
		// Its telegram channel, moved to the fake Bot API (its token sent
		// again in clear, as a new address requires).
		tg := telegramtest.NewServer("123:abc")
		t.Cleanup(tg.Close)
		_, err := e.svc.Supervisor().Update(ctx, "support", tgID, func(c *harness.ChannelConfig) error {
			c.Config = map[string]any{"bot_token": "123:abc", "api_url": tg.URL}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Supervisor().Start(ctx, "support", tgID); err != nil {
			t.Fatal(err)
		}
		tg.SendUserMessage(5, 5, "hello again")
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := tg.WaitSent(wctx, 1); err != nil {
			t.Fatal(err)
		}
		e.chat("support", "alice", "What is 3 + 4?")

		l, err := e.svc.Conversations(ctx, "support", agent.ConversationsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want := "alice -|telegram:5 telegram/" + tgID + "|carol webhook/" + hookID + "|bob -"
		if got := listed(l); got != want {
			t.Errorf("conversations %s, want %s", got, want)
		}
		c, err := e.svc.Conversation(ctx, "support", "carol", agent.MessagesQuery{})
		if err != nil || c.Total != 4 {
			t.Fatalf("carol's conversation %+v, %v", c, err)
		}
		var got []string
		for _, m := range c.Messages {
			got = append(got, channelLabel(m.Channel, m.ChannelID))
		}
		if strings.Join(got, ",") != "-,-,webhook/"+hookID+",webhook/"+hookID {
			t.Errorf("carol's messages' channels %v", got)
		}
		tc, err := e.svc.Conversation(ctx, "support", "telegram:5", agent.MessagesQuery{})
		if err != nil || tc.Total != 3 || channelLabel(tc.Messages[0].Channel, tc.Messages[0].ChannelID) != "telegram/" ||
			channelLabel(tc.Messages[1].Channel, tc.Messages[1].ChannelID) != "telegram/"+tgID {
			t.Errorf("telegram:5's conversation %+v, %v", tc, err)
		}
		// A chat through the API is recorded as such, not left unknown.
		var api int
		if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT COUNT(*) FROM chat_messages WHERE user_id = 'alice' AND channel_type = '' AND channel_id = ''`).Scan(&api); err != nil || api != 2 {
			t.Errorf("alice's new messages recorded through the API = %d, %v; want 2", api, err)
		}
	})
}
