package server_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// badNames are names that show as something other than what they are: an
// ANSI escape sequence, other control characters, and the bidirectional
// controls that reverse or reorder the text around them.
var badNames = map[string]string{
	"ANSI escape": "\x1b[31mred\x1b[0m",
	"bell":        "ding\x07",
	"tab":         "a\tb",
	"line break":  "two\nlines",
	"DEL":         "x\x7f",
	"C1 control":  "x\u0085y",
	"RLO U+202E":  "invoice\u202Efdp.exe",
	"LRE U+202A":  "a\u202Ab",
	"RLI U+2067":  "a\u2067b",
	"PDI U+2069":  "a\u2069b",
	"LRM U+200E":  "a\u200Eb",
	"RLM U+200F":  "a\u200Fb",
	"ALM U+061C":  "a\u061Cb",
	"escaped NUL": "a\x00b",
}

// TestNamesRefuseControls creates every kind of named record with each bad
// name: each is a 422 naming the field, and nothing is stored. Names with
// letters of any script, spaces and punctuation stay accepted.
func TestNamesRefuseControls(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "ok"} })
	must(t, e.post("/api/settings/domains", map[string]any{"id": "d", "name": "D"}), http.StatusCreated)
	e.createAgent("bot", "")

	tool := func(name string) map[string]any {
		b := weatherTool()
		b["id"], b["name"] = "w", name
		return b
	}
	creates := []struct {
		what, path, field string
		body              func(name string) map[string]any
	}{
		{"domain", "/api/settings/domains", "body.name", func(n string) map[string]any { return map[string]any{"id": "d2", "name": n} }},
		{"test", "/api/settings/tests", "body.name", func(n string) map[string]any {
			return map[string]any{"id": "t1", "domain_id": "d", "level": 1, "name": n, "prompt": "2+2?", "expected": map[string]any{"answer": "4"}}
		}},
		{"evaluator", "/api/settings/evaluators", "body.name", func(n string) map[string]any {
			return map[string]any{"id": "ev", "name": n, "extraction_regex": `(\d+)`}
		}},
		{"tool", "/api/settings/tools", "body.name", tool},
		{"agent", "/api/agents", "body.name", func(n string) map[string]any { return map[string]any{"id": "a2", "name": n} }},
		{"channel", "/api/agents/bot/channels", "body.name", func(n string) map[string]any {
			return map[string]any{"type": "webhook", "name": n, "config": map[string]any{"secret": "s"}}
		}},
		{"knowledge-base file", "/api/agents/bot/kb", "body.filename", func(n string) map[string]any {
			return map[string]any{"filename": n + ".md", "content": "text"}
		}},
		{"chat user", "/api/agents/bot/chat", "body.user_id", func(n string) map[string]any {
			return map[string]any{"user_id": n, "message": "hello\tthere\nfriend"}
		}},
	}
	for _, c := range creates {
		for what, name := range badNames {
			t.Run(c.what+"/"+what, func(t *testing.T) {
				mustProblem(t, e.post(c.path, c.body(name)), http.StatusUnprocessableEntity, c.field)
			})
		}
	}
	// Updates too.
	for what, name := range badNames {
		t.Run("update/"+what, func(t *testing.T) {
			mustProblem(t, e.put("/api/settings/domains/d", map[string]any{"name": name}), http.StatusUnprocessableEntity, "body.name")
			mustProblem(t, e.put("/api/agents/bot", map[string]any{"name": name}), http.StatusUnprocessableEntity, "body.name")
		})
	}
	// Nothing was stored.
	for _, p := range []string{"/api/settings/domains/d2", "/api/settings/tests/t1", "/api/settings/evaluators/ev", "/api/settings/tools/w", "/api/agents/a2"} {
		mustProblem(t, e.get(p), http.StatusNotFound)
	}
	if r := must(t, e.get("/api/agents/bot/kb"), http.StatusOK); len(r.object(t)["files"].([]any)) != 0 {
		t.Errorf("files stored: %s", r.body)
	}

	// Good names of any script.
	for i, good := range []string{"Ünïcødé — names", "名前 (日本語)", "שלום עולם", "مرحبا", "a-b_c.d ½ 'quoted' \"x\" 🙂"} {
		suffix := fmt.Sprint(i)
		must(t, e.post("/api/settings/domains", map[string]any{"id": "g" + suffix, "name": good}), http.StatusCreated)
		must(t, e.post("/api/agents", map[string]any{"id": "g" + suffix, "name": good}), http.StatusCreated)
		must(t, e.post("/api/agents/bot/kb", map[string]any{"filename": good + suffix + ".md", "content": "x"}), http.StatusCreated)
	}
	// A message may hold any text.
	must(t, e.post("/api/agents/bot/chat", map[string]any{"user_id": "alice", "message": "\x1b[31m\u202Etab\there\u2067"}), http.StatusOK)
}

// TestWebhookUserIDRefusesControls posts correctly signed webhook messages
// whose user_id holds control or bidirectional characters: each is a 422
// naming user_id, and no conversation is stored.
func TestWebhookUserIDRefusesControls(t *testing.T) {
	t.Parallel()
	const secret = "whsec-names"
	e := newAgentEnv(t, agentConfig{})
	e.setRespond(func(req *llmtest.Request) *llmtest.Reply { return &llmtest.Reply{Content: "ok"} })
	e.createAgent("bot", "")
	hook := e.createChannel("bot", map[string]any{"type": "webhook", "config": map[string]any{"secret": secret}})["id"].(string)
	e.channelAction("bot", hook, "start")
	for _, what := range slices.Sorted(maps.Keys(badNames)) {
		t.Run(what, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"user_id": badNames[what], "message": "hi"})
			mustProblem(t, e.webhookPost(hook, body, webhook.Sign(secret, body)), http.StatusUnprocessableEntity, "body.user_id")
		})
	}
	body := []byte(`{"user_id": "ext-1", "message": "hi"}`)
	must(t, e.webhookPost(hook, body, webhook.Sign(secret, body)), http.StatusOK)
	r := must(t, e.get("/api/agents/bot/conversations"), http.StatusOK)
	if n := r.object(t)["total"]; n != 1.0 {
		t.Errorf("%v conversations, want only ext-1's: %s", n, r.body)
	}
}
