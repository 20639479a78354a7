package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// channelKeys are the fields of a channel record.
var channelKeys = []string{"agent_id", "config", "created_at", "id", "last_error", "name", "status", "type"}

const mask = "********"

// channelWait bounds how long a test waits for a channel to change state.
const channelWait = 20 * time.Second

// createChannel creates a channel and returns its record.
func (e *testEnv) createChannel(agentID string, body map[string]any) map[string]any {
	e.t.Helper()
	return must(e.t, e.post("/api/agents/"+agentID+"/channels", body), http.StatusCreated).object(e.t)
}

// channelAction posts start or stop and returns the record.
func (e *testEnv) channelAction(agentID, channelID, action string) map[string]any {
	e.t.Helper()
	return must(e.t, e.post("/api/agents/"+agentID+"/channels/"+channelID+"/"+action, nil), http.StatusOK).object(e.t)
}

// channel returns a channel's record from the agent's list.
func (e *testEnv) channel(agentID, channelID string) map[string]any {
	e.t.Helper()
	var body struct {
		Channels []map[string]any `json:"channels"`
	}
	must(e.t, e.get("/api/agents/"+agentID+"/channels"), http.StatusOK).decode(e.t, &body)
	for _, c := range body.Channels {
		if c["id"] == channelID {
			return c
		}
	}
	e.t.Fatalf("channel %s not in the list %v", channelID, body.Channels)
	return nil
}

// waitChannelStatus polls the channel's record until its status is the
// given one, and returns it.
func (e *testEnv) waitChannelStatus(agentID, channelID, status string) map[string]any {
	e.t.Helper()
	var c map[string]any
	harnesstest.Eventually(e.t, channelWait, "channel status "+status, func() bool {
		c = e.channel(agentID, channelID)
		return c["status"] == status
	})
	return c
}

