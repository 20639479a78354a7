package server_test

// Browser tests of navigation races in the history view and the cell
// drill-down: an answer the page was waiting for when the user went
// elsewhere must not draw over the view (or cell) the user went to. A proxy in front of the test server holds
// one chosen request until the test lets it through, so the late answer
// arrives at a known moment, after the navigation.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// holdingProxy is a reverse proxy in front of a test server that holds
// the first GET of one path, once armed, until released.
type holdingProxy struct {
	t    *testing.T
	url  string
	next http.Handler

	mu      sync.Mutex
	path    string        // the path of the GET to hold; "" when disarmed
	held    chan struct{} // closed when the request is being held
	release chan struct{} // closed to let it through
	once    sync.Once
}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{t: t, next: httputil.NewSingleHostReverseProxy(u),
		held: make(chan struct{}), release: make(chan struct{})}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	// Registered after hs.Close, so run before it: Close waits for the
	// held request.
	t.Cleanup(p.let)
	p.url = hs.URL
	return p
}

func (p *holdingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	hold := p.path != "" && r.Method == http.MethodGet && r.URL.Path == p.path
	if hold {
		p.path = ""
		close(p.held)
	}
	p.mu.Unlock()
	if hold {
		select {
		case <-p.release:
		case <-r.Context().Done():
			return
		}
	}
	p.next.ServeHTTP(w, r)
}

// hold arms the proxy: the next GET of path waits until let.
func (p *holdingProxy) hold(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.path = path
}

// waitHeld waits until the proxy holds the request.
func (p *holdingProxy) waitHeld(what string) {
	p.t.Helper()
	select {
	case <-p.held:
	case <-time.After(uiWait):
		p.t.Fatalf("the page never asked for %s", what)
	}
}

// let lets the held request through.
func (p *holdingProxy) let() { p.once.Do(func() { close(p.release) }) }

// countRequests makes the page count, per path, the requests it makes
// (window.__asked) and the answers whose body it has read, one task after
// the read (window.__bodies): by the time that count moves, what the page
// does with the answer in the same turn (microtasks included) is done. It
// runs before the page's own scripts (see newRaceEnv).
const countRequests = `(() => {
	window.__asked = {};
	window.__bodies = {};
	const orig = window.fetch.bind(window);
	window.fetch = async (input, init) => {
		const path = new URL(String(input), location.href).pathname;
		window.__asked[path] = (window.__asked[path] || 0) + 1;
		const res = await orig(input, init);
		const text = res.text.bind(res);
		res.text = async () => {
			const t = await text();
			setTimeout(() => { window.__bodies[path] = (window.__bodies[path] || 0) + 1; }, 0);
			return t;
		};
		return res;
	};
})()`

// bodiesRead is how many answers of path the page has read.
func (b *browser) bodiesRead(path string) int {
	b.t.Helper()
	return evalJS[int](b, fmt.Sprintf(`(window.__bodies || {})[%q] || 0`, path))
}

// raceEnv is a server with one completed run ("done"), behind a holding
// proxy, and a browser on the proxy. Runs started with startSlow stay
// running until stopped: their model requests wait.
type raceEnv struct {
	*testEnv
	proxy *holdingProxy
	b     *browser
	done  string
	slow  *atomic.Bool
}

func newRaceEnv(t *testing.T) *raceEnv {
	t.Helper()
	slow := &atomic.Bool{}
	gate := make(chan struct{})
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
		if slow.Load() {
			<-gate
		}
		return nil
	}}})
	// Run before the model endpoint closes, which waits for its requests.
	t.Cleanup(func() { close(gate) })
	r := &raceEnv{testEnv: e, slow: slow}
	r.done = e.runToEnd(map[string]any{"model_name": "done"})
	r.proxy = newHoldingProxy(t, e.url)
	r.b = newBrowser(t, r.proxy.url, 1280, 900)
	r.b.do("count the answers read", func(ctx context.Context, tab *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: countRequests})
		return chromedp.Void{}, err
	})
	return r
}

// startSlow starts a run labelled "slow" that stays running.
func (r *raceEnv) startSlow() string {
	r.t.Helper()
	r.slow.Store(true)
	id := r.start(map[string]any{"model_name": "slow"})
	if st := r.status(); st.Status != "running" {
		r.t.Fatalf("engine %q after the start, want running", st.Status)
	}
	return id
}

