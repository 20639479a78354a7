package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// seedScaleRun stores a completed run of n results in the one cell
// scale/1, each made by scaleResult.
func seedScaleRun(t *testing.T, e *testEnv, id string, n int) {
	t.Helper()
	all := make([]runs.Result, n)
	for i := range n {
		all[i] = scaleResult(id, i)
	}
	seedRun(t, e, id, all)
}

// seedRun stores a completed run of the results given, all in the one
// cell scale/1.
func seedRun(t *testing.T, e *testEnv, id string, all []runs.Result) {
	t.Helper()
	ctx := context.Background()
	n := len(all)
	if err := e.runs.CreateRun(ctx, runs.Info{RunID: id, StartedAt: runs.Now(), ModelName: id, Model: "m",
		Status: runs.StatusCompleted, TotalTests: n, Domains: []string{"scale"}},
		[]runs.CellKey{{Domain: "scale", Level: 1, Tests: n}}); err != nil {
		t.Fatal(err)
	}
	if err := e.runs.SaveResults(ctx, all); err != nil {
		t.Fatal(err)
	}
}

// scaleResult is the i-th result (from 0) of run id in cell scale/1:
// every 10th in error (score 0), every 4th other failed (score 0.1 to
// 0.6), the rest passed; every 15th response holds "zebra"; it has a
// three-message transcript and one model call.
func scaleResult(id string, i int) runs.Result {
	status, score := runs.TestPassed, 1.0
	switch {
	case i%10 == 0:
		status, score = runs.TestError, 0
	case i%4 == 0:
		status, score = runs.TestFailed, float64(1+i%6)/10
	}
	resp := fmt.Sprintf("The answer is %d.", i+1)
	if i%15 == 0 {
		resp = fmt.Sprintf("A zebra says %d.", i+1)
	}
	prompt := fmt.Sprintf("What is %d + 1?", i)
	r := runs.Result{RunID: id, TestID: fmt.Sprintf("scale-%04d", i), Domain: "scale", Level: 1,
		Prompt: prompt, Response: resp, Expected: harness.Expected{Answer: fmt.Sprint(i + 1), Type: "numeric"},
		Score: score, Status: status, Details: map[string]any{"extracted_answer": fmt.Sprint(i + 1)},
		DurationMS: int64((i * 37) % 1000), ModelName: id, SystemPrompt: "Be brief.", PromptTokens: 10, CompletionTokens: 5,
		CreatedAt: runs.Now(),
		Transcript: []runs.Message{
			{Message: harness.Message{Role: "system", Content: "Be brief."}},
			{Message: harness.Message{Role: "user", Content: prompt}},
			{Message: harness.Message{Role: "assistant", Content: resp}},
		},
		Calls: []runs.Call{{Purpose: "test", Attempt: 1, DurationMS: 12, PromptTokens: 10, CompletionTokens: 5, Status: "ok"}}}
	if status == runs.TestError {
		r.Details["error"] = "model call failed: 503"
	}
	return r
}