func TestChannelsCRUD(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "")
	e.createAgent("other", "")
	var hookID string

	t.Run("list empty", func(t *testing.T) {
		r := must(t, e.get("/api/agents/bot/channels"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"channels":[]}` {
			t.Fatalf("body %s", got)
		}
	})

	t.Run("create masks the secrets its type declares", func(t *testing.T) {
		c := e.createChannel("bot", map[string]any{
			"type": "webhook_extra", "name": "Hook", // a webhook whose config takes other keys, as a plugin's may
			"config": map[string]any{
				"secret": "first-secret", "api_key": "k-123", "password": "p-456", "refresh_token": "t-789",
				"plain": "visible", "count": 3.0, "empty_token": "",
				"nested": map[string]any{"client_secret": "n-000", "label": "shown"},
			},
		})
		hookID, _ = c["id"].(string)
		if got := sortedKeys(c); !slices.Equal(got, channelKeys) {
			t.Errorf("fields %v, want %v", got, channelKeys)
		}
		// webhook declares "secret" its only secret key: other keys are
		// shown, however they are named.
		want := map[string]any{
			"secret": mask, "api_key": "k-123", "password": "p-456", "refresh_token": "t-789",
			"plain": "visible", "count": 3.0, "empty_token": "",
			"nested": map[string]any{"client_secret": "n-000", "label": "shown"},
		}
		if !jsonEqual(t, c["config"], want) {
			t.Errorf("config %v\nwant   %v", c["config"], want)
		}
		if c["agent_id"] != "bot" || c["type"] != "webhook_extra" || c["name"] != "Hook" || c["status"] != "stopped" || c["last_error"] != "" || hookID == "" {
			t.Errorf("record %v", c)
		}
		checkCreatedAt(t, c["created_at"])
	})

	t.Run("list and get-agent mask too", func(t *testing.T) {
		r := must(t, e.get("/api/agents/bot/channels"), http.StatusOK)
		d := must(t, e.get("/api/agents/bot"), http.StatusOK)
		for _, body := range [][]byte{r.body, d.body} {
			for _, secret := range []string{"first-secret"} {
				if bytes.Contains(body, []byte(secret)) {
					t.Errorf("%q in %s", secret, body)
				}
			}
		}
		channels, _ := d.object(t)["channels"].([]any)
		if len(channels) != 1 || channels[0].(map[string]any)["id"] != hookID {
			t.Errorf("agent's channels %v", channels)
		}
	})

	t.Run("bad creations are 422", func(t *testing.T) {
		cases := []struct {
			body     map[string]any
			location string
		}{
			{map[string]any{"type": "carrier-pigeon", "config": map[string]any{}}, "body.type"},
			{map[string]any{"config": map[string]any{}}, "body.type"},
			{map[string]any{"type": "telegram", "config": map[string]any{}}, "body.config.bot_token"},
			{map[string]any{"type": "telegram", "config": map[string]any{"bot_token": "1:abc", "api_url": "ftp://x"}}, "body.config.api_url"},
			{map[string]any{"type": "webhook", "config": map[string]any{}}, "body.config.secret"},
			{map[string]any{"type": "webhook", "config": map[string]any{"secret": mask}}, "body.config.secret"},
			{map[string]any{"type": "webhook", "config": map[string]any{"secret": "s", "callback": "https://example.com/"}}, "body.config.callback"},
		}
		for _, c := range cases {
			mustProblem(t, e.post("/api/agents/bot/channels", c.body), http.StatusUnprocessableEntity, c.location)
		}
		var body struct {
			Channels []map[string]any `json:"channels"`
		}
		must(t, e.get("/api/agents/bot/channels"), http.StatusOK).decode(t, &body)
		if len(body.Channels) != 1 {
			t.Errorf("%d channels after refused creations, want 1", len(body.Channels))
		}
	})

	t.Run("update: the mask sent back keeps the stored value", func(t *testing.T) {
		c := e.channel("bot", hookID)
		cfg := c["config"].(map[string]any)
		cfg["plain"] = "changed"
		got := must(t, e.put("/api/agents/bot/channels/"+hookID, map[string]any{"name": "Renamed", "config": cfg}), http.StatusOK).object(t)
		if got["name"] != "Renamed" || got["type"] != "webhook_extra" || got["created_at"] != c["created_at"] {
			t.Errorf("record %v", got)
		}
		if gc := got["config"].(map[string]any); gc["plain"] != "changed" || gc["secret"] != mask {
			t.Errorf("config %v", gc)
		}
		// The stored secret is still the first: a request signed with it
		// is accepted once the channel runs.
		e.channelAction("bot", hookID, "start")
		body := []byte(`{"user_id":"u1","message":"ping"}`)
		r := e.webhookPost(hookID, body, webhook.Sign("first-secret", body))
		must(t, r, http.StatusOK)
		e.channelAction("bot", hookID, "stop")
	})

	t.Run("update: a name alone keeps the config", func(t *testing.T) {
		must(t, e.put("/api/agents/bot/channels/"+hookID, map[string]any{"name": "Only the name"}), http.StatusOK)
		if cfg := e.channel("bot", hookID)["config"].(map[string]any); cfg["plain"] != "changed" || cfg["secret"] != mask {
			t.Errorf("config %v", cfg)
		}
	})

	t.Run("bad updates are refused", func(t *testing.T) {
		mustProblem(t, e.put("/api/agents/bot/channels/"+hookID, map[string]any{"type": "telegram"}), http.StatusUnprocessableEntity, "body.type")
		mustProblem(t, e.put("/api/agents/bot/channels/"+hookID, map[string]any{"config": map[string]any{"secret": mask, "new_password": mask}}),
			http.StatusUnprocessableEntity, "body.config.new_password")
		mustProblem(t, e.put("/api/agents/bot/channels/"+hookID, map[string]any{"config": map[string]any{"secret": ""}}),
			http.StatusUnprocessableEntity, "body.config.secret")
		if got := e.channel("bot", hookID); got["name"] != "Only the name" {
			t.Errorf("a refused update changed the record: %v", got)
		}
	})

	t.Run("unknown agent or channel is 404", func(t *testing.T) {
		mustProblem(t, e.get("/api/agents/ghost/channels"), http.StatusNotFound)
		mustProblem(t, e.post("/api/agents/ghost/channels", map[string]any{"type": "webhook", "config": map[string]any{"secret": "s"}}), http.StatusNotFound)
		for _, p := range []string{"/api/agents/bot/channels/nope", "/api/agents/other/channels/" + hookID, "/api/agents/ghost/channels/" + hookID} {
			mustProblem(t, e.put(p, map[string]any{"name": "x"}), http.StatusNotFound)
			mustProblem(t, e.del(p), http.StatusNotFound)
			mustProblem(t, e.post(p+"/start", nil), http.StatusNotFound)
			mustProblem(t, e.post(p+"/stop", nil), http.StatusNotFound)
		}
	})

	t.Run("start and stop set the status", func(t *testing.T) {
		if got := e.channelAction("bot", hookID, "start"); got["status"] != "running" || got["config"].(map[string]any)["secret"] != mask {
			t.Errorf("start answered %v", got)
		}
		if got := e.channel("bot", hookID)["status"]; got != "running" {
			t.Errorf("status %v after start", got)
		}
		// Starting again does nothing.
		e.channelAction("bot", hookID, "start")
		if got := e.channelAction("bot", hookID, "stop"); got["status"] != "stopped" {
			t.Errorf("stop answered %v", got)
		}
		if got := e.channelAction("bot", hookID, "stop"); got["status"] != "stopped" {
			t.Errorf("stopping again answered %v", got)
		}
	})

	t.Run("delete", func(t *testing.T) {
		e.channelAction("bot", hookID, "start")
		r := must(t, e.del("/api/agents/bot/channels/"+hookID), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Errorf("body %s", got)
		}
		mustProblem(t, e.del("/api/agents/bot/channels/"+hookID), http.StatusNotFound)
		body := []byte(`{"user_id":"u1","message":"ping"}`)
		mustProblem(t, e.webhookPost(hookID, body, webhook.Sign("first-secret", body)), http.StatusUnauthorized)
		if got := strings.TrimSpace(string(must(t, e.get("/api/agents/bot/channels"), http.StatusOK).body)); got != `{"channels":[]}` {
			t.Errorf("list %s", got)
		}
	})
}

// webhookPost posts body to a channel's webhook with the given signature
// ("" for none) and no API token.
func (e *testEnv) webhookPost(channelID string, body []byte, signature string) *response {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"/api/channels/"+channelID+"/webhook", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set(webhook.SignatureHeader, signature)
	}
	return e.send(req)
}

func TestWebhookChannel(t *testing.T) {
	t.Parallel()
	const apiToken = "api-token-for-webhook-test"
	const secret = "whsec-4c1d-9a7e"
	e := newAgentEnv(t, agentConfig{}, withToken(apiToken))
	e.createAgent("bot", "")
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "pong to " + req.LastUser()} })
	c := e.createChannel("bot", map[string]any{"type": "webhook", "config": map[string]any{"secret": secret}})
	id := c["id"].(string)
	e.channelAction("bot", id, "start")
	body := []byte(`{"user_id": "ext-1", "message": "ping"}`)

	t.Run("a signed request needs no API token and gets the reply", func(t *testing.T) {
		r := must(t, e.webhookPost(id, body, webhook.Sign(secret, body)), http.StatusOK)
		var out struct {
			Success  bool   `json:"success"`
			Response string `json:"response"`
		}
		r.decode(t, &out)
		if !out.Success || out.Response != "pong to ping" {
			t.Errorf("answer %s", r.body)
		}
		h, err := e.agents.History(context.Background(), "bot", "ext-1")
		if err != nil || len(h) != 2 {
			t.Errorf("history of ext-1: %v %v", h, err)
		}
	})

	t.Run("the rest of the API still needs the token", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/api/agents", nil)
		mustProblem(t, e.send(req), http.StatusUnauthorized)
		req, _ = http.NewRequest(http.MethodPost, e.url+"/api/channels/"+id+"/webhook/extra", bytes.NewReader(body))
		mustProblem(t, e.send(req), http.StatusUnauthorized)
	})

	t.Run("a missing or wrong signature is 401", func(t *testing.T) {
		n := len(e.llmRequests())
		for _, sig := range []string{"", "sha256=", "sha256=deadbeef", webhook.Sign("other-secret", body),
			webhook.Sign(secret, []byte(`{"user_id": "ext-1", "message": "other"}`)), "Bearer " + apiToken} {
			mustProblem(t, e.webhookPost(id, body, sig), http.StatusUnauthorized)
		}
		// The API token is no substitute for the signature.
		req, _ := http.NewRequest(http.MethodPost, e.url+"/api/channels/"+id+"/webhook", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+apiToken)
		mustProblem(t, e.send(req), http.StatusUnauthorized)
		if got := len(e.llmRequests()); got != n {
			t.Errorf("%d chats for refused requests", got-n)
		}
	})

	t.Run("a signed bad body is 422", func(t *testing.T) {
		for _, b := range []string{`not json`, `{"user_id": "x"}`, `{"message": "hi"}`, `{"user_id": "x", "message": ""}`} {
			mustProblem(t, e.webhookPost(id, []byte(b), webhook.Sign(secret, []byte(b))), http.StatusUnprocessableEntity)
		}
	})

	t.Run("unknown channel is 401, as a wrong signature", func(t *testing.T) {
		mustProblem(t, e.webhookPost("nope", body, webhook.Sign(secret, body)), http.StatusUnauthorized)
	})

	t.Run("a stopped channel is 401, as a wrong signature", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/api/agents/bot/channels/"+id+"/stop", nil)
		req.Header.Set("Authorization", "Bearer "+apiToken)
		must(t, e.send(req), http.StatusOK)
		mustProblem(t, e.webhookPost(id, body, webhook.Sign(secret, body)), http.StatusUnauthorized)
	})

	t.Run("a webhook channel of a telegram type is not a receiver", func(t *testing.T) {
		tg := telegramtest.NewServer("77:receiver-test-token")
		t.Cleanup(tg.Close)
		c := e.createChannel("bot", map[string]any{"type": "telegram", "config": map[string]any{"bot_token": "77:receiver-test-token", "api_url": tg.URL}})
		tid := c["id"].(string)
		e.channelAction("bot", tid, "start")
		defer e.channelAction("bot", tid, "stop")
		r := e.webhookPost(tid, body, webhook.Sign(secret, body))
		if r.status < 400 || r.status >= 500 {
			t.Errorf("status %d, want a 4xx; %s", r.status, r.body)
		}
	})
}

func TestTelegramChannel(t *testing.T) {
	t.Parallel()
	const token = "123456:telegram-test-token-AbCdEf"
	tg := telegramtest.NewServer(token)
	t.Cleanup(tg.Close)
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "You are a Telegram bot.")
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "Reply to: " + req.LastUser()}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c := e.createChannel("bot", map[string]any{"type": "telegram", "name": "Test bot",
		"config": map[string]any{"bot_token": token, "api_url": tg.URL}})
	id := c["id"].(string)
	if cfg := c["config"].(map[string]any); cfg["bot_token"] != mask || cfg["api_url"] != tg.URL {
		t.Errorf("config %v", cfg)
	}

	t.Run("a message reaches the agent and the reply comes back", func(t *testing.T) {
		if got := e.channelAction("bot", id, "start"); got["status"] != "running" {
			t.Fatalf("start answered %v", got)
		}
		tg.SendUserMessage(42, 42, "hello bot")
		sent, err := tg.WaitSent(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if sent[0].ChatID != 42 || sent[0].Text != "Reply to: hello bot" {
			t.Errorf("sent %+v", sent[0])
		}
		req := e.lastLLMRequest()
		if req.Messages[0].Content != "You are a Telegram bot." || req.LastUser() != "hello bot" {
			t.Errorf("model request:\n%s", messagesText(req))
		}
		h, err := e.agents.History(ctx, "bot", "telegram:42")
		if err != nil || len(h) != 2 {
			t.Errorf("history of telegram:42: %v %v", h, err)
		}
		if got := e.channel("bot", id)["status"]; got != "running" {
			t.Errorf("status %v", got)
		}
	})

	t.Run("two senders have separate conversations", func(t *testing.T) {
		tg.SendUserMessage(43, 43, "I am the other one")
		if _, err := tg.WaitSent(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if text := messagesText(e.lastLLMRequest()); strings.Contains(text, "hello bot") {
			t.Errorf("user 43 sees user 42's messages:\n%s", text)
		}
	})

	t.Run("/clear clears the sender's history", func(t *testing.T) {
		tg.SendUserMessage(42, 42, "/clear")
		if _, err := tg.WaitSent(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if h, _ := e.agents.History(ctx, "bot", "telegram:42"); len(h) != 0 {
			t.Errorf("history after /clear: %v", h)
		}
		if h, _ := e.agents.History(ctx, "bot", "telegram:43"); len(h) != 2 {
			t.Errorf("the other sender's history: %v", h)
		}
	})

	t.Run("stop ends polling", func(t *testing.T) {
		// Stopped while its poll is held (no update pending, a minute's
		// timeout), the channel has no other getUpdates call on its way:
		// any call counted after this one is a poll after the stop.
		harnesstest.Eventually(t, channelWait, "a held poll", func() bool { return tg.ActivePolls() == 1 })
		calls, sent := tg.GetUpdatesCalls(), len(tg.Sent())
		if got := e.channelAction("bot", id, "stop"); got["status"] != "stopped" {
			t.Fatalf("stop answered %v", got)
		}
		harnesstest.Eventually(t, channelWait, "polling to stop", func() bool { return tg.ActivePolls() == 0 })
		tg.SendUserMessage(42, 42, "are you there?")
		// Nothing marks the moment a stopped channel would poll or answer
		// again: watch for a while. Nothing the channel did before the stop
		// is still on its way, so a slow machine cannot fail this.
		harnesstest.Never(t, 500*time.Millisecond, "a getUpdates call or an answer after stop", func() bool {
			return tg.GetUpdatesCalls() != calls || len(tg.Sent()) != sent
		})
		if got := tg.GetUpdatesCalls(); got != calls {
			t.Errorf("%d getUpdates calls after stop", got-calls)
		}
		if got := len(tg.Sent()); got != sent {
			t.Errorf("a stopped channel answered: %v", tg.Sent()[sent:])
		}
	})

	t.Run("started again, it answers what came meanwhile", func(t *testing.T) {
		n := len(tg.Sent())
		e.channelAction("bot", id, "start")
		// An update the stopped poller had handled but not yet confirmed
		// (Telegram confirms by the next getUpdates) may come again first.
		harnesstest.Eventually(t, channelWait, "the reply to the message sent while stopped", func() bool {
			for _, m := range tg.Sent()[n:] {
				if m.Text == "Reply to: are you there?" {
					return true
				}
			}
			return false
		})
		e.channelAction("bot", id, "stop")
	})

	t.Run("a bad token sets status error without showing the token", func(t *testing.T) {
		const bad = "999999:wrong-token-ZyXwVu-987"
		c := e.createChannel("bot", map[string]any{"type": "telegram", "config": map[string]any{"bot_token": bad, "api_url": tg.URL}})
		bid := c["id"].(string)
		e.channelAction("bot", bid, "start")
		got := e.waitChannelStatus("bot", bid, "error")
		le, _ := got["last_error"].(string)
		if le == "" {
			t.Errorf("no last_error: %v", got)
		}
		for _, s := range []string{bad, "wrong-token-ZyXwVu-987"} {
			if strings.Contains(le, s) {
				t.Errorf("last_error %q shows the token", le)
			}
			if strings.Contains(e.logs.String(), s) {
				t.Errorf("the log shows the token")
			}
		}
		if got := e.channelAction("bot", bid, "stop"); got["status"] != "stopped" {
			t.Errorf("stop answered %v", got)
		}
	})

	t.Run("an updated token takes effect on restart", func(t *testing.T) {
		e.channelAction("bot", id, "start")
		must(t, e.put("/api/agents/bot/channels/"+id, map[string]any{"config": map[string]any{"bot_token": "1:revoked-token-xyz", "api_url": tg.URL}}), http.StatusOK)
		got := e.waitChannelStatus("bot", id, "error")
		if le, _ := got["last_error"].(string); strings.Contains(le, "revoked-token-xyz") {
			t.Errorf("last_error %q shows the token", le)
		}
		must(t, e.put("/api/agents/bot/channels/"+id, map[string]any{"config": map[string]any{"bot_token": token, "api_url": tg.URL}}), http.StatusOK)
		e.waitChannelStatus("bot", id, "running")
		n := len(tg.Sent())
		tg.SendUserMessage(44, 44, "back again")
		if _, err := tg.WaitSent(ctx, n+1); err != nil {
			t.Fatal(err)
		}
		e.channelAction("bot", id, "stop")
	})
}

// TestChannelSecretsStayPut: a PUT that changes a channel's callback_url
// while sending the secret as the mask is 422 asking for the secret again,
// and changes nothing; with the URL kept the mask works, and with the
// secret in clear the URL changes.
func TestChannelSecretsStayPut(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "")
	var hits atomic.Int32
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer callback.Close()
	first, second := callback.URL+"/first", callback.URL+"/second"
	c := e.createChannel("bot", map[string]any{"type": "webhook",
		"config": map[string]any{"secret": "s-one", "callback_url": first}})
	id := c["id"].(string)
	path := "/api/agents/bot/channels/" + id

	p := mustProblem(t, e.put(path, map[string]any{"config": map[string]any{"secret": mask, "callback_url": second}}),
		http.StatusUnprocessableEntity, "body.config.secret")
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "send the secret again") {
		t.Errorf("errors %+v, want one asking for the secret", p.Errors)
	}
	if cfg := e.channel("bot", id)["config"].(map[string]any); cfg["callback_url"] != first {
		t.Errorf("a refused update changed the config: %v", cfg)
	}

	must(t, e.put(path, map[string]any{"name": "kept", "config": map[string]any{"secret": mask, "callback_url": first}}), http.StatusOK)

	got := must(t, e.put(path, map[string]any{"config": map[string]any{"secret": "s-two", "callback_url": second}}), http.StatusOK).object(t)
	if cfg := got["config"].(map[string]any); cfg["callback_url"] != second || cfg["secret"] != mask {
		t.Errorf("config %v", cfg)
	}
	// The new secret is the one stored: it signs, the old one does not.
	e.channelAction("bot", id, "start")
	defer e.channelAction("bot", id, "stop")
	body := []byte(`{"user_id":"u1","message":"ping"}`)
	must(t, e.webhookPost(id, body, webhook.Sign("s-one", body)), http.StatusUnauthorized)
	must(t, e.webhookPost(id, body, webhook.Sign("s-two", body)), http.StatusAccepted)
}
