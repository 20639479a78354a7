package server_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// pct is how the dashboard writes a share: a whole percentage.
func pct(x float64) string { return fmt.Sprintf("%d%%", int(math.Round(x*100))) }

// TestBrowserRepeats runs the dice suite with repeats 3 against the fake
// endpoint. The matrix cell, in the run's page and on the live page,
// shows its score with the margin of its 95 % interval, and names the
// interval in its title and its accessible name. The cell's view has a
// table of each test over its repeats, worst first ("once" passed 1 of
// 3: pass@k yes, pass^k no; "mixed" 1 of 2 scored, its error left out),
// and each test's three results grouped under it.
func TestBrowserRepeats(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true, files: diceFiles, llm: llmtest.Options{Respond: diceModel(nil)}})
	id := e.runToEnd(map[string]any{"domains": []string{"dice"}, "repeats": 3, "retries": 0, "model_name": "thrice"})
	var m struct {
		Domains map[string]map[string]struct {
			Score  float64    `json:"score"`
			StdErr float64    `json:"stderr"`
			CI95   [2]float64 `json:"ci95"`
		} `json:"domains"`
	}
	must(t, e.get("/api/run/"+id+"/matrix"), http.StatusOK).decode(t, &m)
	c := m.Domains["dice"]["1"]
	margin := fmt.Sprintf("±%d", int(math.Round(math.Max(c.Score-c.CI95[0], c.CI95[1]-c.Score)*100)))
	interval := fmt.Sprintf("95 %% interval %s to %s", pct(c.CI95[0]), pct(c.CI95[1]))
	if c.CI95[1]-c.CI95[0] < 0.1 {
		t.Fatalf("cell %+v: want a visible interval for 3 tests", c)
	}

	b := newBrowser(t, e.url, 1280, 900)
	cellSel := `main > .view:not([hidden]) .cell[data-domain="dice"][data-level="1"]`
	checkCell := func(where string) {
		t.Helper()
		b.wait("the dice cell on "+where, `document.querySelector('`+cellSel+`') !== null && document.querySelector('`+cellSel+` .cell-ci') !== null`)
		if got := b.text(cellSel + " .cell-score"); got != pct(c.Score)+" "+margin {
			t.Errorf("%s: cell score reads %q, want %q", where, got, pct(c.Score)+" "+margin)
		}
		label := evalJS[string](b, `document.querySelector('`+cellSel+`').getAttribute('aria-label')`)
		title := evalJS[string](b, `document.querySelector('`+cellSel+`').title`)
		for _, s := range []string{label, title} {
			if !strings.Contains(s, interval) || !strings.Contains(s, "standard error") {
				t.Errorf("%s: cell label or title %q, want %q and the standard error", where, s, interval)
			}
		}
	}
	b.open("#/run/" + id)
	checkCell("the run's page")
	b.route("#/live")
	checkCell("the live page")

	b.click(cellSel)
	b.wait("the aggregates", `document.querySelectorAll('#cell-dialog[open] table.aggregates tbody tr').length === 3`)
	rows := evalJS[[]string](b, `[...document.querySelectorAll('#cell-dialog table.aggregates tbody tr')].map(r => r.dataset.test)`)
	if strings.Join(rows, ",") != "once,mixed,always" {
		t.Errorf("aggregate rows %v, want worst first: once, mixed, always", rows)
	}
	row := func(test, col string) string {
		return b.text(fmt.Sprintf(`#cell-dialog table.aggregates tr[data-test=%q] .%s`, test, col))
	}
	for _, w := range []struct{ test, rate, atK, allK string }{
		{"once", "33% (1/3)", "yes", "no"},
		{"mixed", "50% (1/2)", "yes", "no"},
		{"always", "100% (3/3)", "yes", "yes"},
	} {
		if got := row(w.test, "pass-rate"); got != w.rate {
			t.Errorf("%s pass rate %q, want %q", w.test, got, w.rate)
		}
		if got := row(w.test, "pass-at-k"); !strings.HasSuffix(got, w.atK) {
			t.Errorf("%s pass@k %q, want %q", w.test, got, w.atK)
		}
		if got := row(w.test, "pass-all-k"); !strings.HasSuffix(got, w.allK) {
			t.Errorf("%s pass^k %q, want %q", w.test, got, w.allK)
		}
	}
	if got := []string{row("mixed", "passed"), row("mixed", "failed"), row("mixed", "errors"), row("mixed", "mean-score")}; strings.Join(got, ",") != "1,1,1,50%" {
		t.Errorf("mixed passed, failed, errors, mean score = %v, want 1, 1, 1, 50%%", got)
	}
	// Each test's three results are in the results table, named by
	// their repeat (#1, #2 after the first).
	b.wait("the results", `document.querySelectorAll('#cell-dialog tr.result-row').length === 9`)
	for _, test := range []string{"once", "mixed", "always"} {
		got := evalJS[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('#cell-dialog tr.result-row[data-test=%q]')].map(d => d.dataset.repeat).sort()`, test))
		if strings.Join(got, ",") != "0,1,2" {
			t.Errorf("%s results %v, want repeats 0, 1, 2", test, got)
		}
	}
	if got := evalJS[string](b, `document.querySelector('#cell-dialog table.aggregates tr[data-test="mixed"]').title`); !strings.Contains(got, "passed 1 of 2, 1 in error") {
		t.Errorf("mixed aggregate title %q", got)
	}
	if got := b.text(`#cell-dialog tr.result-row[data-test="once"][data-repeat="2"] .test-key`); got != "once#2" {
		t.Errorf("once's third result is named %q, want once#2", got)
	}
	if got := b.text("#cell-dialog .cell-summary"); !strings.Contains(got, "3 tests, 9 results") || !strings.Contains(got, "1 passed every repeat, 3 at least once") {
		t.Errorf("cell summary %q", got)
	}
}
