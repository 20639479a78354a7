package server_test

// Browser tests of the dashboard's rough edges: each one reproduces what
// a person met in a real browser (the skip link, the header chips while
// the server is away, a phone's viewport, long words in a dialog, a
// cancelled token prompt, a channel that fails to start, tool-call
// arguments in the test editor, a long log, /docs without internet) and
// checks the fix. Each failed against the dashboard before its fix.

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/gauntlet-eval/gauntlet/channels/telegram/telegramtest"
)

// frontProxy is a reverse proxy on loopback in front of a test server:
// the browser talks to it. It counts the requests that pass, by path and
// status, and it can go away and come back on the same address, as a
// server that is stopped and started again.
type frontProxy struct {
	t      *testing.T
	url    string
	addr   string
	target *url.URL

	mu     sync.Mutex
	srv    *http.Server
	counts map[string]int // "GET /api/log_poll 200" → requests
}

func newFrontProxy(t *testing.T, target string) *frontProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &frontProxy{t: t, addr: ln.Addr().String(), target: u, counts: map[string]int{}}
	p.url = "http://" + p.addr
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *frontProxy) serve(ln net.Listener) {
	rp := httputil.NewSingleHostReverseProxy(p.target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // requests cut short when the proxy stops
	rp.ModifyResponse = func(res *http.Response) error {
		p.mu.Lock()
		p.counts[res.Request.Method+" "+res.Request.URL.Path+" "+res.Status[:3]]++
		p.mu.Unlock()
		return nil
	}
	srv := &http.Server{Handler: rp}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go srv.Serve(ln)
}

// stop closes the proxy and every connection to it: the browser's
// requests fail as they do when the server is not running.
func (p *frontProxy) stop() {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// restart listens again on the same address.
func (p *frontProxy) restart() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// count returns how many requests matched method, path and status so
// far ("GET", "/api/log_poll", 200); an empty method or path, or status
// 0, matches any.
func (p *frontProxy) count(method, path string, status int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, c := range p.counts {
		f := strings.Fields(k)
		if (method == "" || f[0] == method) && (path == "" || f[1] == path) && (status == 0 || f[2] == strconv.Itoa(status)) {
			n += c
		}
	}
	return n
}

// TestBrowserSkipLink follows the "Skip to content" link from the
// keyboard: focus moves to the main content and the view stays, rather
// than the link's #main being taken for a route ("Page not found").
func TestBrowserSkipLink(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/history")
	b.do("tab to the skip link", chromedp.KeyEvent(kb.Tab))
	if got := evalJS[string](b, `document.activeElement.className`); got != "skip" {
		t.Fatalf("the first Tab focuses %q, want the skip link", got)
	}
	b.do("follow it", chromedp.KeyEvent(kb.Enter))
	b.wait("focus on the main content", `document.activeElement === document.getElementById('main')`)
	if !evalJS[bool](b, `document.getElementById('view-missing').hidden`) {
		t.Errorf("the skip link shows %q", b.text("main > .view:not([hidden]) h1"))
	}
	if got := b.text("main > .view:not([hidden]) h1"); got != "History" {
		t.Errorf("after the skip link the page shows %q, want the history still", got)
	}
	// A page opened at #main (a bookmark of the skip link's target) shows
	// the live run, not "Page not found".
	b.do("open /#main", chromedp.Navigate("about:blank"), chromedp.Navigate(e.url+"/#main"))
	b.wait("a view", `document.querySelector('main > .view:not([hidden]) h1') !== null`)
	if got := b.text("main > .view:not([hidden]) h1"); got != "Live run" {
		t.Errorf("/#main shows %q, want the live run", got)
	}
}

// waitWithin polls a JavaScript expression until it is truthy, for at
// most d.
func (b *browser) waitWithin(d time.Duration, what, expr string) {
	b.t.Helper()
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(d)))
	if err != nil {
		b.t.Fatalf("waiting %s for %s (%s): %v", d, what, expr, err)
	}
}

