package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// costFixture writes a suite of ten tests in one cell (sums/L1) and a
// pricing.yaml pricing "cheap" at $1 / $2 and "dear" at $10 / $30 a
// million input / output tokens ("free" has no price), and starts a fake
// endpoint answering every test right with 1,000 prompt and 500
// completion tokens, 20 ms late. A test then costs $0.002 on cheap and
// $0.025 on dear. It returns the common flags and the data directory.
func costFixture(t *testing.T) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	var l1 strings.Builder
	l1.WriteString("tests:\n")
	for i := range 10 {
		fmt.Fprintf(&l1, "  - id: add-%d\n    prompt: What is %d + 1?\n    expected:\n      answer: '%d'\n      type: numeric\n", i, i, i+1)
	}
	for rel, body := range map[string]string{
		"evaluators/number.yaml":    "id: number\nname: Number\ntype: regex\nextraction_regex: (?<answer>-?\\d+)\n",
		"domains/sums/domain.yaml":  "id: sums\nname: Sums\nevaluator_id: number\n",
		"domains/sums/level-1.yaml": l1.String(),
		"pricing.yaml":              "models:\n  cheap: {input: 1, output: 2}\n  dear: {input: 10, output: 30}\n",
	} {
		writeDef(t, defs, rel, body)
	}
	mock := llmtest.NewServer(llmtest.Options{Latency: 20 * time.Millisecond, Respond: func(r *llmtest.Request) *llmtest.Reply {
		var n int
		fmt.Sscanf(r.LastUser(), "What is %d + 1?", &n)
		return &llmtest.Reply{Content: fmt.Sprintf("The answer is %d.", n+1),
			Usage: &harness.Usage{PromptTokens: 1000, CompletionTokens: 500, TotalTokens: 1500}}
	}})
	t.Cleanup(mock.Close)
	data := filepath.Join(dir, "data")
	return []string{"--data", data, "--definitions", defs, "--llm-base-url", mock.URL, "--llm-retries", "0"}, data
}