// stop stops the running run and waits until its matrix says so.
func (r *raceEnv) stop(id string) {
	r.t.Helper()
	must(r.t, r.post("/api/stop", nil), http.StatusOK)
	r.waitIdle()
	var m matrixBody
	must(r.t, r.get("/api/run/"+id+"/matrix"), http.StatusOK).decode(r.t, &m)
	if m.Status == "running" {
		r.t.Fatalf("run %s still running after the stop", id)
	}
}

// letThrough releases the held GET of path and waits until the page has
// read its answer and acted on it.
func (r *raceEnv) letThrough(path string) {
	r.t.Helper()
	before := r.b.bodiesRead(path)
	r.proxy.let()
	r.b.wait("the page to read the held answer", fmt.Sprintf(`((window.__bodies || {})[%q] || 0) > %d`, path, before))
}

// title is the heading of the view shown.
func (r *raceEnv) title() string {
	r.t.Helper()
	return r.b.text("main > .view:not([hidden]) h1")
}

// openRunning opens the page on a running run, counting answers, and
// holds its next poll: the matrix the page asks for every 1.5 s.
func (r *raceEnv) openRunning() (id, poll string) {
	r.t.Helper()
	id = r.startSlow()
	r.b.open("#/run/" + id)
	r.b.wait("the running run", `document.querySelector('main > .view:not([hidden]) h1').textContent.includes('slow')`)
	poll = "/api/run/" + id + "/matrix"
	r.proxy.hold(poll)
	r.proxy.waitHeld("the running run's matrix again")
	return id, poll
}

// TestBrowserRunPollAfterBackToHistory leaves a running run for the
// history list while the run's poll waits for its answer; the run ends
// meanwhile. The late answer must not bring the run back over the list.
func TestBrowserRunPollAfterBackToHistory(t *testing.T) {
	t.Parallel()
	r := newRaceEnv(t)
	id, poll := r.openRunning()
	r.b.route("#/history")
	r.b.wait("the history list", `document.querySelectorAll('table.history tbody tr').length === 2`)
	r.stop(id)
	r.letThrough(poll)
	if got := r.title(); got != "History" {
		t.Errorf("after the late poll answer the page shows %q, want the history list", got)
	}
	if n := evalJS[int](r.b, `document.querySelectorAll('table.history tbody tr').length`); n != 2 {
		t.Errorf("%d runs listed after the late poll answer, want 2", n)
	}
}

// TestBrowserRunPollAfterAnotherRun leaves a running run for another run
// while the first run's poll waits for its answer; the first run ends
// meanwhile. The late answer must not replace the run the user opened.
func TestBrowserRunPollAfterAnotherRun(t *testing.T) {
	t.Parallel()
	r := newRaceEnv(t)
	id, poll := r.openRunning()
	r.b.route("#/run/" + r.done)
	r.b.wait("the other run", `document.querySelector('main > .view:not([hidden]) h1').textContent.includes('done')`)
	r.b.wait("its matrix", allCellsDone(len(exampleCells)))
	r.stop(id)
	r.letThrough(poll)
	if got := r.title(); !strings.Contains(got, "done") {
		t.Errorf("after the late poll answer the page shows %q, want the run “done”", got)
	}
	if got := evalJS[string](r.b, `location.hash`); got != "#/run/"+r.done {
		t.Errorf("location %q, want #/run/%s", got, r.done)
	}
}

// TestBrowserRunLoadAfterBackToHistory opens a run and goes back to the
// history list before the run's details arrive: when they do, the list
// stays.
func TestBrowserRunLoadAfterBackToHistory(t *testing.T) {
	t.Parallel()
	r := newRaceEnv(t)
	r.b.open("#/history")
	r.b.wait("the history list", `document.querySelectorAll('table.history tbody tr').length === 1`)
	details := "/api/run/" + r.done
	r.proxy.hold(details)
	r.b.route("#/run/" + r.done)
	r.proxy.waitHeld("the run's details")
	r.b.route("#/history")
	r.b.wait("the history list", `document.querySelector('main > .view:not([hidden]) h1').textContent === 'History' &&
		document.querySelectorAll('table.history tbody tr').length === 1`)
	r.letThrough(details)
	if got := r.title(); got != "History" {
		t.Errorf("after the late details the page shows %q, want the history list", got)
	}
}

