package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

// downloads saves what the page downloads into a fresh directory and
// records how each download ended.
type downloads struct {
	b   *browser
	dir string

	mu    sync.Mutex
	names map[string]string                           // guid → the file name the page suggested
	ended map[string]cdpbrowser.EventDownloadProgress // guid → its last progress, completed or canceled
	order []string                                    // guids, in the order the downloads ended
}

// allowDownloads lets the page download files, into a temporary
// directory, and records each download's end.
func (b *browser) allowDownloads() *downloads {
	b.t.Helper()
	d := &downloads{b: b, dir: b.t.TempDir(), names: map[string]string{}, ended: map[string]cdpbrowser.EventDownloadProgress{}}
	// The browser is shared with other tests: its download events are
	// every tab's, so only the downloads this tab's page starts count.
	tree, err := chromedp.Call(b.ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		b.t.Fatalf("read the page's frame: %v", err)
	}
	frame := tree.FrameTree.Frame.ID
	if err := chromedp.ListenBrowser(b.tab, func(ev any) {
		d.mu.Lock()
		defer d.mu.Unlock()
		switch ev := ev.(type) {
		case *cdpbrowser.EventDownloadWillBegin:
			if ev.FrameID == frame {
				d.names[ev.GUID] = ev.SuggestedFilename
			}
		case *cdpbrowser.EventDownloadProgress:
			if _, ours := d.names[ev.GUID]; !ours {
				return
			}
			if ev.State != cdpbrowser.DownloadProgressStateCompleted && ev.State != cdpbrowser.DownloadProgressStateCanceled {
				return
			}
			if _, seen := d.ended[ev.GUID]; !seen {
				d.order = append(d.order, ev.GUID)
			}
			d.ended[ev.GUID] = *ev
		}
	}); err != nil {
		b.t.Fatalf("listen to the browser: %v", err)
	}
	events := true
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: d.dir, EventsEnabled: &events,
		BrowserContextID: chromedp.FromContext(b.tab).BrowserContextID, // the tab's own
	}); err != nil {
		b.t.Fatalf("allow downloads: %v", err)
	}
	return d
}

// download is one download that ended.
type download struct {
	name  string // the file name the page suggested
	state cdpbrowser.DownloadProgressState
	body  []byte // the file's contents, when completed
}

// count returns how many downloads have ended so far.
func (d *downloads) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.order)
}

// nth waits for the n-th download (from 1) to end and returns it.
func (d *downloads) nth(n int) download {
	d.b.t.Helper()
	harnesstest.Eventually(d.b.t, uiWait, "a download to end", func() bool { return d.count() >= n })
	d.mu.Lock()
	guid := d.order[n-1]
	ev, name := d.ended[guid], d.names[guid]
	d.mu.Unlock()
	dl := download{name: name, state: ev.State}
	if ev.State == cdpbrowser.DownloadProgressStateCompleted {
		p := ev.FilePath
		if p == "" {
			p = filepath.Join(d.dir, name)
		}
		body, err := os.ReadFile(p)
		if err != nil {
			d.b.t.Fatalf("read the download %s: %v", name, err)
		}
		dl.body = body
	}
	return dl
}

// files lists the files in the download directory.
func (d *downloads) files() []string {
	d.b.t.Helper()
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		d.b.t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// blockStorage makes every page of the tab refuse local storage, as a
// browser does when the user blocks site data: reading
// window.localStorage throws.
func (b *browser) blockStorage() {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `Object.defineProperty(window, 'localStorage', { configurable: true, get() { throw new DOMException('site data is blocked', 'SecurityError'); } });`,
	}); err != nil {
		b.t.Fatalf("block local storage: %v", err)
	}
}

// enterToken answers the token prompt of a page just opened.
func (b *browser) enterToken(token string) {
	b.t.Helper()
	b.wait("the token prompt", `document.getElementById('token-dialog').open`)
	b.typeInto("#token-input", token)
	b.click(`#token-dialog button[value="save"]`)
	b.wait("the prompt to close", `!document.getElementById('token-dialog').open`)
}

