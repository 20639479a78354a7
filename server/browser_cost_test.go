package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestBrowserCost runs the arithmetic domain on a model priced at $1 a
// test (400 prompt tokens at $2,500 a million). The matrix cell, on the
// run's page and on the live page, shows what the cell cost beside its
// score, in its accessible name too; the results explorer has a Cost
// column ($1.00 a result) and an opened result says its cost. A run of a
// model without a price shows no cost in its cells and "n/a" in the
// explorer, never $0.
func TestBrowserCost(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: "The answer is 4.", Usage: &harness.Usage{PromptTokens: 400, TotalTokens: 400}}
	}}, files: map[string]string{"pricing.yaml": "models:\n  llmtest-model: {input: 2500, output: 0}\n"}})
	id := e.runToEnd(map[string]any{"domains": []string{"arithmetic"}})
	var m struct {
		Domains map[string]map[string]struct {
			Done    int      `json:"done"`
			CostUSD *float64 `json:"cost_usd"`
		} `json:"domains"`
	}
	must(t, e.get("/api/run/"+id+"/matrix"), http.StatusOK).decode(t, &m)
	c, ok := m.Domains["arithmetic"]["1"]
	if !ok || c.Done == 0 || c.CostUSD == nil || *c.CostUSD != float64(c.Done) {
		t.Fatalf("arithmetic/1 of the priced run: %+v", c)
	}
	want := fmt.Sprintf("$%d.00", c.Done)

	b := newBrowser(t, e.url, 1280, 900)
	cellSel := `main > .view:not([hidden]) .cell[data-domain="arithmetic"][data-level="1"]`
	checkCell := func(where string) {
		t.Helper()
		b.wait("the cell's cost on "+where, `document.querySelector('`+cellSel+` .cell-cost') !== null`)
		if got := strings.TrimSpace(b.text(cellSel + " .cell-cost")); got != "· "+want {
			t.Errorf("%s: the cell's cost reads %q, want %s", where, got, want)
		}
		label := evalJS[string](b, `document.querySelector('`+cellSel+`').getAttribute('aria-label')`)
		if !strings.Contains(label, "cost "+want) || !strings.Contains(label, "score ") {
			t.Errorf("%s: the cell's label %q lacks its score or cost %s", where, label, want)
		}
	}
	b.open("#/run/" + id)
	checkCell("the run's page")
	rows := `#run-results tr.result-row`
	b.wait("the run's results", `document.querySelectorAll('`+rows+`').length > 0`)
	if got := evalJS[string](b, `document.querySelector('#run-results th.col-cost').textContent`); got != "Cost" {
		t.Errorf("explorer cost header %q", got)
	}
	costs := evalJS[[]string](b, `[...new Set([...document.querySelectorAll('`+rows+` td.cost')].map(td => td.textContent))]`)
	if strings.Join(costs, ",") != "$1.00" {
		t.Errorf("explorer costs %v, want $1.00 each", costs)
	}
	b.click(rows + " .row-toggle")
	b.wait("the opened result", `document.querySelector('#run-results tr.result-detail:not([hidden]) .test-body') !== null`)
	if got := b.text(`#run-results tr.result-detail:not([hidden]) .test-body`); !strings.Contains(got, "Cost") || !strings.Contains(got, "$1.00") {
		t.Errorf("opened result lacks its cost: %q", got)
	}
	b.route("#/live")
	checkCell("the live page")

	free := e.runToEnd(map[string]any{"domains": []string{"arithmetic"}, "model": "free"})
	b.open("?free#/run/" + free)
	b.wait("the unpriced run's results", `document.querySelectorAll('`+rows+`').length > 0 && document.querySelector('`+cellSel+`') !== null && document.querySelector('`+cellSel+`').dataset.status !== 'pending'`)
	if n := evalJS[int](b, `document.querySelectorAll('main > .view:not([hidden]) .cell-cost').length`); n != 0 {
		t.Errorf("an unpriced run shows a cost in %d cells", n)
	}
	costs = evalJS[[]string](b, `[...new Set([...document.querySelectorAll('`+rows+` td.cost')].map(td => td.textContent))]`)
	if strings.Join(costs, ",") != "n/a" {
		t.Errorf("unpriced explorer costs %v, want n/a", costs)
	}
}
