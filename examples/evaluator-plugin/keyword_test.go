package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
)

func request(response string, config map[string]any) *harness.EvalRequest {
	return &harness.EvalRequest{
		Test:      harness.Test{ID: "colours", Prompt: "Name the colours of the French flag.", Expected: harness.Expected{Answer: "blue, white, red", Type: "contains"}},
		Evaluator: harness.EvaluatorConfig{ID: "kw", Name: "Keywords", Type: "keyword", Config: config},
		Response:  response,
	}
}

func cases() []harnesstest.EvalCase {
	return []harnesstest.EvalCase{
		{Name: "all keywords", Request: request("Blue, white and red.", nil), Want: &harnesstest.Verdict{Score: 1, Passed: true}},
		{Name: "two of three", Request: request("Blue and white.", nil), Want: &harnesstest.Verdict{Score: 2.0 / 3}},
		{Name: "threshold", Request: request("Blue and white.", map[string]any{"pass_threshold": 0.6}), Want: &harnesstest.Verdict{Score: 2.0 / 3, Passed: true}},
		{Name: "own keywords", Request: request("BLUE", map[string]any{"keywords": []any{"blue", "gold"}}), Want: &harnesstest.Verdict{Score: 0.5}},
		{Name: "case sensitive", Request: request("BLUE", map[string]any{"keywords": []any{"blue"}, "case_sensitive": true}), Want: &harnesstest.Verdict{}},
	}
}

// The conformance kit, in-process: what a plugin author runs.
func TestConformance(t *testing.T) {
	harnesstest.TestEvaluator(t, Keyword{}, cases()...)
}

func TestValidateConfig(t *testing.T) {
	err := Keyword{}.ValidateConfig(harness.EvaluatorConfig{Config: map[string]any{"keywords": []any{"ok", 3}, "pass_threshold": 0.0}})
	var ve *harness.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 2 || ve.Fields[0].Field != "config.keywords[1]" || ve.Fields[1].Field != "config.pass_threshold" {
		t.Errorf("ValidateConfig: %v", err)
	}
	err = Keyword{}.ValidateConfig(harness.EvaluatorConfig{Config: map[string]any{"pass_treshold": 0.6}})
	if err == nil || err.Error() != `invalid: config.pass_treshold: unknown setting (did you mean "pass_threshold"?)` {
		t.Errorf("ValidateConfig of a typo: %v", err)
	}
	// Keywords from Go code, and integral thresholds from YAML, decode.
	if err := (Keyword{}).ValidateConfig(harness.EvaluatorConfig{Config: map[string]any{"keywords": []string{"a"}, "pass_threshold": 1}}); err != nil {
		t.Errorf("ValidateConfig: %v", err)
	}
}

// A stored record with a key this version does not know still scores.
func TestEvaluateIgnoresUnknownKeys(t *testing.T) {
	res, err := Keyword{}.Evaluate(context.Background(), request("Blue", map[string]any{"keywords": []any{"blue"}, "newer": true}))
	if err != nil || !res.Passed {
		t.Errorf("Evaluate = %+v, %v", res, err)
	}
}

// The same, as a plugin: built as the README says, found in a plugins
// directory, run by the host.
func TestAsPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "gauntlet-evaluator-keyword"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	m, err := host.New(host.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg := harness.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	ev, ok := reg.Evaluator("keyword")
	if !ok {
		t.Fatal("keyword not registered")
	}
	harnesstest.TestEvaluator(t, ev, cases()...)

	// The record is checked by the plugin when it is stored.
	err = harness.Validator{Registry: reg}.Evaluator(&harness.EvaluatorConfig{ID: "kw", Name: "Keywords", Type: "keyword", Config: map[string]any{"keywords": "blue"}})
	var ve *harness.ValidationError
	if !errors.As(err, &ve) || ve.Fields[0].Field != "config.keywords" {
		t.Errorf("validation through the plugin: %v", err)
	}
	if s := m.List(); len(s) != 1 || s[0].Health != host.HealthRunning {
		t.Errorf("List: %+v", s)
	}
}
