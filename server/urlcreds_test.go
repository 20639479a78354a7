package server_test

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestURLCredentialsNeverShown creates a webhook channel whose callback_url
// carries user:password@, reads it back through every endpoint that shows
// channels, and checks that the password never appears (the URL shows
// "user:********@"); an update that sends the masked URL back keeps the
// stored credentials, which the callback then receives; a masked URL with
// another address is a 422; a new URL in clear replaces them.
func TestURLCredentialsNeverShown(t *testing.T) {
	t.Parallel()
	const (
		password = "Pa55-w0rd-in-url"
		secret   = "whsec-urlcreds"
	)
	var mu sync.Mutex
	var auths []string
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	t.Cleanup(cb.Close)
	cbURL, _ := url.Parse(cb.URL)
	withCreds := func(user, pass, path string) string {
		u := *cbURL
		u.User, u.Path = url.UserPassword(user, pass), path
		return u.String()
	}
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	e := newAgentEnv(t, agentConfig{})
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "ok"} })
	e.createAgent("bot", "")

	var seen []string
	check := func(r *response) *response {
		t.Helper()
		seen = append(seen, string(r.body))
		if strings.Contains(string(r.body), password) || strings.Contains(string(r.body), url.QueryEscape(password)) {
			t.Fatalf("the password is shown: %s", r.body)
		}
		return r
	}
	created := check(must(t, e.post("/api/agents/bot/channels", map[string]any{"type": "webhook", "name": "Hook",
		"config": map[string]any{"secret": secret, "callback_url": withCreds("alice", password, "/x")}}), http.StatusCreated)).object(t)
	id := created["id"].(string)
	masked := created["config"].(map[string]any)["callback_url"].(string)
	if want := withCreds("alice", "********", "/x"); masked != strings.Replace(want, "%2A%2A%2A%2A%2A%2A%2A%2A", "********", 1) {
		t.Errorf("callback_url shown as %q", masked)
	}
	for _, p := range []string{"/api/agents/bot/channels", "/api/agents/bot", "/api/agents"} {
		check(must(t, e.get(p), http.StatusOK))
	}

	// The record as read back, sent back whole: the credentials stay.
	cfg := created["config"].(map[string]any)
	check(must(t, e.put("/api/agents/bot/channels/"+id, map[string]any{"name": "Renamed", "config": cfg}), http.StatusOK))
	e.channelAction("bot", id, "start")
	hook := func(want string) {
		t.Helper()
		mu.Lock()
		n := len(auths)
		mu.Unlock()
		body := []byte(`{"user_id": "u1", "message": "hi"}`)
		check(must(t, e.webhookPost(id, body, webhook.Sign(secret, body)), http.StatusAccepted))
		harnesstest.Eventually(t, 30*time.Second, "the callback", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(auths) > n
		})
		mu.Lock()
		defer mu.Unlock()
		if auths[n] != want {
			t.Errorf("the callback's Authorization is %q, want %q", auths[n], want)
		}
	}
	hook(basic("alice", password))

	// The mask with another address would send the password elsewhere.
	other := strings.Replace(masked, "/x", "/elsewhere", 1)
	mustProblem(t, check(e.put("/api/agents/bot/channels/"+id, map[string]any{"config": map[string]any{"secret": secret, "callback_url": other}})),
		http.StatusUnprocessableEntity, "body.config.callback_url")
	// Nor is the mask a password of a new channel.
	mustProblem(t, check(e.post("/api/agents/bot/channels", map[string]any{"type": "webhook",
		"config": map[string]any{"secret": secret, "callback_url": masked}})), http.StatusUnprocessableEntity, "body.config.callback_url")
	// New credentials in clear replace the old; the secret is sent again
	// with the new URL.
	const password2 = "N3w-Pa55-in-url"
	r := check(must(t, e.put("/api/agents/bot/channels/"+id, map[string]any{"config": map[string]any{"secret": secret,
		"callback_url": withCreds("bob", password2, "/y")}}), http.StatusOK))
	if strings.Contains(string(r.body), password2) {
		t.Fatalf("the new password is shown: %s", r.body)
	}
	hook(basic("bob", password2))
	for _, p := range []string{"/api/agents/bot/channels", "/api/agents/bot"} {
		if b := must(t, e.get(p), http.StatusOK).body; strings.Contains(string(b), password2) {
			t.Fatalf("GET %s shows the password: %s", p, b)
		}
	}
	if strings.Contains(e.logs.String(), password) || strings.Contains(e.logs.String(), password2) {
		t.Errorf("a password is in the server log")
	}
}