// TestBrowserChipsWhileUnreachable stops the server the page talks to:
// within a poll interval the header's chips stop claiming a checked
// model and an engine state, and they come back when the server does.
func TestBrowserChipsWhileUnreachable(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	p := newFrontProxy(t, e.url)
	b := newBrowser(t, p.url, 1280, 900)
	b.open("#/live")
	b.wait("the model check", `document.getElementById('model-chip').textContent.includes('✓ Model llmtest-model')`)
	b.wait("the engine state", `document.getElementById('engine-chip').textContent.includes('Engine idle')`)

	p.stop()
	// The live view polls every 2.5 s while idle; after a failed poll it
	// waits 3 s: one interval and a margin.
	b.waitWithin(6*time.Second, "the chips to say the server is unreachable",
		`document.getElementById('model-chip').textContent.includes('unreachable') && document.getElementById('engine-chip').textContent.includes('unreachable')`)
	for _, chip := range []string{"#model-chip", "#engine-chip"} {
		if got := b.text(chip); strings.Contains(got, "✓") || strings.Contains(got, "running") || strings.Contains(got, "idle") {
			t.Errorf("%s reads %q with the server away", chip, got)
		}
	}
	b.expectProblem("Failed to load resource")

	p.restart()
	b.waitWithin(10*time.Second, "the chips to recover",
		`document.getElementById('model-chip').textContent.includes('✓ Model llmtest-model') && document.getElementById('engine-chip').textContent.includes('Engine idle')`)
	if n := evalJS[int](b, `document.querySelectorAll('[data-banner="server"]').length`); n != 0 {
		t.Errorf("the server banner stays after the server came back")
	}
}

// wideDomain is the definition files of a domain with tests at levels 1
// to 6: beside the examples, whose domains stop at level 3 or below, the
// matrix has empty cells.
func wideDomain() map[string]string {
	files := map[string]string{"domains/wide/domain.yaml": "id: wide\nname: Six levels\nevaluator_id: number\nenabled: true\n"}
	for l := 1; l <= 6; l++ {
		files[fmt.Sprintf("domains/wide/level-%d.yaml", l)] = fmt.Sprintf(
			"tests:\n  - id: wide-%d\n    name: Sum %d\n    prompt: What is 2 + 3?\n    expected:\n      answer: '5'\n      type: numeric\n", l, l)
	}
	return files
}

// TestBrowserPhoneEmptyCells opens a matrix with empty cells on a phone:
// the page is no wider than the screen (the matrix scrolls inside its own
// box instead).
func TestBrowserPhoneEmptyCells(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{files: wideDomain()})
	e.runToEnd(map[string]any{"model_name": "phone"})
	b := newBrowser(t, e.url, 390, 844)
	b.open("#/live")
	b.wait("the matrix", allCellsDone(len(exampleCells)+6))
	if n := evalJS[int](b, `document.querySelectorAll('.matrix td.nocell').length`); n < 10 {
		t.Fatalf("%d empty cells, want the examples' rows empty at levels 4 to 6", n)
	}
	if w := evalJS[[]int](b, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] != w[1] {
		t.Errorf("the page is %d px wide on a %d px screen: it pans sideways", w[0], w[1])
	}
	if w := evalJS[[]int](b, `(() => { const m = document.querySelector('.matrix-wrap'); return [m.scrollWidth, m.clientWidth]; })()`); w[0] <= w[1] {
		t.Errorf("the matrix is %d px in a %d px box: it should scroll inside it", w[0], w[1])
	}
}

// closeReachable is a JavaScript expression: the close button of the
// cell dialog lies inside the viewport and is what a click at its centre
// hits.
const closeReachable = `(() => {
	const c = document.querySelector('#cell-dialog [data-close]');
	const r = c.getBoundingClientRect();
	if (r.width === 0 || r.left < 0 || r.top < 0 || r.right > window.innerWidth || r.bottom > window.innerHeight) return false;
	const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
	return hit === c || c.contains(hit);
})()`

