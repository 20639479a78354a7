package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureDatabase030 opens a database made by 0.3.0 (runs schema 6:
// repeats, the response cache, rescores, agent runs, transcripts and
// calls) and finds every run, result, transcript, agent, channel and
// conversation intact, readable through today's queries.
func TestFixtureDatabase030(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.3.0.db")

	for _, c := range []struct {
		component string
		want      int
	}{{"catalog", 2}, {"runs", 6}, {"agent", 1}} {
		if v, err := store.Version(ctx, db, c.component); v != c.want || err != nil {
			t.Fatalf("the fixture's %s schema version = %d, %v; want %d (made by 0.3.0)", c.component, v, err, c.want)
		}
	}

	if _, _, err := catalog.Open(ctx, catalog.Options{Dir: t.TempDir(), DB: db}); err != nil {
		t.Fatalf("catalog on the 0.3.0 database: %v", err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the 0.3.0 database: %v", err)
	}
	list, total, err := rs.List(ctx, 100, 0)
	if err != nil || total != 5 {
		t.Fatalf("runs = %d, %v; want the fixture's 5", total, err)
	}
	var repeats, rescored runs.Info
	byName := map[string]runs.Info{}
	for _, in := range list {
		switch {
		case in.ModelName == "fixture-repeats" && in.RescoredFrom == "":
			repeats = in
		case in.ModelName == "fixture-repeats":
			rescored = in
		default:
			byName[in.ModelName] = in
		}
		if in.Status != runs.StatusCompleted || !in.Complete || in.DoneTests != in.TotalTests || in.Errors != 0 {
			t.Errorf("%s = %+v", in.ModelName, in)
		}
	}

	// The run with repeats and sampling parameters: 13 tests × 2.
	if repeats.TotalTests != 26 || repeats.Passed != 14 || repeats.Config == nil || repeats.Config.Repeats != 2 ||
		fmt.Sprint(repeats.Config.Params["seed"]) != "7" || fmt.Sprint(repeats.Config.Params["temperature"]) != "0.5" ||
		repeats.Config.GauntletVersion != "0.3.0" {
		t.Errorf("fixture-repeats = %+v, config %+v", repeats, repeats.Config)
	}
	if rescored.RescoredFrom != repeats.RunID || rescored.TotalTests != 26 || rescored.Passed != repeats.Passed {
		t.Errorf("the rescore = %+v; want of %s, the same counts", rescored, repeats.RunID)
	}
	if fill, cached := byName["fixture-cache-fill"], byName["fixture-cached"]; fill.CacheHits != 0 || cached.CacheHits != 8 ||
		cached.Config == nil || !cached.Config.Cache || cached.Passed != 6 {
		t.Errorf("cache runs = %+v / %+v", fill, cached)
	}
	// Seven tests and the second pass of one: eight cached answers.
	if n, err := rs.CacheSize(ctx); err != nil || n != 8 {
		t.Errorf("response cache = %d entries, %v; want 8", n, err)
	}
	agentRun := byName["Support"]
	if agentRun.Config == nil || agentRun.Config.AgentID != "support" || agentRun.Config.Agent == nil || agentRun.TotalTests != 2 {
		t.Errorf("agent run = %+v, config %+v", agentRun, agentRun.Config)
	}

	// Transcripts: the tool round trip and the second pass read back whole.
	var sawTool, sawPass2 bool
	err = rs.EachResult(ctx, repeats.RunID, runs.ResultQuery{}, func(r runs.Result) error {
		if len(r.Transcript) < 3 || r.Transcript[0].Role != harness.RoleSystem || r.Transcript[1].Role != harness.RoleUser ||
			r.Transcript[1].Content != r.Prompt || len(r.Calls) == 0 {
			t.Errorf("%s#%d transcript %+v, calls %+v", r.TestID, r.Repeat, r.Transcript, r.Calls)
		}
		for _, m := range r.Transcript {
			if m.Role == harness.RoleTool && m.ToolCallID != "" {
				sawTool = true
			}
			if m.Pass2 && m.Role == harness.RoleAssistant && m.Content != "" && m.Content == r.Details["pass2_response"] {
				sawPass2 = true
			}
		}
		return nil
	})
	if err != nil || !sawTool || !sawPass2 {
		t.Errorf("transcripts: tool round %v, pass 2 %v, %v", sawTool, sawPass2, err)
	}
	page, err := rs.QueryResults(ctx, repeats.RunID, runs.ResultQuery{Search: "paris", Sort: "-score"})
	if err != nil || page.Total != 4 || len(page.Results) != 4 {
		t.Errorf("search paris = %d of %d, %v; want the 2 repeats of capital-france and weather-paris", len(page.Results), page.Total, err)
	}
	if page, err := rs.QueryResults(ctx, byName["fixture-cached"].RunID, runs.ResultQuery{}); err != nil || page.Total != 7 {
		t.Errorf("cached run results = %d, %v", page.Total, err)
	} else {
		for _, r := range page.Results {
			if len(r.Calls) == 0 || r.Calls[0].Status != harness.AttemptCached {
				t.Errorf("cached %s calls = %+v", r.TestID, r.Calls)
			}
		}
	}

	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("agents on the 0.3.0 database: %v", err)
	}
	defer svc.Close()
	if tools, err := svc.Tools(ctx, "support"); err != nil || len(tools) != 1 || tools[0] != "get_weather" {
		t.Errorf("support's tools = %v, %v", tools, err)
	}
	chans, err := svc.Supervisor().List(ctx, "support")
	if err != nil || len(chans) != 2 {
		t.Fatalf("channels = %+v, %v", chans, err)
	}
	convs, err := svc.Conversations(ctx, "support", agent.ConversationsQuery{})
	if err != nil || convs.Total != 3 {
		t.Fatalf("conversations = %+v, %v; want alice's, bob's and carol's", convs, err)
	}
	for user, want := range map[string]int{"alice": 2, "bob": 4, "carol": 2} {
		c, err := svc.Conversation(ctx, "support", user, agent.MessagesQuery{})
		if err != nil || c.Total != want || c.Messages[0].Role != harness.RoleUser {
			t.Errorf("%s's conversation = %+v, %v; want %d messages", user, c, err, want)
		}
	}

	checkCurrentVersions(t, db)
}
