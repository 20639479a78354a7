package main

import (
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// repeatsRun is a finished run of one cell, dice level 1, asked repeats
// times: "once" passes its second asking only, "always" every time, and
// "mixed" ends in error, then passes, then fails (with repeats 1 only
// the first asking of each exists).
func repeatsRun(repeats int) (runs.Info, runs.Matrix, []runs.Result) {
	outcomes := map[string][]string{
		"once":   {runs.TestFailed, runs.TestPassed, runs.TestFailed},
		"always": {runs.TestPassed, runs.TestPassed, runs.TestPassed},
		"mixed":  {runs.TestError, runs.TestPassed, runs.TestFailed},
	}
	var results []runs.Result
	info := runs.Info{RunID: "20261122-031500-ab12cd", StartedAt: "2026-11-22 03:15:00", ModelName: "nightly", Model: "mock",
		Status: runs.StatusCompleted, Domains: []string{"dice"},
		Config: &runs.Config{Model: "mock", BaseURL: "http://127.0.0.1:9/v1", Repeats: repeats, DefinitionsHash: strings.Repeat("a", 64), GauntletVersion: "test"}}
	var scores float64
	for rep := range repeats {
		for _, id := range []string{"once", "always", "mixed"} {
			st := outcomes[id][rep]
			r := runs.Result{RunID: info.RunID, TestID: id, Repeat: rep, Domain: "dice", Level: 1, Name: "test " + id,
				Prompt: "What is it?", Expected: harness.Expected{Answer: "2", Type: "numeric"}, Status: st,
				DurationMS: int64(10 * (rep + 1)), ModelName: "nightly", CreatedAt: "2026-11-22 03:15:01",
				Details: map[string]any{"extracted_answer": "2"}}
			switch st {
			case runs.TestPassed:
				r.Score, r.Response = 1, "It is 2."
				info.Passed++
			case runs.TestFailed:
				r.Response, r.Details["extracted_answer"], r.Details["reason"] = "It is 3.", "3", "expected 2, got 3"
				info.Failed++
			default:
				r.Details = map[string]any{"error": "the model refused", "extracted_answer": ""}
				info.Errors++
			}
			scores += r.Score
			info.TotalDurationMS += r.DurationMS
			results = append(results, r)
		}
	}
	info.TotalTests, info.DoneTests = len(results), len(results)
	scored := info.Passed + info.Failed
	overall := scores / float64(scored)
	info.OverallScore = &overall
	se := 0.19
	status := runs.CellFailed
	if overall >= 0.5 {
		status = runs.CellPassed
	}
	m := runs.Matrix{"dice": {"1": {Status: status, Score: &overall, Tests: len(results), Done: len(results), Passed: info.Passed,
		Failed: info.Failed, Errors: info.Errors, StdErr: &se, CI95: &stats.Interval{Low: 0.21, High: 0.94}}}}
	return info, m, results
}

// TestJUnitNoRepeatsUnchanged: a run without repeats gets the JUnit file
// it got before repeats changed the report, byte for byte (the golden
// file was written by that version): one case per result, no case
// properties, no repeats property.
func TestJUnitNoRepeatsUnchanged(t *testing.T) {
	info, m, res := repeatsRun(1)
	var b strings.Builder
	if err := newReport(info, m, res, 0).writeJUnit(&b); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "junit-no-repeats.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("JUnit of a run without repeats changed:\n%s\nwant:\n%s", b.String(), want)
	}
}

// caseProps are a JUnit case's properties by name.
func caseProps(c junitCase) map[string]string {
	out := map[string]string{}
	if c.Properties != nil {
		for _, p := range c.Properties.Items {
			out[p.Name] = p.Value
		}
	}
	return out
}