// TestBrowserCellLoadAfterAnotherCell opens a cell of a run, closes it
// before its tests arrive and opens another: when the first cell's tests
// do arrive, the dialog keeps showing the second cell's.
func TestBrowserCellLoadAfterAnotherCell(t *testing.T) {
	t.Parallel()
	r := newRaceEnv(t)
	r.b.open("#/run/" + r.done)
	r.b.wait("the run's matrix", allCellsDone(len(exampleCells)))
	// The run's own results come first: the next results asked for are
	// the first cell's.
	r.b.wait("the run's results", `document.querySelector('#run-results tr.result-row') !== null`)
	first := "/api/run/" + r.done + "/results" // the first cell's first page
	r.proxy.hold(first)
	r.b.click(`.cell[data-domain="arithmetic"][data-level="1"]`)
	r.proxy.waitHeld("the first cell's tests")
	// Clicked from the page: a click by coordinates can miss while the
	// dialog's content is still being laid out on a loaded machine.
	evalJS[chromedp.Void](r.b, `document.querySelector('#cell-dialog [data-close]').click()`)
	r.b.wait("the dialog to close", `!document.getElementById('cell-dialog').open`)
	r.b.click(`.cell[data-domain="knowledge"][data-level="1"]`)
	r.b.wait("the second cell's tests", `document.querySelector('#cell-dialog[open] tr.result-row') !== null`)
	tests := `[...document.querySelectorAll('#cell-dialog tr.result-row')].map(d => d.dataset.test).join(',')`
	want := evalJS[string](r.b, tests)
	r.letThrough(first)
	if got := evalJS[string](r.b, tests); got != want {
		t.Errorf("after the first cell's late answer the dialog lists %q, want the second cell's %q", got, want)
	}
	if got := r.b.text("#cell-title"); !strings.Contains(strings.ToLower(got), "knowledge") {
		t.Errorf("dialog title %q, want the knowledge cell's", got)
	}
}

// TestBrowserLiveLogAfterComingBack opens the live view while the page's
// poller waits for a log answer: showing the view must not start a second
// poll beside the one in flight (it would read the log from the same
// cursor, show new lines twice and keep a second timer), and once the
// answer is in, the log holds each line once.
func TestBrowserLiveLogAfterComingBack(t *testing.T) {
	t.Parallel()
	r := newRaceEnv(t)
	r.b.open("#/history")
	const logPoll = "/api/log_poll"
	r.b.wait("the first run's log", fmt.Sprintf(`((window.__bodies || {})[%q] || 0) >= 1`, logPoll))
	r.proxy.hold(logPoll)
	r.proxy.waitHeld("the log") // the poller reads it every few seconds
	want := r.logLines()        // the first run's, read when the page opened
	r.runToEnd(map[string]any{"model_name": "again"})
	want += r.logLines()
	before := r.b.bodiesRead(logPoll)
	asked := evalJS[int](r.b, `window.__asked['/api/status'] || 0`)
	evalJS[chromedp.Void](r.b, `location.hash = '#/live'`)
	r.b.wait("the live view", `!document.getElementById('view-live').hidden`)
	// The view asks for a poll as it is shown, in a task of its own: once a
	// task queued after it has run, a second poll would have asked for the
	// engine status.
	got, err := chromedp.Run(r.b.ctx, chromedp.Evaluate[int](`new Promise((ok) => setTimeout(() => ok(window.__asked['/api/status'] || 0), 0))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("count the status requests: %v", err)
	}
	if got != asked {
		t.Errorf("showing the live view while a poll waited started another poll (%d status requests, want %d)", got, asked)
	}
	r.proxy.let()
	r.b.wait("the second run's end in the log, and two log answers read", fmt.Sprintf(
		`document.querySelectorAll('#log .log-end').length >= 2 && ((window.__bodies || {})[%q] || 0) >= %d`, logPoll, before+2))
	if got := evalJS[int](r.b, `document.querySelectorAll('#log li').length`); got != want {
		t.Errorf("the page's log has %d lines, want the two runs' %d", got, want)
	}
	if got := evalJS[int](r.b, `document.querySelectorAll('#log .log-end').length`); got != 2 {
		t.Errorf("the log shows %d run ends, want 2", got)
	}
}

// logLines counts the lines of the server's log: those of the last run.
func (r *raceEnv) logLines() int {
	r.t.Helper()
	n := 0
	for since := 0; ; {
		var page struct {
			Messages []string `json:"messages"`
			Cursor   int      `json:"cursor"`
		}
		must(r.t, r.get(fmt.Sprintf("/api/log_poll?since=%d", since)), http.StatusOK).decode(r.t, &page)
		if len(page.Messages) == 0 {
			return n
		}
		n += len(page.Messages)
		since = page.Cursor
	}
}
