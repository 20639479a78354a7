package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestBrowserSweepCompare starts a sweep of three models from the start
// form against an endpoint that answers differently per model, and lands
// on the comparison of its three runs: the model that never knows carries
// the significant-regression marker against the baseline, the verbose one
// none; the tests of the cell show the responses side by side, with the
// words that differ from the baseline's highlighted, escaped, and a long
// one folded. The history page then compares the same three runs.
func TestBrowserSweepCompare(t *testing.T) {
	t.Parallel()
	e, _ := newSweepEnv(t, 8)
	b := newBrowser(t, e.url, 1400, 900)
	b.open("#/live")
	b.wait("the domain picker", `document.querySelectorAll('#domain-checks input:checked').length === 1`)

	// The option shows the models field and sets the label and model aside.
	if !evalJS[bool](b, `document.getElementById('sweep-models').closest('.field').hidden`) {
		t.Error("the models field is shown before the sweep option is ticked")
	}
	b.click("#sweep-check")
	b.wait("the models field", `!document.getElementById('sweep-models').closest('.field').hidden`)
	if !evalJS[bool](b, `document.querySelector('#start-form input[name="model_name"]').disabled && document.querySelector('#start-form input[name="model"]').disabled`) {
		t.Error("the label and model fields stay enabled for a sweep")
	}
	if got := b.text("#start-button"); !strings.Contains(got, "Start sweep") {
		t.Errorf("start button reads %q", got)
	}

	// One model is not a sweep: the form says so beside the field.
	b.typeInto("#sweep-models", "good")
	b.click("#start-button")
	b.wait("the error", `document.querySelector('[data-field="models"] .field-error') !== null`)
	if got := b.text(`[data-field="models"] .field-error`); !strings.Contains(got, "at least two models") {
		t.Errorf("error %q", got)
	}
	if len(e.history()) != 0 {
		t.Fatal("a run was started for one model")
	}

	b.typeInto("#sweep-models", "good, bad, verbose")
	b.click("#start-button")
	b.wait("the comparison of the sweep", `location.hash.startsWith('#/compare/') && document.getElementById('ncompare-table') !== null`)

	s := e.sweep()
	if s.Status != "completed" || len(s.RunIDs) != 3 {
		t.Fatalf("sweep %+v", s)
	}
	if got, want := evalJS[string](b, `location.hash`), "#/compare/"+strings.Join(s.RunIDs, "/"); got != want {
		t.Errorf("opened %s, want %s", got, want)
	}
	good, bad, verbose := s.RunIDs[0], s.RunIDs[1], s.RunIDs[2]
	heads := evalJS[[]string](b, `[...document.querySelectorAll('th.ncompare-run .run-link')].map(a => a.textContent)`)
	if strings.Join(heads, ",") != "good,bad,verbose" {
		t.Errorf("columns %v, want good, bad, verbose", heads)
	}

	var c comparison
	must(t, e.get("/api/compare?base="+good+"&head="+bad), http.StatusOK).decode(t, &c)
	worse := c.Cells["math"]["1"]
	if !worse.Significant || worse.Delta != -1 {
		t.Fatalf("good → bad: %+v, want a significant regression of 100 points", worse)
	}
	cell := func(run string) string {
		return fmt.Sprintf(`td.ncell[data-run=%q][data-domain="math"][data-level="1"]`, run)
	}
	got := b.text(cell(bad))
	for _, want := range []string{"0%", "95 % CI", "▼ −100 pts", "⚠ Significant regression", pText(worse.PValue)} {
		if !strings.Contains(got, want) {
			t.Errorf("bad's cell reads %q, want %q in it", got, want)
		}
	}
	if got := evalJS[string](b, `document.querySelector('`+cell(bad)+`').dataset.significant`); got != "worse" {
		t.Errorf("bad's cell data-significant %q", got)
	}
	if got := b.text(cell(good)); !strings.Contains(got, "100%") || strings.Contains(got, "pts") {
		t.Errorf("the baseline's cell reads %q: its score, no change", got)
	}
	got = b.text(cell(verbose))
	if !strings.Contains(got, "= 0 pts") || !strings.Contains(got, "no change in score") || strings.Contains(got, "Significant") {
		t.Errorf("verbose's cell reads %q, want no change and no marker", got)
	}
	if got := b.text(`th.ncompare-run[data-run="` + bad + `"]`); !strings.Contains(got, "⚠ 1") {
		t.Errorf("bad's column head %q does not count its significant regression", got)
	}

	// The tests of the cell, side by side.
	b.click(`button.ncompare-open[data-domain="math"][data-level="1"]`)
	b.wait("the tests", `document.querySelectorAll('#ncompare-tests-table tbody tr').length === 8`)
	resp := func(test, run string) string {
		return fmt.Sprintf(`#ncompare-tests-table tr[data-test=%q] td[data-run=%q]`, test, run)
	}
	if got := b.text(resp("sum-03", good)); !strings.Contains(got, "The answer is 7.") || !strings.Contains(got, "passed") {
		t.Errorf("baseline response %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+resp("sum-03", good)+` mark, `+resp("sum-03", good)+` del').length`); n != 0 {
		t.Errorf("the baseline's response has %d diff marks", n)
	}
	if got := evalJS[string](b, `[...document.querySelectorAll('`+resp("sum-03", verbose)+` mark.diff-ins')].map(m => m.textContent).join('|')`); strings.TrimSpace(got) != "Let me think step by step." {
		t.Errorf("verbose's highlighted words %q, want the preamble", got)
	}
	if got := evalJS[string](b, `[...document.querySelectorAll('`+resp("sum-03", bad)+` mark.diff-ins')].map(m => m.textContent).join('|')`); strings.TrimSpace(got) != "I do <b>not</b> know." {
		t.Errorf("bad's highlighted words %q, want its whole answer as text", got)
	}
	if got := evalJS[string](b, `document.querySelector('`+resp("sum-03", bad)+` del.diff-del').textContent`); strings.TrimSpace(got) != "The answer is 7." {
		t.Errorf("bad's struck words %q, want the baseline's answer", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#ncompare-tests-table b').length`); n != 0 {
		t.Errorf("a response's HTML became %d elements", n)
	}
	if got := b.text(resp("sum-03", bad)); !strings.Contains(got, "failed") {
		t.Errorf("bad's result %q, want failed", got)
	}
	// The long answer is folded until asked for.
	long := resp("sum-07", verbose)
	if !evalJS[bool](b, `document.querySelector('`+long+` .resp').classList.contains('resp-folded')`) {
		t.Error("the long response is not folded")
	}
	if n := evalJS[int](b, `document.querySelectorAll('`+resp("sum-03", verbose)+` .resp-toggle').length`); n != 0 {
		t.Error("a short response has a fold button")
	}
	b.click(long + " .resp-toggle")
	b.wait("the long response unfolded", `!document.querySelector('`+long+` .resp').classList.contains('resp-folded')`)
	if got := b.text(long + " .resp-toggle"); got != "Show less" {
		t.Errorf("fold button reads %q after unfolding", got)
	}

	// From the history: tick the three runs, compare them, oldest first.
	b.route("#/history")
	b.wait("three runs", `document.querySelectorAll('table.history tbody tr').length === 3`)
	for _, id := range []string{verbose, good, bad} {
		b.click(fmt.Sprintf(`tr[data-run=%q] input[type="checkbox"]`, id))
	}
	b.wait("the compare button", `!document.getElementById('compare-button').disabled`)
	if got := b.text("#compare-button"); got != "Compare selected (3)" {
		t.Errorf("compare button reads %q", got)
	}
	b.click("#compare-button")
	b.wait("the comparison", `document.getElementById('ncompare-table') !== null`)
	if got, want := evalJS[string](b, `location.hash`), "#/compare/"+strings.Join(s.RunIDs, "/"); got != want {
		t.Errorf("history opened %s, want %s", got, want)
	}

	// A run that does not exist: the server's reason, no table.
	b.route("#/compare/" + good + "/" + bad + "/no-such-run")
	b.wait("the reason", `document.querySelector('main > .view:not([hidden]) .error[role="alert"]') !== null`)
	if got := b.text(`main > .view:not([hidden]) .error[role="alert"]`); !strings.Contains(got, "Could not load the runs") || !strings.Contains(got, "no-such-run") {
		t.Errorf("unknown run reads %q", got)
	}
	if n := evalJS[int](b, `document.querySelectorAll('#ncompare-table').length`); n != 0 {
		t.Errorf("%d comparison tables shown with an unknown run", n)
	}
}
