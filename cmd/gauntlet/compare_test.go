package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// compareData writes three runs into a new SQLite database in a data
// directory and returns the directory: "base" passes all 30 tests of
// math/1 and 10 of 11 of code/2; "worse" fails 20 of math's and flips
// code-00 from passed to failed; "same" is base again.
func compareData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	st := dataRuns(t, dir)
	write := func(id, status string, failed func(domain string, i int) bool) {
		var rs []runs.Result
		cells := []runs.CellKey{{Domain: "math", Level: 1, Tests: 30}, {Domain: "code", Level: 2, Tests: 11}}
		for _, c := range cells {
			for i := range c.Tests {
				r := runs.Result{RunID: id, TestID: fmt.Sprintf("%s-%02d", c.Domain, i), Domain: c.Domain, Level: c.Level,
					Score: 1, Status: runs.TestPassed, CreatedAt: runs.Now()}
				if failed(c.Domain, i) {
					r.Score, r.Status = 0, runs.TestFailed
				}
				rs = append(rs, r)
			}
		}
		if err := st.CreateRun(ctx, runs.Info{RunID: id, StartedAt: runs.Now(), ModelName: "model-" + id, Status: status, TotalTests: len(rs)}, cells); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveResults(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	base := func(d string, i int) bool { return d == "code" && i == 10 }
	write("base", runs.StatusCompleted, base)
	write("worse", runs.StatusCompleted, func(d string, i int) bool { return base(d, i) || d == "math" && i < 20 || d == "code" && i == 0 })
	write("same", runs.StatusRunning, base)
	return dir
}

func TestCompareText(t *testing.T) {
	dir := compareData(t)
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"compare", "base", "worse", "--data", dir}, &out, &errb); err != nil {
		t.Fatalf("compare: %v\n%s", err, errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"base base (model-base, completed)\nhead worse (model-worse, completed)\n",
		"DOMAIN  LEVEL  TESTS  BASE   HEAD   DELTA   95% CI            P",
		"code    2      11     0.909  0.818  -0.091  [",
		"math    1      30     1.000  0.333  -0.667  [",
		"<0.0001  * worse",
		"flipped tests (21):\n  code/2  code-00  passed -> failed\n  math/1  math-00  passed -> failed\n",
		"0 tests improved, 21 regressed, 20 unchanged; 1 cell significantly worse, 0 cells significantly better\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// code/2 changed by one test of eleven: not significant.
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "code ") && strings.Contains(line, "*") {
			t.Errorf("code/2 marked significant: %q", line)
		}
	}

	out.Reset()
	// Flags first, a running run: the comparison says it is partial.
	if err := run(context.Background(), []string{"compare", "--data", dir, "base", "same", "--fail-on-regression"}, &out, &errb); err != nil {
		t.Fatalf("compare: %v", err)
	}
	if !strings.Contains(out.String(), "run same is still running: the comparison covers the tests it finished so far") ||
		strings.Contains(out.String(), "flipped") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestCompareJSON(t *testing.T) {
	dir := compareData(t)
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"compare", "--format", "json", "--database", "sqlite://" + filepath.Join(dir, "gauntlet.db"), "base", "worse"}, &out, &errb); err != nil {
		t.Fatalf("compare: %v\n%s", err, errb.String())
	}
	var c struct {
		Base, Head string
		Cells      map[string]map[string]struct {
			Delta       float64    `json:"delta"`
			CI95        [2]float64 `json:"ci95"`
			PValue      float64    `json:"p_value"`
			Significant bool       `json:"significant"`
			Tests       int        `json:"tests"`
		}
		Flipped []struct {
			TestID     string `json:"test_id"`
			BaseStatus string `json:"base_status"`
			HeadStatus string `json:"head_status"`
		}
		Summary map[string]int
	}
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	m := c.Cells["math"]["1"]
	if c.Base != "base" || c.Head != "worse" || !m.Significant || m.Tests != 30 || m.CI95[1] >= 0 || c.Cells["code"]["2"].Significant ||
		len(c.Flipped) != 21 || c.Flipped[0].TestID != "code-00" || c.Summary["significant_regressions"] != 1 {
		t.Errorf("json:\n%s", out.String())
	}
}

