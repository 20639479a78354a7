package server_test

// Browser tests of the dashboard: a real headless Chromium, driven with
// chromedp, against a real server (httptest) and the llmtest model. They
// need Debian's chromium; without it they are skipped, unless CI is set
// (.ci/run sets it and installs chromium), where they fail instead.
//
//	go test ./server -run 'Browser|Screenshot'            # the browser tests
//	go test ./server -run TestScreenshot -update          # rewrite docs/screenshot-dashboard.png
//	go test ./server -run Browser -artifacts -outputdir /tmp/out   # failure screenshots there, not in $TMPDIR

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/testartefact"
)

var update = flag.Bool("update", false, "TestScreenshot: write docs/screenshot-dashboard.png")

// The bounds are far above what an idle machine needs (a browser test
// takes seconds): they only end a test that is stuck, and must not end
// one on a loaded machine (make test beside other work, -race, a
// Chromium starting slowly).
const (
	// browserTimeout bounds one browser test.
	browserTimeout = 4 * time.Minute
	// uiWait bounds how long a test waits for the page to show something.
	uiWait = time.Minute
)

// browser is one headless Chromium with a fresh profile and one tab,
// pointed at a test server.
type browser struct {
	t    *testing.T
	base string
	tab  context.Context // the tab, without the test's deadline
	ctx  context.Context // the tab, with it

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors of the page
}

// chromium returns the browser to run: chromium from PATH (Debian's
// /usr/bin/chromium), or $CHROMIUM. Without one the test is skipped,
// unless CI is set.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "" {
		t.Skip("chromium is not installed (apt-get install -y chromium); the browser tests are skipped outside CI")
	}
	t.Fatal("CI is set but chromium is not installed: .ci/run installs it with apt-get install -y chromium")
	return ""
}

// sharedChromium is the test process's one Chromium, started by the first
// browser test and stopped by TestMain: each test opens a tab in a
// browser context of its own (its own cookies, storage and cache), which
// costs a fraction of a browser's start.
var sharedChromium struct {
	mu      sync.Mutex
	browser context.Context // the browser's first tab; its Browser is every test's
	stop    func()
}

// chromiumBrowser returns the shared Chromium, started on first use, or
// again if it has died. A Chromium that exits while starting (seen on a
// loaded machine: "chrome failed to start") is started again, twice at
// most, each time with a fresh profile.
func chromiumBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium(t)
	sharedChromium.mu.Lock()
	defer sharedChromium.mu.Unlock()
	if c := sharedChromium.browser; c != nil && c.Err() == nil {
		return c
	}
	stopChromium()
	for attempt := 1; ; attempt++ {
		profile, err := os.MkdirTemp("", "gauntlet-test-chromium-")
		if err != nil {
			t.Fatal(err)
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(exe),
			chromedp.Headless,
			chromedp.NoSandbox, // tests run as root in CI
			chromedp.DisableGPU,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.UserDataDir(profile),
		)
		browser, cancelBrowser := chromedp.NewContext(alloc)
		stop := func() { cancelBrowser(); cancelAlloc(); os.RemoveAll(profile) }
		if err = chromedp.Do(browser); err == nil {
			sharedChromium.browser, sharedChromium.stop = browser, stop
			return browser
		}
		stop()
		if attempt == 3 || !strings.Contains(err.Error(), "failed to start") {
			t.Fatalf("start chromium (%s), attempt %d: %v", exe, attempt, err)
		}
		t.Logf("start chromium (%s), attempt %d: %v; starting it again", exe, attempt, err)
	}
}

// stopChromium stops the shared Chromium, if it runs. Call it with
// sharedChromium.mu held, or once the tests are over.
func stopChromium() {
	if sharedChromium.stop != nil {
		sharedChromium.stop()
	}
	sharedChromium.browser, sharedChromium.stop = nil, nil
}

