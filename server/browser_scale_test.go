package server_test

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var scale = flag.Bool("scale", false, "TestBrowserExplorerScale: measure the explorer over a run of 100,000 results")

// TestBrowserExplorerScale measures, in headless Chromium, how long the
// results explorer takes to show its first page over a run of 100,000
// results in one cell (docs/performance.md, "Results at scale"): the
// run's page, the cell opened, the cell sorted by score and searched. It
// records the times and checks what is shown, never how fast: the
// figures depend on the machine. Storing the run takes seconds (minutes
// with -race), so it runs only with -scale:
//
//	go test ./server -run TestBrowserExplorerScale -scale -v
func TestBrowserExplorerScale(t *testing.T) {
	t.Parallel()
	if !*scale {
		t.Skip("measures a run of 100,000 results: run with -scale")
	}
	const n = 100000
	e := newEngineEnv(t, engineConfig{noExamples: true})
	start := time.Now()
	seedScaleRun(t, e, "huge", n)
	t.Logf("stored a run of %d results in %v", n, time.Since(start).Round(time.Millisecond))

	b := newBrowser(t, e.url, 1280, 900)
	const dlg = "#cell-dialog[open]"
	const rows = dlg + " tr.result-row"
	// lastShown is when, on the page's clock, the explorer last showed a
	// page of results.
	const lastShown = `performance.getEntriesByName('gauntlet:results-shown').at(-1).startTime`
	// clickAt clicks an element from the page itself and returns when,
	// on the page's clock.
	clickAt := func(sel string) float64 {
		t.Helper()
		evalJS[chromedp.Void](b, fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: 'center'})`, sel))
		return evalJS[float64](b, fmt.Sprintf(`(() => { const t0 = performance.now(); document.querySelector(%q).click(); return t0; })()`, sel))
	}
	const runs = 3
	var runPage, cellPage []string
	for range runs {
		b.do("open the run", chromedp.Navigate("about:blank"))
		t0 := time.Now()
		b.open("#/run/huge")
		b.wait("the run's results", `document.querySelectorAll('#run-results tr.result-row').length === 50`)
		wall := time.Since(t0)
		if got := b.text("#run-results .ex-count"); !strings.HasPrefix(got, "100,000 results") {
			t.Fatalf("the run's results count reads %q", got)
		}
		runPage = append(runPage, fmt.Sprintf("%d ms (wall %d ms)", int(evalJS[float64](b, lastShown)), wall.Milliseconds()))

		cell := `main > .view:not([hidden]) .cell[data-domain="scale"][data-level="1"]`
		b.wait("the cell", `document.querySelector('`+cell+`') !== null`)
		clicked := clickAt(cell)
		b.wait("the cell's first page", `document.querySelectorAll('`+rows+`').length === 50 && document.querySelector('`+dlg+` .ex-count').textContent === '100,000 results · 1–50 shown'`)
		cellPage = append(cellPage, fmt.Sprintf("%d ms", int(evalJS[float64](b, lastShown)-clicked)))
	}
	t.Logf("a run of %d results, navigation to its first page shown (page clock), %d loads: %s", n, runs, strings.Join(runPage, ", "))
	t.Logf("its one cell of %d results, click to its first page shown: %s", n, strings.Join(cellPage, ", "))

	// Sorted by score, highest first: the first row becomes a passed one.
	clicked := clickAt(dlg + " th.col-score button")
	b.wait("the sort by score, descending", `document.querySelector('`+dlg+` th.col-score').getAttribute('aria-sort') === 'descending' && document.querySelector('`+rows+`').dataset.status === 'passed'`)
	t.Logf("the cell sorted by score, descending: %d ms from the click", int(evalJS[float64](b, lastShown)-clicked))

	// A word searched: the search waits 300 ms after the last key.
	typed := evalJS[float64](b, `(() => { const s = document.querySelector('`+dlg+` .ex-search'); s.value = 'zebra'; const t0 = performance.now(); s.dispatchEvent(new Event('input')); return t0; })()`)
	b.wait("the search", `document.querySelector('`+dlg+` .ex-count').textContent.startsWith('6,667 of 100,000 results')`)
	t.Logf("the cell searched for a word (6,667 results): %d ms from the input, 300 of them the search's pause for typing", int(evalJS[float64](b, lastShown)-typed))
}
