package server_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestStatusRateLimit: while the model endpoint answers 429 to half the
// requests, GET /api/status shows the provider throttled with its
// concurrency lowered; after, back to --concurrency; no test is an error.
func TestStatusRateLimit(t *testing.T) {
	const bound, phase, tests = 4, 160, 300
	yaml := "tests:\n"
	for i := range tests {
		yaml += fmt.Sprintf("  - id: rl-%d\n    name: Sum %d\n    prompt: \"[rl-%d] What is %d + 1?\"\n    expected: {answer: \"%d\", type: numeric}\n", i, i, i, i, i+1)
	}
	files := map[string]string{
		"domains/rl/domain.yaml":  "id: rl\nname: Rate limited\nevaluator_id: number\nenabled: true\n",
		"domains/rl/level-1.yaml": yaml,
	}
	var n atomic.Int64
	e := newEngineEnv(t, engineConfig{files: files, concurrency: bound,
		llm: llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
			if i := n.Add(1); i <= phase && i%2 == 1 {
				return &llmtest.Reply{Status: http.StatusTooManyRequests, Content: "Rate limit reached"}
			}
			return nil
		}},
		client: func(o *llm.Options) { o.MaxConcurrency = bound; o.Name = "fake" }})
	type rateLimit struct {
		Concurrency    int     `json:"concurrency"`
		ConcurrencyMax int     `json:"concurrency_max"`
		Throttled      bool    `json:"throttled"`
		WaitingS       float64 `json:"waiting_s"`
	}
	type status struct {
		Status    string               `json:"status"`
		RateLimit map[string]rateLimit `json:"rate_limit"`
	}
	var st status
	must(t, e.get("/api/status"), http.StatusOK).decode(t, &st)
	if rl, ok := st.RateLimit["fake"]; !ok || rl.Concurrency != bound || rl.ConcurrencyMax != bound || rl.Throttled {
		t.Fatalf("idle status: %+v", st)
	}
	id := e.start(map[string]any{"retries": 0, "domains": []string{"rl"}})
	lowest, throttled := bound, false
	deadline := time.Now().Add(runWait)
	for {
		must(t, e.get("/api/status"), http.StatusOK).decode(t, &st)
		if st.Status != "running" {
			break
		}
		rl := st.RateLimit["fake"]
		lowest, throttled = min(lowest, rl.Concurrency), throttled || rl.Throttled
		if time.Now().After(deadline) {
			t.Fatal("the run did not end")
		}
	}
	if lowest >= bound || !throttled {
		t.Errorf("during the run: lowest concurrency %d, throttled %v", lowest, throttled)
	}
	d := e.waitRunStatus(id, "completed")
	if len(d.TestResults) != tests {
		t.Fatalf("%d results, want %d", len(d.TestResults), tests)
	}
	for _, r := range d.TestResults {
		if r.Status != "passed" {
			t.Fatalf("%+v, want passed", r)
		}
	}
	must(t, e.get("/api/status"), http.StatusOK).decode(t, &st)
	if rl := st.RateLimit["fake"]; rl.Concurrency != bound || rl.Throttled || rl.WaitingS <= 0 {
		t.Errorf("after the run: %+v", rl)
	}
}
