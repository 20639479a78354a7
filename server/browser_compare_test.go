package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// pText is how the dashboard writes a p-value: two decimals, three under
// 0.01, "< 0.001" below that.
func pText(p float64) string {
	switch {
	case p < 0.001:
		return "p < 0.001"
	case p < 0.01:
		return fmt.Sprintf("p = %.3f", p)
	}
	return fmt.Sprintf("p = %.2f", p)
}

// TestBrowserCompareSignificance opens the comparison of two runs: the
// cell that regressed on every test carries the significant-regression
// marker with its p-value, the one that improved the improvement marker,
// the unchanged one neither; the summary and the flipped tests come from
// GET /api/compare. Two runs that share no test show the server's reason
// instead of the table.
func TestBrowserCompareSignificance(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	cells := map[string]int{"math/1": 9, "math/2": 5, "code/1": 9}
	e.storeRun("base", runs.StatusCompleted, cells, func(d string, _, _ int) string {
		if d == "code" {
			return runs.TestFailed
		}
		return runs.TestPassed
	})
	// Head: math level 1 fails throughout, code level 1 passes throughout,
	// math level 2 is as it was.
	e.storeRun("head", runs.StatusCompleted, cells, func(d string, l, _ int) string {
		if d == "math" && l == 1 {
			return runs.TestFailed
		}
		return runs.TestPassed
	})
	e.storeRun("other", runs.StatusCompleted, map[string]int{"logic/3": 3}, func(string, int, int) string { return runs.TestPassed })

	var c comparison
	must(t, e.get("/api/compare?base=base&head=head"), http.StatusOK).decode(t, &c)
	worse, better := c.Cells["math"]["1"], c.Cells["code"]["1"]
	if !worse.Significant || worse.Delta != -1 || !better.Significant || better.Delta != 1 || c.Cells["math"]["2"].Significant {
		t.Fatalf("comparison %+v: want math/1 significantly worse, code/1 significantly better, math/2 unchanged", c.Cells)
	}

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/compare/base/head")
	b.wait("the comparison", `document.getElementById('compare-summary') !== null`)

	cell := func(d string, l int) string { return fmt.Sprintf(`td.delta[data-domain=%q][data-level="%d"]`, d, l) }
	wp := pText(worse.PValue)
	got := b.text(cell("math", 1))
	for _, want := range []string{"▼ −100 pts", "Significant regression", "⚠", wp, "95 % CI"} {
		if !strings.Contains(got, want) {
			t.Errorf("math/1 reads %q, want %q in it", got, want)
		}
	}
	if got := evalJS[string](b, `document.querySelector('`+cell("math", 1)+` .sig').getAttribute('aria-label')`); got != "significantly worse, "+wp {
		t.Errorf("math/1 marker label %q, want %q", got, "significantly worse, "+wp)
	}
	if got := evalJS[string](b, `document.querySelector('`+cell("math", 1)+`').title`); !strings.Contains(got, "significantly worse, "+wp) {
		t.Errorf("math/1 title %q", got)
	}
	if got := evalJS[string](b, `document.querySelector('`+cell("math", 1)+`').dataset.significant`); got != "worse" {
		t.Errorf("math/1 data-significant %q, want worse", got)
	}

	got = b.text(cell("code", 1))
	for _, want := range []string{"▲ +100 pts", "Significant improvement", "★", pText(better.PValue)} {
		if !strings.Contains(got, want) {
			t.Errorf("code/1 reads %q, want %q in it", got, want)
		}
	}
	if got := evalJS[string](b, `document.querySelector('`+cell("code", 1)+` .sig').getAttribute('aria-label')`); got != "significantly better, "+pText(better.PValue) {
		t.Errorf("code/1 marker label %q", got)
	}

	got = b.text(cell("math", 2))
	if !strings.Contains(got, "= 0 pts") || !strings.Contains(got, "no change") {
		t.Errorf("math/2 reads %q, want = 0 pts, no change", got)
	}
	for _, bad := range []string{"Significant", "p =", "p <", "⚠", "★"} {
		if strings.Contains(got, bad) {
			t.Errorf("unchanged math/2 reads %q: %q should not be there", got, bad)
		}
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+cell("math", 2)+` .sig').length`); n != 0 {
		t.Errorf("unchanged math/2 has %d significance markers", n)
	}

	summary := b.text("#compare-summary")
	for _, want := range []string{"9 improved", "9 regressed", "5 unchanged", "1 cell significantly worse", "1 cell significantly better"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary %q, want %q in it", summary, want)
		}
	}
	if n := evalJS[int](b, `document.querySelectorAll('.flips-worse tr[data-test^="math-l1-"]').length`); n != 9 {
		t.Errorf("%d math/1 tests listed as now failing, want 9", n)
	}
	if n := evalJS[int](b, `document.querySelectorAll('.flips-better tr[data-test^="code-l1-"]').length`); n != 9 {
		t.Errorf("%d code/1 tests listed as now passing, want 9", n)
	}
	if got := b.text(`.flips-worse tr[data-test="math-l1-00"]`); !strings.Contains(got, "passed") || !strings.Contains(got, "failed") {
		t.Errorf("flipped test row %q", got)
	}

	// Runs that share no test: the server's 422 detail, no table.
	b.route("#/compare/base/other")
	b.wait("the reason", `document.getElementById('compare-nothing') !== null`)
	if got := b.text("#compare-nothing"); !strings.Contains(got, "share no test: nothing to compare") {
		t.Errorf("no-shared-test message %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('main > .view:not([hidden]) table.compare').length`); n != 0 {
		t.Errorf("%d comparison tables shown for runs that share no test", n)
	}
}