// TestBrowserLongWordInDialog gives a domain and a test names of one
// 2,000-character word: the cell dialog's close button stays on the
// screen and closes it; the words break inside the dialog.
func TestBrowserLongWordInDialog(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	word := strings.Repeat("W", 2000)
	must(t, e.put("/api/settings/domains/arithmetic", map[string]any{"name": word}), http.StatusOK)
	must(t, e.put("/api/settings/tests/add-small", map[string]any{"name": word, "prompt": "What is " + word + "?"}), http.StatusOK)
	e.runToEnd(map[string]any{"model_name": "long"})
	for _, size := range [][2]int{{1280, 900}, {390, 844}} {
		b := newBrowser(t, e.url, size[0], size[1])
		b.open("#/live")
		b.wait("the matrix", allCellsDone(len(exampleCells)))
		b.click(`.cell[data-domain="arithmetic"][data-level="1"]`)
		b.wait("the cell's tests", `document.querySelectorAll('#cell-dialog[open] tr.result-row').length === 2`)
		b.do("open the long test", chromedp.Evaluate[chromedp.Void](`document.querySelector('#cell-dialog tr.result-row[data-test="add-small"] .row-toggle').click()`))
		b.wait("its details", `(() => { const d = document.querySelector('#cell-dialog tr.result-row[data-test="add-small"] + tr.result-detail');
			return d !== null && !d.hidden && d.querySelector('.test-body') !== null; })()`)
		if !evalJS[bool](b, closeReachable) {
			r := evalJS[map[string]float64](b, `document.querySelector('#cell-dialog [data-close]').getBoundingClientRect().toJSON()`)
			t.Errorf("%d px: the close button is at %v, off a %d × %d screen or covered", size[0], r, size[0], size[1])
		}
		if w := evalJS[[]int](b, `(() => { const d = document.getElementById('cell-dialog'); return [d.scrollWidth, d.clientWidth]; })()`); w[0] > w[1] {
			t.Errorf("%d px: the dialog's content is %d px wide in %d px: the word does not break", size[0], w[0], w[1])
		}
		// Scrolled as far right as it goes, to read the end of the word.
		b.do("scroll the dialog right", chromedp.Evaluate[chromedp.Void](`(() => { const d = document.getElementById('cell-dialog'); d.scrollLeft = d.scrollWidth; })()`))
		if !evalJS[bool](b, closeReachable) {
			t.Errorf("%d px: with the dialog scrolled right, its close button is off the screen", size[0])
		}
		b.click("#cell-dialog [data-close]")
		b.wait("the dialog to close", `!document.getElementById('cell-dialog').open`)
	}
}

// TestBrowserTokenPromptCancelled cancels the token prompt of a server
// with --api-token: the page stops asking the server (no request is
// refused with 401 while nobody acts), and asks again once the user
// enters a token.
func TestBrowserTokenPromptCancelled(t *testing.T) {
	t.Parallel()
	const token = "cancel-token"
	e := newEngineEnv(t, engineConfig{}, withToken(token))
	p := newFrontProxy(t, e.url)
	b := newBrowser(t, p.url, 1280, 900)
	b.do("open the page", chromedp.Navigate(p.url+"/#/live"))
	b.wait("the token prompt", `document.getElementById('token-dialog').open`)
	b.click(`#token-dialog button[value="cancel"]`)
	b.wait("the prompt to close", `!document.getElementById('token-dialog').open`)
	b.wait("the token banner", `document.querySelector('[data-banner="auth"]') !== null`)
	// The requests that were on their way when the prompt closed.
	b.wait("the model chip to give up", `document.getElementById('model-chip').textContent.includes('unknown')`)
	refused := p.count("", "", http.StatusUnauthorized)
	// An observation window, not a synchronisation: the live view polls
	// every 2.5 to 5 s, so two of its polls fall inside.
	deadline := time.Now().Add(11 * time.Second)
	for time.Now().Before(deadline) {
		if n := p.count("", "", http.StatusUnauthorized); n > refused {
			t.Fatalf("after the prompt was cancelled, %d more requests were refused with 401", n-refused)
		}
		b.do("wait", chromedp.Sleep(250*time.Millisecond))
	}
	if !evalJS[bool](b, `!document.getElementById('token-dialog').open`) {
		t.Errorf("the prompt opened again by itself")
	}

	// The user acts: the banner's button asks for the token; with it the
	// page works.
	b.click(`[data-banner="auth"] button`)
	b.wait("the token prompt", `document.getElementById('token-dialog').open`)
	b.typeInto("#token-input", token)
	b.click(`#token-dialog button[value="save"]`)
	b.wait("the model check", `document.getElementById('model-chip').textContent.includes('llmtest-model')`)
	b.wait("the engine state", `document.getElementById('engine-chip').textContent.includes('Engine idle')`)
	b.expectProblem("401")
}

