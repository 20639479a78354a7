package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// dataDir returns the --data value of a flag list.
func dataDir(flags []string) string {
	for i, f := range flags {
		if f == "--data" {
			return flags[i+1]
		}
	}
	return ""
}

// TestRunAgent: gauntlet run --agent evaluates an agent of the data
// directory's database and records it in the run's config; the label is
// the agent's name.
func TestRunAgent(t *testing.T) {
	flags := runFixture(t)
	data := dataDir(flags)
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(data, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, harness.Agent{ID: "helpdesk", Name: "Help desk", SystemPrompt: "Answer with a number."}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.KB().Write(ctx, "helpdesk", "facts.md", strings.NewReader("Two and two make four."), true); err != nil {
		t.Fatal(err)
	}
	svc.Close()
	db.Close()

	var out, errOut strings.Builder
	if err := run(ctx, append([]string{"run", "--agent", "helpdesk", "--domains", "arithmetic"}, flags...), &out, &errOut); err != nil {
		t.Fatalf("run --agent: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "overall score 1.000") {
		t.Errorf("report:\n%s", out.String())
	}
	db, err = store.Open(ctx, "sqlite://"+filepath.Join(data, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	info, err := rs.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	if info.ModelName != "Help desk" || !info.Complete || c == nil || c.AgentID != "helpdesk" || c.Agent == nil ||
		len(c.Agent.KnowledgeBase) != 1 || c.Agent.KnowledgeBase[0].File != "facts.md" {
		t.Fatalf("run: %+v config %+v", info, c)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown agent", []string{"--agent", "nobody", "--domains", "arithmetic"}, `unknown agent "nobody"`},
		{"with --model", []string{"--agent", "helpdesk", "--model", "x"}, "--agent takes no --model"},
		{"in a sweep", []string{"--agent", "helpdesk", "--model", "x", "--model", "y"}, "--agent takes no --model"},
		{"with --resume", []string{"--agent", "helpdesk", "--resume", info.RunID}, "no --resume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(ctx, append(append([]string{"run"}, tc.args...), flags...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRunAgentThroughProvider: gauntlet run --agent with an agent whose
// model names a provider sends the agent's requests there, and the run's
// config records the provider.
func TestRunAgentThroughProvider(t *testing.T) {
	flags := runFixture(t)
	data := dataDir(flags)
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	prov := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, req.Model)
		return nil
	}})
	t.Cleanup(prov.Close)
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(data, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	model := "claude/claude-haiku-4-5"
	if _, err := svc.Create(ctx, harness.Agent{ID: "claude_desk", Name: "Claude desk", SystemPrompt: "Answer with a number.",
		Model: &model}); err != nil {
		t.Fatal(err)
	}
	svc.Close()
	db.Close()
	t.Setenv("CLAUDE_KEY", "k")
	var out, errOut strings.Builder
	args := append([]string{"run", "--agent", "claude_desk", "--domains", "arithmetic", "--format", "json",
		"--provider", "claude=anthropic,base_url=" + strings.TrimSuffix(prov.URL, "/v1") + ",api_key_env=CLAUDE_KEY"}, flags...)
	if err := run(ctx, args, &out, &errOut); err != nil {
		t.Fatalf("run --agent: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), `"provider": "claude"`) || !strings.Contains(out.String(), `"provider_kind": "anthropic"`) {
		t.Errorf("report does not record the provider:\n%.2000s", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[0] != "claude-haiku-4-5" {
		t.Fatalf("the provider was asked for %v", seen)
	}
}