// storeRetrievalRun stores a run of an agent's suite: four tests of kb/1
// expecting faq.md, which the agent's retrieval found for the first found
// of them.
func storeRetrievalRun(t *testing.T, e *testEnv, id string, found int) {
	t.Helper()
	ctx := t.Context()
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
	if err := e.runs.CreateRun(ctx, runs.Info{RunID: id, StartedAt: runs.Now(), ModelName: id, Status: runs.StatusCompleted, TotalTests: 4},
		[]runs.CellKey{{Domain: "kb", Level: 1, Tests: 4}}); err != nil {
		t.Fatal(err)
	}
	if err := e.runs.SaveResults(ctx, rs); err != nil {
		t.Fatal(err)
	}
	var ret runs.RetrievalTally
	for i := range rs {
		ret.Add(&rs[i])
	}
	score := 1.0
	if err := e.runs.SaveCell(ctx, id, "kb", 1, runs.Cell{Status: runs.TestPassed, Score: &score, Tests: 4, Done: 4, Passed: 4, Retrieval: ret.Cell()}); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserCompareRetrieval: comparing two runs of an agent's suite
// whose tests name expected sources, each cell shows how retrieval
// changed (recall@5 before and after, the change); side by side, each
// run's column shows its own recall@5 too.
func TestBrowserCompareRetrieval(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	storeRetrievalRun(t, e, "old-kb", 1)
	storeRetrievalRun(t, e, "new-kb", 4)
	storeRetrievalRun(t, e, "worse-kb", 0)

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/compare/old-kb/new-kb")
	b.wait("the comparison", `document.getElementById('compare-summary') !== null`)
	sel := `td.delta[data-domain="kb"][data-level="1"] .delta-retrieval`
	if got := b.text(sel); got != "R@5 0.25 → 1.00 ▲ +75 pts" {
		t.Errorf("kb/1 retrieval reads %q", got)
	}
	if got := evalJS[string](b, `document.querySelector('`+sel+`').title`); !strings.Contains(got, "hit rate 25% → 100%") || !strings.Contains(got, "4 paired tests") {
		t.Errorf("kb/1 retrieval title %q", got)
	}

	b.route("#/compare/old-kb/new-kb/worse-kb")
	b.wait("the side-by-side table", `document.getElementById('ncompare-table') !== null`)
	col := func(run string) string {
		return fmt.Sprintf(`td.ncell[data-run=%q][data-domain="kb"][data-level="1"]`, run)
	}
	if got := b.text(col("old-kb") + " .ncell-recall"); got != "R@5 0.25" {
		t.Errorf("baseline's recall reads %q", got)
	}
	if got := b.text(col("new-kb") + " .delta-retrieval"); got != "R@5 0.25 → 1.00 ▲ +75 pts" {
		t.Errorf("run 2's retrieval change reads %q", got)
	}
	if got := b.text(col("worse-kb") + " .delta-retrieval"); got != "R@5 0.25 → 0.00 ▼ −25 pts" {
		t.Errorf("run 3's retrieval change reads %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+col("old-kb")+` .delta-retrieval').length`); n != 0 {
		t.Errorf("the baseline shows %d retrieval changes against itself", n)
	}
}
