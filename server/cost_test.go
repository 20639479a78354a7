package server_test

import (
	"bytes"
	"encoding/csv"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// costPricing prices the fake endpoint's model; "unused" is never asked.
const costPricing = `models:
  llmtest-model: {input: 3, output: 15, cached_input: 0.3}
  unused: {input: 100, output: 100}
`

// cachedUsage answers as the fake endpoint does, with a quarter of every
// prompt read from the cache and some reasoning.
func cachedUsage(req *llmtest.Request) *llmtest.Reply {
	return &llmtest.Reply{Content: "The answer is 4.", Usage: &harness.Usage{PromptTokens: 400, CompletionTokens: 50,
		TotalTokens: 450, CachedTokens: 100, ReasoningTokens: 20}}
}

type costCall struct {
	Model            string `json:"model"`
	Status           string `json:"status"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	CachedTokens     int    `json:"cached_tokens"`
	ReasoningTokens  int    `json:"reasoning_tokens"`
}

type costTokens struct {
	Prompt, Completion, Cached, Reasoning int64
}

// TestCostOverHTTP: a run on priced definitions answers its cost on its
// results (each the formula over its calls), its cells, its run_info
// (with the prices it used in config.pricing, only its model's), the
// live matrix and the CSV export; the prices go out with the definitions
// export, and an import with a negative price is a 422.
func TestCostOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: cachedUsage}, files: map[string]string{"pricing.yaml": costPricing}})
	id := e.start(map[string]any{"model_name": "priced", "domains": []string{"arithmetic"}})
	e.waitIdle()
	var d struct {
		RunInfo struct {
			CostUSD      *float64   `json:"cost_usd"`
			JudgeCostUSD *float64   `json:"judge_cost_usd"`
			Tokens       costTokens `json:"tokens"`
			Config       struct {
				Pricing map[string]map[string]float64 `json:"pricing"`
			} `json:"config"`
		} `json:"run_info"`
		TestResults []struct {
			TestID          string     `json:"test_id"`
			CostUSD         *float64   `json:"cost_usd"`
			CachedTokens    int        `json:"cached_tokens"`
			ReasoningTokens int        `json:"reasoning_tokens"`
			Calls           []costCall `json:"calls"`
		} `json:"test_results"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &d)
	if len(d.TestResults) == 0 {
		t.Fatal("no results")
	}
	var sum float64
	byTest := map[string]float64{}
	for _, r := range d.TestResults {
		var want float64
		for _, c := range r.Calls {
			if c.Model != llmtest.DefaultModel || c.CachedTokens != 100 || c.ReasoningTokens != 20 {
				t.Errorf("%s: call %+v", r.TestID, c)
			}
			want += (float64(c.PromptTokens-c.CachedTokens)*3 + float64(c.CachedTokens)*0.3 + float64(c.CompletionTokens)*15) / 1e6
		}
		if r.CostUSD == nil || math.Abs(*r.CostUSD-want) > 1e-12 || r.CachedTokens != 100*len(r.Calls) {
			t.Errorf("%s: cost %v, cached %d; want %v from its %d calls", r.TestID, r.CostUSD, r.CachedTokens, want, len(r.Calls))
		}
		if r.CostUSD != nil {
			sum += *r.CostUSD
			byTest[r.TestID] = *r.CostUSD
		}
	}
	ri := d.RunInfo
	if ri.CostUSD == nil || math.Abs(*ri.CostUSD-sum) > 1e-9 || ri.JudgeCostUSD == nil || *ri.JudgeCostUSD != 0 {
		t.Errorf("run cost %v, judge %v; want %v and 0", ri.CostUSD, ri.JudgeCostUSD, sum)
	}
	if ri.Tokens.Cached == 0 || ri.Tokens.Reasoning == 0 || ri.Tokens.Prompt < ri.Tokens.Cached {
		t.Errorf("run tokens %+v", ri.Tokens)
	}
	if p := ri.Config.Pricing; len(p) != 1 || p[llmtest.DefaultModel]["input"] != 3 || p[llmtest.DefaultModel]["cached_input"] != 0.3 ||
		p[llmtest.DefaultModel]["batch_discount"] != 1 {
		t.Errorf("config.pricing %+v; want the run's model only, defaults filled in", p)
	}

	var m struct {
		Domains map[string]map[string]struct {
			CostUSD *float64   `json:"cost_usd"`
			Tokens  costTokens `json:"tokens"`
		} `json:"domains"`
	}
	for _, path := range []string{"/api/run/" + id + "/matrix", "/api/test_matrix"} {
		must(t, e.get(path), http.StatusOK).decode(t, &m)
		var cells float64
		for _, c := range m.Domains["arithmetic"] {
			if c.CostUSD == nil {
				t.Fatalf("%s: a cell without a cost", path)
			}
			cells += *c.CostUSD
		}
		if math.Abs(cells-sum) > 1e-9 {
			t.Errorf("%s: cells cost %v; want %v", path, cells, sum)
		}
	}

	r := must(t, e.get("/api/run/"+id+"/export?format=csv"), http.StatusOK)
	rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	ci, ti := slices.Index(rows[0], "cost_usd"), slices.Index(rows[0], "test_id")
	for _, row := range rows[1:] {
		if v, err := strconv.ParseFloat(row[ci], 64); err != nil || math.Abs(v-byTest[row[ti]]) > 1e-12 {
			t.Errorf("CSV cost of %s = %q; want %v", row[ti], row[ci], byTest[row[ti]])
		}
	}

	var defs struct {
		Pricing struct {
			Models map[string]map[string]float64 `json:"models"`
		} `json:"pricing"`
	}
	must(t, e.get("/api/settings/export"), http.StatusOK).decode(t, &defs)
	if len(defs.Pricing.Models) != 2 || defs.Pricing.Models["unused"]["output"] != 100 {
		t.Errorf("exported pricing %+v", defs.Pricing)
	}
	mustProblem(t, e.post("/api/settings/import", map[string]any{"merge": true,
		"pricing": map[string]any{"models": map[string]any{"m": map[string]any{"input": -1, "output": 1}}}}), http.StatusUnprocessableEntity)
}

