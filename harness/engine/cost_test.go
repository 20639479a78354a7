package engine_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// costJudge asks its own model (judgeModel) to grade the answer, and
// remembers every message it was shown.
type costJudge struct {
	mu   sync.Mutex
	seen []harness.Message
}

const judgeModel = "judge-model"

func (j *costJudge) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	j.mu.Lock()
	j.seen = append(j.seen, req.Messages...)
	j.mu.Unlock()
	resp, err := req.Client.Chat(ctx, &harness.ChatRequest{Model: judgeModel, Messages: []harness.Message{
		{Role: harness.RoleUser, Content: judgeMark + " grade this: " + req.Response}}})
	if err != nil {
		return nil, err
	}
	ok := strings.Contains(req.Response, req.Test.Expected.Answer)
	return &harness.EvalResult{Score: map[bool]float64{true: 1}[ok], Passed: ok, Usage: resp.Usage}, nil
}

// thinking adds a reasoning part to every answer of its model, as a
// provider that returns thinking blocks does.
type thinking struct{ next harness.ChatModel }

const thought = "Let me add the numbers\x00 carefully \xff."

func (m thinking) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	resp, err := m.next.Chat(ctx, req)
	if err == nil && req.Model != judgeModel {
		resp.Message.Parts = []harness.Part{{Kind: harness.PartReasoning, Text: thought, Signature: "sig-1"}}
	}
	return resp, err
}

// usageOf is the usage the fake endpoint reports: the model's answers
// with cached and reasoning tokens, the judge's without.
func usageOf(req *llmtest.Request) *llmtest.Reply {
	if strings.HasPrefix(req.LastUser(), judgeMark) {
		return &llmtest.Reply{Content: "Score: 1", Usage: &harness.Usage{PromptTokens: 200, CompletionTokens: 10, TotalTokens: 210}}
	}
	return &llmtest.Reply{Content: "The answer is " + sumOf(req.LastUser()) + ".",
		Usage: &harness.Usage{PromptTokens: 1000, CompletionTokens: 300, TotalTokens: 1300, CachedTokens: 400, ReasoningTokens: 120}}
}

// sumOf answers "What is A + B?" as the fake endpoint does.
func sumOf(prompt string) string {
	var a, b int
	i := strings.Index(prompt, "What is ")
	if i < 0 {
		return "?"
	}
	if _, err := fmt.Sscanf(prompt[i:], "What is %d + %d?", &a, &b); err != nil {
		return "?"
	}
	return strconv.Itoa(a + b)
}

func costDefs() *defs {
	d := newDefs()
	d.sums("math", 1, 3, 0)
	d.domain("math", "", true)
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "judged", Name: "Judged", Type: "costjudge"})
	d.domain("j", "", true)
	d.test(harness.Test{ID: "j-t", DomainID: "j", Level: 1, Name: "Judged", EvaluatorID: "judged",
		Prompt: "[j-t] What is 4 + 4?", Expected: harness.Expected{Answer: "8", Type: "numeric"}})
	return d
}

func costFixture(t *testing.T, d *defs) (*fixture, *costJudge) {
	t.Helper()
	reg := harness.NewRegistry()
	judge := &costJudge{}
	if err := reg.RegisterEvaluator("costjudge", judge); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{snap: d.snap(), registry: reg, anyDB: true, llm: llmtest.Options{Respond: usageOf},
		model: func(m harness.ChatModel) harness.ChatModel { return thinking{m} }})
	return f, judge
}

// TestCallsRecordFourTokenCountsAndReasoning: each call records the four
// token counts its provider reported and the model it asked (a judge's
// its own); the model's reasoning is kept in the stored transcript, byte
// for byte, and never shown to the evaluator.
func TestCallsRecordFourTokenCountsAndReasoning(t *testing.T) {
	t.Parallel()
	f, judge := costFixture(t, costDefs())
	info, res := runAndWait(t, f, engine.StartRequest{Model: "m1"})
	if info.DoneTests != 4 {
		t.Fatalf("run %+v", info)
	}
	for id, r := range res {
		if len(r.Calls) == 0 {
			t.Fatalf("%s: no calls", id)
		}
		c := r.Calls[0]
		if c.Model != "m1" || c.PromptTokens != 1000 || c.CompletionTokens != 300 || c.CachedTokens != 400 || c.ReasoningTokens != 120 {
			t.Errorf("%s: first call %+v; want m1 with 1000/300/400/120 tokens", id, c)
		}
		var answer *harness.Message
		for i := range r.Transcript {
			if m := &r.Transcript[i]; m.Role == harness.RoleAssistant && !m.Pass2 {
				answer = &m.Message
			}
		}
		if answer == nil || len(answer.Parts) != 1 || answer.Parts[0].Text != thought || answer.Parts[0].Signature != "sig-1" ||
			answer.Parts[0].Kind != harness.PartReasoning {
			t.Errorf("%s: the answer's parts = %+v; want the reasoning, byte for byte", id, answer)
		}
		if answer != nil && strings.Contains(answer.Content, "carefully") {
			t.Errorf("%s: reasoning in the content %q", id, answer.Content)
		}
	}
	j := res["j-t"]
	if len(j.Calls) != 2 || j.Calls[1].Purpose != "judge" || j.Calls[1].Model != judgeModel || j.Calls[1].PromptTokens != 200 ||
		j.Calls[1].CachedTokens != 0 {
		t.Errorf("judged calls %+v; want the judge's own model and tokens", j.Calls)
	}
	judge.mu.Lock()
	defer judge.mu.Unlock()
	if len(judge.seen) == 0 {
		t.Fatal("the judge saw no messages")
	}
	for _, m := range judge.seen {
		if len(m.Parts) > 0 {
			t.Errorf("the evaluator was shown reasoning: %+v", m)
		}
	}
}

