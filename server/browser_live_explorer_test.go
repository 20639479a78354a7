package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// gatedModel is a model endpoint as slow as the test wants: each request
// waits until the test lets one answer go, so the page can be watched
// between two results.
type gatedModel struct{ gate chan struct{} }

func newGatedModel() *gatedModel { return &gatedModel{gate: make(chan struct{}, 1000)} }

// respond holds a request until release lets it answer (with the
// endpoint's default answer).
func (g *gatedModel) respond(*llmtest.Request) *llmtest.Reply {
	<-g.gate
	return nil
}

// release lets n more requests answer.
func (g *gatedModel) release(n int) {
	for range n {
		g.gate <- struct{}{}
	}
}

// slowDomain is the definition files of a domain of n tests at level 1.
func slowDomain(n int) map[string]string {
	var tests strings.Builder
	tests.WriteString("tests:\n")
	for i := range n {
		fmt.Fprintf(&tests, "  - id: slow-%02d\n    prompt: What is 2 + 3?\n    expected:\n      answer: '5'\n      type: numeric\n", i)
	}
	return map[string]string{
		"domains/slow/domain.yaml":  "id: slow\nname: Slow\nevaluator_id: number\nenabled: true\n",
		"domains/slow/level-1.yaml": tests.String(),
	}
}

// requestLog records the URLs of the requests the page sends whose path
// ends with suffix.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (b *browser) logRequests(suffix string) *requestLog {
	b.t.Helper()
	l := &requestLog{}
	if err := chromedp.Listen(b.tab, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok {
			if u, err := url.Parse(ev.Request.URL); err == nil && strings.HasSuffix(u.Path, suffix) {
				l.mu.Lock()
				l.urls = append(l.urls, ev.Request.URL)
				l.mu.Unlock()
			}
		}
	}); err != nil {
		b.t.Fatalf("listen to the page's requests: %v", err)
	}
	return l
}

// count returns how many requests were logged, and the last one.
func (l *requestLog) count() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.urls) == 0 {
		return 0, ""
	}
	return len(l.urls), l.urls[len(l.urls)-1]
}

// TestBrowserExplorerLiveRefresh opens a run's page and one of its cells
// while the run is running against a model that answers only when the
// test lets it: new results appear in both explorers with no click (a
// result the user opened stays open), and once the run has ended each
// loads its page once more and then stops asking the server for results.
func TestBrowserExplorerLiveRefresh(t *testing.T) {
	t.Parallel()
	const tests = 12
	g := newGatedModel()
	// The gate decides when a request answers, not a timeout: a held
	// request that timed out (10 s by default, which opening the page can
	// take at load 20) would be retried while its abandoned handler still
	// waits at the gate and takes one of the answers released for the
	// retry.
	e := newEngineEnv(t, engineConfig{files: slowDomain(tests), concurrency: 1, timeout: 10 * time.Minute,
		llm: llmtest.Options{Respond: g.respond}})
	// Registered after the server's clean-ups, so run before them: a
	// request still held is let go, and the run can stop.
	t.Cleanup(func() { close(g.gate) })

	b := newBrowser(t, e.url, 1280, 900)
	results := b.logRequests("/results")
	id := e.start(map[string]any{"model_name": "live", "domains": []string{"slow"}})
	stored := func(n int) {
		t.Helper()
		var page struct {
			Total int `json:"total"`
		}
		harnesstest.Eventually(t, runWait, fmt.Sprintf("%d results stored", n), func() bool {
			r := e.get("/api/run/" + id + "/results?limit=1")
			return r.status == http.StatusOK && json.Unmarshal(r.body, &page) == nil && page.Total >= n
		})
	}
	g.release(2)
	stored(2)

	b.open("#/run/" + id)
	const runCount = "#run-results .ex-count"
	b.wait("the run's first results", `document.querySelector('`+runCount+`') !== null && document.querySelector('`+runCount+`').textContent.startsWith('2 results')`)
	cell := `main > .view:not([hidden]) .cell[data-domain="slow"][data-level="1"]`
	b.click(cell)
	const dlg = "#cell-dialog[open]"
	rows := dlg + " tr.result-row"
	b.wait("the cell's first results", `document.querySelectorAll('`+rows+`').length === 2`)
	// Open the first result: it stays open as the page refreshes.
	first := evalJS[string](b, `document.querySelector('`+rows+`').dataset.test`)
	b.click(rows + " .row-toggle")
	openRow := fmt.Sprintf(`%s tr.result-row[data-test=%q]`, dlg, first)
	b.wait("the result open", `!document.querySelector('`+openRow+` + tr.result-detail').hidden`)

	// More results: both explorers show them, nobody clicks.
	g.release(3)
	stored(5)
	b.wait("the cell to show 5 results by itself", `document.querySelectorAll('`+rows+`').length === 5 && document.querySelector('`+dlg+` .ex-count').textContent.startsWith('5 results')`)
	b.wait("the run's page to show 5 results by itself", `document.querySelector('`+runCount+`').textContent.startsWith('5 results')`)
	if !evalJS[bool](b, `document.querySelector('`+openRow+`').classList.contains('open') && !document.querySelector('`+openRow+` + tr.result-detail').hidden`) {
		t.Errorf("the result %s the user opened closed when the page refreshed", first)
	}

	// The run ends: the last results show, then the asking stops.
	g.release(tests)
	e.waitIdle()
	b.wait("the cell to show every result", fmt.Sprintf(`document.querySelectorAll('%s').length === %d && document.querySelector('%s .ex-count').textContent.startsWith('%d results')`, rows, tests, dlg, tests))
	b.wait("the run's page to show the run ended", `document.getElementById('rescore-run') !== null`)
	b.wait("the run's page to show every result", fmt.Sprintf(`document.querySelector('%s').textContent.startsWith('%d results')`, runCount, tests))
	asked, last := results.count()
	// Each explorer learns of the end from its own next look at the
	// engine's status, and then loads its page once more: at most one
	// request each after this point. An observation window, not a
	// synchronisation: a live explorer asks every 2 s, so three of its
	// refreshes would fall inside.
	deadline := time.Now().Add(6500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if extra := results.since(asked); len(extra) > 2 || countCell(extra) > 1 || len(extra)-countCell(extra) > 1 {
			t.Fatalf("the run ended, and the page still asks for results: %d more requests %q (before the end: %s)", len(extra), extra, last)
		}
		b.do("wait", chromedp.Sleep(250*time.Millisecond))
	}
}

// since returns the requests logged after the first n.
func (l *requestLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.urls[min(n, len(l.urls)):])
}

// countCell counts the requests of a cell's explorer (the ones that name
// a level) among urls.
func countCell(urls []string) int {
	n := 0
	for _, u := range urls {
		if strings.Contains(u, "level=") {
			n++
		}
	}
	return n
}
