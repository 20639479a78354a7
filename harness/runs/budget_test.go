package runs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestBudgetReadAndSet: a run's budget and recorded spend are read in
// one (Budget): the budget from its config, the spend from the results
// stored; SetMaxCost replaces the budget in the stored config, or
// removes it, keeping every other setting (a seed's digits included);
// a run without a config has no budget and is left without one.
func TestBudgetReadAndSet(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	in := newInfo("b")
	in.Config = &runs.Config{Model: "m", Repeats: 1, DefinitionsHash: "h", MaxCostUSD: 2.5,
		Params: map[string]any{"seed": 12345678901234567}}
	if err := s.CreateRun(ctx, in, cells); err != nil {
		t.Fatal(err)
	}
	cost := 0.75
	r := result("b", "math", 1, "t1", 1, runs.TestPassed)
	r.CostUSD = &cost
	if _, err := s.RecordResult(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Budget(ctx, "b"); err != nil || b != (runs.Budget{MaxCostUSD: 2.5, SpentUSD: 0.75, Status: runs.StatusRunning}) {
		t.Fatalf("budget %+v, %v; want $2.5, $0.75 spent, running", b, err)
	}
	if err := s.SetMaxCost(ctx, "b", 7); err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Config; c == nil || c.MaxCostUSD != 7 || c.DefinitionsHash != "h" || c.Model != "m" ||
		fmt.Sprint(c.Params["seed"]) != "12345678901234567" {
		t.Errorf("config after a new budget: %+v", c)
	}
	if err := s.SetMaxCost(ctx, "b", 0); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Budget(ctx, "b"); err != nil || b.MaxCostUSD != 0 || b.SpentUSD != 0.75 {
		t.Errorf("budget removed: %+v, %v", b, err)
	}
	if got, _ := s.Run(ctx, "b"); got.Config == nil || got.Config.DefinitionsHash != "h" {
		t.Errorf("config after the budget was removed: %+v", got.Config)
	}
	if err := s.SetMaxCost(ctx, "b", -1); err == nil {
		t.Error("a negative budget was set")
	}

	// A run without a config (an older version's) has no budget.
	if err := s.CreateRun(ctx, newInfo("old"), cells); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMaxCost(ctx, "old", 3); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Budget(ctx, "old"); err != nil || b.MaxCostUSD != 0 {
		t.Errorf("run without a config: %+v, %v", b, err)
	}
	if _, err := s.Budget(ctx, "none"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	if err := s.SetMaxCost(ctx, "none", 1); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}
