package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

func score(f float64) *float64 { return &f }

func TestGate(t *testing.T) {
	done := runs.Info{Status: runs.StatusCompleted, TotalTests: 12, DoneTests: 12, Passed: 9, Failed: 3, Complete: true, OverallScore: score(0.75)}
	with := func(f func(*runs.Info)) runs.Info { i := done; f(&i); return i }
	cases := []struct {
		name     string
		info     runs.Info
		minScore float64
		reasons  []string
	}{
		{"complete, no gate", done, 0, nil},
		{"complete, above min", done, 0.75, nil},
		{"below min", done, 0.8, []string{"overall score 0.750 is below --min-score 0.800"}},
		{"stopped", with(func(i *runs.Info) {
			i.Status, i.DoneTests, i.Passed, i.Failed, i.Complete, i.Error = runs.StatusStopped, 4, 4, 0, false, "the endpoint is unreachable"
		}), 0, []string{"the run is not complete: stopped after 4 of 12 tests: the endpoint is unreachable"}},
		{"interrupted and below", with(func(i *runs.Info) {
			i.Status, i.DoneTests, i.Passed, i.Failed, i.Complete = runs.StatusInterrupted, 4, 1, 3, false
			i.OverallScore = score(0.25)
		}), 0.5, []string{"the run is not complete: interrupted after 4 of 12 tests", "overall score 0.250 is below --min-score 0.500"}},
		{"completed with errors", with(func(i *runs.Info) { i.Passed, i.Errors, i.Complete = 7, 2, false }), 0,
			[]string{"2 of 12 finished tests ended in error"}},
		{"every test in error", with(func(i *runs.Info) {
			i.Passed, i.Failed, i.Errors, i.Complete, i.OverallScore = 0, 0, 12, false, nil
		}), 0.5, []string{"every test that finished (12) ended in error, so nothing was evaluated", "no test was scored, so --min-score 0.500 cannot be met"}},
		{"not complete for another reason", with(func(i *runs.Info) { i.Complete = false }), 0, []string{"the run is not complete"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := gate(tc.info, func(n int) ([]runs.Result, int, error) { return problems(tc.info, sliceSource(nil), n) }, tc.minScore)
			if err != nil {
				t.Fatal(err)
			}
			if v.PassedGate != (len(tc.reasons) == 0) || v.MinScore != tc.minScore || len(v.Reasons) != len(tc.reasons) {
				t.Fatalf("verdict = %+v, want reasons %q", v, tc.reasons)
			}
			for i, want := range tc.reasons {
				if v.Reasons[i] != want {
					t.Errorf("reason %d = %q, want %q", i, v.Reasons[i], want)
				}
			}
			err = v.err()
			if (err == nil) != v.PassedGate || (err != nil && !errors.Is(err, errGateFailed)) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestXMLSafe(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"plain":              {"The answer is 42.", "The answer is 42."},
		"tab newline cr":     {"a\tb\nc\r\n", "a\tb\nc\r\n"},
		"nul and c0":         {"a\x00b\x01\x1b[0mc\x7f", "ab[0mc\x7f"},
		"invalid utf-8":      {"caf\xe9 \xff\xfe ok", "caf  ok"},
		"truncated rune":     {"x\xe2\x82", "x"},
		"encoded surrogate":  {"a\xed\xa0\x80b", "ab"},
		"nonchars fffe ffff": {"a\uFFFEb\uFFFFc\uFFFDd", "abc\uFFFDd"},
		"astral kept":        {"😀 \U0010FFFD", "😀 \U0010FFFD"},
		"bom kept":           {"\uFEFFx", "\uFEFFx"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := xmlSafe(tc.in); got != tc.want {
				t.Errorf("xmlSafe(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func failedResults(n int) []runs.Result {
	out := make([]runs.Result, n)
	for i := range out {
		out[i] = runs.Result{TestID: fmt.Sprintf("t%03d", i), Domain: "d", Level: 1 + i%2, Status: runs.TestFailed,
			Expected: harness.Expected{Answer: "4", Type: "numeric"},
			Details:  map[string]any{"extracted_answer": "5", "reason": "expected 4, got 5"}}
	}
	return out
}

// The text summary lists at most maxListed failed and errored tests, then
// says how many more there are.
func TestTextListCapped(t *testing.T) {
	info := runs.Info{RunID: "r", Status: runs.StatusCompleted, Domains: []string{"d"}, TotalTests: 60, DoneTests: 60, Failed: 60, OverallScore: score(0)}
	var b strings.Builder
	if err := newReport(info, runs.Matrix{}, failedResults(60), 0).writeText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "  FAIL  t"); n != maxListed {
		t.Errorf("%d tests listed, want %d:\n%s", n, maxListed, out)
	}
	if !strings.Contains(out, "failed and errored tests (60):") || !strings.Contains(out, "... and 10 more") {
		t.Errorf("no count of the rest:\n%s", out)
	}
	// By level: t002 (L1) before t001 (L2).
	if i, j := strings.Index(out, "t002"), strings.Index(out, "t001"); i < 0 || j < 0 || i > j {
		t.Errorf("not in level order:\n%s", out)
	}
}

// A stopped run says so in words, with the reason; a run with no scored
// test says it has no score rather than 0.
func TestTextIncomplete(t *testing.T) {
	info := runs.Info{RunID: "r", Status: runs.StatusStopped, Domains: []string{"d"}, TotalTests: 12, DoneTests: 4, Errors: 4,
		Error: "the endpoint is unreachable"}
	m := runs.Matrix{"d": {"1": {Status: runs.CellError, Tests: 4, Done: 4, Errors: 4}, "2": {Status: runs.CellPartial, Tests: 4, Done: 1, Errors: 1},
		"3": {Status: runs.CellSkipped, Tests: 4}}}
	res := []runs.Result{{TestID: "a", Domain: "d", Level: 1, Status: runs.TestError, Response: "x\x1b[2Jy",
		Details: map[string]any{"error": "model: connection refused\nafter 3 attempts", "extracted_answer": ""}}}
	var b strings.Builder
	if err := newReport(info, m, res, 0.5).writeText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"stopped: INCOMPLETE: stopped after 4 of 12 tests: the endpoint is unreachable",
		"tests: 0 passed, 0 failed, 4 errors; 4 done of 12",
		"overall score: none, no test was scored",
		"ERROR", "1/4 PART", "skipped",
		`ERROR a  d/L1  expected "" (), got "": model: connection refused after 3 attempts`,
		"verdict: FAILED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "complete\n") {
		t.Errorf("a stopped run shown as complete:\n%s", out)
	}
}

// Whatever bytes a response, a test id or a reason holds, the JUnit file
// parses back, and keeps the rest of the text.
func TestJUnitBadTextParses(t *testing.T) {
	info := runs.Info{RunID: "r\x00", ModelName: "m\xff", Status: runs.StatusCompleted, TotalTests: 2, DoneTests: 2, Failed: 1, Errors: 1,
		Config: &runs.Config{BaseURL: "http://h/\x01v1"}}
	res := []runs.Result{
		{TestID: "bad\x00id", Domain: "d", Level: 1, Status: runs.TestFailed, Response: "nul\x00 invalid\xff\xfe ffff\uFFFF end",
			Expected: harness.Expected{Answer: "a\x02", Type: "exact"}, Details: map[string]any{"extracted_answer": "x\x00", "reason": "r\x1b"}},
		{TestID: "err", Domain: "d", Level: 1, Status: runs.TestError, Details: map[string]any{"error": "broken \xc3\x28 pipe\x00"}},
	}
	var b strings.Builder
	if err := newReport(info, runs.Matrix{}, res, 0).writeJUnit(&b); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("invalid XML: %v\n%q", err, b.String())
	}
	if doc.Tests != 3 || doc.Failures != 2 || doc.Errors != 1 || doc.Name != "gauntlet m" {
		t.Fatalf("doc = %+v", doc)
	}
	c := doc.Suites[0].Cases
	if c[0].Name != "badid" || c[0].SystemOut != "nul invalid ffff end" || c[0].Failure == nil || !strings.Contains(c[0].Failure.Message, `expected "a\x02", got "x\x00"`) {
		t.Errorf("failed case = %+v", c[0])
	}
	if c[1].Error == nil || c[1].Error.Message != "broken ( pipe" {
		t.Errorf("errored case = %+v", c[1])
	}
	for _, p := range doc.Suites[0].Properties {
		if (p.Name == "run_id" && p.Value != "r") || (p.Name == "base_url" && p.Value != "http://h/v1") {
			t.Errorf("property %s = %q", p.Name, p.Value)
		}
	}
}

// TestHelperGauntletMain is not a test: run as a subprocess by
// TestExitStatus, it is the gauntlet binary, arguments after "--".
func TestHelperGauntletMain(t *testing.T) {
	if os.Getenv("GAUNTLET_HELPER_MAIN") != "1" {
		t.Skip("the gauntlet binary, for TestExitStatus")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"gauntlet"}, os.Args[i+1:]...)
			break
		}
	}
	profileHelper()
	main()
	os.Exit(0)
}

// TestExitStatus runs the real process: 0 when the gate passes, 1 when it
// fails (score below --min-score, tests in error), 2 for a usage error.
func TestExitStatus(t *testing.T) {
	flags := runFixture(t)
	cases := []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{"gate passed", []string{"--domains", "arithmetic", "--min-score", "0.9"}, 0, ""},
		{"below min score", []string{"--domains", "knowledge", "--min-score", "0.8"}, 1, "gauntlet: the run did not pass the gate: overall score"},
		{"every test in error", []string{"--domains", "arithmetic", "--llm-base-url", "http://127.0.0.1:1/v1"}, 1, "ended in error, so nothing was evaluated"},
		{"bad format", []string{"--format", "xml"}, 2, "--format must be text, json or junit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-test.run=^TestHelperGauntletMain$", "--", "run"}, append(append([]string{}, flags...), tc.args...)...)
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "GAUNTLET_HELPER_MAIN=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("status %d, want %d; stderr:\n%s", status, tc.status, stderr.String())
			}
		})
	}
}

