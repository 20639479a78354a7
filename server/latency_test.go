package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestLatencyOverHTTP: a streamed run (stream: true) on an endpoint
// answering after 30 ms serves results with ttft_ms and
// output_tokens_per_s, and cells with latency_p50_ms, latency_p95_ms and
// ttft_p50_ms, in the stored run, its matrix and the live matrix, and
// run_info the same over the whole run; a run
// not streamed serves ttft_ms and ttft_p50_ms as null.
func TestLatencyOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 30 * time.Millisecond}})
	type cell struct {
		Status       string `json:"status"`
		LatencyP50MS *int64 `json:"latency_p50_ms"`
		LatencyP95MS *int64 `json:"latency_p95_ms"`
		TTFTP50MS    *int64 `json:"ttft_p50_ms"`
	}
	for _, stream := range []bool{true, false} {
		id := e.runToEnd(map[string]any{"stream": stream, "domains": []string{"arithmetic"}})
		var run struct {
			RunInfo struct {
				LatencyP50MS *int64 `json:"latency_p50_ms"`
				LatencyP95MS *int64 `json:"latency_p95_ms"`
				TTFTP50MS    *int64 `json:"ttft_p50_ms"`
			} `json:"run_info"`
			TestResults []struct {
				TestID           string   `json:"test_id"`
				Status           string   `json:"status"`
				TTFTMS           *int64   `json:"ttft_ms"`
				OutputTokensPerS *float64 `json:"output_tokens_per_s"`
			} `json:"test_results"`
		}
		must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &run)
		if len(run.TestResults) == 0 {
			t.Fatal("no results")
		}
		if ri := run.RunInfo; ri.LatencyP50MS == nil || *ri.LatencyP50MS < 30 || ri.LatencyP95MS == nil || stream != (ri.TTFTP50MS != nil) {
			t.Errorf("stream %v: run_info latency %v/%v/%v", stream, ri.LatencyP50MS, ri.LatencyP95MS, ri.TTFTP50MS)
		}
		for _, r := range run.TestResults {
			if r.OutputTokensPerS == nil || *r.OutputTokensPerS <= 0 || stream != (r.TTFTMS != nil) || stream && *r.TTFTMS < 30 {
				t.Errorf("stream %v: %s ttft %v, %v tokens/s", stream, r.TestID, r.TTFTMS, r.OutputTokensPerS)
			}
		}
		var stored struct {
			Domains map[string]map[string]cell `json:"domains"`
		}
		must(t, e.get("/api/run/"+id+"/matrix"), http.StatusOK).decode(t, &stored)
		var live struct {
			Domains map[string]map[string]cell `json:"domains"`
		}
		must(t, e.get("/api/test_matrix"), http.StatusOK).decode(t, &live)
		if len(stored.Domains["arithmetic"]) == 0 {
			t.Fatalf("matrix %+v", stored)
		}
		for level, c := range stored.Domains["arithmetic"] {
			if c.LatencyP50MS == nil || *c.LatencyP50MS < 30 || c.LatencyP95MS == nil || *c.LatencyP95MS < *c.LatencyP50MS ||
				stream != (c.TTFTP50MS != nil) || stream && *c.TTFTP50MS < 30 {
				t.Errorf("stream %v: cell %s %+v (p50 %v, p95 %v, ttft %v)", stream, level, c, c.LatencyP50MS, c.LatencyP95MS, c.TTFTP50MS)
			}
			if l := live.Domains["arithmetic"][level]; *l.LatencyP50MS != *c.LatencyP50MS || *l.LatencyP95MS != *c.LatencyP95MS {
				t.Errorf("live cell %s %+v; stored %+v", level, l, c)
			}
		}
	}
}