// TestCostOfARun: with pricing.yaml's prices, each result costs what the
// formula says of its calls, the judge's at the judge's price and apart;
// cells and the run sum them, on the live matrix as in the store; a model
// without a price has no cost, its judge's still counted apart; the
// prices used are in the run's config, only those of the models it used.
func TestCostOfARun(t *testing.T) {
	t.Parallel()
	half := 0.25
	d := costDefs()
	d.s.Evaluators[len(d.s.Evaluators)-1].Config = map[string]any{"model": judgeModel}
	d.s.Pricing = &harness.Pricing{Models: map[string]harness.Price{
		"m1":       {Input: 3, Output: 15, CachedInput: &half},
		judgeModel: {Input: 1, Output: 2},
		"unused":   {Input: 100, Output: 100},
	}}
	f, _ := costFixture(t, d)
	info, res := runAndWait(t, f, engine.StartRequest{Model: "m1"})
	model := (600*3 + 400*0.25 + 300*15) / 1e6
	judge := (200*1 + 10*2) / 1e6
	near := func(a *float64, b float64) bool { return a != nil && math.Abs(*a-b) < 1e-12 }
	for id, r := range res {
		want := model
		if id == "j-t" {
			want += judge
			if !near(r.JudgeCostUSD, judge) {
				t.Errorf("%s: judge cost %v; want %v", id, r.JudgeCostUSD, judge)
			}
		} else if r.JudgeCostUSD != nil {
			t.Errorf("%s: judge cost %v without a judge", id, *r.JudgeCostUSD)
		}
		if !near(r.CostUSD, want) || r.CachedTokens != 400 || r.ReasoningTokens != 120 {
			t.Errorf("%s: cost %v, cached %d, reasoning %d; want %v, 400, 120", id, r.CostUSD, r.CachedTokens, r.ReasoningTokens, want)
		}
	}
	total := 4*model + judge
	stored, err := f.runs.Run(context.Background(), info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string]runs.Info{"returned": info, "stored": stored} {
		if !near(in.CostUSD, total) || !near(in.JudgeCostUSD, judge) ||
			in.Tokens != (runs.Tokens{Prompt: 4200, Completion: 1210, Cached: 1600, Reasoning: 480}) {
			t.Errorf("%s run: cost %v, judge %v, tokens %+v; want %v, %v", name, in.CostUSD, in.JudgeCostUSD, in.Tokens, total, judge)
		}
	}
	if p := stored.Config.Pricing; len(p) != 2 || p["m1"].Input != 3 || *p["m1"].CachedInput != 0.25 || *p[judgeModel].BatchDiscount != 1 {
		t.Errorf("config pricing %+v; want m1's and the judge's, defaults filled in", p)
	}
	m, err := f.runs.Matrix(context.Background(), info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	live, err := f.eng.Matrix(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, mm := range map[string]runs.Matrix{"stored": m, "live": live.Domains} {
		if c := mm["math"]["1"]; !near(c.CostUSD, 3*model) || c.JudgeCostUSD == nil || *c.JudgeCostUSD != 0 || c.Tokens.Cached != 1200 {
			t.Errorf("%s math cell: cost %v, judge %v, tokens %+v", name, c.CostUSD, c.JudgeCostUSD, c.Tokens)
		}
		if c := mm["j"]["1"]; !near(c.CostUSD, model+judge) || !near(c.JudgeCostUSD, judge) || c.Tokens.Prompt != 1200 {
			t.Errorf("%s judged cell: cost %v, judge %v, tokens %+v", name, c.CostUSD, c.JudgeCostUSD, c.Tokens)
		}
	}

	// A model without a price: no cost, but its judge's still counts.
	info, res = runAndWait(t, f, engine.StartRequest{Model: "free-for-all"})
	for id, r := range res {
		if r.CostUSD != nil {
			t.Errorf("unpriced %s: cost %v; want null", id, *r.CostUSD)
		}
	}
	if !near(res["j-t"].JudgeCostUSD, judge) || !near(info.CostUSD, judge) || !near(info.JudgeCostUSD, judge) {
		t.Errorf("unpriced run: judge %v, run cost %v / %v; want the judge's %v", res["j-t"].JudgeCostUSD, info.CostUSD, info.JudgeCostUSD, judge)
	}
	if p := info.Config.Pricing; len(p) != 1 {
		t.Errorf("unpriced run's config pricing %+v; want the judge's only", p)
	}
}

// TestBudgetStopAndResume: a run whose spend reaches its budget sends no
// new request and ends stopped, its error naming the budget, with the
// tests it finished; resumed with a new budget it goes on from there;
// a budget the judge's calls alone reach (the model has no price) stops
// a run too.
func TestBudgetStopAndResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDefs()
	d.sums("math", 1, 8, 0)
	d.domain("math", "", true)
	d.s.Pricing = &harness.Pricing{Models: map[string]harness.Price{"m1": {Input: 1000, Output: 1000}}} // $1.3 a test
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 1, anyDB: true, llm: llmtest.Options{Respond: usageOf}})
	info, _ := f.wait(t, f.start(t, engine.StartRequest{Model: "m1", MaxCostUSD: 3}))
	if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "budget") || info.DoneTests != 3 ||
		info.CostUSD == nil || math.Abs(*info.CostUSD-3.9) > 1e-9 {
		t.Fatalf("run with a $3 budget: %+v; want stopped after 3 tests ($3.9), the error naming the budget", info)
	}
	if n := f.mock.Stats().ChatCompletions; n != int64(info.DoneTests) {
		t.Errorf("%d requests sent for %d tests; want none after the budget", n, info.DoneTests)
	}
	if err := f.eng.ResumeWith(ctx, info.RunID, engine.ResumeOptions{MaxCostUSD: 100}); err != nil {
		t.Fatal(err)
	}
	resumed, _ := f.wait(t, info.RunID)
	if resumed.Status != runs.StatusCompleted || resumed.DoneTests != 8 || resumed.CostUSD == nil || math.Abs(*resumed.CostUSD-8*1.3) > 1e-9 {
		t.Errorf("resumed with a new budget: %+v; want completed, 8 tests, $10.4", resumed)
	}
	if err := f.eng.ResumeWith(ctx, info.RunID, engine.ResumeOptions{MaxCostUSD: -1}); err == nil {
		t.Error("a negative budget was accepted")
	}
	if _, err := f.eng.Start(ctx, engine.StartRequest{MaxCostUSD: -1}); err == nil || !strings.Contains(err.Error(), "max_cost_usd") {
		t.Errorf("a negative budget: %v", err)
	}
}

