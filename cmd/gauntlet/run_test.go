package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// runFixture copies the example definitions into a temp dir and starts a
// fake model endpoint; it returns the common flags.
func runFixture(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "defs"), os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	return []string{"--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "defs"),
		"--llm-base-url", mock.URL, "--llm-model", "mock"}
}

func TestRunText(t *testing.T) {
	flags := runFixture(t)
	var out, errOut strings.Builder
	err := run(context.Background(), append([]string{"run", "--domains", "arithmetic", "--model-name", "ci"}, flags...), &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{"arithmetic", "L1", "L3", "pass", "overall score 1.000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errOut.String(), "arithmetic L1: passed") {
		t.Errorf("progress lines (not a terminal) missing:\n%s", errOut.String())
	}
}

func TestRunMinScore(t *testing.T) {
	flags := runFixture(t)
	// The fake model echoes the knowledge questions: that domain fails.
	err := run(context.Background(), append([]string{"run", "--domains", "knowledge", "--min-score", "0.8"}, flags...), io.Discard, io.Discard)
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("err = %v, want errGateFailed", err)
	}
	err = run(context.Background(), append([]string{"run", "--domains", "arithmetic", "--min-score", "0.8"}, flags...), io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
}

// A run in which every test ended in error evaluated nothing: it fails
// the gate (status 1), --min-score or not, after writing its report.
func TestRunEveryTestInError(t *testing.T) {
	flags := runFixture(t)
	flags = append(flags, "--llm-base-url", "http://127.0.0.1:1/v1") // nothing listens there
	outFile := filepath.Join(t.TempDir(), "report.xml")
	err := run(context.Background(), append([]string{"run", "--domains", "arithmetic", "--format", "junit", "--output", outFile}, flags...), io.Discard, io.Discard)
	if !errors.Is(err, errGateFailed) || !strings.Contains(err.Error(), "every test that finished (6) ended in error") || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("err = %v, want every test in error", err)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(data, &doc); err != nil || doc.Tests != 6+1 || doc.Errors != 6 || doc.Failures != 1 {
		t.Fatalf("report: %+v %v\n%s", doc, err, data)
	}
}

// A test of the judge's rubric type needs no expected answer: the judge
// grades the response by the rubric alone, through the binary's registry.
func TestRunRubricTest(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	files := map[string]string{
		"evaluators/graded.yaml":      "id: graded\nname: Graded\ntype: judge\nconfig:\n  rubric: Explains recursion with a base case.\n",
		"domains/essays/domain.yaml":  "id: essays\nname: Essays\nevaluator_id: graded\n",
		"domains/essays/level-1.yaml": "tests:\n  - id: recursion\n    prompt: Explain recursion in one sentence.\n    expected:\n      type: rubric\n",
	}
	for rel, body := range files {
		p := filepath.Join(defs, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var judged atomic.Int64
	mock := llmtest.NewServer(llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
		last := r.Messages[len(r.Messages)-1].Content
		if strings.Contains(last, "<rubric>") {
			judged.Add(1)
			if !strings.Contains(last, "No expected answer was given") {
				return &llmtest.Reply{Content: "the judge was shown an expected answer"}
			}
			return &llmtest.Reply{Content: "Clear, with a base case.\nScore: 0.9"}
		}
		return &llmtest.Reply{Content: "A function that calls itself until a base case stops it."}
	}})
	t.Cleanup(mock.Close)
	var out strings.Builder
	err := run(context.Background(), []string{"run", "--format", "json", "--min-score", "0.8",
		"--data", filepath.Join(dir, "data"), "--definitions", defs, "--llm-base-url", mock.URL, "--llm-model", "mock"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	var doc struct {
		TestResults []struct {
			Status  string         `json:"status"`
			Score   float64        `json:"score"`
			Details map[string]any `json:"details"`
		} `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.TestResults) != 1 || doc.TestResults[0].Status != "passed" || doc.TestResults[0].Score != 0.9 || judged.Load() != 1 {
		t.Fatalf("results %+v, judged %d times", doc.TestResults, judged.Load())
	}
}

func TestRunJUnit(t *testing.T) {
	flags := runFixture(t)
	outFile := filepath.Join(t.TempDir(), "report.xml")
	err := run(context.Background(), append([]string{"run", "--format", "junit", "--output", outFile}, flags...), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("invalid XML: %v\n%s", err, data)
	}
	// 12 tests in 8 cells, and the verdict's suite.
	if doc.Tests != 12+1 || len(doc.Suites) != 8+1 {
		t.Fatalf("tests=%d suites=%d\n%s", doc.Tests, len(doc.Suites), data)
	}
	failures := 0
	for _, s := range doc.Suites {
		n := 0
		for _, c := range s.Cases {
			if c.Failure != nil {
				n++
			}
			if c.Name == "" || c.Classname == "" {
				t.Errorf("case without name: %+v", c)
			}
		}
		if n != s.Failures || len(s.Cases) != s.Tests {
			t.Errorf("suite %s counts: %d failures counted, %d declared", s.Name, n, s.Failures)
		}
		failures += n
	}
	if failures == 0 || failures != doc.Failures {
		t.Errorf("failures = %d, declared %d", failures, doc.Failures)
	}
}

func TestRunJSON(t *testing.T) {
	flags := runFixture(t)
	var out strings.Builder
	if err := run(context.Background(), append([]string{"run", "--format", "json", "--domains", "tool_use"}, flags...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunInfo     map[string]any   `json:"run_info"`
		Matrix      map[string]any   `json:"matrix"`
		TestResults []map[string]any `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.RunInfo["status"] != "completed" || len(doc.TestResults) != 2 || doc.Matrix["tool_use"] == nil {
		t.Fatalf("report: %+v", doc)
	}
}

func TestRunBadInput(t *testing.T) {
	flags := runFixture(t)
	cases := map[string][]string{
		"unknown domain": {"--domains", "nope"},
		"bad format":     {"--format", "xml"},
		"bad min score":  {"--min-score", "2"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(context.Background(), append(append([]string{"run"}, args...), flags...), io.Discard, io.Discard)
			if err == nil || errors.Is(err, errGateFailed) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
