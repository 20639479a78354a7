package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/server"
)

// TestSecretsNeverShown runs a scenario that touches every agent
// endpoint, with an LLM API key, an API token, telegram bot tokens and
// webhook and other config secrets configured, failures included, and
// checks that no secret appears in any response body or header, or in any
// log line of the server, the agent service and the channels.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	const (
		llmKey      = "sk-LLMKEY-secret-0123456789"
		apiToken    = "APITOKEN-secret-abcdef-42"
		botToken    = "555111:BOTTOKEN-secret-qwerty"
		badBotToken = "555222:BADBOTTOKEN-secret-zxcvb"
		newBotToken = "555111:NEWBOTTOKEN-secret-poiuy"
		hookSecret  = "HOOKSECRET-secret-98765"
		hookSecret2 = "HOOKSECRET2-secret-24680"
		spaced      = "SPACEDTOKEN-secret-8642"
	)
	secrets := []string{llmKey, apiToken, botToken, badBotToken, newBotToken, hookSecret, hookSecret2, spaced}
	// The parts of the bot tokens after the bot id are secrets on their
	// own.
	for _, tok := range []string{botToken, badBotToken, newBotToken} {
		_, s, _ := strings.Cut(tok, ":")
		secrets = append(secrets, s)
	}

	tg := telegramtest.NewServer(botToken)
	t.Cleanup(tg.Close)
	// A knowledge-base body over the limit: 10 MiB of text, or under
	// -short over a body limit lowered to 64 KiB (see fullSizeBodies).
	envOpts := []envOption{withToken(apiToken)}
	over := 10<<20 + 1
	if !fullSizeBodies() {
		envOpts = append(envOpts, withLimits(server.Limits{UploadBytes: 64 << 10}))
		over = 64<<10 + 1
	}
	e := newAgentEnv(t, agentConfig{apiKey: llmKey, llm: llmtest.Options{APIKey: llmKey}}, envOpts...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var seen []*response
	var transcript strings.Builder
	record := func(what string, r *response) *response {
		t.Helper()
		seen = append(seen, r)
		fmt.Fprintf(&transcript, "%s → %d\n", what, r.status)
		return r
	}
	do := func(method, path string, body any, header ...string) *response {
		t.Helper()
		return record(method+" "+path, e.request(method, path, body, header...))
	}
	expect := func(r *response, status int) *response {
		t.Helper()
		if r.status != status {
			t.Fatalf("status %d, want %d; body %s\n%s", r.status, status, r.body, transcript.String())
		}
		return r
	}
	hook := func(channelID string, body []byte, sig string) *response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, e.url+"/api/channels/"+channelID+"/webhook", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if sig != "" {
			req.Header.Set(webhook.SignatureHeader, sig)
		}
		return record("webhook "+channelID, e.send(req))
	}
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply {
		if strings.Contains(req.LastUser(), "fail please") {
			return &llmtest.Reply{Status: http.StatusInternalServerError, Content: "the model broke"}
		}
		return nil
	})

	// Unauthenticated and misauthenticated requests.
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + apiToken + "x", apiToken} {
		expect(do(http.MethodGet, "/api/agents", nil, "Authorization", auth), http.StatusUnauthorized)
	}
	expect(do(http.MethodGet, "/api/config", nil), http.StatusOK)
	expect(do(http.MethodGet, "/openapi.json", nil), http.StatusOK)

	// Agents and tools.
	expect(do(http.MethodPost, "/api/settings/tools", weatherTool()), http.StatusCreated)
	expect(do(http.MethodGet, "/api/agents", nil), http.StatusOK)
	expect(do(http.MethodPost, "/api/agents", map[string]any{"id": "bot", "name": "Bot", "system_prompt": "Be nice."}), http.StatusCreated)
	expect(do(http.MethodPost, "/api/agents", map[string]any{"id": "bot"}), http.StatusConflict)
	expect(do(http.MethodPost, "/api/agents", map[string]any{"id": "bad id " + apiToken}), http.StatusUnprocessableEntity)
	expect(do(http.MethodPut, "/api/agents/bot", map[string]any{"description": "A bot", "model": nil}), http.StatusOK)
	expect(do(http.MethodGet, "/api/agents/nope", nil), http.StatusNotFound)
	expect(do(http.MethodPut, "/api/agents/bot/tools", map[string]any{"tools": []string{"weather"}}), http.StatusOK)
	expect(do(http.MethodPut, "/api/agents/bot/tools", map[string]any{"tools": []string{"nope"}}), http.StatusUnprocessableEntity)
	expect(do(http.MethodGet, "/api/agents/bot/tools", nil), http.StatusOK)
	expect(do(http.MethodDelete, "/api/settings/tools/weather", nil), http.StatusConflict)

	// Knowledge base.
	expect(do(http.MethodGet, "/api/agents/bot/kb", nil), http.StatusOK)
	expect(do(http.MethodPost, "/api/agents/bot/kb", map[string]any{"filename": "faq.md", "content": "Opening hours: 9 to 5."}), http.StatusCreated)
	body, ct := multipartFile(t, "file", "more.txt", []byte("More facts."))
	expect(do(http.MethodPost, "/api/agents/bot/kb", body, "Content-Type", ct), http.StatusCreated)
	body, ct = multipartFile(t, "file", "bin.dat", []byte{0, 1, 2, 0xff})
	expect(do(http.MethodPost, "/api/agents/bot/kb", body, "Content-Type", ct), http.StatusUnsupportedMediaType)
	expect(do(http.MethodPost, "/api/agents/bot/kb", map[string]any{"filename": "../escape", "content": "x"}), http.StatusUnprocessableEntity)
	expect(do(http.MethodPost, "/api/agents/bot/kb", map[string]any{"filename": "faq.md", "content": "x"}), http.StatusConflict)
	expect(do(http.MethodPost, "/api/agents/bot/kb", map[string]any{"filename": "big.txt", "content": strings.Repeat("a", over)}), http.StatusRequestEntityTooLarge)
	expect(do(http.MethodGet, "/api/agents/bot/kb/faq.md", nil), http.StatusOK)
	expect(do(http.MethodPut, "/api/agents/bot/kb/faq.md", map[string]any{"content": "Opening hours: 8 to 6."}), http.StatusOK)
	expect(do(http.MethodDelete, "/api/agents/bot/kb/more.txt", nil), http.StatusOK)
	expect(do(http.MethodGet, "/api/agents/bot/kb/more.txt", nil), http.StatusNotFound)

	// Chat, a tool call and a model failure included.
	expect(do(http.MethodPost, "/api/agents/bot/chat", map[string]any{"user_id": "alice", "message": "When are you open?"}), http.StatusOK)
	expect(do(http.MethodPost, "/api/agents/bot/chat", map[string]any{"user_id": "alice", "message": `Call get_weather for "Paris".`}), http.StatusOK)
	r := do(http.MethodPost, "/api/agents/bot/chat", map[string]any{"user_id": "alice", "message": "fail please"})
	if r.status < 500 {
		t.Fatalf("a failing model gave %d", r.status)
	}
	expect(do(http.MethodPost, "/api/agents/bot/chat", map[string]any{"user_id": "", "message": "x"}), http.StatusUnprocessableEntity)
	expect(do(http.MethodPost, "/api/agents/bot/chat/clear", map[string]any{"user_id": "alice"}), http.StatusOK)

	// Channels: creation, bad configs, updates with the mask and with new
	// secrets.
	expect(do(http.MethodGet, "/api/agents/bot/channels", nil), http.StatusOK)
	tgc := expect(do(http.MethodPost, "/api/agents/bot/channels", map[string]any{"type": "telegram", "name": "TG",
		"config": map[string]any{"bot_token": botToken, "api_url": tg.URL}}), http.StatusCreated).object(t)
	tgID := tgc["id"].(string)
	hkc := expect(do(http.MethodPost, "/api/agents/bot/channels", map[string]any{"type": "webhook",
		"config": map[string]any{"secret": hookSecret}}), http.StatusCreated).object(t)
	hkID := hkc["id"].(string)
	badc := expect(do(http.MethodPost, "/api/agents/bot/channels", map[string]any{"type": "telegram",
		"config": map[string]any{"bot_token": badBotToken, "api_url": tg.URL}}), http.StatusCreated).object(t)
	badID := badc["id"].(string)
	expect(do(http.MethodPost, "/api/agents/bot/channels", map[string]any{"type": "telegram",
		"config": map[string]any{"bot_token": "555:has space " + spaced}}), http.StatusUnprocessableEntity)
	expect(do(http.MethodPost, "/api/agents/bot/channels", map[string]any{"type": "smoke-signals",
		"config": map[string]any{"secret": spaced}}), http.StatusUnprocessableEntity)
	expect(do(http.MethodPut, "/api/agents/bot/channels/"+tgID, map[string]any{"name": "Telegram",
		"config": map[string]any{"bot_token": mask, "api_url": tg.URL}}), http.StatusOK)
	expect(do(http.MethodPut, "/api/agents/bot/channels/"+tgID, map[string]any{
		"config": map[string]any{"bot_token": mask, "api_url": tg.URL, "api_key": mask}}), http.StatusUnprocessableEntity)

	// The telegram channel runs, through polling failures, and answers.
	expect(do(http.MethodPost, "/api/agents/bot/channels/"+tgID+"/start", nil), http.StatusOK)
	if err := tg.WaitCalls(ctx, "getUpdates", 1); err != nil {
		t.Fatal(err)
	}
	tg.Fail("getUpdates", 2)
	tg.Drop("getUpdates", 1)
	tg.SendUserMessage(10, 10, "hello from telegram")
	if _, err := tg.WaitSent(ctx, 1); err != nil {
		t.Fatal(err)
	}
	tg.Fail("sendMessage", 1)
	tg.SendUserMessage(10, 10, "this reply is lost")
	tg.SendUserMessage(10, 10, "/start")
	if _, err := tg.WaitSent(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// A bad token: status error.
	expect(do(http.MethodPost, "/api/agents/bot/channels/"+badID+"/start", nil), http.StatusOK)
	harnesstest.Eventually(t, channelWait, "the bad token's channel to fail", func() bool {
		r := do(http.MethodGet, "/api/agents/bot/channels", nil)
		return strings.Contains(string(r.body), `"status":"error"`)
	})
	// A new token for a running channel: restarted, refused by the fake.
	expect(do(http.MethodPut, "/api/agents/bot/channels/"+tgID, map[string]any{
		"config": map[string]any{"bot_token": newBotToken, "api_url": tg.URL}}), http.StatusOK)
	harnesstest.Eventually(t, channelWait, "the new token to be refused", func() bool {
		r := do(http.MethodGet, "/api/agents/bot", nil)
		return strings.Count(string(r.body), `"status":"error"`) == 2
	})

	// The webhook channel.
	msg := []byte(`{"user_id": "hook-user", "message": "hello from the hook"}`)
	expect(hook(hkID, msg, webhook.Sign(hookSecret, msg)), http.StatusUnauthorized) // not running
	expect(do(http.MethodPost, "/api/agents/bot/channels/"+hkID+"/start", nil), http.StatusOK)
	expect(hook(hkID, msg, webhook.Sign(hookSecret, msg)), http.StatusOK)
	expect(hook(hkID, msg, ""), http.StatusUnauthorized)
	expect(hook(hkID, msg, webhook.Sign(apiToken, msg)), http.StatusUnauthorized)
	expect(hook(hkID, msg, "sha256="+url.QueryEscape(hookSecret)), http.StatusUnauthorized)
	expect(hook("nope", msg, webhook.Sign(hookSecret, msg)), http.StatusUnauthorized)
	fail := []byte(`{"user_id": "hook-user", "message": "fail please"}`)
	if r := hook(hkID, fail, webhook.Sign(hookSecret, fail)); r.status < 400 {
		t.Errorf("a failing model through the webhook gave %d", r.status)
	}
	expect(do(http.MethodPut, "/api/agents/bot/channels/"+hkID, map[string]any{"config": map[string]any{"secret": hookSecret2}}), http.StatusOK)
	expect(hook(hkID, msg, webhook.Sign(hookSecret, msg)), http.StatusUnauthorized)
	expect(hook(hkID, msg, webhook.Sign(hookSecret2, msg)), http.StatusOK)

	// Stop, list, delete.
	expect(do(http.MethodPost, "/api/agents/bot/channels/"+hkID+"/stop", nil), http.StatusOK)
	expect(do(http.MethodPost, "/api/agents/bot/channels/"+badID+"/stop", nil), http.StatusOK)
	expect(do(http.MethodGet, "/api/agents/bot/channels", nil), http.StatusOK)
	expect(do(http.MethodGet, "/api/agents/bot", nil), http.StatusOK)
	expect(do(http.MethodGet, "/api/agents", nil), http.StatusOK)
	expect(do(http.MethodDelete, "/api/agents/bot/channels/"+badID, nil), http.StatusOK)
	expect(do(http.MethodDelete, "/api/agents/bot", nil), http.StatusOK)
	expect(do(http.MethodGet, "/api/agents/bot/channels", nil), http.StatusNotFound)

	logs := e.logs.String()
	for _, want := range []string{"channel started", "channel failed", "webhook request with a wrong signature refused"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q: the scenario did not run as meant", want)
		}
	}
	forms := func(s string) []string {
		return []string{s, url.PathEscape(s), url.QueryEscape(s)}
	}
	for _, secret := range secrets {
		for _, form := range forms(secret) {
			for _, r := range seen {
				if bytes.Contains(r.body, []byte(form)) {
					t.Errorf("secret %q in a response body: %s", form, r.body)
				}
				for k, vs := range r.header {
					for _, v := range vs {
						if strings.Contains(v, form) {
							t.Errorf("secret %q in response header %s: %s", form, k, v)
						}
					}
				}
			}
			if i := strings.Index(logs, form); i >= 0 {
				start := strings.LastIndexByte(logs[:i], '\n') + 1
				end := i + strings.IndexByte(logs[i:]+"\n", '\n')
				t.Errorf("secret %q in the log: %s", form, logs[start:end])
			}
		}
	}
	if t.Failed() {
		t.Logf("requests:\n%s", transcript.String())
	}
}
