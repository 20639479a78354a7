package runs

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestCountedSpendMatchesRows fills three runs with priced, unpriced and
// judged results, through SaveBatch (the engine's writer), RecordResults
// (the queue's grouped writes) and RecordResult (one queued result), and
// checks that every cell's and run's cost, judge cost and four token
// counts are the sums of its rows', with no read of them.
func TestCountedSpendMatchesRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	keys := []CellKey{{Domain: "a", Level: 1, Tests: 6}, {Domain: "a", Level: 2, Tests: 6}, {Domain: "b", Level: 1, Tests: 6}}
	ids := []string{"engine", "grouped", "single"}
	for _, id := range ids {
		if err := s.CreateRun(ctx, Info{RunID: id, StartedAt: "2026-01-02 03:04:05", ModelName: "m", Model: "m",
			Status: StatusRunning, TotalTests: 18, Domains: []string{"a", "b"}}, keys); err != nil {
			t.Fatal(err)
		}
	}
	var all []Result
	for ki, k := range keys {
		for j := range 5 { // the last test of each cell never finishes
			r := Result{TestID: fmt.Sprintf("%s-%d-%d", k.Domain, k.Level, j), Domain: k.Domain, Level: k.Level, Name: "n",
				Status: []string{TestPassed, TestFailed, TestError}[j%3], ModelName: "m", CreatedAt: "2026-01-02 03:04:06",
				PromptTokens: 100*j + ki, CompletionTokens: 10 * j, CachedTokens: 7 * j, ReasoningTokens: j}
			if j%2 == 0 { // priced
				c := 0.001*float64(j) + 0.5*float64(ki)
				r.CostUSD = &c
			}
			if j == 3 || ki == 2 && j == 1 { // judged; on the last cell without a price of the model's
				jc := 0.0003 * float64(j+1)
				r.JudgeCostUSD = &jc
			}
			all = append(all, r)
		}
	}
	for from := 0; from < len(all); from += 4 {
		batch := all[from:min(from+4, len(all))]
		for _, id := range ids {
			rs := make([]Result, len(batch))
			for i, r := range batch {
				r.RunID = id
				rs[i] = r
			}
			switch id {
			case "engine":
				err = s.SaveBatch(ctx, rs, nil)
			case "grouped":
				_, errs := s.RecordResults(ctx, rs, nil)
				err = errs[0]
			case "single":
				for _, r := range rs {
					if _, err = s.RecordResult(ctx, r, nil); err != nil {
						break
					}
				}
			}
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
	}
	b := sqldb.Bun(db)
	type sums struct {
		Cost, Judge                                   float64
		Priced                                        int
		Prompt, Completion, Cached, Reasoning, Number int64
	}
	rowSums := func(where string, args ...any) sums {
		var out sums
		if err := b.NewSelect().Model((*resultRow)(nil)).
			ColumnExpr(`COALESCE(SUM(CASE WHEN cost_usd IS NOT NULL THEN cost_usd ELSE COALESCE(judge_cost_usd, 0) END), 0)`).
			ColumnExpr(`COALESCE(SUM(COALESCE(judge_cost_usd, 0)), 0)`).
			ColumnExpr(`COUNT(CASE WHEN cost_usd IS NOT NULL OR judge_cost_usd IS NOT NULL THEN 1 END)`).
			ColumnExpr(`COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)`).
			ColumnExpr(`COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(reasoning_tokens), 0), COUNT(*)`).
			Where(where, args...).Scan(ctx, &out.Cost, &out.Judge, &out.Priced, &out.Prompt, &out.Completion, &out.Cached, &out.Reasoning, &out.Number); err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(what string, cost, judge *float64, tokens Tokens, want sums) {
		t.Helper()
		if want.Number == 0 {
			t.Fatalf("%s: no rows", what)
		}
		if (cost == nil) != (want.Priced == 0) || cost != nil && (math.Abs(*cost-want.Cost) > 1e-9 || math.Abs(*judge-want.Judge) > 1e-9) ||
			tokens != (Tokens{want.Prompt, want.Completion, want.Cached, want.Reasoning}) {
			t.Errorf("%s: cost %v, judge %v, tokens %+v; the rows say %+v", what, cost, judge, tokens, want)
		}
	}
	for _, id := range ids {
		in, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		check(id, in.CostUSD, in.JudgeCostUSD, in.Tokens, rowSums("run_id = ?", id))
		m, err := s.Matrix(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			c := m[k.Domain][fmt.Sprint(k.Level)]
			check(fmt.Sprintf("%s %s/%d", id, k.Domain, k.Level), c.CostUSD, c.JudgeCostUSD, c.Tokens,
				rowSums("run_id = ? AND domain = ? AND level = ?", id, k.Domain, k.Level))
		}
	}
}