// TestBrowserChannelStartFails starts, from the agent page, a Telegram
// channel whose token the (fake) Bot API refuses: the list shows what
// the API reports once the start has failed, status error with its
// reason, not "running".
func TestBrowserChannelStartFails(t *testing.T) {
	t.Parallel()
	tg := telegramtest.NewServer("123456:the-right-token")
	t.Cleanup(tg.Close)
	// Telegram is far away: its first answer (401 for the wrong token)
	// comes after the page has read the list again; the retries fail at
	// once.
	target, _ := url.Parse(tg.URL)
	far := httputil.NewSingleHostReverseProxy(target)
	far.ErrorLog = log.New(io.Discard, "", 0) // a call cut short when the channel stops
	var first sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := time.Duration(0)
		first.Do(func() { wait = 1500 * time.Millisecond })
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
		far.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	e := newEnv(t)
	e.createAgent("bot", "You are a bot.")
	c := e.createChannel("bot", map[string]any{"type": "telegram", "name": "Bad token",
		"config": map[string]any{"bot_token": "123456:a-wrong-token", "api_url": slow.URL}})
	id := c["id"].(string)
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/bot")
	row := fmt.Sprintf(`.channels tr[data-channel=%q]`, id)
	b.wait("the channel", fmt.Sprintf(`document.querySelector('%s') !== null`, row))
	b.click(row + ` .row-actions button:first-child`)
	b.wait("the failure in the list", fmt.Sprintf(`document.querySelector('%s').dataset.status === 'error'`, row))
	if got := b.text(row); !strings.Contains(got, "error") || !strings.Contains(strings.ToLower(got), "unauthorized") {
		t.Errorf("the channel's row reads %q, want status error and the reason", got)
	}
	var list struct {
		Channels []struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			LastError string `json:"last_error"`
		} `json:"channels"`
	}
	// A restarted Run that lasts the retry delay (a slow machine) puts
	// the channel back to running for a while: the API is read until it
	// reports the failure again.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		must(t, e.get("/api/agents/bot/channels"), http.StatusOK).decode(t, &list)
		if len(list.Channels) != 1 {
			t.Fatalf("channels %+v", list.Channels)
		}
		if list.Channels[0].Status == "error" || time.Now().After(deadline) {
			break
		}
	}
	if api := list.Channels[0]; api.Status != "error" || !strings.Contains(b.text(row), api.LastError) {
		t.Errorf("the API says %q (%q); the page says %q", api.Status, api.LastError, b.text(row))
	}
	b.expectProblem("Failed to load resource")
}

