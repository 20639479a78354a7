package engine

import (
	"context"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// A result's cost is computed from its calls, each at the price of the
// model reference it asked (a judge's its own), with the prices the run
// recorded when it started (runs.Config.Pricing): a resumed run or a
// worker prices its calls as the run's start did, whatever pricing.yaml
// says now. A call answered from the response cache sent nothing and
// costs nothing.

// runPricing returns the prices of the models a run uses, from the
// definitions' price list: its model's, more's (its simulator model) and
// each judge's (an evaluator's config "model"); nil when none has a
// price.
func runPricing(defs *harness.Snapshot, model string, more ...string) map[string]harness.Price {
	if defs == nil || defs.Pricing == nil {
		return nil
	}
	refs := append([]string{model}, more...)
	for _, e := range defs.Evaluators {
		if m, ok := e.Config["model"].(string); ok && m != "" {
			refs = append(refs, m)
		}
	}
	return defs.Pricing.Only(refs...)
}

// priceResult sets a result's cost, judge cost and cached and reasoning
// tokens from its calls. model is the model under test: the result has a
// cost (null otherwise) when it has a price, or when one of the calls
// made for the test (not a judge's) had one.
func priceResult(res *runs.Result, prices map[string]harness.Price, model string) {
	var cost, judge float64
	_, priced := prices[model]
	judged := false
	res.CachedTokens, res.ReasoningTokens = 0, 0
	for _, c := range res.Calls {
		res.CachedTokens += c.CachedTokens
		res.ReasoningTokens += c.ReasoningTokens
		p, ok := prices[c.Model]
		if !ok || c.Status == harness.AttemptCached {
			continue
		}
		usd := p.Cost(harness.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
			CachedTokens: c.CachedTokens, ReasoningTokens: c.ReasoningTokens}, false)
		cost += usd
		if c.Purpose == runs.CallJudge || c.Purpose == runs.CallSimulator {
			judge += usd
			judged = true
		} else {
			priced = true
		}
	}
	res.CostUSD, res.JudgeCostUSD = nil, nil
	if priced {
		res.CostUSD = &cost
	}
	if judged {
		res.JudgeCostUSD = &judge
	}
}

// runTestIn is runTest with the context of the test's requests: the run's
// for a run executed in this process, a queued job's for one a worker
// executes. The result is priced (priceResult) and its speed measured
// (runs.SetSpeed).
func (r *run) runTestIn(ctx context.Context, j *job) (runs.Result, bool) {
	res, ok := r.testIn(ctx, j)
	if ok {
		r.mu.Lock()
		var prices map[string]harness.Price
		if r.info.Config != nil {
			prices = r.info.Config.Pricing
		}
		model, streamed := r.info.Model, r.stream
		r.mu.Unlock()
		priceResult(&res, prices, model)
		runs.SetSpeed(&res, streamed)
	}
	return res, ok
}

// spendOfCell is what a stored cell says was spent.
func spendOfCell(c runs.Cell) runs.Spend {
	s := runs.Spend{Tokens: c.Tokens}
	if c.CostUSD != nil {
		s.CostUSD, s.Priced = *c.CostUSD, 1
	}
	if c.JudgeCostUSD != nil {
		s.JudgeCostUSD = *c.JudgeCostUSD
	}
	return s
}

// spendOfRun is what a stored run says was spent.
func spendOfRun(in runs.Info) runs.Spend {
	return spendOfCell(runs.Cell{CostUSD: in.CostUSD, JudgeCostUSD: in.JudgeCostUSD, Tokens: in.Tokens})
}

// setSpend puts s into a cell's or a run's costs and tokens.
func setSpend(s runs.Spend, cost, judge **float64, tokens *runs.Tokens) {
	*cost, *judge = s.Costs()
	*tokens = s.Tokens
}
