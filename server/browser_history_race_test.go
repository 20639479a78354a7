package server_test

// Browser tests of navigation races in the history view and the cell
// drill-down: an answer the page was waiting for when the user went
// elsewhere must not draw over the view (or cell) the user went to. A proxy in front of the test server holds
// one chosen request until the test lets it through, so the late answer
// arrives at a known moment, after the navigation.

import (
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

// countBodies makes the page count, per path, the answers whose body it
// has read, one task after the read: by the time a count moves, what the
// page does with that answer in the same turn (microtasks included) is
// done. The dashboard calls the global fetch at each request, so wrapping
// it after load is enough.
const countBodies = `(() => {
	window.__bodies = {};
	const orig = window.fetch.bind(window);
	window.fetch = async (input, init) => {
		const res = await orig(input, init);
		const path = new URL(String(input), location.href).pathname;
		const text = res.text.bind(res);
		res.text = async () => {
			const t = await text();
			setTimeout(() => { window.__bodies[path] = (window.__bodies[path] || 0) + 1; }, 0);
			return t;
		};
		return res;
	};
})()`

// bodiesRead is how many answers of GET path the page has read since
// countBodies.
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
	evalJS[chromedp.Void](r.b, countBodies)
	poll = "/api/run/" + id + "/matrix"
	r.proxy.hold(poll)
	r.proxy.waitHeld("the running run's matrix again")
	return id, poll
}

// TestBrowserRunPollAfterBackToHistory leaves a running run for the
// history list while the run's poll waits for its answer; the run ends
// meanwhile. The late answer must not bring the run back over the list.
func TestBrowserRunPollAfterBackToHistory(t *testing.T) {
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
	r := newRaceEnv(t)
	r.b.open("#/history")
	r.b.wait("the history list", `document.querySelectorAll('table.history tbody tr').length === 1`)
	evalJS[chromedp.Void](r.b, countBodies)
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
	r := newRaceEnv(t)
	r.b.open("#/run/" + r.done)
	r.b.wait("the run's matrix", allCellsDone(len(exampleCells)))
	evalJS[chromedp.Void](r.b, countBodies)
	first := "/api/run/" + r.done + "/tests/arithmetic/1"
	r.proxy.hold(first)
	r.b.click(`.cell[data-domain="arithmetic"][data-level="1"]`)
	r.proxy.waitHeld("the first cell's tests")
	r.b.click("#cell-dialog [data-close]")
	r.b.wait("the dialog to close", `!document.getElementById('cell-dialog').open`)
	r.b.click(`.cell[data-domain="knowledge"][data-level="1"]`)
	r.b.wait("the second cell's tests", `document.querySelector('#cell-dialog[open] details.test') !== null`)
	tests := `[...document.querySelectorAll('#cell-dialog details.test')].map(d => d.dataset.test).join(',')`
	want := evalJS[string](r.b, tests)
	r.letThrough(first)
	if got := evalJS[string](r.b, tests); got != want {
		t.Errorf("after the first cell's late answer the dialog lists %q, want the second cell's %q", got, want)
	}
	if got := r.b.text("#cell-title"); !strings.Contains(strings.ToLower(got), "knowledge") {
		t.Errorf("dialog title %q, want the knowledge cell's", got)
	}
}