// newBrowser opens a tab of width × height in a fresh browser context of
// the shared Chromium and returns it. On failure the test saves a
// full-page screenshot and the page's HTML where the message says (see
// internal/testartefact: under $TMPDIR/gauntlet-test-artefacts, or
// -outputdir with -artifacts); any uncaught exception or console error of
// the page fails the test.
func newBrowser(t *testing.T, baseURL string, width, height int) *browser {
	t.Helper()
	b := &browser{t: t, base: baseURL}
	tab, cancelTab := chromedp.NewContext(chromiumBrowser(t),
		chromedp.WithNewBrowserContext(), chromedp.WithListener(b.listen))
	if err := chromedp.Do(tab); err != nil {
		cancelTab()
		t.Fatalf("open a tab in chromium: %v", err)
	}
	ctx, cancelCtx := context.WithTimeout(tab, browserTimeout)
	t.Cleanup(func() { cancelCtx(); cancelTab() })
	b.tab, b.ctx = tab, ctx
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("set the viewport: %v", err)
	}
	t.Cleanup(b.screenshotOnFailure)
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("the page reported: %s", p)
		}
	})
	return b
}

// listen records the page's uncaught exceptions and console errors. It
// runs in chromedp's event loop: it must not block.
func (b *browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "uncaught exception: " + ev.ExceptionDetails.Text
		if ex := ev.ExceptionDetails.Exception; ex != nil && ex.Description != "" {
			msg += " " + ex.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, string(a.Value))
			}
		}
		msg = "console.error: " + strings.Join(parts, " ")
	default:
		return
	}
	b.mu.Lock()
	b.problems = append(b.problems, msg)
	b.mu.Unlock()
}

// expectProblem forgets recorded console errors containing s: the test
// provoked them on purpose (a 401 logged by the browser, say).
func (b *browser) expectProblem(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.problems[:0]
	for _, p := range b.problems {
		if !strings.Contains(p, s) {
			kept = append(kept, p)
		}
	}
	b.problems = kept
}

func (b *browser) screenshotOnFailure() {
	if !b.t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(b.tab, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	// Not t.ArtifactDir: without -artifacts it is removed with the test,
	// before anyone can open the file the message names.
	dir := testartefact.Dir(b.t)
	p := filepath.Join(dir, "failure.png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Logf("no failure screenshot: %v", err)
		return
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	b.t.Logf("failure screenshot of %s: %s", loc, p)
	if html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "failure.html"), []byte(html), 0o644); err == nil {
			b.t.Logf("the page's HTML then: %s", filepath.Join(dir, "failure.html"))
		}
	}
}

// do runs actions, failing the test with what on error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open loads the dashboard at a hash route ("#/live") and waits for its
// view.
func (b *browser) open(hash string) {
	b.t.Helper()
	b.do("open "+hash, chromedp.Navigate(b.base+"/"+hash))
	b.wait("the "+hash+" view", `document.querySelector('main > .view:not([hidden]) h1') !== null`)
}

// route changes the hash route without reloading the page.
func (b *browser) route(hash string) {
	b.t.Helper()
	evalJS[chromedp.Void](b, fmt.Sprintf("location.hash = %q", hash))
	b.wait("the "+hash+" view", `document.querySelector('main > .view:not([hidden]) h1') !== null`)
}

// wait polls a JavaScript expression until it is truthy.
func (b *browser) wait(what, expr string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(uiWait)))
	if err != nil {
		b.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// evalJS evaluates a JavaScript expression.
func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text is the visible text of the first element matching a CSS selector.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiWait)
	defer cancel()
	// An element the page replaced between the query and the read (a
	// view that re-renders on its poll) is found again, as click does.
	for {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		if err == nil {
			return s
		}
		if !staleNode(err) || ctx.Err() != nil {
			b.t.Fatalf("text of %s: %v", sel, err)
		}
	}
}

// click clicks the first visible element matching a CSS selector, as a
// mouse would.
//
// An element the page replaced between the query and the click (a view
// that re-renders on its poll) is found again and clicked: the click is
// meant for whatever element matches sel, not for one node of the DOM.
func (b *browser) click(sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, uiWait)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
		if err == nil {
			return
		}
		if !staleNode(err) || ctx.Err() != nil {
			b.t.Fatalf("click %s: %v", sel, err)
		}
	}
}

// staleNode reports whether err is the browser's answer to an action on
// a node that left the document after it was found.
func staleNode(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") || strings.Contains(msg, "No node with given id found") ||
		strings.Contains(msg, "Node is detached from document")
}

// typeInto replaces the text of an input or textarea by typing.
func (b *browser) typeInto(sel, text string) {
	b.t.Helper()
	b.do("type into "+sel, chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf("document.querySelector(%q).value = ''", sel)),
		chromedp.SendKeys(chromedp.CSS(sel), text, chromedp.NodeVisible))
}