// TestJUnitRepeats: with repeats, one case per test named by its id. A
// test that passed 1 of 3 is a failure whose message gives its pass rate;
// its properties say pass_at_k true, pass_all_k false. A test that failed
// no scored repeat but had one in error is an error; one that passed
// every time passes. Each case's output holds every repeat.
func TestJUnitRepeats(t *testing.T) {
	info, m, res := repeatsRun(3)
	parse := func(res []runs.Result) junitSuites {
		t.Helper()
		var b strings.Builder
		if err := newReport(info, m, res, 0).writeJUnit(&b); err != nil {
			t.Fatal(err)
		}
		var doc junitSuites
		if err := xml.Unmarshal([]byte(b.String()), &doc); err != nil {
			t.Fatalf("invalid XML: %v\n%s", err, b.String())
		}
		return doc
	}
	doc := parse(res)
	if len(doc.Suites) != 2 || doc.Tests != 3+1 || doc.Failures != 2+1 || doc.Errors != 0 {
		t.Fatalf("testsuites: tests=%d failures=%d errors=%d, %d suites", doc.Tests, doc.Failures, doc.Errors, len(doc.Suites))
	}
	s := doc.Suites[0]
	if s.Name != "dice/L1" || s.Tests != 3 || s.Failures != 2 || s.Errors != 0 || s.Time != "0.180" {
		t.Errorf("suite %s: tests=%d failures=%d errors=%d time=%s", s.Name, s.Tests, s.Failures, s.Errors, s.Time)
	}
	suiteProps := map[string]string{}
	for _, p := range s.Properties {
		suiteProps[p.Name] = p.Value
	}
	if suiteProps["repeats"] != "3" {
		t.Errorf("suite properties %v, want repeats 3", suiteProps)
	}
	cases := map[string]junitCase{}
	for _, c := range s.Cases {
		cases[c.Name] = c
	}
	if len(cases) != 3 {
		t.Fatalf("cases %v, want once, always, mixed", cases)
	}
	once := cases["once"]
	if once.Failure == nil || once.Error != nil || once.Classname != "dice.L1" || once.Time != "0.060" ||
		!strings.HasPrefix(once.Failure.Message, `passed 1 of 3 (pass rate 0.33); repeat 0: expected "2", got "3"`) ||
		strings.Count(once.Failure.Text, "expected 2, got 3") != 2 {
		t.Errorf("once = %+v", once)
	}
	if p := caseProps(once); p["pass_rate"] != "0.3333" || p["pass_at_k"] != "true" || p["pass_all_k"] != "false" ||
		p["k"] != "3" || p["samples"] != "3" || p["passed"] != "1" || p["failed"] != "2" || p["errors"] != "0" {
		t.Errorf("once properties %v", p)
	}
	if strings.Count(once.SystemOut, "--- repeat ") != 3 || !strings.Contains(once.SystemOut, "--- repeat 1: passed (score 1.00) ---\nIt is 2.") {
		t.Errorf("once output %q", once.SystemOut)
	}
	if c := cases["always"]; c.Failure != nil || c.Error != nil || caseProps(c)["pass_all_k"] != "true" {
		t.Errorf("always = %+v", c)
	}
	mixed := cases["mixed"]
	if mixed.Failure == nil || !strings.HasPrefix(mixed.Failure.Message, "passed 1 of 2 (pass rate 0.50), 1 in error; repeat 2:") {
		t.Errorf("mixed = %+v", mixed)
	}
	if p := caseProps(mixed); p["k"] != "2" || p["errors"] != "1" || p["pass_rate"] != "0.5000" {
		t.Errorf("mixed properties %v", p)
	}

	// mixed's failed repeat passes instead: no failure left, one error.
	for i := range res {
		if res[i].TestID == "mixed" && res[i].Status == runs.TestFailed {
			res[i].Status, res[i].Score = runs.TestPassed, 1
		}
	}
	doc = parse(res)
	for _, c := range doc.Suites[0].Cases {
		if c.Name != "mixed" {
			continue
		}
		if c.Failure != nil || c.Error == nil || c.Error.Message != "1 of 3 repeats ended in error; repeat 0: the model refused" {
			t.Errorf("mixed with an error and passes = %+v", c)
		}
		if p := caseProps(c); p["pass_all_k"] != "true" || p["k"] != "2" {
			t.Errorf("its properties %v", p)
		}
	}
	if doc.Suites[0].Errors != 1 || doc.Suites[0].Failures != 1 {
		t.Errorf("suite failures=%d errors=%d, want 1 and 1", doc.Suites[0].Failures, doc.Suites[0].Errors)
	}
}