func TestCompareErrorsAndGate(t *testing.T) {
	dir := compareData(t)
	ctx := context.Background()
	var out, errb bytes.Buffer
	err := run(ctx, []string{"compare", "base", "worse", "--data", dir, "--fail-on-regression"}, &out, &errb)
	if !errors.Is(err, errGateFailed) {
		t.Errorf("--fail-on-regression on a regression: err = %v", err)
	}
	if err := run(ctx, []string{"compare", "worse", "base", "--data", dir, "--fail-on-regression"}, &out, &errb); err != nil {
		t.Errorf("--fail-on-regression on an improvement: err = %v", err)
	}
	for _, args := range [][]string{{"base"}, {"base", "worse", "same", "--format", "xml"}, {"base", "worse", "--format", "xml"}, {"base", "worse", "--bogus"}} {
		errb.Reset()
		if err := run(ctx, append([]string{"compare", "--data", dir}, args...), &out, &errb); !errors.Is(err, errUsage) {
			t.Errorf("compare %q: err = %v, want a usage error", args, err)
		}
	}
	if err := run(ctx, []string{"compare", "base", "nope", "--data", dir}, &out, &errb); err == nil || !strings.Contains(err.Error(), `run "nope"`) {
		t.Errorf("unknown run: err = %v", err)
	}
	// A data directory without a database: no empty one is left behind.
	empty := filepath.Join(t.TempDir(), "typo")
	if err := run(ctx, []string{"compare", "base", "worse", "--data", empty}, &out, &errb); err == nil || !strings.Contains(err.Error(), "no database in "+empty) {
		t.Errorf("missing database: err = %v", err)
	}
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("compare created %s: %v", empty, err)
	}
}

func TestCompareExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := compareData(t)
	for _, tc := range []struct {
		args   []string
		status int
	}{
		{[]string{"base", "worse", "--fail-on-regression"}, 1},
		{[]string{"base", "worse"}, 0},
		{[]string{"worse", "base", "--fail-on-regression"}, 0},
		{[]string{"base", "same", "--fail-on-regression"}, 0},
		{[]string{"base", "same", "worse", "--fail-on-regression"}, 1},
		{[]string{"base", "same", "same", "--fail-on-regression"}, 0},
		{[]string{"base", "same", "nope"}, 2},
		{[]string{"base"}, 2},
		{[]string{"base", "worse", "--format", "yaml"}, 2},
		{[]string{"base", "nope"}, 2},
	} {
		if got := exitCode(t, append([]string{"compare", "--data", dir}, tc.args...)...); got != tc.status {
			t.Errorf("compare %q: exit %d, want %d", tc.args, got, tc.status)
		}
	}
}