// TestBudgetReachedByTheJudgeAlone: the model has no price, its judge
// has: the judge's calls alone spend the budget, and the run stops.
func TestBudgetReachedByTheJudgeAlone(t *testing.T) {
	t.Parallel()
	d := newDefs()
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "judged", Name: "Judged", Type: "costjudge",
		Config: map[string]any{"model": judgeModel}})
	d.domain("j", "", true)
	for i := range 6 {
		d.test(harness.Test{ID: fmt.Sprintf("j-%d", i), DomainID: "j", Level: 1, Name: "Judged", EvaluatorID: "judged",
			Prompt: fmt.Sprintf("[j-%d] What is 4 + 4?", i), Expected: harness.Expected{Answer: "8", Type: "numeric"}})
	}
	d.s.Pricing = &harness.Pricing{Models: map[string]harness.Price{judgeModel: {Input: 5000, Output: 0}}} // $1 a judgement
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator("costjudge", &costJudge{}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{snap: d.snap(), registry: reg, concurrency: 1, anyDB: true, llm: llmtest.Options{Respond: usageOf}})
	info, res := runAndWait(t, f, engine.StartRequest{Model: "unpriced", MaxCostUSD: 2})
	if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "budget") || info.DoneTests != 2 {
		t.Fatalf("run: %+v; want stopped after 2 judged tests", info)
	}
	for id, r := range res {
		if r.CostUSD != nil || r.JudgeCostUSD == nil || *r.JudgeCostUSD != 1 {
			t.Errorf("%s: cost %v, judge %v; want null and $1", id, r.CostUSD, r.JudgeCostUSD)
		}
	}
}