// TestTextRepeats: the table shows each cell's score ± its standard error
// and its 95 % interval, in columns wide enough for them; with repeats the
// summary says how many tests passed every time and at least once, and
// lists those that did not pass every repeat with their pass rate.
func TestTextRepeats(t *testing.T) {
	info, m, res := repeatsRun(3)
	var b strings.Builder
	if err := newReport(info, m, res, 0).writeText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	cell := "0.62±0.19 [0.21,0.94] pass"
	for _, want := range []string{
		"domain  L1                        \n",
		"dice    " + cell + "\n",
		"repeats 3: 3 tests; 1 passed every scored repeat (pass^k), 3 at least once (pass@k), mean pass rate 0.611\n",
		"tests not passing every repeat (2):\n  once  dice/L1  passed 1 of 3 (pass rate 0.33)\n  mixed  dice/L1  passed 1 of 2 (pass rate 0.50), 1 in error\n",
		"  FAIL  once#0  dice/L1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	// Without repeats: no repeats section; a cell stored without its
	// interval shows its score alone.
	info, m, res = repeatsRun(1)
	c := m["dice"]["1"]
	c.StdErr, c.CI95 = nil, nil
	m["dice"]["1"] = c
	b.Reset()
	if err := newReport(info, m, res, 0).writeText(&b); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	if strings.Contains(out, "repeats") || strings.Contains(out, "±") || !strings.Contains(out, "dice    0.50 pass   \n") {
		t.Errorf("summary without repeats or interval:\n%s", out)
	}
}

// TestJSONRepeats: the JSON report carries each cell's stderr and ci95
// and each test's aggregate; a test passing 1 of 3 has pass_rate 1/3,
// pass_at_k true and pass_all_k false, and a repeat in error is not one
// of a test's k.
func TestJSONRepeats(t *testing.T) {
	info, m, res := repeatsRun(3)
	var b strings.Builder
	if err := newReport(info, m, res, 0).writeJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Matrix map[string]map[string]struct {
			StdErr *float64   `json:"stderr"`
			CI95   *[]float64 `json:"ci95"`
		} `json:"matrix"`
		TestResults []json.RawMessage    `json:"test_results"`
		Aggregates  []runs.TestAggregate `json:"aggregates"`
	}
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	c := doc.Matrix["dice"]["1"]
	if c.StdErr == nil || *c.StdErr != 0.19 || c.CI95 == nil || (*c.CI95)[0] != 0.21 || (*c.CI95)[1] != 0.94 {
		t.Errorf("cell stderr %v ci95 %v", c.StdErr, c.CI95)
	}
	if len(doc.TestResults) != 9 || len(doc.Aggregates) != 3 {
		t.Fatalf("%d results, %d aggregates", len(doc.TestResults), len(doc.Aggregates))
	}
	by := map[string]runs.TestAggregate{}
	for _, a := range doc.Aggregates {
		by[a.TestID] = a
	}
	once, mixed := by["once"], by["mixed"]
	if once.PassRate == nil || math.Abs(*once.PassRate-1.0/3) > 1e-12 || once.PassAtK == nil || !*once.PassAtK || once.PassAllK == nil || *once.PassAllK || once.K != 3 {
		t.Errorf("once = %+v", once)
	}
	if mixed.K != 2 || mixed.Samples != 3 || mixed.Errors != 1 || mixed.PassRate == nil || *mixed.PassRate != 0.5 {
		t.Errorf("mixed = %+v", mixed)
	}
}