// TestBrowserExportWithToken exports results from a server that needs an
// API token. A link cannot send the Authorization header: with the token
// entered, the export buttons fetch the file and save it, and the saved
// file is what the API exports (the whole run as CSV, the errors as JSON
// Lines), also when the browser keeps no local storage and the token
// lives in the page. Without the token, nothing is saved: no 401 answer
// in a file named .csv.
func TestBrowserExportWithToken(t *testing.T) {
	t.Parallel()
	const token = "export-token"
	e := newEngineEnv(t, engineConfig{noExamples: true}, withToken(token))
	seedScaleRun(t, e, "big", 200)
	api := func(query string) []byte {
		t.Helper()
		return must(t, e.get("/api/run/big/export?"+query), http.StatusOK).body
	}
	const results = "#run-results"

	t.Run("with the token", func(t *testing.T) {
		b := newBrowser(t, e.url, 1280, 900)
		d := b.allowDownloads()
		b.do("open the run", chromedp.Navigate(e.url+"/#/run/big"))
		b.enterToken(token)
		b.wait("the run's results", `document.querySelectorAll('`+results+` tr.result-row').length === 50`)

		b.click(results + " .ex-export-csv")
		csv := d.nth(1)
		want := api("sort=score&format=csv")
		if csv.state != cdpbrowser.DownloadProgressStateCompleted || csv.name != "big.csv" {
			t.Fatalf("the CSV download ended %s as %q, want completed as big.csv", csv.state, csv.name)
		}
		lines := strings.Split(strings.TrimSpace(string(csv.body)), "\n")
		if !strings.HasPrefix(lines[0], "run_id,test_id,repeat,domain,level,") || len(lines) != 201 {
			t.Errorf("the CSV saved has %d lines, starting %q: want the header row and 200 results", len(lines), lines[0])
		}
		if !bytes.Equal(csv.body, want) {
			t.Errorf("the CSV saved (%d bytes) is not what the API exports (%d bytes)", len(csv.body), len(want))
		}

		// Errors only, as JSON Lines.
		b.choose(results+" .ex-status", "error")
		evalJS[chromedp.Void](b, `document.querySelector('`+results+` .ex-status').dispatchEvent(new Event('change'))`)
		b.wait("errors only", `document.querySelector('`+results+` .ex-count').textContent.startsWith('20 of 200 results')`)
		b.click(results + " .ex-export-jsonl")
		jsonl := d.nth(2)
		if jsonl.state != cdpbrowser.DownloadProgressStateCompleted || jsonl.name != "big.jsonl" {
			t.Fatalf("the JSONL download ended %s as %q, want completed as big.jsonl", jsonl.state, jsonl.name)
		}
		var n int
		for line := range strings.SplitSeq(strings.TrimSpace(string(jsonl.body)), "\n") {
			var r struct {
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Status != "error" {
				t.Fatalf("line %d of the JSONL saved: %q (%v), want a result in error", n+1, line, err)
			}
			n++
		}
		if n != 20 || !bytes.Equal(jsonl.body, api("status=error&sort=score&format=jsonl")) {
			t.Errorf("the JSONL saved holds %d results, or differs from the API's export; want the 20 errors", n)
		}
	})

	t.Run("with the token kept in the page only", func(t *testing.T) {
		b := newBrowser(t, e.url, 1280, 900)
		d := b.allowDownloads()
		b.blockStorage()
		b.do("open the run", chromedp.Navigate(e.url+"/#/run/big"))
		b.enterToken(token)
		b.wait("the run's results", `document.querySelectorAll('`+results+` tr.result-row').length === 50`)
		b.click(results + " .ex-export-csv")
		csv := d.nth(1)
		if csv.state != cdpbrowser.DownloadProgressStateCompleted || !bytes.Equal(csv.body, api("sort=score&format=csv")) {
			t.Errorf("the CSV download ended %s with %d bytes (%.60q), want the API's export", csv.state, len(csv.body), csv.body)
		}
	})

	t.Run("with a token the server refuses", func(t *testing.T) {
		b := newBrowser(t, e.url, 1280, 900)
		d := b.allowDownloads()
		b.do("open the run", chromedp.Navigate(e.url+"/#/run/big"))
		b.enterToken(token)
		b.wait("the run's results", `document.querySelectorAll('`+results+` tr.result-row').length === 50`)
		// The server's token changes while the page is open: what the page
		// keeps is refused from now on. (The click is dispatched to the
		// button itself: a poll refused meanwhile may open the token prompt
		// over the page.)
		evalJS[chromedp.Void](b, `localStorage.setItem('gauntlet.apiToken', 'a-stale-token')`)
		evalJS[chromedp.Void](b, `document.querySelector('`+results+` .ex-export-csv').click()`)
		const failed = `[...document.querySelectorAll('.toast')].some(t => t.textContent.includes('Could not export'))`
		said := false
		harnesstest.Eventually(t, uiWait, "the export to end: a download, or the page saying it failed", func() bool {
			said, _ = chromedp.Run(b.ctx, chromedp.Evaluate[bool](failed))
			return said || d.count() > 0
		})
		if d.count() > 0 {
			dl := d.nth(1)
			t.Fatalf("with a refused token, %s was saved (%s): %q", dl.name, dl.state, dl.body)
		}
		if f := d.files(); len(f) != 0 {
			t.Errorf("with a refused token, files were saved: %v", f)
		}
		b.expectProblem("401")
	})
}
