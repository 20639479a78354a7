package server_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestBrowserRetrieval runs kbSuite against agent kb. The matrix cell, on
// the run's page and on the live page, shows the cell's recall@5 under
// its score ("R@5 0.50"), explained in its title and its accessible name;
// the cell's view lists each test's expected files, marked retrieved or
// not, the files retrieved, recall and hit. A run of the bare model shows
// no recall.
func TestBrowserRetrieval(t *testing.T) {
	t.Parallel()
	e := newKBEnv(t)
	id := e.runToEnd(map[string]any{"agent_id": "kb", "domains": []string{"kb"}})

	b := newBrowser(t, e.url, 1280, 900)
	cellSel := `main > .view:not([hidden]) .cell[data-domain="kb"][data-level="1"]`
	const explained = "mean recall@5 0.50"
	checkCell := func(where string) {
		t.Helper()
		b.wait("the kb cell's recall on "+where, `document.querySelector('`+cellSel+` .cell-recall') !== null`)
		if got := b.text(cellSel + " .cell-recall"); got != "R@5 0.50" {
			t.Errorf("%s: the cell's recall reads %q, want R@5 0.50", where, got)
		}
		title := evalJS[string](b, `document.querySelector('`+cellSel+` .cell-recall').title`)
		label := evalJS[string](b, `document.querySelector('`+cellSel+`').getAttribute('aria-label')`)
		for _, s := range []string{title, label} {
			if !strings.Contains(s, explained) || !strings.Contains(s, "hit rate 67%") || !strings.Contains(s, "over 3 tests") {
				t.Errorf("%s: title or label %q, want %q, the hit rate and the tests", where, s, explained)
			}
		}
	}
	b.open("#/run/" + id)
	checkCell("the run's page")
	b.route("#/live")
	checkCell("the live page")

	b.click(cellSel)
	b.wait("the retrieval table", `document.querySelectorAll('#cell-dialog[open] table.retrieval tbody tr').length === 3`)
	if got := b.text("#cell-dialog .cell-retrieval .cell-summary"); !strings.Contains(got, "Recall@5 0.50 · hit rate 67% · over 3 tests") {
		t.Errorf("retrieval summary %q", got)
	}
	row := func(test, sel string) string {
		t.Helper()
		return b.text(fmt.Sprintf(`#cell-dialog table.retrieval tr[data-test=%q] %s`, test, sel))
	}
	for _, w := range []struct{ test, found, missing, retrieved, recall, hit string }{
		{"refund", "policy.md", "", "policy.md shipping.md", "1.00 @3", "yes"},
		{"warranty", "warranty.md", "policy.md", "warranty.md", "0.50 @3", "yes"},
		{"miss", "", "giftwrap.md", "none", "0.00 @3", "no"},
	} {
		found := evalJS[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('#cell-dialog table.retrieval tr[data-test=%q] .expected-files li.found code')].map(c => c.textContent)`, w.test))
		missing := evalJS[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('#cell-dialog table.retrieval tr[data-test=%q] .expected-files li.missing code')].map(c => c.textContent)`, w.test))
		if strings.Join(found, " ") != w.found || strings.Join(missing, " ") != w.missing {
			t.Errorf("%s: expected files found %v, missing %v; want %q, %q", w.test, found, missing, w.found, w.missing)
		}
		if got := strings.Join(strings.Fields(row(w.test, ".retrieved-files")), " "); got != w.retrieved {
			t.Errorf("%s: retrieved %q, want %q", w.test, got, w.retrieved)
		}
		if got := row(w.test, ".recall"); got != w.recall {
			t.Errorf("%s: recall %q, want %q", w.test, got, w.recall)
		}
		if got := row(w.test, ".hit"); !strings.HasSuffix(got, w.hit) {
			t.Errorf("%s: hit %q, want %q", w.test, got, w.hit)
		}
	}
	evalJS[bool](b, `(document.getElementById('cell-dialog').close(), true)`)

	bare := e.runToEnd(map[string]any{"domains": []string{"kb"}})
	// A query makes it a page load of its own: the matrix shown is the
	// bare run's from the start, not the last one's being replaced.
	b.open("?bare#/run/" + bare)
	b.wait("the bare-model run's cell", `document.querySelector('`+cellSel+`') !== null && document.querySelector('`+cellSel+`').dataset.status !== 'pending'`)
	if n := evalJS[int](b, `document.querySelectorAll('main > .view:not([hidden]) .cell-recall').length`); n != 0 {
		t.Errorf("a run of the bare model shows recall in %d cells", n)
	}
}
