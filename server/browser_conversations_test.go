package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
)

// TestBrowserConversations chats with an agent through the API as two
// users, then reads their conversations on the agent's page: both are
// listed, the most recent first; one opens with its messages, tool call
// and tool result; clearing it removes it on the server.
func TestBrowserConversations(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	must(t, e.post("/api/settings/tools", weatherTool()), http.StatusCreated)
	e.createAgent("bot", "Use your tools.")
	must(t, e.put("/api/agents/bot/tools", map[string]any{"tools": []string{"weather"}}), http.StatusOK)
	e.chat("bot", "alice", `<img src=x onerror="document.title='owned'"> hello`)
	e.chat("bot", "team/bob", `Call get_weather for "Paris" please.`)

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/bot")
	const rows = `[...document.querySelectorAll('#conversations tr[data-user]')]`
	b.wait("both conversations", rows+`.length === 2`)
	if got := evalJS[[]string](b, rows+`.map(r => r.dataset.user + ' ' + r.cells[1].textContent)`); strings.Join(got, "|") != "team/bob 4|alice 2" {
		t.Errorf("conversations listed %q, want team/bob (4 messages) then alice (2)", got)
	}
	if got := b.text(`#conversations tr[data-user="alice"] .conv-last`); !strings.Contains(got, `<img src=x`) {
		t.Errorf("alice's last message shows %q", got)
	}

	t.Run("a transcript shows the messages, the tool call and its result", func(t *testing.T) {
		b.click(`#conversations tr[data-user="team/bob"] button`)
		const msgs = `[...document.querySelectorAll('#conv-transcript .msg')]`
		b.wait("the transcript", msgs+`.length === 4`)
		if got := evalJS[[]string](b, msgs+`.map(m => m.dataset.role)`); strings.Join(got, ",") != "user,assistant,tool,assistant" {
			t.Errorf("roles %v", got)
		}
		call := b.text(`#conv-transcript .msg[data-role="assistant"] .conv-calls`)
		if !strings.Contains(call, "get_weather(") || !strings.Contains(call, "Paris") {
			t.Errorf("the tool call shows %q", call)
		}
		result := b.text(`#conv-transcript .msg[data-role="tool"]`)
		if !strings.Contains(result, "Tool result of get_weather") || !strings.Contains(result, `"temp_c":21.5`) {
			t.Errorf("the tool result shows %q", result)
		}
		if got := b.text(`#conv-transcript .msg[data-role="user"] .msg-text`); got != `Call get_weather for "Paris" please.` {
			t.Errorf("the user's message shows %q", got)
		}
	})

	t.Run("text from users is shown as text", func(t *testing.T) {
		b.click(`#conversations tr[data-user="alice"] button`)
		b.wait("alice's transcript", `document.querySelectorAll('#conv-transcript .msg').length === 2`)
		if n := evalJS[int](b, `document.querySelectorAll('#conversations img, #conv-transcript img').length`); n != 0 {
			t.Errorf("%d img elements made from a message", n)
		}
		if got := b.text(`#conv-transcript .msg[data-role="user"] .msg-text`); !strings.HasPrefix(got, `<img src=x`) {
			t.Errorf("the message shows %q", got)
		}
		if title := evalJS[string](b, `document.title`); title == "owned" {
			t.Error("a message ran as HTML")
		}
	})

	t.Run("clear asks, then removes the conversation", func(t *testing.T) {
		b.click(`#conv-clear`)
		b.wait("the confirmation", `document.getElementById('confirm-dialog').open`)
		b.click(`#confirm-yes`)
		b.wait("alice's conversation gone", rows+`.length === 1 && `+rows+`[0].dataset.user === 'team/bob'`)
		b.wait("the transcript closed", `document.querySelectorAll('#conv-transcript .msg').length === 0`)
		mustProblem(t, e.get(conversationPath("bot", "alice")), http.StatusNotFound)
		if c := e.conversation("bot", "team/bob", ""); c.Total != 4 {
			t.Errorf("team/bob's conversation has %d messages after clearing alice's", c.Total)
		}
	})

	t.Run("refresh shows new conversations", func(t *testing.T) {
		e.chat("bot", "carol", "late arrival")
		b.click(`#conv-refresh`)
		b.wait("carol's conversation first", rows+`.length === 2 && `+rows+`[0].dataset.user === 'carol'`)
	})
}

// TestBrowserConversationChannels: users who wrote through a webhook
// channel show it, named after the channel record, in the list and in the
// transcript's header; a user who wrote through the webhook and then the
// API is listed with no channel, and the message that came through the
// webhook says so.
func TestBrowserConversationChannels(t *testing.T) {
	t.Parallel()
	const secret = "whsec-browser-channels"
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "")
	hook := e.createChannel("bot", map[string]any{"type": "webhook", "name": "Website", "config": map[string]any{"secret": secret}})["id"].(string)
	e.channelAction("bot", hook, "start")
	for _, user := range []string{"ext-8", "ext-7"} {
		body := []byte(`{"user_id": "` + user + `", "message": "from the site"}`)
		must(t, e.webhookPost(hook, body, webhook.Sign(secret, body)), http.StatusOK)
	}
	e.chat("bot", "ext-8", "now through the API")
	e.chat("bot", "alice", "hello")

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/bot")
	const rows = `[...document.querySelectorAll('#conversations tr[data-user]')]`
	b.wait("three conversations", rows+`.length === 3`)
	const labels = rows + `.map(r => r.dataset.user + ' ' + (r.querySelector('.conv-channel')?.textContent ?? '-'))`
	b.wait("the channel labels", labels+`.join('|') === 'alice -|ext-8 -|ext-7 webhook · Website'`)
	if got := evalJS[string](b, `document.querySelector('#conversations tr[data-user="ext-7"] .conv-channel').dataset.channelId`); got != hook {
		t.Errorf("ext-7's badge names channel %q, want %q", got, hook)
	}

	t.Run("the transcript's header names the channel", func(t *testing.T) {
		b.click(`#conversations tr[data-user="ext-7"] button`)
		b.wait("ext-7's transcript", `document.querySelectorAll('#conv-transcript .msg').length === 2`)
		if got := b.text(`#conv-transcript .conv-head-channel`); got != "webhook · Website" {
			t.Errorf("header channel %q", got)
		}
		if n := evalJS[int](b, `document.querySelectorAll('#conv-transcript .conv-via').length`); n != 0 {
			t.Errorf("%d messages marked as from another channel", n)
		}
	})

	t.Run("a message from another channel than the latest says so", func(t *testing.T) {
		b.click(`#conversations tr[data-user="ext-8"] button`)
		b.wait("ext-8's transcript", `document.querySelectorAll('#conv-transcript .msg').length === 4`)
		if n := evalJS[int](b, `document.querySelectorAll('#conv-transcript .conv-head-channel .conv-channel').length`); n != 0 {
			t.Errorf("the header of an API conversation shows a channel")
		}
		got := evalJS[[]string](b, `[...document.querySelectorAll('#conv-transcript .msg[data-role="user"]')].map(m => m.querySelector('.conv-via')?.textContent ?? '-')`)
		if strings.Join(got, "|") != " · via webhook · Website|-" {
			t.Errorf("user messages' via %q", got)
		}
	})
}