// TestBrowserResultsExplorer opens a cell of 1,000 results: one page of
// one-line rows, filtered to errors, searched, sorted by score
// (descending), paged forward and back, a row opened with its transcript,
// exported as CSV with the filters shown; the cell's score over the last
// runs is a chart with an accessible title. It logs how long the first
// page takes to show (docs/performance.md, "Results at scale").
func TestBrowserResultsExplorer(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	for i, passed := range []int{3, 7} {
		e.storeRun(fmt.Sprintf("earlier-%d", i), runs.StatusCompleted, map[string]int{"scale/1": 10}, func(_ string, _, j int) string {
			if j < passed {
				return runs.TestPassed
			}
			return runs.TestFailed
		})
	}
	seedScaleRun(t, e, "big", 1000)
	// The cells' scores, as the engine settles them.
	for id, score := range map[string]float64{"earlier-0": 0.3, "earlier-1": 0.7, "big": 0.55} {
		if err := e.runs.SaveCell(context.Background(), id, "scale", 1, runs.Cell{Status: runs.TestFailed, Score: &score, Tests: 10, Done: 10}); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t, e.url, 1280, 900)
	start := time.Now()
	b.open("#/run/big")
	b.wait("the run's results", `document.querySelectorAll('#run-results tr.result-row').length === 50`)
	runWall := time.Since(start)
	runMark := evalJS[float64](b, `performance.getEntriesByName('gauntlet:results-shown')[0].startTime`)
	if got := b.text("#run-results .ex-count"); !strings.HasPrefix(got, "1,000 results") {
		t.Errorf("the run's results count reads %q", got)
	}

	cell := `main > .view:not([hidden]) .cell[data-domain="scale"][data-level="1"]`
	b.wait("the cell", `document.querySelector('`+cell+`') !== null`)
	start = time.Now()
	b.click(cell)
	const dlg = "#cell-dialog[open]"
	rows := dlg + " tr.result-row"
	b.wait("the cell's first page", `document.querySelectorAll('`+rows+`').length === 50`)
	cellWall := time.Since(start)
	t.Logf("first page of a 1,000-result run: %d ms from navigation (page clock), %v wall; a 1,000-result cell: %v from the click",
		int(runMark), runWall.Round(time.Millisecond), cellWall.Round(time.Millisecond))
	count := func() string { return b.text(dlg + " .ex-count") }
	if got := count(); got != "1,000 results · 1–50 shown" {
		t.Errorf("count %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+dlg+` tr.result-detail:not([hidden])').length`); n != 0 {
		t.Errorf("%d rows open, want all collapsed", n)
	}
	// Worst first: errors (score 0) lead.
	if got := evalJS[string](b, `document.querySelector('`+rows+`').dataset.status`); got != "error" {
		t.Errorf("first row %s, want an error first", got)
	}
	if got := evalJS[string](b, `document.querySelector('`+dlg+` th.col-score').getAttribute('aria-sort')`); got != "ascending" {
		t.Errorf("score column aria-sort %q", got)
	}

	// Errors only.
	setSelect := func(sel, v string) {
		t.Helper()
		evalJS[chromedp.Void](b, fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; s.dispatchEvent(new Event('change')); })()`, sel, v))
	}
	setSelect(dlg+" .ex-status", "error")
	b.wait("errors only", `document.querySelector('`+dlg+` .ex-count').textContent.startsWith('100 of 1,000 results')`)
	if got := evalJS[[]string](b, `[...new Set([...document.querySelectorAll('`+rows+`')].map(r => r.dataset.status))]`); strings.Join(got, ",") != "error" {
		t.Errorf("statuses shown %v, want error only", got)
	}

	// Search a word: the errors that mention it.
	b.typeInto(dlg+" .ex-search", "zebra")
	b.wait("the search", `document.querySelector('`+dlg+` .ex-count').textContent.startsWith('34 of 1,000 results')`)
	setSelect(dlg+" .ex-status", "")
	b.wait("every status", `document.querySelector('`+dlg+` .ex-count').textContent.startsWith('67 of 1,000 results')`)
	if got := evalJS[int](b, `[...document.querySelectorAll('`+rows+` td.preview')].filter(td => !td.textContent.includes('zebra')).length`); got != 0 {
		t.Errorf("%d rows shown without the word searched", got)
	}

	// Sort by score, descending: a second click on the sorted column.
	b.click(dlg + " th.col-score button")
	b.wait("descending scores", `document.querySelector('`+dlg+` th.col-score').getAttribute('aria-sort') === 'descending' && document.querySelector('`+rows+`').dataset.status === 'passed'`)
	scoresDesc := `(() => { const s = [...document.querySelectorAll('` + rows + ` td.score')].map(td => parseFloat(td.textContent)); return s.every((x, i) => i === 0 || s[i-1] >= x); })()`
	if !evalJS[bool](b, scoresDesc) {
		t.Error("scores are not in descending order")
	}

	// Pages of 25: forward twice, back once.
	setSelect(dlg+" .ex-size", "25")
	b.wait("pages of 25", `document.querySelectorAll('`+rows+`').length === 25`)
	firstOf := func() string { return evalJS[string](b, `document.querySelector('`+rows+`').dataset.test`) }
	page1 := firstOf()
	b.click(dlg + " .ex-next")
	b.wait("page 2", `document.querySelector('`+dlg+` .ex-count').textContent.endsWith('26–50 shown')`)
	page2 := firstOf()
	b.click(dlg + " .ex-next")
	b.wait("page 3", `document.querySelector('`+dlg+` .ex-count').textContent.endsWith('51–67 shown')`)
	if !evalJS[bool](b, `document.querySelector('`+dlg+` .ex-next').disabled`) {
		t.Error("next is enabled on the last page")
	}
	b.click(dlg + " .ex-prev")
	b.wait("page 2 again", `document.querySelector('`+dlg+` .ex-count').textContent.endsWith('26–50 shown')`)
	if got := firstOf(); got != page2 || page1 == page2 {
		t.Errorf("page 2 starts with %s, then %s after coming back (page 1 with %s)", page2, got, page1)
	}

	// Open a row: its details and its transcript.
	row := fmt.Sprintf(`%s tr.result-row[data-test=%q]`, dlg, page2)
	// The dialog's heading stays on top as it scrolls: bring the row to
	// the middle first, as a user scrolls to what they read.
	evalJS[chromedp.Void](b, `document.querySelector('`+row+`').scrollIntoView({block: 'center'})`)
	b.click(row + " .row-toggle")
	detail := row + " + tr.result-detail"
	b.wait("the row open", `document.querySelector('`+detail+` .test-body') !== null && !document.querySelector('`+detail+`').hidden`)
	if got := evalJS[string](b, `document.querySelector('`+row+` .row-toggle').getAttribute('aria-expanded')`); got != "true" {
		t.Errorf("aria-expanded %q", got)
	}
	b.click(detail + " details.transcript-wrap > summary")
	b.wait("the transcript", `document.querySelectorAll('`+detail+` .transcript li.msg').length === 3`)

	// Export CSV with the filters shown.
	href := evalJS[string](b, `document.querySelector('`+dlg+` .ex-export-csv').href`)
	if !strings.Contains(href, "q=zebra") || !strings.Contains(href, "sort=-score") || !strings.Contains(href, "format=csv") {
		t.Errorf("export link %s lacks the filters", href)
	}
	type exported struct {
		Status int    `json:"status"`
		Type   string `json:"type"`
		Head   string `json:"head"`
		Lines  int    `json:"lines"`
	}
	exp, err := chromedp.Run(b.ctx, chromedp.Evaluate[exported](`fetch(document.querySelector('`+dlg+` .ex-export-csv').href).then(async r => {
		const l = (await r.text()).trim().split('\n');
		return {status: r.status, type: r.headers.get('Content-Type'), head: l[0], lines: l.length}; })`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("fetch the export: %v", err)
	}
	if exp.Status != 200 || !strings.HasPrefix(exp.Type, "text/csv") || !strings.HasPrefix(exp.Head, "run_id,test_id,repeat,domain,level") || exp.Lines != 68 {
		t.Errorf("export: %+v, want 200, text/csv, the header row and 67 results", exp)
	}

	// The cell's score over the last three runs.
	title := evalJS[string](b, `(document.querySelector('`+dlg+` .score-chart svg[role="img"] title') || {}).textContent || ''`)
	if !strings.Contains(title, "over the last 3 runs") || !strings.Contains(title, "earlier-0 30%") || !strings.Contains(title, "earlier-1 70%") {
		t.Errorf("chart title %q", title)
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+dlg+` .score-chart circle').length`); n != 3 {
		t.Errorf("%d points in the chart, want 3", n)
	}
}
