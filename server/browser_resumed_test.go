package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestBrowserResumedRun: a resumed run carries a "resumed ×1" marker in
// the history and on its page, the time of the resume in its tooltip;
// an interrupted run's badge says the process died.
func TestBrowserResumedRun(t *testing.T) {
	t.Parallel()
	// The first answer comes at once, the others once released: the run
	// is stopped with one test done, however slow the machine.
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	var asked atomic.Int64
	e := newEngineEnv(t, engineConfig{concurrency: 1, llm: llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
		if asked.Add(1) > 1 {
			<-hold
		}
		return nil
	}}})
	t.Cleanup(release) // before the fake endpoint's Close, which waits for held answers
	id := e.start(map[string]any{"model_name": "resumed", "domains": []string{"arithmetic"}})
	harnesstest.Eventually(t, runWait, "a finished test", func() bool { return e.status().Progress >= 1 })
	must(t, e.post("/api/stop", nil), http.StatusOK)
	e.waitIdle()
	release()
	must(t, e.post("/api/run/"+id+"/resume", nil), http.StatusOK)
	e.waitRunStatus(id, runs.StatusCompleted)
	var d struct {
		RunInfo struct {
			Resumed struct {
				Count int      `json:"count"`
				At    []string `json:"at"`
			} `json:"resumed"`
		} `json:"run_info"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &d)
	if d.RunInfo.Resumed.Count != 1 || len(d.RunInfo.Resumed.At) != 1 {
		t.Fatalf("run_info.resumed = %+v; want one resume", d.RunInfo.Resumed)
	}
	// A run its process left running, found by the next start-up.
	ctx := context.Background()
	if err := e.runs.CreateRun(ctx, runs.Info{RunID: "crashed", StartedAt: runs.Now(), ModelName: "crashed", Model: "m",
		Status: runs.StatusRunning, TotalTests: 1, Domains: []string{"arithmetic"}}, []runs.CellKey{{Domain: "arithmetic", Level: 1, Tests: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.runs.MarkInterruptedRuns(ctx); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/history")
	mark := fmt.Sprintf(`tr[data-run=%q] .resumed-mark`, id)
	b.wait("the resumed marker", `document.querySelector('`+mark+`') !== null`)
	if got := b.text(mark); got != "resumed ×1" {
		t.Errorf("marker reads %q", got)
	}
	if title := evalJS[string](b, `document.querySelector('`+mark+`').title`); !strings.HasPrefix(title, "Resumed once: ") {
		t.Errorf("marker title %q", title)
	}
	if n := evalJS[int](b, `document.querySelectorAll('tr[data-run="crashed"] .resumed-mark').length`); n != 0 {
		t.Errorf("a run never resumed has %d markers", n)
	}
	if title := evalJS[string](b, `document.querySelector('tr[data-run="crashed"] .badge.st-interrupted').title`); !strings.Contains(title, "the process running it died") {
		t.Errorf("interrupted badge title %q", title)
	}
	b.route("#/run/" + id)
	b.wait("the run page's marker", `document.querySelector('main > .view:not([hidden]) .facts .resumed-mark') !== null`)
}
