package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// sourcesOf returns the sources and retrieval of a JSON object, as raw
// JSON ("" when the key is absent).
func sourcesOf(t *testing.T, m map[string]any) (string, string) {
	t.Helper()
	raw := func(k string) string {
		v, ok := m[k]
		if !ok {
			return ""
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return raw("sources"), raw("retrieval")
}

// TestChatSources checks that a chat reply lists the knowledge-base chunks
// the model was given, and that the stored conversation shows them on the
// reply, and on no other message.
func TestChatSources(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "Answer from the knowledge base.")
	e.createAgent("plain", "No knowledge base.")
	must(t, e.post("/api/agents/bot/kb", map[string]any{"filename": "pets.md",
		"content": "# Pets\n\nThe office cat is called Biscuit."}), http.StatusCreated)
	must(t, e.post("/api/agents/bot/kb", map[string]any{"filename": "hours.md",
		"content": "# Opening hours\n\nThe shop opens at nine."}), http.StatusCreated)

	r := must(t, e.post("/api/agents/bot/chat", map[string]any{"message": "What is the cat called?", "user_id": "alice"}), http.StatusOK)
	sources, retrieval := sourcesOf(t, r.object(t))
	// The whole base fits the model's budget: both files are given, the
	// better match first.
	if !strings.HasPrefix(sources, `[{"chunk":0,"file":"pets.md","score":`) || !strings.Contains(sources, `{"chunk":0,"file":"hours.md","score":`) {
		t.Errorf("sources %s", sources)
	}
	if retrieval != `{"mode":"bm25"}` {
		t.Errorf("retrieval %s, want bm25 without fallback", retrieval)
	}

	t.Run("without a knowledge base: [] and null", func(t *testing.T) {
		r := must(t, e.post("/api/agents/plain/chat", map[string]any{"message": "hello", "user_id": "alice"}), http.StatusOK)
		if s, ret := sourcesOf(t, r.object(t)); s != "[]" || ret != "null" {
			t.Errorf("sources %s, retrieval %s; want [] and null", s, ret)
		}
	})

	t.Run("the stored reply has them, the other messages null", func(t *testing.T) {
		r := must(t, e.get(conversationPath("bot", "alice")), http.StatusOK)
		var c struct {
			Messages []map[string]any `json:"messages"`
		}
		r.decode(t, &c)
		if len(c.Messages) != 2 {
			t.Fatalf("messages %s", r.body)
		}
		if s, ret := sourcesOf(t, c.Messages[0]); s != "null" || ret != "null" {
			t.Errorf("the user's message: sources %s, retrieval %s; want null and null", s, ret)
		}
		if s, ret := sourcesOf(t, c.Messages[1]); s != sources || ret != retrieval {
			t.Errorf("the reply: sources %s, retrieval %s; want the chat's %s and %s", s, ret, sources, retrieval)
		}
		r = must(t, e.get(conversationPath("plain", "alice")), http.StatusOK)
		r.decode(t, &c)
		if s, ret := sourcesOf(t, c.Messages[1]); s != "[]" || ret != "null" {
			t.Errorf("the reply without a knowledge base: sources %s, retrieval %s; want [] and null", s, ret)
		}
	})
}