// choose sets a select's value.
func (b *browser) choose(sel, value string) {
	b.t.Helper()
	b.do("choose "+value+" in "+sel, chromedp.SetValue(chromedp.CSS(sel), value, chromedp.NodeVisible))
}

// cells returns "domain/level status" for each matrix cell shown.
func (b *browser) cells() []string {
	b.t.Helper()
	return evalJS[[]string](b, `[...document.querySelectorAll('main > .view:not([hidden]) .cell[data-domain]')]
		.map(c => c.dataset.domain + '/' + c.dataset.level + ' ' + c.dataset.status).sort()`)
}

// allCellsDone is true when the shown matrix has n cells, all finished.
func allCellsDone(n int) string {
	return fmt.Sprintf(`(() => { const c = [...document.querySelectorAll('main > .view:not([hidden]) .cell[data-domain]')];
		return c.length === %d && c.every(x => ['passed', 'failed', 'skipped'].includes(x.dataset.status)); })()`, n)
}

// history reads GET /api/history.
func (e *testEnv) history() []map[string]any {
	e.t.Helper()
	var out struct {
		Runs []map[string]any `json:"runs"`
	}
	must(e.t, e.get("/api/history"), http.StatusOK).decode(e.t, &out)
	return out.Runs
}

// TestBrowserLiveRun starts a run from the page and watches the cells turn
// passed and failed, the progress bar fill and the end of the run in the
// log; then opens a cell and reads its tests, failed first.
func TestBrowserLiveRun(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 150 * time.Millisecond, Jitter: 150 * time.Millisecond}, concurrency: 2})
	// add-carry (arithmetic level 1, after add-small) now fails: the cell
	// mixes a failed and a passed test.
	must(t, e.put("/api/settings/tests/add-carry", map[string]any{"expected": map[string]any{"answer": "43"}}), http.StatusOK)
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/live")
	b.wait("the domain picker", `document.querySelectorAll('#domain-checks input:checked').length === 3`)
	b.wait("the model check", `document.getElementById('model-chip').textContent.includes('llmtest-model')`)

	b.typeInto(`#start-form input[name="model_name"]`, "browser-run")
	b.click("#start-button")
	b.wait("the run to start", `document.querySelector('.cell[data-domain]') !== null`)
	b.wait("every cell to finish", allCellsDone(len(exampleCells)))
	cells := strings.Join(b.cells(), "\n")
	for _, want := range []string{"arithmetic/1 passed", "arithmetic/2 passed", "knowledge/1 failed", "tool_use/1 passed", "tool_use/2 failed"} {
		if !strings.Contains(cells, want) {
			t.Errorf("cells:\n%s\nwant %q", cells, want)
		}
	}
	// Not colour alone: each cell shows a symbol and its status in words.
	if got := b.text(`.cell[data-domain="knowledge"][data-level="1"]`); !strings.Contains(got, "✗") || !strings.Contains(got, "failed") || !strings.Contains(got, "0%") {
		t.Errorf("knowledge/1 cell reads %q, want ✗, failed and 0%%", got)
	}
	if got := b.text(`.cell[data-domain="arithmetic"][data-level="2"]`); !strings.Contains(got, "✓") || !strings.Contains(got, "passed") || !strings.Contains(got, "100%") || !strings.Contains(got, " ms") {
		t.Errorf("arithmetic/2 cell reads %q, want ✓, passed, 100%% and a duration", got)
	}
	b.wait("the end of the run to be announced", `(document.getElementById('run-announce').dataset.status || '') === 'completed'`)
	if got := b.text("#run-announce"); !strings.Contains(got, "completed") || !strings.Contains(got, "6 passed · 6 failed · 0 errors") {
		t.Errorf("announcement %q", got)
	}
	b.wait("the full progress bar", `(() => { const p = document.getElementById('run-progress'); return p.dataset.total === '12' && p.dataset.progress === '12' && p.value === p.max; })()`)
	b.wait("EVAL_COMPLETE in the log", `document.querySelector('#log .log-end') !== null`)
	if got := b.text("#log"); !strings.Contains(got, "[arithmetic][L1]") {
		t.Errorf("log %q has no [arithmetic][L1] line", got)
	}
	// A second dashboard opened now sees the whole log too: the pages
	// follow it with a cursor instead of draining it.
	late := newBrowser(t, e.url, 1280, 900)
	late.open("#/live")
	late.wait("EVAL_COMPLETE in the second dashboard's log", `document.querySelector('#log .log-end') !== null`)
	if got := late.text("#log"); !strings.Contains(got, "[arithmetic][L1]") || !strings.Contains(got, "browser-run") {
		t.Errorf("second dashboard's log %q lacks the run's lines", got)
	}
	runs := e.history()
	if len(runs) != 1 || runs[0]["model_name"] != "browser-run" || runs[0]["status"] != "completed" {
		t.Fatalf("history %v, want one completed run labelled browser-run", runs)
	}

	// Drill down: the failed test comes first (worst score first), one
	// line each; opened, it shows its response.
	b.click(`.cell[data-domain="arithmetic"][data-level="1"]`)
	b.wait("the cell's tests", `document.querySelectorAll('#cell-dialog[open] tr.result-row').length === 2`)
	order := evalJS[[]string](b, `[...document.querySelectorAll('#cell-dialog tr.result-row')].map(d => d.dataset.test + ' ' + d.dataset.status)`)
	if strings.Join(order, ",") != "add-carry failed,add-small passed" {
		t.Errorf("tests in the dialog: %v, want the failed add-carry first", order)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#cell-dialog tr.result-detail:not([hidden])').length`); n != 0 {
		t.Errorf("%d results open before any was asked for, want every row collapsed", n)
	}
	b.click(`#cell-dialog tr.result-row[data-test="add-carry"] .row-toggle`)
	b.wait("add-carry opened", `document.querySelector('#cell-dialog tr.result-row[data-test="add-carry"] + tr.result-detail:not([hidden]) .test-body') !== null`)
	body := b.text(`#cell-dialog tr.result-row[data-test="add-carry"] + tr.result-detail`) // headings are upper-cased by CSS
	for _, want := range []string{"What is 17 + 25?", "The answer is 42.", "You are a careful calculator.", "Answer with the number only.", "Expected (numeric)", "43", "Extracted", "Second pass", "tokens"} {
		if !strings.Contains(strings.ToLower(body), strings.ToLower(want)) {
			t.Errorf("the drill-down does not show %q:\n%s", want, body)
		}
	}
	b.click("#cell-dialog [data-close]")
	b.wait("the dialog to close", `!document.getElementById('cell-dialog').open`)
}

