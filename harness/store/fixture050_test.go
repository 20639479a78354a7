package store_test

import (
	"context"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureDatabase050 opens a database made before costs and the four
// token counts (runs schema 12): its results have no cost and no cached
// or reasoning tokens; its cells and runs count the prompt and completion
// tokens of their results, and no cost (null); a stopped run resumed
// moves them on from there.
func TestFixtureDatabase050(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.5.0.db")
	if v, err := store.Version(ctx, db, "runs"); v != 12 || err != nil {
		t.Fatalf("the fixture's runs schema version = %d, %v; want 12", v, err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the 0.5.0 database: %v", err)
	}
	list, total, err := rs.List(ctx, 100, 0)
	if err != nil || total != 4 {
		t.Fatalf("runs = %d, %v; want the fixture's 4", total, err)
	}
	byName := byLabel(t, list)
	for _, name := range []string{"fixture-complete", "fixture-arith", "fixture-stopped", "fixture-crashed"} {
		info, err := rs.Run(ctx, byName[name].RunID)
		if err != nil {
			t.Fatal(err)
		}
		results, err := rs.Results(ctx, info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var want runs.Tokens
		for _, r := range results {
			want.Prompt += int64(r.PromptTokens)
			want.Completion += int64(r.CompletionTokens)
			if r.CostUSD != nil || r.JudgeCostUSD != nil || r.CachedTokens != 0 || r.ReasoningTokens != 0 {
				t.Errorf("%s/%s: cost %v, judge %v, cached %d, reasoning %d; want none", name, r.TestID, r.CostUSD, r.JudgeCostUSD, r.CachedTokens, r.ReasoningTokens)
			}
			if len(r.Calls) == 0 || r.Calls[0].Model != "" || r.Calls[0].PromptTokens == 0 {
				t.Errorf("%s/%s: calls %+v; want the stored ones, without a model", name, r.TestID, r.Calls)
			}
		}
		if info.Tokens != want || want.Prompt == 0 && len(results) > 0 || info.CostUSD != nil || info.JudgeCostUSD != nil {
			t.Errorf("%s: tokens %+v, cost %v; want the results' %+v and no cost", name, info.Tokens, info.CostUSD, want)
		}
		m, err := rs.Matrix(ctx, info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		var cells runs.Tokens
		for _, levels := range m {
			for _, c := range levels {
				cells.Prompt += c.Tokens.Prompt
				cells.Completion += c.Tokens.Completion
				if c.CostUSD != nil {
					t.Errorf("%s: a cell with a cost %v", name, *c.CostUSD)
				}
			}
		}
		if cells != want {
			t.Errorf("%s: cells' tokens %+v; want the results' %+v", name, cells, want)
		}
	}

	// Resumed, a run moves its totals on from what was counted.
	stopped := byName["fixture-stopped"].RunID
	before, _ := rs.Run(ctx, stopped)
	if _, err := rs.ReopenRun(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	cost, judge := 0.5, 0.125
	r := runs.Result{RunID: stopped, TestID: "new-test", Domain: "arithmetic", Level: 1, Name: "n", Status: runs.TestPassed, Score: 1,
		PromptTokens: 100, CompletionTokens: 20, CachedTokens: 40, ReasoningTokens: 5, CostUSD: &cost, JudgeCostUSD: &judge, CreatedAt: runs.Now()}
	if err := rs.SaveResults(ctx, []runs.Result{r}); err != nil {
		t.Fatal(err)
	}
	after, _ := rs.Run(ctx, stopped)
	want := before.Tokens
	want.Prompt, want.Completion, want.Cached, want.Reasoning = want.Prompt+100, want.Completion+20, 40, 5
	if after.Tokens != want || after.CostUSD == nil || *after.CostUSD != 0.5 || *after.JudgeCostUSD != 0.125 {
		t.Errorf("resumed: tokens %+v, cost %v; want %+v and 0.5", after.Tokens, after.CostUSD, want)
	}
	if err := catalog.Migrate(ctx, db); err != nil { // as a server opening it would
		t.Fatal(err)
	}
	checkCurrentVersions(t, db)
}
