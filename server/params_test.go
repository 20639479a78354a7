package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestStartParams: the start body's params reach every model request over
// the level's defaults, and the run records them.
func TestStartParams(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []*llmtest.Request
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		return nil
	}}})
	must(t, e.put("/api/settings/levels/arithmetic/1", map[string]any{"params": map[string]any{"temperature": 0.2, "max_tokens": 300}}), http.StatusOK)

	id := e.runToEnd(map[string]any{"domains": []string{"arithmetic"}, "params": map[string]any{"temperature": 0.5, "seed": 7}})
	var run struct {
		RunInfo struct {
			Config struct {
				Params map[string]any `json:"params"`
			} `json:"config"`
		} `json:"run_info"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &run)
	if b, _ := json.Marshal(run.RunInfo.Config.Params); string(b) != `{"seed":7,"temperature":0.5}` {
		t.Errorf("run_info.config.params = %s", b)
	}
	mu.Lock()
	defer mu.Unlock()
	levelDefault := 0
	for _, r := range seen {
		if r.Temperature == nil || *r.Temperature != 0.5 || r.Seed == nil || *r.Seed != 7 || r.TopP != nil {
			t.Errorf("request sent %s", r.Body)
		}
		if r.MaxTokens == 300 {
			levelDefault++
		}
	}
	if len(seen) == 0 || levelDefault == 0 || levelDefault == len(seen) {
		t.Errorf("%d requests, %d with level 1's max_tokens: want some, not all", len(seen), levelDefault)
	}
}

// TestStartParamsInvalid: out-of-range or mistyped parameters are a 422
// naming the parameter, and start nothing.
func TestStartParamsInvalid(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	for _, tc := range []struct {
		name   string
		params any
		where  string
	}{
		{"temperature -1", map[string]any{"temperature": -1}, "body.params.temperature"},
		{"temperature 2.5", map[string]any{"temperature": 2.5}, "body.params.temperature"},
		{"max_tokens 0", map[string]any{"max_tokens": 0}, "body.params.max_tokens"},
		{"top_p 0", map[string]any{"top_p": 0}, "body.params.top_p"},
		{"top_p 1.5", map[string]any{"top_p": 1.5}, "body.params.top_p"},
		{"temperature not a number", map[string]any{"temperature": "hot"}, "body.params.temperature"},
		{"seed not an integer", map[string]any{"seed": 1.5}, "body.params.seed"},
		{"params not an object", []any{1}, "body.params"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustProblem(t, e.post("/api/start", map[string]any{"params": tc.params}), http.StatusUnprocessableEntity, tc.where)
		})
	}
	if st := e.status(); st.Status != "idle" || st.LastRunID != nil {
		t.Fatalf("a refused start started something: %+v", st)
	}
}

// TestLevelParams: a level's params go to its file, the cache and back
// through the API; an update without params keeps them, null removes
// them.
func TestLevelParams(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	const path = "/api/settings/levels/arithmetic/2"
	const file = "domains/arithmetic/level-2.yaml"
	got := must(t, e.put(path, map[string]any{"params": map[string]any{"temperature": 0, "top_p": 0.95, "seed": 9007199254740993}}), http.StatusOK).object(t)
	want := `{"seed":9007199254740993,"temperature":0,"top_p":0.95}`
	paramsOf := func(r *response) string {
		var body struct {
			Params json.RawMessage `json:"params"`
		}
		r.decode(t, &body)
		var v any
		d := json.NewDecoder(strings.NewReader(string(body.Params)))
		d.UseNumber()
		d.Decode(&v)
		b, _ := json.Marshal(v)
		return string(b)
	}
	if b, _ := json.Marshal(got["params"]); !strings.Contains(string(b), "temperature") {
		t.Fatalf("update answered %v", got)
	}
	if p := paramsOf(e.get(path)); p != want {
		t.Errorf("GET params = %s, want %s", p, want)
	}
	if f := e.readFile(file); !strings.Contains(f, "params:\n  temperature: 0\n  top_p: 0.95\n  seed: 9007199254740993\n") {
		t.Errorf("level file:\n%s", f)
	}
	// From the file again: a sync rebuilds the cache.
	must(t, e.post("/api/settings/sync", nil), http.StatusOK)
	if p := paramsOf(e.get(path)); p != want {
		t.Errorf("params after a sync = %s, want %s", p, want)
	}
	// An update without params keeps them.
	if p := paramsOf(must(t, e.put(path, map[string]any{"pass_threshold": 0.6}), http.StatusOK)); p != want {
		t.Errorf("params after an update without them = %s", p)
	}
	// Out of range: 422, nothing changes.
	before := e.state()
	mustProblem(t, e.put(path, map[string]any{"params": map[string]any{"temperature": 3}}), http.StatusUnprocessableEntity, "body.params.temperature")
	mustProblem(t, e.put(path, map[string]any{"params": map[string]any{"max_tokens": 0}}), http.StatusUnprocessableEntity, "body.params.max_tokens")
	e.assertUnchanged(t, before)
	// null removes them.
	r := must(t, e.put(path, map[string]any{"params": nil}), http.StatusOK)
	if o := r.object(t); o["params"] != nil {
		t.Errorf("params after null = %v", o["params"])
	}
	if f := e.readFile(file); strings.Contains(f, "params") {
		t.Errorf("level file still holds params:\n%s", f)
	}
	if o := must(t, e.get(path), http.StatusOK).object(t); o["params"] != nil {
		t.Errorf("GET params after null = %v", o["params"])
	}
}