// TestBrowserStopRun stops a slow run from the page: the cells not reached
// are skipped and the run is recorded stopped.
func TestBrowserStopRun(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 3 * time.Second}, concurrency: 1})
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/live")
	b.wait("the domain picker", `document.querySelectorAll('#domain-checks input:checked').length === 3`)
	b.click("#start-button")
	b.wait("a running cell", `document.querySelector('.cell[data-status="running"]') !== null`)
	b.wait("the stop button", `!document.getElementById('stop-button').disabled`)
	// The chip follows the engine's status, polled: running from the
	// first answer after the start (read at once, it may still be idle).
	b.wait("the engine chip to say running", `document.getElementById('engine-chip').textContent.includes('running')`)
	b.click("#stop-button")
	b.wait("the run to be stopped", `document.getElementById('run-line').dataset.status === 'stopped'`)
	b.wait("skipped cells", `document.querySelector('.cell[data-status="skipped"]') !== null`)
	b.wait("the announcement", `document.getElementById('run-announce').dataset.status === 'stopped'`)
	if got := b.text(`.cell[data-status="skipped"]`); !strings.Contains(got, "–") || !strings.Contains(got, "skipped") {
		t.Errorf("a skipped cell reads %q", got)
	}
	if runs := e.history(); len(runs) != 1 || runs[0]["status"] != "stopped" {
		t.Errorf("history %v, want one stopped run", runs)
	}
	// A stopped run never reads as a complete one.
	if got := b.text("#run-announce"); !strings.Contains(got, "stopped — ") || !strings.Contains(got, "of 12 tests") {
		t.Errorf("announcement %q", got)
	}
	if !evalJS[bool](b, `document.getElementById('stop-button').disabled && !document.getElementById('start-button').disabled`) {
		t.Error("after the stop, Stop should be disabled and Start enabled")
	}
}