// TestBrowserToolCallArguments edits the arguments a tool_call test
// expects: the test editor shows them as JSON, refuses JSON that does not
// parse or is not an object beside the field, and saves and clears them
// through the API.
func TestBrowserToolCallArguments(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/definitions/domains/tool_use/1/weather-paris")
	const args = `#test-form [name="expected.arguments"]`
	b.wait("the arguments field", fmt.Sprintf(`document.querySelector('%s') !== null`, args))
	if got := evalJS[string](b, fmt.Sprintf(`document.querySelector('%s').value`, args)); !strings.Contains(got, `"city"`) || !strings.Contains(got, `"Paris"`) {
		t.Errorf("the arguments field holds %q, want the test's {\"city\": \"Paris\"}", got)
	}
	if got := b.text(`.tests-table tr[data-test="weather-paris"]`); !strings.Contains(got, "city") {
		t.Errorf("the tests table row %q does not show the arguments", got)
	}
	saved := func() map[string]any {
		var got struct {
			Expected struct {
				Arguments map[string]any `json:"arguments"`
			} `json:"expected"`
		}
		must(t, e.get("/api/settings/tests/weather-paris"), http.StatusOK).decode(t, &got)
		return got.Expected.Arguments
	}
	const fieldError = `#test-form [data-field="expected.arguments"] .field-error`
	for _, bad := range []struct{ text, want string }{{`{"city":`, "JSON"}, {`["Paris"]`, "object"}} {
		b.typeInto(args, bad.text)
		b.click(`#test-form button[type="submit"]`)
		b.wait("the error beside the arguments", fmt.Sprintf(`document.querySelector('%s') !== null`, fieldError))
		if got := b.text(fieldError); !strings.Contains(got, bad.want) {
			t.Errorf("%s: field error %q, want it to mention %q", bad.text, got, bad.want)
		}
		if got := saved(); got["city"] != "Paris" || len(got) != 1 {
			t.Errorf("%s: the arguments changed to %v", bad.text, got)
		}
	}

	b.typeInto(args, `{"city": "Lyon", "unit": "celsius"}`)
	b.click(`#test-form button[type="submit"]`)
	b.wait("the level view after the save", `location.hash === '#/definitions/domains/tool_use/1' && document.getElementById('test-form') === null`)
	if got := saved(); got["city"] != "Lyon" || got["unit"] != "celsius" || len(got) != 2 {
		t.Errorf("saved arguments %v, want city Lyon and unit celsius", got)
	}

	// An empty field clears them.
	b.route("#/definitions/domains/tool_use/1/weather-paris")
	b.wait("the arguments field", fmt.Sprintf(`document.querySelector('%s') !== null && document.querySelector('%s').value.includes('Lyon')`, args, args))
	b.do("empty the field", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector('%s').value = ''`, args)))
	b.click(`#test-form button[type="submit"]`)
	b.wait("the level view after the save", `location.hash === '#/definitions/domains/tool_use/1' && document.getElementById('test-form') === null`)
	if got := saved(); len(got) != 0 {
		t.Errorf("arguments %v after saving an empty field, want none", got)
	}
}

// TestBrowserLongLog opens the live view after a run of 1,500 samples
// (a log of as many lines, more than the 1,000 of the tail the page asks
// for): the page fetches the log's recent tail in a request or two,
// rather than replaying all of it a hundred lines at a time, and says how
// many earlier lines it left out.
func TestBrowserLongLog(t *testing.T) {
	t.Parallel()
	var tests strings.Builder
	tests.WriteString("tests:\n")
	for i := range 100 {
		fmt.Fprintf(&tests, "  - id: sum-%03d\n    prompt: What is 2 + 3?\n    expected:\n      answer: '5'\n      type: numeric\n", i)
	}
	e := newEngineEnv(t, engineConfig{concurrency: 8, files: map[string]string{
		"domains/many/domain.yaml":  "id: many\nname: Many\nevaluator_id: number\nenabled: true\n",
		"domains/many/level-1.yaml": tests.String(),
	}})
	start := time.Now()
	e.start(map[string]any{"model_name": "long", "domains": []string{"many"}, "repeats": 15})
	// However long the machine makes it take, as long as it moves.
	e.waitIdle()
	t.Logf("a run of 1,500 samples took %s", time.Since(start))

	p := newFrontProxy(t, e.url)
	b := newBrowser(t, p.url, 1280, 900)
	b.open("#/live")
	b.wait("the end of the log", `document.querySelector('#log .log-end') !== null`)
	if n := p.count("GET", "/api/log_poll", 0); n > 2 {
		t.Errorf("the page made %d log requests to show the log, want 1 or 2", n)
	}
	lines := evalJS[int](b, `document.querySelectorAll('#log li').length`)
	if lines < 500 || lines > 1001 {
		t.Errorf("the log shows %d lines, want the recent tail (up to 1,000) and a line for the rest", lines)
	}
	if got := evalJS[string](b, `document.querySelector('#log li').textContent`); !strings.Contains(got, "earlier lines") {
		t.Errorf("the log starts with %q, want a line saying how many earlier lines are left out", got)
	}
}

// blockNetwork makes the browser fail every request to a host other than
// loopback, as on a machine without internet, and returns the URLs it
// refused so far.
func (b *browser) blockNetwork() func() []string {
	b.t.Helper()
	var mu sync.Mutex
	var refused []string
	paused := chromedp.Events(b.tab, fetch.RequestPaused)
	b.do("intercept every request", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{})
		return err
	}))
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			u, perr := url.Parse(ev.Request.URL)
			if perr == nil && (u.Scheme == "data" || u.Scheme == "blob" || isLoopback(u.Hostname())) {
				chromedp.Call(b.tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				continue
			}
			mu.Lock()
			refused = append(refused, ev.Request.URL)
			mu.Unlock()
			chromedp.Call(b.tab, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonInternetDisconnected})
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(refused)
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TestBrowserDocsOffline loads /docs with every request off this machine
// refused: the API reference, which the server makes from its own OpenAPI
// document, shows the real operations with their parameters and schemas,
// styled by its own stylesheet, with no script.
func TestBrowserDocsOffline(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	b := newBrowser(t, e.url, 1280, 900)
	refused := b.blockNetwork()
	b.do("open /docs", chromedp.Navigate(e.url+"/docs"))
	b.wait("the reference's groups", `document.querySelector('nav.toc').innerText.includes('Results and history') && document.querySelector('nav.toc').innerText.includes('Agent channels')`)
	// An operation's anchor is its operationId.
	b.do("open an operation", chromedp.Navigate(e.url+"/docs#poll-log"))
	b.wait("the operation with its parameters", `(() => {
		const op = document.getElementById('poll-log');
		const text = op ? op.innerText : '';
		const row = (name) => [...op.querySelectorAll('table.params tr')].find((tr) => tr.cells[0].innerText.trim() === name);
		return text.includes('Drain pending log lines') && text.includes('/api/log_poll') && text.includes('LogPage') &&
			row('since') && row('since').innerText.includes('query') && row('since').innerText.includes('default') &&
			row('tail') && row('tail').innerText.includes('maximum') && row('tail').innerText.includes('1000');
	})()`)
	b.wait("the operation scrolled into view", `Math.abs(document.getElementById('poll-log').getBoundingClientRect().top) < 80`)
	// The stylesheet applies: colored method badges, the sticky contents.
	b.wait("the page's styles", `getComputedStyle(document.querySelector('#poll-log .method')).backgroundColor !== 'rgba(0, 0, 0, 0)' &&
		getComputedStyle(document.querySelector('nav.toc')).position === 'sticky'`)
	// The contents lead to each operation; nested fields open without a
	// script.
	b.click(`nav.toc a[href="#start-run"]`)
	b.wait("the operation the contents link to", `location.hash === '#start-run' && document.getElementById('start-run').innerText.includes('/api/start')`)
	b.click(`#start-run details > summary`)
	b.wait("nested fields", `document.querySelector('#start-run details').open && document.querySelector('#start-run details').innerText.includes('temperature')`)
	// The error responses link to the Problem schema, shown once.
	b.click(`#poll-log a[href="#schema-Problem"]`)
	b.wait("the error schema", `location.hash === '#schema-Problem' && document.getElementById('schema-Problem').innerText.includes('detail')`)
	if n := evalJS[int](b, `document.querySelectorAll('script').length`); n != 0 {
		t.Errorf("the page has %d scripts", n)
	}
	if got := refused(); len(got) != 0 {
		t.Errorf("the page asked for %d resources off this machine: %v", len(got), got)
	}
	r := must(t, e.get("/docs"), http.StatusOK)
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP %q", csp)
	}
	if r := must(t, e.get("/docs/docs.css"), http.StatusOK); r.header.Get("ETag") == "" || !strings.Contains(string(r.body), ".method") {
		t.Errorf("/docs/docs.css: ETag %q, %d bytes", r.header.Get("ETag"), len(r.body))
	}
	for _, p := range []string{"/docs/elements/web-components.min.js", "/docs/nothing"} {
		if r := e.get(p); r.status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, r.status)
		}
	}
}
