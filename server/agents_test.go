package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

// createdAtRE is the format of a resource timestamp (see docs/api.md).
var createdAtRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)

// agentKeys are the fields of an agent record.
var agentKeys = []string{"created_at", "description", "id", "model", "name", "system_prompt"}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(mapKeys(m))
}

// checkCreatedAt checks that a created_at value is a UTC timestamp of the
// last minute.
func checkCreatedAt(t *testing.T, v any) {
	t.Helper()
	s, _ := v.(string)
	if !createdAtRE.MatchString(s) {
		t.Fatalf("created_at %q, want YYYY-MM-DD HH:MM:SS", v)
	}
	at, err := time.Parse(time.DateTime, s)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(at); d < -2*time.Second || d > time.Minute {
		t.Errorf("created_at %s is %v from now (UTC expected)", s, d)
	}
}

func TestAgents(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	var created map[string]any

	t.Run("list empty", func(t *testing.T) {
		r := must(t, e.get("/api/agents"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"agents":[],"total":0}` {
			t.Fatalf("body %s", got)
		}
	})

	t.Run("create answers 201 with the record", func(t *testing.T) {
		r := must(t, e.post("/api/agents", map[string]any{
			"id": "helper", "name": "Helper", "description": "Helps out", "system_prompt": "Be brief.", "unknown": 1,
		}), http.StatusCreated)
		created = r.object(t)
		if got := sortedKeys(created); !slices.Equal(got, agentKeys) {
			t.Errorf("fields %v, want %v", got, agentKeys)
		}
		want := map[string]any{"id": "helper", "name": "Helper", "description": "Helps out", "system_prompt": "Be brief.", "model": nil}
		for k, v := range want {
			if created[k] != v {
				t.Errorf("%s = %#v, want %#v", k, created[k], v)
			}
		}
		checkCreatedAt(t, created["created_at"])
	})

	t.Run("list shows the agents' fields", func(t *testing.T) {
		var body struct {
			Agents []map[string]any `json:"agents"`
		}
		must(t, e.get("/api/agents"), http.StatusOK).decode(t, &body)
		if len(body.Agents) != 1 || !jsonEqual(t, body.Agents[0], created) {
			t.Fatalf("agents %v, want [%v]", body.Agents, created)
		}
	})

	t.Run("get one has tools and channels", func(t *testing.T) {
		got := must(t, e.get("/api/agents/helper"), http.StatusOK).object(t)
		want := map[string]any{"tools": []any{}, "channels": []any{}}
		for k, v := range created {
			want[k] = v
		}
		if !jsonEqual(t, got, want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
	})

	t.Run("bad ids are refused naming body.id", func(t *testing.T) {
		for _, id := range []any{"bad-id", "a b", "", strings.Repeat("a", 129), "dot.ted", "ünï", "../x", nil} {
			body := map[string]any{"name": "X"}
			if id != nil {
				body["id"] = id
			}
			mustProblem(t, e.post("/api/agents", body), http.StatusUnprocessableEntity, "body.id")
		}
		var list struct {
			Agents []map[string]any `json:"agents"`
		}
		must(t, e.get("/api/agents"), http.StatusOK).decode(t, &list)
		if len(list.Agents) != 1 {
			t.Fatalf("%d agents after refused creations, want 1", len(list.Agents))
		}
	})

	t.Run("128 characters and underscores are fine", func(t *testing.T) {
		id := "_" + strings.Repeat("A9", 63) + "z"
		got := must(t, e.post("/api/agents", map[string]any{"id": id}), http.StatusCreated).object(t)
		if got["id"] != id || got["name"] != id {
			t.Errorf("id %v name %v, want %s (the name defaults to the id)", got["id"], got["name"], id)
		}
		must(t, e.del("/api/agents/"+id), http.StatusOK)
	})

	t.Run("duplicate id is 409", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents", map[string]any{"id": "helper", "name": "Other"}), http.StatusConflict)
		if got := must(t, e.get("/api/agents/helper"), http.StatusOK).object(t); got["name"] != "Helper" {
			t.Errorf("the duplicate changed the agent: %v", got)
		}
	})

	t.Run("malformed JSON is 400", func(t *testing.T) {
		mustProblem(t, e.post("/api/agents", rawBody(`{"id": "x",`)), http.StatusBadRequest)
		mustProblem(t, e.put("/api/agents/helper", rawBody(`{"name": 3}`)), http.StatusUnprocessableEntity)
	})

	t.Run("update changes the fields given and keeps the others", func(t *testing.T) {
		steps := []struct {
			body map[string]any
			want map[string]any
		}{
			{map[string]any{"name": "Renamed"}, map[string]any{"name": "Renamed", "description": "Helps out", "system_prompt": "Be brief.", "model": nil}},
			{map[string]any{"description": "New description"}, map[string]any{"name": "Renamed", "description": "New description"}},
			{map[string]any{"system_prompt": "Answer in French."}, map[string]any{"system_prompt": "Answer in French.", "description": "New description"}},
			{map[string]any{"model": "special-model"}, map[string]any{"model": "special-model", "system_prompt": "Answer in French."}},
			{map[string]any{"name": "Again", "id": "helper"}, map[string]any{"name": "Again", "model": "special-model"}},
		}
		for _, s := range steps {
			got := must(t, e.put("/api/agents/helper", s.body), http.StatusOK).object(t)
			for k, v := range s.want {
				if got[k] != v {
					t.Errorf("after %v: %s = %#v, want %#v", s.body, k, got[k], v)
				}
			}
			if got["created_at"] != created["created_at"] || got["id"] != "helper" {
				t.Errorf("after %v: id %v created_at %v changed", s.body, got["id"], got["created_at"])
			}
			if again := must(t, e.get("/api/agents/helper"), http.StatusOK).object(t); again["name"] != got["name"] || again["model"] != got["model"] {
				t.Errorf("GET after PUT: %v, PUT answered %v", again, got)
			}
		}
	})

	t.Run("the agent's model is the one asked for; null means the configured one", func(t *testing.T) {
		e.chat("helper", "u1", "hello")
		if req := e.lastLLMRequest(); req.Model != "special-model" {
			t.Errorf("model %q, want special-model", req.Model)
		}
		got := must(t, e.put("/api/agents/helper", map[string]any{"model": nil}), http.StatusOK).object(t)
		if v, ok := got["model"]; !ok || v != nil {
			t.Fatalf("model %#v (present %v), want null", v, ok)
		}
		e.chat("helper", "u1", "hello again")
		if req := e.lastLLMRequest(); req.Model != agentModel {
			t.Errorf("model %q, want the configured %q", req.Model, agentModel)
		}
		// An empty string is the configured model too.
		got = must(t, e.put("/api/agents/helper", map[string]any{"model": ""}), http.StatusOK).object(t)
		if got["model"] != nil {
			t.Errorf("model %#v after \"\", want null", got["model"])
		}
	})

	t.Run("changing the id is refused", func(t *testing.T) {
		mustProblem(t, e.put("/api/agents/helper", map[string]any{"id": "other"}), http.StatusUnprocessableEntity, "body.id")
		must(t, e.get("/api/agents/helper"), http.StatusOK)
		mustProblem(t, e.get("/api/agents/other"), http.StatusNotFound)
	})

	t.Run("unknown agent is 404", func(t *testing.T) {
		mustProblem(t, e.get("/api/agents/nope"), http.StatusNotFound)
		mustProblem(t, e.put("/api/agents/nope", map[string]any{"name": "X"}), http.StatusNotFound)
		mustProblem(t, e.del("/api/agents/nope"), http.StatusNotFound)
		mustProblem(t, e.get("/api/agents/nope/tools"), http.StatusNotFound)
		mustProblem(t, e.put("/api/agents/nope/tools", map[string]any{"tools": []string{}}), http.StatusNotFound)
	})

	t.Run("delete", func(t *testing.T) {
		r := must(t, e.del("/api/agents/helper"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Errorf("body %s", got)
		}
		mustProblem(t, e.get("/api/agents/helper"), http.StatusNotFound)
		mustProblem(t, e.del("/api/agents/helper"), http.StatusNotFound)
	})
}

// TestAgentDeleteRemovesEverything deletes an agent with a knowledge
// base, conversations and a running telegram channel.
func TestAgentDeleteRemovesEverything(t *testing.T) {
	t.Parallel()
	const token = "4242:delete-test-token-abcdef"
	tg := telegramtest.NewServer(token)
	t.Cleanup(tg.Close)
	e := newAgentEnv(t, agentConfig{})
	ctx := context.Background()

	e.createAgent("doomed", "You are doomed.")
	must(t, e.post("/api/agents/doomed/kb", map[string]any{"filename": "notes.md", "content": "# Notes\nThe sky is green."}), http.StatusCreated)
	e.chat("doomed", "u1", "remember the word swordfish")
	e.chat("doomed", "u2", "remember the word marlin")
	ch := must(t, e.post("/api/agents/doomed/channels", map[string]any{
		"type": "telegram", "name": "Bot", "config": map[string]any{"bot_token": token, "api_url": tg.URL},
	}), http.StatusCreated).object(t)
	chID := ch["id"].(string)
	must(t, e.post("/api/agents/doomed/channels", map[string]any{
		"type": "webhook", "config": map[string]any{"secret": "hook-secret"},
	}), http.StatusCreated)
	if got := must(t, e.post("/api/agents/doomed/channels/"+chID+"/start", nil), http.StatusOK).object(t); got["status"] != "running" {
		t.Fatalf("start: %v", got)
	}
	// A poll held (no update pending, a minute's timeout): until the
	// delete stops the channel, no other getUpdates call can start.
	harnesstest.Eventually(t, 10*time.Second, "the channel to poll", func() bool { return tg.ActivePolls() > 0 })
	calls := tg.GetUpdatesCalls()
	kbDir := filepath.Join(e.dataDir, "kb", "doomed")
	if _, err := os.Stat(filepath.Join(kbDir, "notes.md")); err != nil {
		t.Fatalf("the knowledge-base file is not on disk: %v", err)
	}

	r := must(t, e.del("/api/agents/doomed"), http.StatusOK)
	if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
		t.Errorf("body %s", got)
	}

	mustProblem(t, e.get("/api/agents/doomed"), http.StatusNotFound)
	mustProblem(t, e.get("/api/agents/doomed/channels"), http.StatusNotFound)
	mustProblem(t, e.get("/api/agents/doomed/kb"), http.StatusNotFound)
	if _, err := os.Stat(kbDir); !os.IsNotExist(err) {
		t.Errorf("the knowledge-base directory is still there: %v", err)
	}
	// The channel stopped: no poll is held, and a message gets no answer.
	harnesstest.Eventually(t, 10*time.Second, "polling to stop", func() bool { return tg.ActivePolls() == 0 })
	tg.SendUserMessage(7, 7, "anyone there?")
	// Nothing marks the moment a deleted agent's channel would poll or
	// answer again: watch for a while. Nothing it did before the delete is
	// still on its way, so a slow machine cannot fail this.
	harnesstest.Never(t, 500*time.Millisecond, "a getUpdates call or an answer after the delete", func() bool {
		return tg.GetUpdatesCalls() != calls || len(tg.Sent()) != 0
	})
	if got := tg.GetUpdatesCalls(); got != calls {
		t.Errorf("getUpdates called %d more times after the delete", got-calls)
	}
	if sent := tg.Sent(); len(sent) != 0 {
		t.Errorf("the deleted agent's bot answered: %v", sent)
	}
	// The webhook endpoint no longer knows the channel: the answer to
	// any id it does not serve.
	mustProblem(t, e.post("/api/channels/"+chID+"/webhook", map[string]any{"user_id": "u", "message": "m"}), http.StatusUnauthorized)

	// An agent created again with the same id starts afresh.
	e.createAgent("doomed", "You are reborn.")
	got := must(t, e.get("/api/agents/doomed"), http.StatusOK).object(t)
	if !jsonEqual(t, got["tools"], []any{}) || !jsonEqual(t, got["channels"], []any{}) {
		t.Errorf("tools %v channels %v, want none", got["tools"], got["channels"])
	}
	if files := must(t, e.get("/api/agents/doomed/kb"), http.StatusOK).object(t)["files"]; !jsonEqual(t, files, []any{}) {
		t.Errorf("knowledge base %v, want empty", files)
	}
	for _, user := range []string{"u1", "u2"} {
		h, err := e.agents.History(ctx, "doomed", user)
		if err != nil || len(h) != 0 {
			t.Errorf("history of %s: %v %v, want none", user, h, err)
		}
	}
	e.chat("doomed", "u1", "do you remember?")
	if text := messagesText(e.lastLLMRequest()); strings.Contains(text, "swordfish") || strings.Contains(text, "green") {
		t.Errorf("the new agent sees the old one's conversation or knowledge base:\n%s", text)
	}
}

func clockTool() map[string]any {
	return map[string]any{
		"id": "clock", "name": "Clock", "description": "The time",
		"function":      map[string]any{"name": "get_time", "description": "The current time"},
		"mock_response": map[string]any{"time": "12:00"},
	}
}

func TestAgentTools(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	must(t, e.post("/api/settings/tools", weatherTool()), http.StatusCreated)
	must(t, e.post("/api/settings/tools", clockTool()), http.StatusCreated)
	e.createAgent("a1", "")
	e.createAgent("a2", "")

	tools := func(agentID string) []string {
		t.Helper()
		var body struct {
			Tools []string `json:"tools"`
		}
		must(t, e.get("/api/agents/"+agentID+"/tools"), http.StatusOK).decode(t, &body)
		return body.Tools
	}

	t.Run("none at first", func(t *testing.T) {
		r := must(t, e.get("/api/agents/a1/tools"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"tools":[]}` {
			t.Fatalf("body %s", got)
		}
	})

	t.Run("PUT replaces the whole list", func(t *testing.T) {
		var body struct {
			Tools []string `json:"tools"`
		}
		must(t, e.put("/api/agents/a1/tools", map[string]any{"tools": []string{"weather", "clock"}}), http.StatusOK).decode(t, &body)
		if !slices.Equal(body.Tools, []string{"weather", "clock"}) {
			t.Fatalf("PUT answered %v", body.Tools)
		}
		if got := tools("a1"); !slices.Equal(got, []string{"weather", "clock"}) {
			t.Fatalf("tools %v", got)
		}
		must(t, e.put("/api/agents/a1/tools", map[string]any{"tools": []string{"clock"}}), http.StatusOK)
		if got := tools("a1"); !slices.Equal(got, []string{"clock"}) {
			t.Fatalf("tools %v after replacing, want [clock]", got)
		}
		detail := must(t, e.get("/api/agents/a1"), http.StatusOK).object(t)
		if !jsonEqual(t, detail["tools"], []string{"clock"}) {
			t.Errorf("GET agent tools %v", detail["tools"])
		}
		if got := tools("a2"); len(got) != 0 {
			t.Errorf("a2 has tools %v", got)
		}
	})

	t.Run("bad lists are 422 and change nothing", func(t *testing.T) {
		cases := []struct {
			body     any
			location string
		}{
			{map[string]any{"tools": []string{"weather", "nope"}}, "body.tools[1]"},
			{map[string]any{"tools": []string{"weather", "weather"}}, "body.tools[1]"},
			{map[string]any{"tools": []string{"bad id!"}}, "body.tools[0]"},
			{map[string]any{}, "body.tools"},
			{map[string]any{"tools": "weather"}, "body.tools"},
		}
		for _, c := range cases {
			p := mustProblem(t, e.put("/api/agents/a1/tools", c.body), http.StatusUnprocessableEntity)
			// A missing or mistyped list is refused by the schema check,
			// whose message names the field.
			named := slices.Contains(p.locations(), c.location) ||
				(c.location == "body.tools" && strings.Contains(p.Detail, "tools"))
			if !named {
				t.Errorf("after %v: the error names neither %s nor tools: %+v", c.body, c.location, p)
			}
			if got := tools("a1"); !slices.Equal(got, []string{"clock"}) {
				t.Fatalf("after %v: tools %v, want [clock] unchanged", c.body, got)
			}
		}
	})

	t.Run("an empty list clears", func(t *testing.T) {
		must(t, e.put("/api/agents/a2/tools", map[string]any{"tools": []string{"weather"}}), http.StatusOK)
		r := must(t, e.put("/api/agents/a2/tools", map[string]any{"tools": []string{}}), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"tools":[]}` {
			t.Fatalf("body %s", got)
		}
		if got := tools("a2"); len(got) != 0 {
			t.Fatalf("tools %v", got)
		}
	})

	t.Run("a tool in use cannot be deleted", func(t *testing.T) {
		must(t, e.put("/api/agents/a1/tools", map[string]any{"tools": []string{"weather", "clock"}}), http.StatusOK)
		must(t, e.put("/api/agents/a2/tools", map[string]any{"tools": []string{"weather"}}), http.StatusOK)
		p := mustProblem(t, e.del("/api/settings/tools/weather"), http.StatusConflict)
		if !strings.Contains(p.Detail, "a1") || !strings.Contains(p.Detail, "a2") {
			t.Errorf("detail %q does not name the agents a1 and a2", p.Detail)
		}
		must(t, e.get("/api/settings/tools/weather"), http.StatusOK)
		if !e.exists("tools/weather.yaml") {
			t.Error("the tool's file is gone")
		}
		p = mustProblem(t, e.del("/api/settings/tools/clock"), http.StatusConflict)
		if !strings.Contains(p.Detail, "a1") || strings.Contains(p.Detail, "a2") {
			t.Errorf("detail %q should name a1 only", p.Detail)
		}
	})

	t.Run("once unassigned, the tool can be deleted", func(t *testing.T) {
		must(t, e.put("/api/agents/a1/tools", map[string]any{"tools": []string{"clock"}}), http.StatusOK)
		must(t, e.del("/api/agents/a2"), http.StatusOK)
		must(t, e.del("/api/settings/tools/weather"), http.StatusOK)
		mustProblem(t, e.get("/api/settings/tools/weather"), http.StatusNotFound)
		if got := tools("a1"); !slices.Equal(got, []string{"clock"}) {
			t.Errorf("tools %v", got)
		}
	})

	t.Run("unknown agent is 404", func(t *testing.T) {
		mustProblem(t, e.get("/api/agents/ghost/tools"), http.StatusNotFound)
		mustProblem(t, e.put("/api/agents/ghost/tools", map[string]any{"tools": []string{"clock"}}), http.StatusNotFound)
	})
}

// TestAgentRecordTypes checks the agent record against the library type.
func TestAgentRecordTypes(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	var a harness.Agent
	must(t, e.post("/api/agents", map[string]any{"id": "typed", "model": "m1"}), http.StatusCreated).decode(t, &a)
	if a.ID != "typed" || a.Model == nil || *a.Model != "m1" || a.Name != "typed" {
		t.Fatalf("record %+v", a)
	}
}
