package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestRunThroughProvider: gauntlet run --model NAME/model sends the run to
// the provider --provider names, and the report's configuration says so.
func TestRunThroughProvider(t *testing.T) {
	flags := runFixture(t)
	var seen []string
	prov := llmtest.NewServer(llmtest.Options{APIKey: "team-key", Respond: func(req *llmtest.Request) *llmtest.Reply {
		seen = append(seen, req.Model)
		return nil
	}})
	t.Cleanup(prov.Close)
	t.Setenv("TEAM_KEY", "team-key")
	var out, errOut strings.Builder
	args := append([]string{"run", "--format", "json", "--domains", "arithmetic", "--concurrency", "1", "--model", "team/qwen3:8b",
		"--provider", "team=openai,base_url=" + prov.URL + ",api_key_env=TEAM_KEY", "--reasoning", "low"}, flags...)
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	var doc struct {
		RunInfo struct {
			Status string `json:"status"`
			Config struct {
				Model        string         `json:"model"`
				Provider     string         `json:"provider"`
				ProviderKind string         `json:"provider_kind"`
				BaseURL      string         `json:"base_url"`
				Params       map[string]any `json:"params"`
			} `json:"config"`
		} `json:"run_info"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	c := doc.RunInfo.Config
	if doc.RunInfo.Status != "completed" || c.Model != "team/qwen3:8b" || c.Provider != "team" || c.ProviderKind != "openai" || c.BaseURL != prov.URL {
		t.Fatalf("run_info %+v", doc.RunInfo)
	}
	if r, _ := json.Marshal(c.Params["reasoning"]); string(r) != `{"effort":"low"}` {
		t.Errorf("params %v", c.Params)
	}
	if len(seen) == 0 || seen[0] != "qwen3:8b" {
		t.Fatalf("the provider was asked for %v", seen)
	}
}

// TestProviderFlagErrors: a provider that cannot work stops the command
// at start with what to fix, never showing a key.
func TestProviderFlagErrors(t *testing.T) {
	flags := runFixture(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-SECRET-0123")
	for _, c := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"unknown kind", []string{"--provider", "x=bedrock"}, "", `unknown kind "bedrock"`},
		{"unknown setting", []string{"--provider", "x=anthropic,key=abc"}, "", `unknown setting "key"`},
		{"key variable not set", []string{"--provider", "claude=anthropic,api_key_env=TEAM_CLAUDE_KEY"}, "", "TEAM_CLAUDE_KEY"},
		{"from the environment", nil, "g=gemini,api_key_env=NO_SUCH_KEY;claude=anthropic", "NO_SUCH_KEY"},
		{"bad environment", nil, "claude=anthropic,rpm=fast", "rpm must be a whole number"},
		{"built-in without its key", []string{"--model", "gemini/gemini-2.5-flash"}, "", "GEMINI_API_KEY"},
		{"reasoning", []string{"--reasoning", "lots"}, "", "must be low, medium, high or a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GAUNTLET_PROVIDERS", c.env)
			t.Setenv("GEMINI_API_KEY", "")
			var errOut strings.Builder
			err := run(context.Background(), append(append([]string{"run", "--domains", "arithmetic"}, c.args...), flags...), io.Discard, &errOut)
			if err == nil {
				t.Fatalf("accepted")
			}
			msg := err.Error() + errOut.String()
			if !strings.Contains(msg, c.want) || strings.Contains(msg, "SECRET") {
				t.Fatalf("error %q; want it to say %q, without the key", msg, c.want)
			}
		})
	}
}

// TestSweepAcrossProviders: one sweep through the three provider kinds of
// the fake endpoint gives the same scores, compared side by side.
func TestSweepAcrossProviders(t *testing.T) {
	flags := runFixture(t)
	prov := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(prov.Close)
	root := strings.TrimSuffix(prov.URL, "/v1")
	t.Setenv("MOCK_KEY", "mock")
	args := []string{"run", "--format", "json", "--domains", "arithmetic,tool_use",
		"--provider", "o=openai,base_url=" + prov.URL,
		"--provider", "a=anthropic,base_url=" + root + ",api_key_env=MOCK_KEY",
		"--provider", "g=gemini,base_url=" + root + ",api_key_env=MOCK_KEY",
		"--model", "o/m", "--model", "a/m", "--model", "g/m"}
	var out, errOut strings.Builder
	if err := run(context.Background(), append(args, flags...), &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	var doc struct {
		Runs []struct {
			RunInfo struct {
				Status       string   `json:"status"`
				OverallScore *float64 `json:"overall_score"`
				Passed       int      `json:"passed"`
				Config       struct {
					ProviderKind string `json:"provider_kind"`
				} `json:"config"`
			} `json:"run_info"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(doc.Runs) != 3 {
		t.Fatalf("%d runs", len(doc.Runs))
	}
	for i, kind := range []string{"openai", "anthropic", "gemini"} {
		r := doc.Runs[i].RunInfo
		first := doc.Runs[0].RunInfo
		if r.Status != "completed" || r.Config.ProviderKind != kind || r.OverallScore == nil || *r.OverallScore != *first.OverallScore || r.Passed != first.Passed || r.Passed == 0 {
			t.Errorf("run %d (%s): %+v, score %v; the first run's %v", i, kind, r, *r.OverallScore, *first.OverallScore)
		}
	}
}
