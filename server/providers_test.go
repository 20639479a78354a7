package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestStartThroughProvider: a run whose model names a provider goes to
// it; its config records the provider and the streaming; each call of a
// streamed run has its time to first token.
func TestStartThroughProvider(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reqs []*llmtest.Request
	e := newEngineEnv(t, engineConfig{providers: []string{"team=openai,base_url={mock}/v1"}, llm: llmtest.Options{
		Respond: func(r *llmtest.Request) *llmtest.Reply {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, r)
			return nil
		}}})
	id := e.runToEnd(map[string]any{"model": "team/qwen3:8b", "stream": true, "domains": []string{"arithmetic"},
		"params": map[string]any{"reasoning": map[string]any{"effort": "low"}}})
	var info struct {
		RunInfo struct {
			Status string `json:"status"`
			Config struct {
				Model        string         `json:"model"`
				Provider     string         `json:"provider"`
				ProviderKind string         `json:"provider_kind"`
				Stream       bool           `json:"stream"`
				Params       map[string]any `json:"params"`
			} `json:"config"`
		} `json:"run_info"`
		TestResults []struct {
			Status string `json:"status"`
			Calls  []struct {
				TTFTMS *int64 `json:"ttft_ms"`
			} `json:"calls"`
		} `json:"test_results"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &info)
	c := info.RunInfo.Config
	if info.RunInfo.Status != "completed" || c.Model != "team/qwen3:8b" || c.Provider != "team" || c.ProviderKind != "openai" || !c.Stream {
		t.Fatalf("run_info %+v", info.RunInfo)
	}
	if r, ok := c.Params["reasoning"].(map[string]any); !ok || r["effort"] != "low" {
		t.Errorf("params %v", c.Params)
	}
	if len(info.TestResults) == 0 {
		t.Fatal("no results")
	}
	for _, r := range info.TestResults {
		if r.Status != "passed" || len(r.Calls) == 0 || r.Calls[0].TTFTMS == nil {
			t.Errorf("result %+v", r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) == 0 || reqs[0].Model != "qwen3:8b" || !reqs[0].Stream {
		t.Fatalf("the endpoint was asked %+v", reqs)
	}
}

// TestStartProviderErrors: a provider without its key, and reasoning
// parameters that cannot be sent, are refused with a 422 naming the
// field; no run starts.
func TestStartProviderErrors(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	p := mustProblem(t, e.post("/api/start", map[string]any{"model": "anthropic/claude-sonnet-4-5"}), http.StatusUnprocessableEntity, "body.model")
	if !strings.Contains(p.Detail+p.Errors[0].Message, "ANTHROPIC_API_KEY") {
		t.Errorf("the problem does not name the variable: %+v", p)
	}
	for _, reasoning := range []any{
		map[string]any{"effort": "max"},
		map[string]any{"effort": "low", "budget_tokens": 100},
		map[string]any{},
		map[string]any{"budget_tokens": 0},
		map[string]any{"budget": 10},
	} {
		r := e.post("/api/start", map[string]any{"params": map[string]any{"reasoning": reasoning}})
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("reasoning %v: %d %s", reasoning, r.status, r.body)
		}
	}
	if st := e.status(); st.Status != "idle" {
		t.Fatalf("status %+v", st)
	}
	if n := e.mock.Stats().ChatCompletions; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