// Three runs or more: one table, each run against the first, as a sweep
// prints it.
func TestCompareMany(t *testing.T) {
	dir := compareData(t)
	ctx := context.Background()
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"compare", "base", "worse", "same", "--data", dir}, &out, &errb); err != nil {
		t.Fatalf("compare: %v\n%s", err, errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"run same (model-same) is still running: the comparison covers the tests it finished so far\n",
		"DOMAIN  LEVEL  model-base          model-worse         Δ model-worse      model-same          Δ model-same\n",
		"code    2      0.909 [0.62, 0.98]  0.818 [0.52, 0.95]  -0.091 p=1.0000    0.909 [0.62, 0.98]  +0.000 p=1.0000\n",
		"math    1      1.000 [0.89, 1.00]  0.333 [0.19, 0.51]  -0.667 p<0.0001 ⚠  1.000 [0.89, 1.00]  +0.000 p=1.0000\n",
		"model-worse: run worse, completed, overall score ",
		"vs model-base: 0 tests better, 21 worse, 20 unchanged; significantly worse in math/1, significantly better in no cell\n",
		"flipped tests, model-worse vs model-base (21):\n  code/2  code-00  passed -> failed\n",
		"Of 4 comparisons, about 0.2 would be marked by chance alone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "flipped tests, model-same") {
		t.Errorf("same listed flips:\n%s", got)
	}

	out.Reset()
	err := run(ctx, []string{"compare", "--format", "json", "--fail-on-regression", "base", "same", "worse", "--data", dir}, &out, &errb)
	if !errors.Is(err, errGateFailed) {
		t.Errorf("--fail-on-regression: err = %v", err)
	}
	var c struct {
		Base string `json:"base"`
		Runs []struct {
			RunID    string `json:"run_id"`
			Compared bool   `json:"compared"`
			Summary  map[string]int
		} `json:"runs"`
		Cells map[string]map[string][]struct {
			Score  float64         `json:"score"`
			VsBase *map[string]any `json:"vs_base"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if c.Base != "base" || len(c.Runs) != 3 || c.Runs[2].RunID != "worse" || c.Runs[0].Compared || !c.Runs[1].Compared ||
		c.Runs[2].Summary["significant_regressions"] != 1 || len(c.Cells["math"]["1"]) != 3 || c.Cells["math"]["1"][0].VsBase != nil ||
		(*c.Cells["math"]["1"][2].VsBase)["significant"] != true {
		t.Errorf("json:\n%s", out.String())
	}
	// The two-run output stays as it was.
	out.Reset()
	if err := run(ctx, []string{"compare", "base", "worse", "--data", dir}, &out, &errb); err != nil || strings.Contains(out.String(), "Δ") {
		t.Errorf("two runs: %v\n%s", err, out.String())
	}
}

// TestCompareTextRetrieval: two runs of an agent's suite whose tests name
// expected sources: the text shows each cell's recall@5 and hit rate in
// both runs; runs without any (TestCompareText) show no such table.
func TestCompareTextRetrieval(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st := dataRuns(t, dir)
	// Four tests expecting faq.md; the old base finds it for one, the new
	// for all four.
	write := func(id string, found int) {
		var rs []runs.Result
		for i := range 4 {
			var sources []harness.Source
			if i < found {
				sources = []harness.Source{{File: "faq.md", Score: 1}}
			}
			m := runs.MeasureRetrieval([]string{"faq.md"}, &harness.Retrieval{Mode: "hybrid", Sources: sources})
			rs = append(rs, runs.Result{RunID: id, TestID: fmt.Sprintf("kb-%d", i), Domain: "kb", Level: 1, Score: 1,
				Status: runs.TestPassed, CreatedAt: runs.Now(), Details: map[string]any{"retrieval": m.Details()}})
		}
		cells := []runs.CellKey{{Domain: "kb", Level: 1, Tests: 4}}
		if err := st.CreateRun(ctx, runs.Info{RunID: id, StartedAt: runs.Now(), ModelName: id, Status: runs.StatusCompleted, TotalTests: 4}, cells); err != nil {
			t.Fatal(err)
		}
		if err := st.SaveResults(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}
	write("old-kb", 1)
	write("new-kb", 4)
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"compare", "old-kb", "new-kb", "--data", dir}, &out, &errb); err != nil {
		t.Fatalf("compare: %v\n%s", err, errb.String())
	}
	for _, want := range []string{
		"\nretrieval (tests naming expected sources, measured in both runs):\n",
		"DOMAIN  LEVEL  TESTS  BASE R@5  HEAD R@5  DELTA   BASE HITS  HEAD HITS\n",
		"kb      1      4      0.250     1.000     +0.750  0.250      1.000\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// Three runs: the table of the side-by-side comparison (sweeps print
	// it too).
	write("no-kb", 0)
	out.Reset()
	if err := run(ctx, []string{"compare", "old-kb", "new-kb", "no-kb", "--data", dir}, &out, &errb); err != nil {
		t.Fatalf("compare: %v\n%s", err, errb.String())
	}
	for _, want := range []string{
		"\nretrieval (tests naming expected sources, measured in both runs):\n",
		"DOMAIN  LEVEL  R@5 new-kb vs old-kb            R@5 no-kb vs old-kb\n",
		"kb      1      0.25 -> 1.00 (+0.750, 4 tests)  0.25 -> 0.00 (-0.250, 4 tests)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := run(ctx, []string{"compare", "base", "worse", "--data", compareData(t)}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "retrieval") {
		t.Errorf("runs that measured no retrieval show a retrieval table:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"compare", "base", "worse", "same", "--data", compareData(t)}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "retrieval") {
		t.Errorf("three runs that measured no retrieval show a retrieval table:\n%s", out.String())
	}
}