// TestBrowserHistory compares two runs (score deltas, a test that flipped)
// and deletes one after confirming.
func TestBrowserHistory(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	before := e.runToEnd(map[string]any{"model_name": "before"})
	must(t, e.put("/api/settings/tests/add-small", map[string]any{"expected": map[string]any{"answer": "6"}}), http.StatusOK)
	after := e.runToEnd(map[string]any{"model_name": "after"})

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/history")
	b.wait("two runs", `document.querySelectorAll('table.history tbody tr').length === 2`)
	labels := evalJS[[]string](b, `[...document.querySelectorAll('table.history .run-link')].map(a => a.textContent)`)
	if strings.Join(labels, ",") != "after,before" {
		t.Errorf("runs listed %v, want newest first: after, before", labels)
	}

	// Compare: arithmetic level 1 went from 100% to 50%; add-small flipped.
	b.click(fmt.Sprintf(`tr[data-run=%q] input[type="checkbox"]`, before))
	b.click(fmt.Sprintf(`tr[data-run=%q] input[type="checkbox"]`, after))
	b.wait("the compare button", `!document.getElementById('compare-button').disabled`)
	b.click("#compare-button")
	b.wait("the comparison", `document.getElementById('overall-delta') !== null`)
	if got := evalJS[string](b, `document.querySelector('td.delta[data-domain="arithmetic"][data-level="1"]').dataset.delta`); got != "-50" {
		t.Errorf("arithmetic/1 delta %q, want -50", got)
	}
	if got := b.text(`td.delta[data-domain="arithmetic"][data-level="1"]`); !strings.Contains(got, "▼") || !strings.Contains(got, "−50 pts") {
		t.Errorf("arithmetic/1 compare cell reads %q, want ▼ −50 pts", got)
	}
	if got := b.text(`.flips-worse tr[data-test="add-small"]`); !strings.Contains(got, "passed") || !strings.Contains(got, "failed") {
		t.Errorf("flipped test row %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('.flips-better tr[data-test]').length`); n != 0 {
		t.Errorf("%d tests now passing, want 0", n)
	}

	// Open a run's matrix from the history.
	b.route("#/history")
	b.wait("two runs", `document.querySelectorAll('table.history tbody tr').length === 2`)
	b.click(fmt.Sprintf(`tr[data-run=%q] a.run-link`, before))
	b.wait("the run's matrix", allCellsDone(len(exampleCells)))
	if got := b.text("main > .view:not([hidden]) h1"); !strings.Contains(got, "before") {
		t.Errorf("run page title %q", got)
	}

	// Delete, cancelling first.
	b.route("#/history")
	b.wait("two runs", `document.querySelectorAll('table.history tbody tr').length === 2`)
	del := fmt.Sprintf(`tr[data-run=%q] button[data-action="delete"]`, before)
	b.click(del)
	b.wait("the confirmation", `document.getElementById('confirm-dialog').open`)
	if got := b.text("#confirm-message"); !strings.Contains(got, before) {
		t.Errorf("confirmation %q does not name the run", got)
	}
	b.click("#confirm-no")
	b.wait("the confirmation to close", `!document.getElementById('confirm-dialog').open`)
	if n := len(e.history()); n != 2 {
		t.Fatalf("%d runs after cancelling, want 2", n)
	}
	b.click(del)
	b.wait("the confirmation", `document.getElementById('confirm-dialog').open`)
	b.click("#confirm-yes")
	b.wait("one run left", `document.querySelectorAll('table.history tbody tr').length === 1`)
	if runs := e.history(); len(runs) != 1 || runs[0]["run_id"] != after {
		t.Errorf("history after the delete: %v, want only %s", runs, after)
	}
	mustProblem(t, e.get("/api/run/"+before), http.StatusNotFound)
}

// TestBrowserDefinitions edits an evaluator and a test with bad regexes:
// the server's 422 shows beside the field and nothing changes; then a
// good edit is saved.
func TestBrowserDefinitions(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	b := newBrowser(t, e.url, 1280, 900)

	b.open("#/definitions/evaluators/number")
	b.wait("the evaluator form", `document.querySelector('#evaluator-form [name="extraction_regex"]') !== null`)
	before := must(t, e.get("/api/settings/evaluators/number"), http.StatusOK).object(t)["extraction_regex"]
	b.typeInto(`#evaluator-form [name="extraction_regex"]`, "(unclosed")
	b.click(`#evaluator-form button[type="submit"]`)
	b.wait("the error beside the regex", `document.querySelector('#evaluator-form [data-field="extraction_regex"] .field-error') !== null`)
	if got := b.text(`#evaluator-form [data-field="extraction_regex"] .field-error`); !strings.Contains(got, "does not compile") {
		t.Errorf("field error %q, want the server's 'does not compile'", got)
	}
	if got := evalJS[string](b, `document.querySelector('#evaluator-form [name="extraction_regex"]').getAttribute('aria-invalid')`); got != "true" {
		t.Errorf("aria-invalid %q on the regex input", got)
	}
	if got := b.text("#evaluator-form .form-errors"); !strings.Contains(got, "422") {
		t.Errorf("form summary %q, want the status", got)
	}
	if now := must(t, e.get("/api/settings/evaluators/number"), http.StatusOK).object(t)["extraction_regex"]; now != before {
		t.Errorf("extraction_regex changed to %v", now)
	}

	// A test: a regex answer that does not compile, then one that does.
	b.route("#/definitions/domains/arithmetic/1/add-small")
	b.wait("the test form", `document.querySelector('#test-form [name="expected.answer"]') !== null`)
	b.choose(`#test-form [name="expected.type"]`, "regex")
	b.typeInto(`#test-form [name="expected.answer"]`, "(unclosed")
	b.click(`#test-form button[type="submit"]`)
	b.wait("the error beside the answer", `document.querySelector('#test-form [data-field="expected.answer"] .field-error') !== null`)
	if got := b.text(`#test-form [data-field="expected.answer"] .field-error`); !strings.Contains(got, "does not compile") {
		t.Errorf("field error %q", got)
	}
	b.typeInto(`#test-form [name="expected.answer"]`, `answer is \d`)
	b.typeInto(`#test-form [name="name"]`, "Small sum, by pattern")
	b.click(`#test-form button[type="submit"]`)
	b.wait("the level view after the save", `location.hash === '#/definitions/domains/arithmetic/1' && document.getElementById('test-form') === null`)
	var got struct {
		Name     string `json:"name"`
		Expected struct{ Answer, Type string }
	}
	must(t, e.get("/api/settings/tests/add-small"), http.StatusOK).decode(t, &got)
	if got.Name != "Small sum, by pattern" || got.Expected.Type != "regex" || got.Expected.Answer != `answer is \d` {
		t.Errorf("saved test %+v", got)
	}
	if got := b.text(`.tests-table tr[data-test="add-small"]`); !strings.Contains(got, "Small sum, by pattern") {
		t.Errorf("tests table row %q", got)
	}

	// Export says what it wrote; import a file that adds an evaluator.
	b.click("#export-button")
	b.wait("the export result", `document.getElementById('defs-result').textContent.includes('Exported 3 domains')`)
	imp := filepath.Join(t.TempDir(), "more.json")
	if err := os.WriteFile(imp, []byte(`{"evaluators": [{"id": "yesno", "name": "Yes or no", "type": "regex", "extraction_regex": "(?i)(yes|no)"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("choose the import file", chromedp.SetUploadFiles(chromedp.CSS("#import-file"), []string{imp}))
	b.click("#import-button")
	b.wait("the import result", `document.getElementById('defs-result').textContent.includes('Imported')`)
	if got := b.text("#defs-result"); !strings.Contains(got, "1 evaluator") || !strings.Contains(got, "merged") {
		t.Errorf("import result %q", got)
	}
	must(t, e.get("/api/settings/evaluators/yesno"), http.StatusOK)
	must(t, e.get("/api/settings/evaluators/number"), http.StatusOK) // merged: the others stay

	// Sync reports per-file errors.
	e.writeFile("domains/broken/domain.yaml", "id: [oops\n")
	b.click("#sync-button")
	b.wait("the sync result", `document.querySelector('#defs-result .sync-errors') !== null`)
	if got := b.text("#defs-result"); !strings.Contains(got, "domains/broken/domain.yaml") {
		t.Errorf("sync result %q does not name the bad file", got)
	}
}

// TestBrowserAgentChat creates an agent from the page, uploads a
// knowledge-base file and chats with it.
func TestBrowserAgentChat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/new")
	b.typeInto(`#agent-form [name="id"]`, "helper")
	b.typeInto(`#agent-form [name="name"]`, "Helper")
	b.typeInto(`#agent-form [name="system_prompt"]`, "You help with sums.")
	b.click(`#agent-form button[type="submit"]`)
	b.wait("the agent page", `location.hash === '#/agents/helper' && document.getElementById('chat-form') !== null`)

	kbFile := filepath.Join(t.TempDir(), "hours.md")
	if err := os.WriteFile(kbFile, []byte("We open at nine.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.do("choose a file", chromedp.SetUploadFiles(chromedp.CSS("#kb-file"), []string{kbFile}))
	b.click(`#kb-upload button[type="submit"]`)
	b.wait("the uploaded file", `document.querySelector('.kb-files tr[data-file="hours.md"]') !== null`)

	b.typeInto("#chat-user", "alice")
	b.typeInto("#chat-message", "What is 6 * 7?")
	b.click(`#chat-form button[type="submit"]`)
	b.wait("the agent's answer", `document.querySelector('#chat-log .msg-agent') !== null`)
	if got := b.text("#chat-log .msg-agent .msg-text"); !strings.Contains(got, "42") {
		t.Errorf("answer %q, want 42", got)
	}
	text := messagesText(e.lastLLMRequest())
	for _, want := range []string{"You help with sums.", "We open at nine.", "What is 6 * 7?"} {
		if !strings.Contains(text, want) {
			t.Errorf("the model request lacks %q:\n%s", want, text)
		}
	}
	// Enter sends too.
	b.do("type and press Enter", chromedp.SendKeys(chromedp.CSS("#chat-message"), "What is 2 + 2?"+kb.Enter))
	b.wait("the second answer", `document.querySelectorAll('#chat-log .msg-agent').length === 2`)
}

// TestBrowserAPIToken opens a server that needs a token: the page asks for
// it, keeps it in local storage and sends it.
func TestBrowserAPIToken(t *testing.T) {
	t.Parallel()
	const token = "dashboard-token"
	e := newEngineEnv(t, engineConfig{}, withToken(token))
	b := newBrowser(t, e.url, 1280, 900)
	b.do("open the page", chromedp.Navigate(e.url+"/#/definitions"))
	b.wait("the token prompt", `document.getElementById('token-dialog').open`)
	b.typeInto("#token-input", "wrong")
	b.click(`#token-dialog button[value="save"]`)
	b.wait("the prompt again, for the wrong token", `document.getElementById('token-dialog').open && document.getElementById('token-why').textContent.includes('refused')`)
	b.typeInto("#token-input", token)
	b.click(`#token-dialog button[value="save"]`)
	b.wait("the domains", `document.querySelectorAll('.side-list .nav-list a').length === 3`)
	if got := evalJS[string](b, `localStorage.getItem('gauntlet.apiToken')`); got != token {
		t.Errorf("stored token %q", got)
	}
	b.wait("the model check", `document.getElementById('model-chip').textContent.includes('llmtest-model')`)
	b.expectProblem("401")
}

// TestBrowserUnreachable shows the banners for a model endpoint that does
// not answer and for a server that went away (a proxy in front of it,
// closed).
func TestBrowserUnreachable(t *testing.T) {
	t.Parallel()
	gone := unreachableURL(t)
	e := newEnv(t, withLLM(gone, "gone"), withModels(newLLM(t, gone, "gone")))
	target, _ := url.Parse(e.url)
	proxy := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
	defer proxy.Close()
	b := newBrowser(t, proxy.URL, 1280, 900)
	b.open("#/agents")
	b.wait("the model banner", `document.querySelector('[data-banner="model"]') !== null`)
	if got := b.text(`[data-banner="model"]`); !strings.Contains(got, gone) || !strings.Contains(got, "not answering") {
		t.Errorf("model banner %q", got)
	}
	if got := b.text("#model-chip"); !strings.Contains(got, "unreachable") {
		t.Errorf("model chip %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('[data-banner="server"]').length`); n != 0 {
		t.Errorf("a server banner while the server answers")
	}
	proxy.CloseClientConnections()
	proxy.Close()
	b.click("#model-chip") // checks again
	b.wait("the server banner", `document.querySelector('[data-banner="server"]') !== null`)
	if got := b.text(`[data-banner="server"]`); !strings.Contains(got, "Cannot reach the Gauntlet server") {
		t.Errorf("server banner %q", got)
	}
	b.expectProblem("Failed to load resource")
}

// TestBrowserPhoneAndKeyboard checks a phone-width layout (nothing wider
// than the screen) and that a cell opens from the keyboard.
func TestBrowserPhoneAndKeyboard(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	e.runToEnd(map[string]any{"model_name": "phone"})
	e.createAgent("pocket", "Be brief.")
	b := newBrowser(t, e.url, 390, 844)
	for _, hash := range []string{"#/live", "#/history", "#/definitions/domains/arithmetic/1/add-small", "#/agents/pocket"} {
		b.open(hash)
		if hash == "#/live" {
			b.wait("the matrix", allCellsDone(len(exampleCells)))
		}
		if w := evalJS[[]int](b, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
			t.Errorf("%s: the page is %d px wide on a %d px screen", hash, w[0], w[1])
		}
	}
	b.open("#/live")
	b.wait("the matrix", allCellsDone(len(exampleCells)))
	if tag := evalJS[string](b, `document.querySelector('.cell[data-domain]').tagName`); tag != "BUTTON" {
		t.Errorf("cells are %s elements, want buttons", tag)
	}
	// Focused by the page's own script: the matrix is redrawn as the
	// status is polled, and a node looked up before a redraw is gone.
	evalJS[bool](b, `document.querySelector('.cell[data-domain="tool_use"][data-level="1"]').focus(), true`)
	b.do("press Enter on the focused cell", chromedp.KeyEvent(kb.Enter))
	b.wait("the cell's tests", `document.querySelectorAll('#cell-dialog[open] tr.result-row').length === 1`)
	b.do("press Escape", chromedp.KeyEvent(kb.Escape))
	b.wait("the dialog to close", `!document.getElementById('cell-dialog').open`)
	if got := evalJS[string](b, `document.activeElement.dataset.domain + '/' + document.activeElement.dataset.level`); got != "tool_use/1" {
		t.Errorf("focus went to %q after closing, want back on the cell tool_use/1", got)
	}
}

// TestScreenshot takes the README's screenshot: a completed run at 1280
// px. With -update it writes docs/screenshot-dashboard.png.
func TestScreenshot(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 40 * time.Millisecond, Jitter: 200 * time.Millisecond, Seed: 7}})
	e.runToEnd(map[string]any{"model_name": "nightly"})
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/live")
	b.wait("the matrix", allCellsDone(len(exampleCells)))
	b.wait("the log", `document.querySelector('#log .log-end') !== null`)
	b.wait("the model check", `document.getElementById('model-chip').textContent.includes('llmtest-model')`)
	b.do("settle", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.Sleep(200*time.Millisecond))
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("the screenshot is not a PNG")
	}
	if !*update {
		t.Logf("screenshot %d bytes; -update writes docs/screenshot-dashboard.png", len(png))
		return
	}
	p := filepath.Join("..", "docs", "screenshot-dashboard.png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", p, len(png))
}

// TestScreenshotExplorer takes the README's pictures of the results
// explorer (a cell's results) and of one result's transcript (a tool
// call and its result). With -update it writes them to
// docs/screenshot-explorer.png and docs/screenshot-transcript.png.
func TestScreenshotExplorer(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 5 * time.Millisecond, Seed: 7}})
	id := e.runToEnd(map[string]any{"model_name": "nightly", "repeats": 3})
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/run/" + id)
	b.wait("the matrix", allCellsDone(len(exampleCells)))
	dlg := "#cell-dialog[open]"
	b.click(`.cell[data-domain="tool_use"][data-level="1"]`)
	b.wait("the cell's results", `document.querySelectorAll('`+dlg+` tr.result-row').length > 0`)
	b.do("settle", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.Sleep(200*time.Millisecond))
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("the screenshot is not a PNG")
		}
		if !*update {
			t.Logf("screenshot %d bytes; -update writes docs/%s", len(png), name)
			return
		}
		p := filepath.Join("..", "docs", name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", p, len(png))
	}
	shot("screenshot-explorer.png")

	row := dlg + " tr.result-row"
	b.click(row + " .row-toggle")
	detail := row + " + tr.result-detail"
	b.wait("the row open", `document.querySelector('`+detail+` .test-body') !== null`)
	b.click(detail + " details.transcript-wrap > summary")
	b.wait("a tool call in the transcript", `document.querySelectorAll('`+detail+` .transcript li.msg').length >= 4`)
	evalJS[chromedp.Void](b, `document.querySelector('`+detail+` details.transcript-wrap').scrollIntoView({block: 'start'})`)
	b.do("settle", chromedp.Sleep(200*time.Millisecond))
	shot("screenshot-transcript.png")
}
