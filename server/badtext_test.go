package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
)

// TestBadTextIs422: a NUL (escaped as \u0000, or raw) or invalid UTF-8 in
// any text field of any write is a 422 problem naming the field, and
// nothing is stored: not the definitions, not the agents, not a chat turn.
func TestBadTextIs422(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.fixture()
	e.createAgent("bot", "Be kind.")
	hook := e.createChannel("bot", map[string]any{"id": "hook", "type": "webhook", "name": "Hook", "config": map[string]any{"secret": "s3"}})
	e.channelAction("bot", hook["id"].(string), "start")

	// @@ marks where the bad text goes, inside a JSON string.
	cases := []struct {
		name, method, path, body, location string
	}{
		{"domain id", "POST", "/api/settings/domains", `{"id":"d@@","name":"D"}`, "body.id"},
		{"domain name", "POST", "/api/settings/domains", `{"id":"d2","name":"D@@"}`, "body.name"},
		{"domain description", "POST", "/api/settings/domains", `{"id":"d2","name":"D","description":"x@@"}`, "body.description"},
		{"domain system prompt", "POST", "/api/settings/domains", `{"id":"d2","name":"D","system_prompt":"x@@"}`, "body.system_prompt"},
		{"domain update", "PUT", "/api/settings/domains/math", `{"name":"M@@"}`, "body.name"},
		{"level system prompt", "PUT", "/api/settings/levels/math/1", `{"system_prompt":"x@@"}`, "body.system_prompt"},
		{"test id", "POST", "/api/settings/tests", `{"id":"t@@","domain_id":"math","level":1,"prompt":"P","expected":{"answer":"1","type":"numeric"}}`, "body.id"},
		{"test name", "POST", "/api/settings/tests", `{"id":"t9","domain_id":"math","level":1,"name":"N@@","prompt":"P","expected":{"answer":"1","type":"numeric"}}`, "body.name"},
		{"test prompt", "POST", "/api/settings/tests", `{"id":"t9","domain_id":"math","level":1,"prompt":"P@@","expected":{"answer":"1","type":"numeric"}}`, "body.prompt"},
		{"test expected answer", "POST", "/api/settings/tests", `{"id":"t9","domain_id":"math","level":1,"prompt":"P","expected":{"answer":"x@@","type":"exact"}}`, "body.expected.answer"},
		{"test update", "PUT", "/api/settings/tests/m1", `{"prompt":"Q@@"}`, "body.prompt"},
		{"evaluator name", "POST", "/api/settings/evaluators", `{"id":"e9","name":"E@@"}`, "body.name"},
		{"evaluator description", "POST", "/api/settings/evaluators", `{"id":"e9","name":"E","description":"x@@"}`, "body.description"},
		{"tool description", "POST", "/api/settings/tools", `{"id":"x9","function":{"name":"f","description":"x@@"}}`, "body.function.description"},
		{"agent id", "POST", "/api/agents", `{"id":"a@@"}`, "body.id"},
		{"agent name", "POST", "/api/agents", `{"id":"a9","name":"N@@"}`, "body.name"},
		{"agent description", "POST", "/api/agents", `{"id":"a9","description":"x@@"}`, "body.description"},
		{"agent system prompt", "PUT", "/api/agents/bot", `{"system_prompt":"x@@"}`, "body.system_prompt"},
		{"chat message", "POST", "/api/agents/bot/chat", `{"message":"hi @@","user_id":"alice"}`, "body.message"},
		{"chat user id", "POST", "/api/agents/bot/chat", `{"message":"hi","user_id":"al@@"}`, "body.user_id"},
		{"channel name", "POST", "/api/agents/bot/channels", `{"type":"webhook","name":"N@@","config":{"secret":"s"}}`, "body.name"},
		{"channel config", "POST", "/api/agents/bot/channels", `{"type":"webhook","config":{"secret":"s@@"}}`, "body.config.secret"},
		{"in an array", "POST", "/api/settings/tests", `{"id":"t9","domain_id":"math","level":1,"prompt":"P","tools":["calc","x@@"],"expected":{"answer":"1","type":"numeric"}}`, "body.tools[1]"},
		{"webhook message", "POST", "/api/channels/hook/webhook", `{"user_id":"u1","message":"hi @@"}`, "body.message"},
		{"webhook user id", "POST", "/api/channels/hook/webhook", `{"user_id":"u@@","message":"hi"}`, "body.user_id"},
	}
	bads := []struct{ name, text, says string }{
		{"escaped NUL", `\u0000`, "NUL"},
		{"raw NUL", "\x00", "NUL"},
		{"invalid UTF-8", "\xff\xfe", "UTF-8"},
		{"truncated UTF-8", "\xe2\x82", "UTF-8"},
	}
	snapshot := func() string {
		var b strings.Builder
		b.WriteString(e.state().export)
		for _, p := range []string{"/api/agents", "/api/agents/bot", "/api/agents/bot/channels"} {
			b.Write(must(t, e.get(p), http.StatusOK).body)
		}
		return b.String()
	}
	before := snapshot()
	files := e.files()
	for _, bad := range bads {
		for _, tc := range cases {
			t.Run(bad.name+"/"+tc.name, func(t *testing.T) {
				body := []byte(strings.Replace(tc.body, "@@", bad.text, 1))
				var r *response
				if strings.HasSuffix(tc.path, "/webhook") {
					r = e.webhookPost("hook", body, webhook.Sign("s3", body))
				} else {
					r = e.request(tc.method, tc.path, body)
				}
				p := mustProblem(t, r, http.StatusUnprocessableEntity, tc.location)
				if !strings.Contains(p.Detail, bad.says) {
					t.Errorf("detail %q does not say %s", p.Detail, bad.says)
				}
				if bytes.Contains(r.body, []byte("\xff")) {
					t.Errorf("the answer echoes the bad bytes: %q", r.body)
				}
			})
		}
	}
	if after := snapshot(); after != before {
		t.Errorf("refused writes changed the state:\nbefore %s\nafter  %s", before, after)
	}
	if after := e.files(); len(after) != len(files) {
		t.Errorf("definition files %v, were %v", after, files)
	}
	if n := len(e.llmRequests()); n != 0 {
		t.Errorf("%d model requests for refused chats", n)
	}

	// Good text, non-ASCII included, still goes through.
	must(t, e.post("/api/settings/domains", map[string]any{"id": "d3", "name": "Ωmega ✓", "system_prompt": "Réponds."}), http.StatusCreated)
}