// storedP50 is the nearest-rank median of a stored run's durations.
func storedP50(t *testing.T, data, id string) int64 {
	t.Helper()
	res, err := dataRuns(t, data).Results(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var ms []int64
	for _, r := range res {
		ms = append(ms, r.DurationMS)
	}
	slices.Sort(ms)
	if len(ms) == 0 {
		t.Fatal("no results")
	}
	return ms[(len(ms)+1)/2-1]
}

func near(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-9 }

// TestReportCost: a priced run's text report shows what each cell and the
// run cost, the judges' part, the cost per 1,000 tests, the tokens and the
// p50 latency; its JSON carries the costs and tokens; its JUnit suites
// carry them as properties and each test case its cost. An unpriced run
// says "cost n/a", never $0.
func TestReportCost(t *testing.T) {
	flags, data := costFixture(t)
	dir := t.TempDir()
	var text strings.Builder
	if err := run(context.Background(), append([]string{"run", "--model", "dear"}, flags...), &text, io.Discard); err != nil {
		t.Fatalf("run: %v\n%s", err, text.String())
	}
	list := storedRuns(t, data)
	if len(list) != 1 {
		t.Fatalf("%d runs", len(list))
	}
	id := list[0].RunID
	p50 := storedP50(t, data, id)
	if p50 < 20 {
		t.Errorf("p50 latency %d ms with a 20 ms endpoint", p50)
	}
	got := text.String()
	// 10 tests × (1000 × $10 + 500 × $30) / 10⁶ = $0.25; $25 per 1,000 tests.
	for _, want := range []string{
		"sums    1.00±0.00 [0.72,1.00] pass $0.25",
		fmt.Sprintf("cost $0.25 (judges $0.00), $25.00 per 1,000 tests; tokens 10000 prompt (0 cached), 5000 completion (0 reasoning); p50 latency %d ms\n", p50),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text report lacks %q:\n%s", want, got)
		}
	}

	// The reports gauntlet run writes in the other formats, of the stored run.
	report := func(id, format string) string {
		t.Helper()
		rep, err := loadReport(dataRuns(t, data), list[0], 0)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := rep.write(&b, format); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	b := []byte(report(id, "json"))
	var doc struct {
		RunInfo     runs.Info                       `json:"run_info"`
		Matrix      map[string]map[string]runs.Cell `json:"matrix"`
		TestResults []runs.Result                   `json:"test_results"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	in := doc.RunInfo
	if !near(in.CostUSD, 0.25) || !near(in.JudgeCostUSD, 0) || in.Tokens != (runs.Tokens{Prompt: 10000, Completion: 5000}) {
		t.Errorf("run_info cost %v judge %v tokens %+v", in.CostUSD, in.JudgeCostUSD, in.Tokens)
	}
	if c := doc.Matrix["sums"]["1"]; !near(c.CostUSD, 0.25) {
		t.Errorf("cell cost %v", c.CostUSD)
	}
	for _, r := range doc.TestResults {
		if !near(r.CostUSD, 0.025) {
			t.Errorf("result %s cost %v", r.TestID, r.CostUSD)
		}
	}

	junit := report(id, "junit")
	var suites struct {
		Suites []struct {
			Name  string          `xml:"name,attr"`
			Props []junitProperty `xml:"properties>property"`
			Cases []struct {
				Name  string          `xml:"name,attr"`
				Props []junitProperty `xml:"properties>property"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(junit), &suites); err != nil {
		t.Fatal(err)
	}
	for _, s := range suites.Suites {
		props := map[string]string{}
		for _, p := range s.Props {
			props[p.Name] = p.Value
		}
		if props["cost_usd"] != "0.25" || props["judge_cost_usd"] != "0" || props["cost_per_1000_tests"] != "25" ||
			props["tokens_prompt"] != "10000" || props["tokens_completion"] != "5000" || props["tokens_cached"] != "0" || props["tokens_reasoning"] != "0" {
			t.Errorf("suite %s properties %v", s.Name, props)
		}
		if s.Name != "sums/L1" {
			continue
		}
		for _, c := range s.Cases {
			if len(c.Props) != 1 || c.Props[0] != (junitProperty{"cost_usd", "0.025"}) {
				t.Errorf("case %s properties %v", c.Name, c.Props)
			}
		}
	}

	// No price: n/a, no cost in the cells, no cost property.
	text.Reset()
	if err := run(context.Background(), append([]string{"run", "--model", "free", "--format", "junit", "--output", filepath.Join(dir, "free.xml")}, flags...), io.Discard, &text); err != nil {
		t.Fatalf("run free: %v", err)
	}
	x, err := os.ReadFile(filepath.Join(dir, "free.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(x), "cost_usd") || !strings.Contains(string(x), `<property name="tokens_prompt" value="10000">`) {
		t.Errorf("unpriced JUnit report:\n%.2000s", x)
	}
	if got := text.String(); !strings.Contains(got, "cost n/a (no price for the model in pricing.yaml); tokens 10000 prompt") || strings.Contains(got, "$") {
		t.Errorf("unpriced text report:\n%s", got)
	}
}

// TestSweepCost: a sweep of models at different prices sets side by side,
// per model, its score with its interval, its cost per 1,000 tests, its
// p50 latency and its cost, in the text table and in the JSON; a model
// without a price shows n/a (null), never 0. gauntlet compare shows the
// same figures, for two runs and for several.
func TestSweepCost(t *testing.T) {
	flags, data := costFixture(t)
	var text strings.Builder
	if err := run(context.Background(), append([]string{"run", "--model", "cheap", "--model", "dear", "--model", "free"}, flags...), &text, io.Discard); err != nil {
		t.Fatalf("run: %v\n%s", err, text.String())
	}
	p50 := map[string]int64{}
	ids := map[string]string{}
	for _, in := range storedRuns(t, data) {
		ids[in.Model] = in.RunID
		p50[in.Model] = storedP50(t, data, in.RunID)
	}
	// cheap: (1000 × $1 + 500 × $2) / 10⁶ = $0.002 a test, $0.02 the run;
	// dear: $0.025 a test, $0.25 the run.
	wantRows := map[string]string{
		"cheap": fmt.Sprintf("cheap  1.000  [0.72, 1.00]  $2.00          %d ms        $0.02  15000   10", p50["cheap"]),
		"dear":  fmt.Sprintf("dear   1.000  [0.72, 1.00]  $25.00         %d ms        $0.25  15000   10", p50["dear"]),
		"free":  fmt.Sprintf("free   1.000  [0.72, 1.00]  n/a            %d ms        n/a    15000   10", p50["free"]),
	}
	check := func(what, got string) {
		t.Helper()
		if h := row2(got, "MODEL"); !strings.HasPrefix(h, "MODEL  SCORE  95% CI        COST/1K TESTS  P50 LATENCY  COST") {
			t.Errorf("%s: header %q:\n%s", what, h, got)
		}
		for m, want := range wantRows {
			if !strings.Contains(got, want) {
				t.Errorf("%s: no row for %s %q:\n%s", what, m, want, got)
			}
		}
	}
	check("sweep", text.String())

	var out strings.Builder
	if err := run(context.Background(), append([]string{"run", "--format", "json", "--model", "cheap", "--model", "free"}, flags...), &out, io.Discard); err != nil {
		t.Fatalf("run --format json: %v", err)
	}
	var doc struct {
		Comparison struct {
			Runs []struct {
				Model            string      `json:"model"`
				OverallScore     *float64    `json:"overall_score"`
				CI95             *[2]float64 `json:"ci95"`
				Tests            int         `json:"tests"`
				CostUSD          *float64    `json:"cost_usd"`
				JudgeCostUSD     *float64    `json:"judge_cost_usd"`
				CostPer1000Tests *float64    `json:"cost_per_1000_tests"`
				LatencyP50MS     *int64      `json:"latency_p50_ms"`
				Tokens           runs.Tokens `json:"tokens"`
			} `json:"runs"`
		} `json:"comparison"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatal(err)
	}
	rs := doc.Comparison.Runs
	if len(rs) != 2 || rs[0].Model != "cheap" || rs[1].Model != "free" {
		t.Fatalf("runs %+v", rs)
	}
	if c := rs[0]; !near(c.CostUSD, 0.02) || !near(c.JudgeCostUSD, 0) || !near(c.CostPer1000Tests, 2) || c.LatencyP50MS == nil || *c.LatencyP50MS < 20 ||
		c.Tests != 10 || c.CI95 == nil || c.CI95[0] < 0.71 || c.CI95[1] != 1 || c.Tokens != (runs.Tokens{Prompt: 10000, Completion: 5000}) {
		t.Errorf("cheap: %+v", c)
	}
	if c := rs[1]; c.CostUSD != nil || c.CostPer1000Tests != nil || c.JudgeCostUSD != nil || c.LatencyP50MS == nil {
		t.Errorf("free: %+v", c)
	}
	if !strings.Contains(out.String(), `"cost_per_1000_tests": null`) {
		t.Errorf("no null cost for the unpriced model:\n%s", out.String())
	}

	// The sweep's JUnit: each model's suites carry its own cost.
	out.Reset()
	if err := run(context.Background(), append([]string{"run", "--format", "junit", "--model", "cheap", "--model", "free"}, flags...), &out, io.Discard); err != nil {
		t.Fatalf("run --format junit: %v", err)
	}
	var suites struct {
		Suites []struct {
			Name  string          `xml:"name,attr"`
			Props []junitProperty `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out.String()), &suites); err != nil {
		t.Fatal(err)
	}
	for _, s := range suites.Suites {
		props := map[string]string{}
		for _, p := range s.Props {
			props[p.Name] = p.Value
		}
		cost, priced := props["cost_usd"]
		switch {
		case strings.HasPrefix(s.Name, "cheap/"):
			if cost != "0.02" || props["cost_per_1000_tests"] != "2" {
				t.Errorf("sweep suite %s: cost %q per 1,000 %q", s.Name, cost, props["cost_per_1000_tests"])
			}
		case strings.HasPrefix(s.Name, "free/"):
			if priced || props["tokens_prompt"] != "10000" {
				t.Errorf("sweep suite %s of an unpriced model: %v", s.Name, props)
			}
		default:
			t.Errorf("sweep suite %s", s.Name)
		}
	}

	// gauntlet compare of the first sweep's runs: several, then two.
	text.Reset()
	if err := run(context.Background(), []string{"compare", "--data", data, ids["cheap"], ids["dear"], ids["free"]}, &text, io.Discard); err != nil {
		t.Fatalf("compare: %v", err)
	}
	check("compare of three", text.String())
	text.Reset()
	if err := run(context.Background(), []string{"compare", "--data", data, ids["cheap"], ids["dear"]}, &text, io.Discard); err != nil {
		t.Fatalf("compare: %v", err)
	}
	for _, want := range []string{
		fmt.Sprintf("base cheap  1.000  [0.72, 1.00]  $2.00          %d ms", p50["cheap"]),
		fmt.Sprintf("head dear   1.000  [0.72, 1.00]  $25.00         %d ms", p50["dear"]),
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("compare of two lacks %q:\n%s", want, text.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"compare", "--data", data, "--format", "json", ids["dear"], ids["free"]}, &out, io.Discard); err != nil {
		t.Fatalf("compare --format json: %v", err)
	}
	var two struct {
		Base string `json:"base"`
		Runs []struct {
			RunID            string   `json:"run_id"`
			CostUSD          *float64 `json:"cost_usd"`
			CostPer1000Tests *float64 `json:"cost_per_1000_tests"`
			LatencyP50MS     *int64   `json:"latency_p50_ms"`
		} `json:"runs"`
		Summary map[string]any `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out.String()), &two); err != nil {
		t.Fatal(err)
	}
	if two.Base != ids["dear"] || two.Summary == nil || len(two.Runs) != 2 || two.Runs[0].RunID != ids["dear"] || !near(two.Runs[0].CostPer1000Tests, 25) ||
		!near(two.Runs[0].CostUSD, 0.25) || two.Runs[0].LatencyP50MS == nil || *two.Runs[0].LatencyP50MS != p50["dear"] ||
		two.Runs[1].CostUSD != nil || two.Runs[1].CostPer1000Tests != nil {
		t.Errorf("compare --format json:\n%s", out.String())
	}
}
