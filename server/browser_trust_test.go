package server_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestBrowserErrorsAndResume: an endpoint that refuses one domain's
// requests. The dashboard shows its cells as errors (never "failed 0%"),
// the run as completed with errors rather than complete, in the live page,
// the history and the run page; the run page's Resume button runs the
// errored tests again once the endpoint answers, and the run becomes
// complete. A definitions file with a misspelt key shows in a banner.
func TestBrowserErrorsAndResume(t *testing.T) {
	t.Parallel()
	var refuse atomic.Bool
	refuse.Store(true)
	e := newEngineEnv(t, engineConfig{
		llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
			for _, m := range req.Messages {
				if refuse.Load() && strings.Contains(m.Content, "Answer the question truthfully") {
					return &llmtest.Reply{Status: http.StatusBadRequest, Content: "this model does not do multiple choice"}
				}
			}
			return nil
		}},
		files: map[string]string{"domains/arithmetic/level-9.yaml": "pass_treshold: 0.99\ntests: []\n"},
	})
	id := e.runToEnd(map[string]any{"model_name": "flaky"})

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/live")
	b.wait("an error cell", `document.querySelector('.cell[data-status="error"]') !== null`)
	cell := b.text(`.cell[data-domain="knowledge"][data-level="1"]`)
	if !strings.Contains(cell, "error") || !strings.Contains(cell, "no score") || strings.Contains(cell, "0%") || !strings.Contains(cell, "2 errors") {
		t.Errorf("an errored cell reads %q", cell)
	}
	b.wait("the run facts", `document.getElementById('run-facts').textContent.includes('completed with 3 errors')`)
	if got := b.text("#run-summary"); !strings.Contains(got, "3 errors") || !strings.Contains(got, "error") {
		t.Errorf("summary %q", got)
	}

	// The banner lists the file that did not load, with its line.
	b.wait("the load-errors banner", `document.getElementById('sync-errors') !== null`)
	if got := b.text("#sync-errors"); !strings.Contains(got, "level-9.yaml:1") || !strings.Contains(got, "pass_threshold") {
		t.Errorf("banner %q", got)
	}

	b.route("#/history")
	b.wait("the run", `document.querySelectorAll('table.history tbody tr').length === 1`)
	if got := b.text(`table.history tbody tr`); !strings.Contains(got, "completed with 3 errors") || !strings.Contains(got, "not scored") {
		t.Errorf("history row %q", got)
	}

	b.route("#/run/" + id)
	b.wait("the resume button", `document.getElementById('resume-run') !== null`)
	if got := b.text("#run-counts"); !strings.Contains(got, "12 of 12 done") || !strings.Contains(got, "3 errors") {
		t.Errorf("run counts %q", got)
	}
	refuse.Store(false)
	b.click("#resume-run")
	b.wait("the live page", `location.hash === '#/live'`)
	e.waitIdle()
	if info := e.runInfo(id); !info.Complete || info.Errors != 0 || info.DoneTests != exampleTests {
		t.Fatalf("resumed run: %+v", info)
	}
	b.route("#/run/" + id)
	b.wait("the complete run's page", `document.querySelector('#view-history .facts .badge[data-complete="true"]') !== null`)
	if n := evalJS[int](b, `document.querySelectorAll('#view-history #resume-run').length`); n != 0 {
		t.Error("a complete run offers Resume")
	}
	if got := b.text("#view-history .facts .badge"); !strings.Contains(got, "completed") || strings.Contains(got, "error") {
		t.Errorf("resumed run badge %q", got)
	}

	b.route("#/history")
	b.wait("the run", `document.querySelectorAll('table.history tbody tr').length === 1`)
	if got := b.text(`table.history tbody tr`); strings.Contains(got, "error") {
		t.Errorf("history row after the resume %q", got)
	}
}