// TestBudgetOverHTTP: max_cost_usd in the start body stops the run at its
// budget, stopped with run_info.error naming it; a resume body's
// max_cost_usd lets it go on; a negative one is a 422.
func TestBudgetOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{concurrency: 1, llm: llmtest.Options{Respond: cachedUsage},
		files: map[string]string{"pricing.yaml": "models:\n  llmtest-model: {input: 2500, output: 0}\n"}}) // $1 a call
	mustProblem(t, e.post("/api/start", map[string]any{"max_cost_usd": -1}), http.StatusUnprocessableEntity)
	id := e.start(map[string]any{"domains": []string{"arithmetic"}, "max_cost_usd": 1})
	e.waitIdle()
	info := e.runInfo(id)
	// In this process the first test's $1 stops the run; with a queue
	// (PostgreSQL), the jobs workers took before the server saw the
	// spend finish too.
	if info.Status != "stopped" || !strings.Contains(info.Error, "budget") || info.DoneTests < 1 || info.DoneTests >= info.TotalTests ||
		os.Getenv(dbtest.EnvVar) == "" && info.DoneTests != 1 {
		t.Fatalf("run with a $1 budget: %+v; want stopped after its first test ($1), naming the budget", info)
	}
	mustProblem(t, e.post("/api/run/"+id+"/resume", map[string]any{"max_cost_usd": -2}), http.StatusUnprocessableEntity)
	must(t, e.post("/api/run/"+id+"/resume", map[string]any{"max_cost_usd": 100}), http.StatusOK)
	e.waitIdle()
	if info := e.runInfo(id); info.Status != "completed" || info.DoneTests != info.TotalTests || info.Error != "" {
		t.Errorf("resumed with a new budget: %+v", info)
	}
}
