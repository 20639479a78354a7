package server_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// judgedFiles add a domain "judged" whose one test is graded by a judge
// (the run's own model, as judge.Options{} has it).
var judgedFiles = map[string]string{
	"evaluators/graded.yaml":     "id: graded\nname: Graded\ntype: judge\nconfig:\n  rubric: The sum must be right.\n",
	"domains/judged/domain.yaml": "id: judged\nname: Judged\nevaluator_id: graded\nenabled: true\n",
	"domains/judged/level-1.yaml": "tests:\n  - id: judged-sum\n    name: Judged sum\n    prompt: What is 6 + 1?\n" +
		"    expected:\n      answer: '7'\n      type: numeric\n",
}

// endpointCounter counts what reaches the fake endpoint: judge requests
// (answered "Score: 0.9") apart from the model's.
type endpointCounter struct {
	model, judge atomic.Int64
	latency      atomic.Int64 // a delay of the model's requests, in ns
}

func (c *endpointCounter) respond(req *llmtest.Request) *llmtest.Reply {
	if len(req.Messages) > 0 && req.Messages[0].Content == judge.SystemPrompt {
		c.judge.Add(1)
		return &llmtest.Reply{Content: "Reasonable.\nScore: 0.9"}
	}
	c.model.Add(1)
	if d := time.Duration(c.latency.Load()); d > 0 {
		time.Sleep(d) // the fake endpoint's latency, not a synchronisation
	}
	return nil
}

// rescoreInfo is the part of run_info the cache and rescore tests read.
type rescoreInfo struct {
	RunID        string `json:"run_id"`
	Status       string `json:"status"`
	TotalTests   int    `json:"total_tests"`
	Passed       int    `json:"passed"`
	Failed       int    `json:"failed"`
	Errors       int    `json:"errors"`
	CacheHits    *int   `json:"cache_hits"`
	RescoredFrom *string
	Config       struct {
		Model string `json:"model"`
		Cache *bool  `json:"cache"`
	} `json:"config"`
}

func (e *testEnv) rescoreInfo(id string) (rescoreInfo, string, map[string]map[string]any) {
	e.t.Helper()
	var d struct {
		RunInfo struct {
			rescoreInfo
			RescoredFrom *string `json:"rescored_from"`
		} `json:"run_info"`
		TestResults []map[string]any `json:"test_results"`
	}
	must(e.t, e.get("/api/run/"+id), http.StatusOK).decode(e.t, &d)
	if d.RunInfo.RescoredFrom == nil || d.RunInfo.CacheHits == nil || d.RunInfo.Config.Cache == nil {
		e.t.Fatalf("run %s: rescored_from, cache_hits or config.cache missing", id)
	}
	byTest := map[string]map[string]any{}
	for _, r := range d.TestResults {
		byTest[r["test_id"].(string)] = r
	}
	return d.RunInfo.rescoreInfo, *d.RunInfo.RescoredFrom, byTest
}

