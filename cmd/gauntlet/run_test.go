package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
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

// TestRunParams: the sampling flags reach the run's configuration (and
// its requests: the engine's tests check every one).
func TestRunParams(t *testing.T) {
	flags := runFixture(t)
	var out strings.Builder
	args := []string{"run", "--format", "json", "--domains", "arithmetic", "--temperature", "0.3", "--top-p", "0.9",
		"--max-tokens", "64", "--seed", "-5"}
	if err := run(context.Background(), append(args, flags...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunInfo struct {
			Config struct {
				Params map[string]any `json:"params"`
			} `json:"config"`
		} `json:"run_info"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got, _ := json.Marshal(doc.RunInfo.Config.Params)
	if want := `{"max_tokens":64,"seed":-5,"temperature":0.3,"top_p":0.9}`; string(got) != want {
		t.Errorf("params = %s, want %s", got, want)
	}
}

// TestRunRepeats: --repeats asks each test n times; the report lists a
// result per (test, repeat) and counts samples; JUnit has one case per
// test (report_repeats_test.go checks its figures).
func TestRunRepeats(t *testing.T) {
	flags := runFixture(t)
	var out strings.Builder
	args := []string{"run", "--format", "json", "--domains", "tool_use", "--repeats", "3"}
	if err := run(context.Background(), append(args, flags...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunInfo     runs.Info     `json:"run_info"`
		TestResults []runs.Result `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if doc.RunInfo.TotalTests != 6 || doc.RunInfo.DoneTests != 6 || doc.RunInfo.Config.Repeats != 3 || len(doc.TestResults) != 6 {
		t.Fatalf("run = %+v, %d results", doc.RunInfo, len(doc.TestResults))
	}
	seen := map[string]bool{}
	for _, r := range doc.TestResults {
		seen[r.TestID+"#"+strconv.Itoa(r.Repeat)] = true
	}
	if len(seen) != 6 {
		t.Errorf("samples = %v", seen)
	}

	outFile := filepath.Join(t.TempDir(), "report.xml")
	args = []string{"run", "--format", "junit", "--output", outFile, "--domains", "tool_use", "--repeats", "2"}
	if err := run(context.Background(), append(args, flags...), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, s := range suites.Suites {
		for _, c := range s.Cases {
			if c.Classname != gateSuite {
				names[c.Name] = true
			}
		}
	}
	for n := range names {
		if strings.Contains(n, "#") {
			t.Errorf("case %q: with repeats a case is a test, named by its id", n)
		}
	}
	if len(names) != 2 {
		t.Errorf("JUnit cases = %v, want one per test (2)", names)
	}
}

func TestRunBadInput(t *testing.T) {
	flags := runFixture(t)
	cases := map[string][]string{
		"unknown domain":           {"--domains", "nope"},
		"bad format":               {"--format", "xml"},
		"bad min score":            {"--min-score", "2"},
		"temperature out of range": {"--temperature", "3"},
		"temperature not a number": {"--temperature", "hot"},
		"top-p zero":               {"--top-p", "0"},
		"max tokens zero":          {"--max-tokens", "0"},
		"seed not an integer":      {"--seed", "1.5"},
		"params with resume":       {"--resume", "x", "--seed", "1"},
		"repeats zero":             {"--repeats", "0"},
		"repeats above 100":        {"--repeats", "101"},
		"repeats not an integer":   {"--repeats", "2.5"},
		"repeats with resume":      {"--resume", "x", "--repeats", "2"},
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

// badByte marks, in a fake model's answer, where the endpoint sends a byte
// that is not UTF-8: JSON encoders cannot write one, so the test's server
// puts it into the body on the wire.
const badByte = "@BADBYTE@"

// mixedEndpoint is a real HTTP model endpoint for the arithmetic domain
// of the example definitions: add-carry gets a wrong answer (failed),
// add-large a 500 every time (error), add-decimal a wrong answer holding
// a NUL, an escape, U+FFFE and a byte that is not UTF-8 (failed); the
// other tests get the right answer.
func mixedEndpoint(t *testing.T) string {
	t.Helper()
	h := llmtest.NewHandler(llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
		switch q := r.LastUser(); {
		case strings.Contains(q, "17 + 25"):
			return &llmtest.Reply{Content: "The answer is 43."}
		case strings.Contains(q, "1234 + 8766"):
			return &llmtest.Reply{Status: 500, Content: "the model fell over"}
		case strings.Contains(q, "0.1 + 0.2"):
			return &llmtest.Reply{Content: "NUL\x00 ESC\x1b FFFE\ufffe BAD" + badByte + " Answer: 0.4"}
		}
		return nil
	}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := bytes.ReplaceAll(rec.Body.Bytes(), []byte(badByte), []byte{0xff})
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(func() { h.Close(); srv.Close() })
	return srv.URL + "/v1"
}

// mixedRun runs the arithmetic domain against mixedEndpoint with extra
// arguments; it returns the report written to stdout, the progress and
// summary written to stderr, and the error of the command.
func mixedRun(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "defs"), os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--domains", "arithmetic", "--model-name", "nightly", "--retries", "0",
		"--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "defs"),
		"--llm-base-url", mixedEndpoint(t), "--llm-model", "mock"}
	var out, errOut strings.Builder
	err := run(context.Background(), append(base, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

// TestRunReportsFailuresAndErrors: the text summary of a run with
// failures and an error gives the counts, says the run is incomplete,
// lists each failed and errored test with what was expected, what was
// extracted and why, and fails the gate with each reason.
func TestRunReportsFailuresAndErrors(t *testing.T) {
	out, errOut, err := mixedRun(t, "--min-score", "0.8")
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("err = %v, want the gate to fail\n%s\n%s", err, out, errOut)
	}
	for _, want := range []string{"1 of 6 finished tests ended in error", "overall score 0.600 is below --min-score 0.800"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, want := range []string{
		"INCOMPLETE: every test finished, 1 in error",
		"tests: 3 passed, 2 failed, 1 errors; 6 done of 6",
		"overall score 0.600 over 5 scored tests",
		"failed and errored tests (3):",
		`FAIL  add-carry  arithmetic/L1  expected "42" (numeric), got "43": `,
		`ERROR add-large  arithmetic/L2  expected "10,000" (numeric), got "": `,
		"the model fell over",
		`FAIL  add-decimal  arithmetic/L3  expected "0.3" (numeric), got "0.4": `,
		"verdict: FAILED (min score 0.800)",
		"  - 1 of 6 finished tests ended in error",
		"  - overall score 0.600 is below --min-score 0.800",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x00\x1b") {
		t.Errorf("summary carries control characters:\n%q", out)
	}
}

// TestRunJSONVerdict: the JSON report carries the counts of the run and
// of each cell, and the verdict with its reasons; a run that passes the
// gate says so with no reason.
func TestRunJSONVerdict(t *testing.T) {
	out, _, err := mixedRun(t, "--format", "json", "--min-score", "0.5")
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("err = %v", err)
	}
	var doc struct {
		RunInfo runs.Info   `json:"run_info"`
		Matrix  runs.Matrix `json:"matrix"`
		Verdict struct {
			MinScore   float64  `json:"min_score"`
			PassedGate *bool    `json:"passed_gate"`
			Reasons    []string `json:"reasons"`
		} `json:"verdict"`
		TestResults []runs.Result `json:"test_results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ri := doc.RunInfo
	if ri.TotalTests != 6 || ri.DoneTests != 6 || ri.Passed != 3 || ri.Failed != 2 || ri.Errors != 1 || ri.Complete || ri.Config == nil || ri.Config.DefinitionsHash == "" {
		t.Errorf("run_info = %+v", ri)
	}
	if c := doc.Matrix["arithmetic"]["2"]; c.Tests != 2 || c.Done != 2 || c.Passed != 1 || c.Failed != 0 || c.Errors != 1 {
		t.Errorf("cell L2 = %+v", c)
	}
	v := doc.Verdict
	if v.PassedGate == nil || *v.PassedGate || v.MinScore != 0.5 || len(v.Reasons) != 1 || !strings.Contains(v.Reasons[0], "ended in error") {
		t.Errorf("verdict = %+v", v)
	}
	if len(doc.TestResults) != 6 {
		t.Errorf("%d test results", len(doc.TestResults))
	}
	// The byte that is not UTF-8 reached the store: the report gives the
	// exact bytes in response_base64.
	for _, r := range doc.TestResults {
		if r.TestID != "add-decimal" {
			continue
		}
		if raw, err := base64.StdEncoding.DecodeString(r.ResponseBase64); err != nil || !bytes.Contains(raw, []byte("BAD\xff Answer")) {
			t.Errorf("add-decimal response %q, exact bytes %q (%v)", r.Response, raw, err)
		}
	}

	flags := runFixture(t)
	var good strings.Builder
	if err := run(context.Background(), append([]string{"run", "--format", "json", "--domains", "arithmetic", "--min-score", "0.9"}, flags...), &good, io.Discard); err != nil {
		t.Fatal(err)
	}
	var ok struct {
		Verdict map[string]any `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(good.String()), &ok); err != nil {
		t.Fatal(err)
	}
	if ok.Verdict["passed_gate"] != true || ok.Verdict["min_score"] != 0.9 || ok.Verdict["reasons"] == nil || len(ok.Verdict["reasons"].([]any)) != 0 {
		t.Errorf("verdict of a good run = %v", ok.Verdict)
	}
}

// TestRunJUnitErrorsAndProperties: in the JUnit report an errored test is
// an <error>, a failed one a <failure>; every suite carries the run's
// properties; the verdict case fails with the reasons; and a response
// holding NUL, an escape, U+FFFE and a byte that is not UTF-8 still gives a
// file encoding/xml parses back.
func TestRunJUnitErrorsAndProperties(t *testing.T) {
	outFile := filepath.Join(t.TempDir(), "report.xml")
	_, errOut, err := mixedRun(t, "--format", "junit", "--output", outFile)
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(errOut, "failed and errored tests (3):") {
		t.Errorf("no summary on stderr:\n%s", errOut)
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("invalid XML: %v\n%q", err, data)
	}
	if doc.Tests != 6+1 || doc.Failures != 2+1 || doc.Errors != 1 {
		t.Errorf("testsuites: tests=%d failures=%d errors=%d", doc.Tests, doc.Failures, doc.Errors)
	}
	cases := map[string]junitCase{}
	for _, s := range doc.Suites {
		props := map[string]string{}
		for _, p := range s.Properties {
			props[p.Name] = p.Value
		}
		if props["model"] != "mock" || props["label"] != "nightly" || props["run_id"] == "" || len(props["definitions_hash"]) != 64 ||
			props["gauntlet_version"] == "" || !strings.HasPrefix(props["base_url"], "http://127.0.0.1:") || props["passed_gate"] != "false" {
			t.Errorf("suite %s properties: %v", s.Name, props)
		}
		for _, c := range s.Cases {
			cases[c.Name] = c
		}
	}
	if c := cases["add-large"]; c.Error == nil || c.Failure != nil || !strings.Contains(c.Error.Message, "the model fell over") {
		t.Errorf("errored test: %+v", c)
	}
	if c := cases["add-carry"]; c.Failure == nil || c.Error != nil || !strings.Contains(c.Failure.Message, `expected "42", got "43"`) {
		t.Errorf("failed test: %+v", c)
	}
	if c := cases["add-small"]; c.Failure != nil || c.Error != nil {
		t.Errorf("passed test: %+v", c)
	}
	c := cases["add-decimal"]
	if c.Failure == nil || c.SystemOut != "NUL ESC FFFE BAD Answer: 0.4" || strings.ContainsAny(c.SystemOut, "\x00\x1b\ufffe\ufffd") {
		t.Errorf("response with bad characters: %q", c.SystemOut)
	}
	if v := cases["verdict"]; v.Failure == nil || !strings.Contains(v.Failure.Message, "1 of 6 finished tests ended in error") {
		t.Errorf("verdict case: %+v", v)
	}
}
