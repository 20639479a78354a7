package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// runInfo is the part of run_info these tests read.
type runInfo struct {
	RunID        string   `json:"run_id"`
	Status       string   `json:"status"`
	TotalTests   int      `json:"total_tests"`
	DoneTests    int      `json:"done_tests"`
	Passed       int      `json:"passed"`
	Failed       int      `json:"failed"`
	Errors       int      `json:"errors"`
	Complete     bool     `json:"complete"`
	Error        string   `json:"error"`
	OverallScore *float64 `json:"overall_score"`
	Config       *struct {
		Model           string  `json:"model"`
		BaseURL         string  `json:"base_url"`
		Concurrency     int     `json:"concurrency"`
		TimeoutS        float64 `json:"timeout_s"`
		Retries         int     `json:"retries"`
		DefinitionsHash string  `json:"definitions_hash"`
		GauntletVersion string  `json:"gauntlet_version"`
	} `json:"config"`
}

func (e *testEnv) runInfo(id string) runInfo {
	e.t.Helper()
	var d struct {
		RunInfo     runInfo          `json:"run_info"`
		TestResults []map[string]any `json:"test_results"`
	}
	must(e.t, e.get("/api/run/"+id), http.StatusOK).decode(e.t, &d)
	if len(d.TestResults) != d.RunInfo.DoneTests {
		e.t.Errorf("run %s: %d results, done_tests %d", id, len(d.TestResults), d.RunInfo.DoneTests)
	}
	return d.RunInfo
}

// TestResumeRun stops a run, resumes it over HTTP into the same run, and
// checks the failure cases of the resume endpoint.
func TestResumeRun(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 100 * time.Millisecond}, concurrency: 1})
	id := e.start(map[string]any{"model_name": "resumable", "timeout_s": 9, "retries": 1})
	harnesstest.Eventually(t, runWait, "two finished tests", func() bool { return e.status().Progress >= 2 })
	must(t, e.post("/api/stop", nil), http.StatusOK)
	e.waitIdle()
	stopped := e.runInfo(id)
	if stopped.Status != "stopped" || stopped.Complete || stopped.DoneTests < 2 || stopped.DoneTests >= exampleTests ||
		stopped.TotalTests != exampleTests {
		t.Fatalf("stopped run: %+v", stopped)
	}
	if c := stopped.Config; c == nil || c.TimeoutS != 9 || c.Retries != 1 || c.BaseURL != e.mock.URL ||
		c.Concurrency != 1 || len(c.DefinitionsHash) != 64 || c.GauntletVersion == "" {
		t.Errorf("config: %+v", stopped.Config)
	}
	var hist struct {
		Runs []runInfo `json:"runs"`
	}
	must(t, e.get("/api/history"), http.StatusOK).decode(t, &hist)
	if len(hist.Runs) != 1 || hist.Runs[0].Complete || hist.Runs[0].DoneTests != stopped.DoneTests {
		t.Errorf("history: %+v", hist.Runs)
	}

	mustProblem(t, e.post("/api/run/nope/resume", nil), http.StatusNotFound)
	var out struct {
		Success bool   `json:"success"`
		RunID   string `json:"run_id"`
	}
	must(t, e.post("/api/run/"+id+"/resume", nil), http.StatusOK).decode(t, &out)
	if !out.Success || out.RunID != id {
		t.Fatalf("resume: %+v", out)
	}
	mustProblem(t, e.post("/api/run/"+id+"/resume", nil), http.StatusConflict)
	e.waitIdle()
	done := e.runInfo(id)
	if done.Status != "completed" || done.DoneTests != exampleTests || done.Errors != 0 || !done.Complete {
		t.Fatalf("resumed run: %+v", done)
	}
	mustProblem(t, e.post("/api/run/"+id+"/resume", nil), http.StatusUnprocessableEntity)

	// The definitions the run used.
	var defs struct {
		Domains []map[string]any `json:"domains"`
		Tests   []map[string]any `json:"tests"`
	}
	must(t, e.get("/api/run/"+id+"/definitions"), http.StatusOK).decode(t, &defs)
	if len(defs.Domains) != 3 || len(defs.Tests) != exampleTests {
		t.Errorf("definitions: %d domains, %d tests", len(defs.Domains), len(defs.Tests))
	}
	mustProblem(t, e.get("/api/run/nope/definitions"), http.StatusNotFound)
}

// TestStartBounds: a run's own request bounds are checked.
func TestStartBounds(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	for _, body := range []map[string]any{{"timeout_s": -1}, {"timeout_s": 7200}, {"retries": -1}, {"retries": 11}, {"retries": "x"}} {
		mustProblem(t, e.post("/api/start", body), http.StatusUnprocessableEntity)
	}
}