// TestCacheAndRescore: a cached run answers from the cache the second
// time (cache_hits), asking the endpoint only the judge; a rescore (201)
// scores the stored responses with today's definitions into a new run
// that names its source, asking only the judge; the failure cases answer
// 404, 409 and 422.
func TestCacheAndRescore(t *testing.T) {
	t.Parallel()
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(judge.Type, judge.New(judge.Options{})); err != nil {
		t.Fatal(err)
	}
	c := &endpointCounter{}
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: c.respond}, files: judgedFiles, registry: reg})

	first := e.runToEnd(map[string]any{"cache": true, "domains": []string{"arithmetic", "judged"}})
	info, from, res := e.rescoreInfo(first)
	model, judged := c.model.Load(), c.judge.Load()
	if info.Status != "completed" || *info.CacheHits != 0 || !*info.Config.Cache || from != "" || judged != 1 || model == 0 {
		t.Fatalf("first cached run = %+v, rescored_from %q; %d model and %d judge requests", info, from, model, judged)
	}
	if res["judged-sum"]["status"] != "passed" || res["judged-sum"]["score"] != 0.9 {
		t.Fatalf("judged test = %v", res["judged-sum"])
	}
	second := e.runToEnd(map[string]any{"cache": true, "domains": []string{"arithmetic", "judged"}})
	info, _, _ = e.rescoreInfo(second)
	if got := c.model.Load() - model; got != 0 || int64(*info.CacheHits) != model || c.judge.Load()-judged != 1 {
		t.Errorf("second cached run: %d model requests, cache_hits %d (want 0 and %d), %d judge requests (want 1)",
			got, *info.CacheHits, model, c.judge.Load()-judged)
	}

	// Today's expected answer of one test changes: the rescore scores it
	// differently, asking only the judge.
	must(t, e.put("/api/settings/tests/add-small", map[string]any{"expected": map[string]any{"answer": "6", "type": "numeric"}}), http.StatusOK)
	model, judged = c.model.Load(), c.judge.Load()
	var out struct {
		RunID string `json:"run_id"`
	}
	must(t, e.post("/api/run/"+first+"/rescore", nil), http.StatusCreated).decode(t, &out)
	if out.RunID == "" || out.RunID == first {
		t.Fatalf("rescore answered %+v", out)
	}
	e.waitIdle()
	info, from, res = e.rescoreInfo(out.RunID)
	_, _, src := e.rescoreInfo(first)
	if from != first || info.Status != "completed" || info.TotalTests != len(src) || *info.Config.Cache {
		t.Errorf("rescore = %+v, rescored_from %q", info, from)
	}
	if got := c.model.Load() - model; got != 0 {
		t.Errorf("the rescore asked the model %d times", got)
	}
	if got := c.judge.Load() - judged; got != 1 {
		t.Errorf("the rescore asked the judge %d times; want 1", got)
	}
	if src["add-small"]["status"] != "passed" || res["add-small"]["status"] != "failed" || res["add-small"]["response"] != src["add-small"]["response"] {
		t.Errorf("add-small: source %v, rescore %v", src["add-small"], res["add-small"])
	}
	for id, r := range src {
		if id != "add-small" && res[id]["status"] != r["status"] {
			t.Errorf("%s: rescored %v, source %v", id, res[id]["status"], r["status"])
		}
	}
	var hist struct {
		Runs []struct {
			RunID        string `json:"run_id"`
			RescoredFrom string `json:"rescored_from"`
		} `json:"runs"`
	}
	must(t, e.get("/api/history"), http.StatusOK).decode(t, &hist)
	if len(hist.Runs) != 3 || hist.Runs[0].RunID != out.RunID || hist.Runs[0].RescoredFrom != first {
		t.Errorf("history = %+v", hist.Runs)
	}

	// Failure cases.
	mustProblem(t, e.post("/api/run/no-such-run/rescore", nil), http.StatusNotFound)
	empty := "empty-run"
	if err := e.runs.CreateRun(context.Background(), runs.Info{RunID: empty, StartedAt: runs.Now(), ModelName: "x", Model: "m",
		Status: runs.StatusRunning, Domains: []string{}}, nil); err != nil {
		t.Fatal(err)
	}
	mustProblem(t, e.post("/api/run/"+empty+"/rescore", nil), http.StatusConflict) // running elsewhere
	now := runs.Now()
	if _, err := e.runs.FinishRun(context.Background(), runs.Info{RunID: empty, Status: runs.StatusStopped, CompletedAt: &now}); err != nil {
		t.Fatal(err)
	}
	mustProblem(t, e.post("/api/run/"+empty+"/rescore", nil), http.StatusUnprocessableEntity, "body.run_id")

	c.latency.Store(int64(time.Second))
	active := e.start(map[string]any{"domains": []string{"arithmetic"}})
	harnesstest.Eventually(t, runWait, "the run to be running", func() bool { return e.status().Status == "running" })
	mustProblem(t, e.post("/api/run/"+first+"/rescore", nil), http.StatusConflict)
	mustProblem(t, e.post("/api/run/"+active+"/rescore", nil), http.StatusConflict)
	c.latency.Store(0)
	must(t, e.post("/api/stop", nil), http.StatusOK)
	e.waitIdle()
}
