package store_test

import (
	"context"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureDatabase020 opens a database made by 0.2.0, the version
// before level sampling parameters (catalog migration 2), repeats (runs
// migration 3) and cell intervals (runs migration 4), and finds its runs,
// results, stored definitions, agents, channels and conversations intact;
// the new features work on the old data: every result is repeat 0, the
// old cells have no interval, no run had cache hits or was rescored, and
// the two runs compare.
func TestFixtureDatabase020(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.2.0.db")

	for _, c := range []struct {
		component string
		want      int
	}{{"catalog", 1}, {"runs", 2}, {"agent", 1}} {
		if v, err := store.Version(ctx, db, c.component); v != c.want || err != nil {
			t.Fatalf("the fixture's %s schema version = %d, %v; want %d (made by 0.2.0)", c.component, v, err, c.want)
		}
	}

	if _, _, err := catalog.Open(ctx, catalog.Options{Dir: t.TempDir(), DB: db}); err != nil {
		t.Fatalf("catalog on the 0.2.0 database: %v", err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the 0.2.0 database: %v", err)
	}
	list, total, err := rs.List(ctx, 100, 0)
	if err != nil || total != 2 {
		t.Fatalf("runs = %d, %v; want the fixture's 2", total, err)
	}
	got := byLabel(t, list)
	for label, want := range map[string]struct{ tests, passed int }{"fixture-complete": {12, 7}, "fixture-arith": {6, 6}} {
		in := got[label]
		if in.Status != runs.StatusCompleted || !in.Complete || in.TotalTests != want.tests || in.DoneTests != want.tests ||
			in.Passed != want.passed || in.Errors != 0 {
			t.Errorf("%s = %+v", label, in)
		}
		if in.CacheHits != 0 || in.RescoredFrom != "" || (in.Config != nil && in.Config.Cache) {
			t.Errorf("%s: cache_hits %d, rescored_from %q, cache %v; want 0, \"\", false (made before the cache)",
				label, in.CacheHits, in.RescoredFrom, in.Config.Cache)
		}
		if in.Config == nil || in.Config.Model != "llmtest-model" || in.Config.DefinitionsHash == "" {
			t.Errorf("%s provenance = %+v", label, in.Config)
		}
		results, err := rs.Results(ctx, in.RunID)
		if err != nil || len(results) != want.tests {
			t.Fatalf("%s results = %d, %v", label, len(results), err)
		}
		for _, r := range results {
			if r.Repeat != 0 || r.Response == "" {
				t.Errorf("%s result %s = repeat %d, response %q", label, r.TestID, r.Repeat, r.Response)
			}
		}
		m, err := rs.Matrix(ctx, in.RunID)
		if err != nil {
			t.Fatal(err)
		}
		cells := 0
		for _, levels := range m {
			for l, c := range levels {
				cells++
				if c.Done != c.Tests || c.CI95 != nil || c.StdErr != nil {
					t.Errorf("%s cell L%s = %+v: want done and no interval (made before intervals)", label, l, c)
				}
			}
		}
		if cells == 0 {
			t.Errorf("%s has no cells", label)
		}
		if snap, err := rs.Definitions(ctx, in.RunID); err != nil || len(snap.Tests) == 0 {
			t.Errorf("%s stored definitions: %v", label, err)
		}
	}

	// Both runs answered arithmetic: they compare, test for test.
	rep, err := compare.Load(ctx, rs, got["fixture-complete"].RunID, got["fixture-arith"].RunID)
	if err != nil {
		t.Fatalf("compare the 0.2.0 runs: %v", err)
	}
	if rep.Summary.Unchanged != 6 || rep.Summary.Improved != 0 || rep.Summary.Regressed != 0 || len(rep.Flipped) != 0 {
		t.Errorf("compare = %+v", rep.Summary)
	}

	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("agents on the 0.2.0 database: %v", err)
	}
	defer svc.Close()
	tools, err := svc.Tools(ctx, "support")
	if err != nil || len(tools) != 1 || tools[0] != "get_weather" {
		t.Errorf("support's tools = %v, %v", tools, err)
	}
	chans, err := svc.Supervisor().List(ctx, "support")
	if err != nil || len(chans) != 2 {
		t.Fatalf("channels = %+v, %v", chans, err)
	}
	for _, c := range chans {
		if c.Config["callback_url"] == nil && c.Config["api_url"] == nil {
			t.Errorf("channel config lost: %+v", c)
		}
	}
	for user, first := range map[string]string{"alice": "What is 2 + 3?", "bob": "Hello"} {
		h, err := svc.History(ctx, "support", user)
		if err != nil || len(h) != 2 || h[0].Content != first || h[0].Role != harness.RoleUser {
			t.Errorf("%s's conversation = %+v, %v", user, h, err)
		}
	}

	checkCurrentVersions(t, db)
}
