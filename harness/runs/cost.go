package runs

import (
	"context"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
)

// Tokens are the four token counts of results, a cell or a run: the
// prompt tokens (the cached ones included), the completion tokens (the
// reasoning ones included), and those two parts.
type Tokens struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Cached     int64 `json:"cached"`
	Reasoning  int64 `json:"reasoning"`
}

// Spend is what results cost, summed as cells and runs keep it: their
// cost in US dollars (every priced call: the model's and a judge's), the
// part of it the judge's calls cost, how many results had a price at
// all, and their tokens (judge calls included).
type Spend struct {
	CostUSD      float64
	JudgeCostUSD float64
	Priced       int
	Tokens       Tokens
}

// SpendOf is what one result spent.
func SpendOf(r *Result) Spend {
	s := Spend{Tokens: Tokens{Prompt: int64(r.PromptTokens), Completion: int64(r.CompletionTokens),
		Cached: int64(r.CachedTokens), Reasoning: int64(r.ReasoningTokens)}}
	if r.JudgeCostUSD != nil {
		s.JudgeCostUSD = *r.JudgeCostUSD
		s.CostUSD = *r.JudgeCostUSD
		s.Priced = 1
	}
	if r.CostUSD != nil {
		s.CostUSD = *r.CostUSD
		s.Priced = 1
	}
	return s
}

// Add adds o to s.
func (s *Spend) Add(o Spend) {
	s.CostUSD += o.CostUSD
	s.JudgeCostUSD += o.JudgeCostUSD
	s.Priced += o.Priced
	s.Tokens.Prompt += o.Tokens.Prompt
	s.Tokens.Completion += o.Tokens.Completion
	s.Tokens.Cached += o.Tokens.Cached
	s.Tokens.Reasoning += o.Tokens.Reasoning
}

// Costs returns the cost and judge cost as cells and runs show them:
// null when no result had a price.
func (s Spend) Costs() (cost, judge *float64) {
	if s.Priced == 0 {
		return nil, nil
	}
	c, j := s.CostUSD, s.JudgeCostUSD
	return &c, &j
}

// spendColumns are the counters of a cell's or a run's row that move with
// each result stored (SpendOf), in every path that stores results, so
// that cells and runs carry their cost and tokens without a read of their
// results. They are never recounted: a resume deletes its run's error
// results, not the money they cost.
type spendColumns struct {
	CostUSD          float64 `bun:"cost_usd,notnull"`
	JudgeCostUSD     float64 `bun:"judge_cost_usd,notnull"`
	Priced           int     `bun:"priced,notnull"`
	PromptTokens     int64   `bun:"prompt_tokens,notnull"`
	CompletionTokens int64   `bun:"completion_tokens,notnull"`
	CachedTokens     int64   `bun:"cached_tokens,notnull"`
	ReasoningTokens  int64   `bun:"reasoning_tokens,notnull"`
}

func (c spendColumns) spend() Spend {
	return Spend{CostUSD: c.CostUSD, JudgeCostUSD: c.JudgeCostUSD, Priced: c.Priced,
		Tokens: Tokens{Prompt: c.PromptTokens, Completion: c.CompletionTokens, Cached: c.CachedTokens, Reasoning: c.ReasoningTokens}}
}

// moveSpend adds s to the spend counters an update of a cell or a run
// row sets.
func moveSpend(q *bun.UpdateQuery, s Spend) *bun.UpdateQuery {
	return q.Set("cost_usd = cost_usd + ?", s.CostUSD).Set("judge_cost_usd = judge_cost_usd + ?", s.JudgeCostUSD).
		Set("priced = priced + ?", s.Priced).
		Set("prompt_tokens = prompt_tokens + ?", s.Tokens.Prompt).
		Set("completion_tokens = completion_tokens + ?", s.Tokens.Completion).
		Set("cached_tokens = cached_tokens + ?", s.Tokens.Cached).
		Set("reasoning_tokens = reasoning_tokens + ?", s.Tokens.Reasoning)
}

// moveRunSpend adds what results spent to their runs' counters, a run at
// a time in key order.
func moveRunSpend(ctx context.Context, tx bun.Tx, results []Result) error {
	by := map[string]*Spend{}
	var ids []string
	for i := range results {
		r := &results[i]
		s := by[r.RunID]
		if s == nil {
			s = &Spend{}
			by[r.RunID] = s
			ids = append(ids, r.RunID)
		}
		s.Add(SpendOf(r))
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, err := moveSpend(tx.NewUpdate().Model((*runRow)(nil)), *by[id]).Where("run_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("count the cost of run %s: %w", id, err)
		}
	}
	return nil
}