// TestTextReadsNoResultsItNeedsNot: the text report of a run that ended
// with no failure and no error, whose median latency the run stored,
// reads none of its results (at a million results, the pass cost
// minutes); without a stored median it reads the samples, and counts only
// the answered results in it, as the stored one does.
func TestTextReadsNoResultsItNeedsNot(t *testing.T) {
	p50 := int64(40)
	info := runs.Info{RunID: "r", Status: runs.StatusCompleted, Domains: []string{"d"}, TotalTests: 3, DoneTests: 3, Passed: 3,
		OverallScore: score(1), LatencyP50MS: &p50}
	untouched := func(func(runs.Result) error) error {
		t.Error("the report read the run's results")
		return nil
	}
	r, err := newSourceReport(info, runs.Matrix{}, untouched, untouched, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.writeText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "p50 latency 40 ms") {
		t.Errorf("no stored median in:\n%s", b.String())
	}

	info.LatencyP50MS, info.Passed, info.Errors = nil, 1, 2
	res := []runs.Result{
		{TestID: "a", Domain: "d", Level: 1, Status: runs.TestPassed, DurationMS: 70},
		{TestID: "b", Domain: "d", Level: 1, Status: runs.TestError, DurationMS: 5},
		{TestID: "c", Domain: "d", Level: 1, Status: runs.TestError, DurationMS: 6},
	}
	b.Reset()
	if err := newReport(info, runs.Matrix{}, res, 0).writeText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "p50 latency 70 ms") {
		t.Errorf("the median counts errors, or is missing:\n%s", b.String())
	}
}
