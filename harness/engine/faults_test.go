package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestFaultsRetried injects 500s and 429s with Retry-After: the client
// retries them and every test passes.
func TestFaultsRetried(t *testing.T) {
	t.Parallel()
	const retryAfter = 200 * time.Millisecond
	d := newDefs().domain("d", "", true).sums("d", 1, 12, 0)
	// One test at a time, so a test's attempts have consecutive request
	// numbers: every 4th and every 7th request fail, never three in a row.
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 1, maxRetries: 2, llm: llmtest.Options{
		ServerErrors: llmtest.Schedule{Every: 4}, RateLimits: llmtest.Schedule{Every: 7}, RetryAfter: retryAfter,
	}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted {
		t.Fatalf("info = %+v", info)
	}
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var waited int64
	for _, r := range results {
		if r.Status != runs.TestPassed {
			t.Errorf("%s: %s %v", r.TestID, r.Status, r.Details)
		}
		waited += r.DurationMS
	}
	st := f.mock.Stats()
	n500, n429 := st.Statuses[http.StatusInternalServerError], st.Statuses[http.StatusTooManyRequests]
	if n500 == 0 || n429 == 0 {
		t.Fatalf("faults not injected: %v", st.Statuses)
	}
	if cs := f.client.Stats(); cs.Retries != n500+n429 || cs.Failures != 0 {
		t.Errorf("client: %+v, want %d retries", cs, n500+n429)
	}
	// Retry-After was honoured: each 429 cost its test at least the wait.
	if min := n429 * retryAfter.Milliseconds(); waited < min {
		t.Errorf("tests took %d ms in all, less than the %d ms the 429s asked for", waited, min)
	}
	if m, _ := f.runs.Matrix(ctx, id); m["d"]["1"].Status != runs.CellPassed {
		t.Errorf("cell = %+v", m["d"]["1"])
	}
}

// TestFaultsBeyondRetries makes the model time out, answer 500 and answer
// malformed JSON more often than the client retries: those tests are
// errors that say why, and the run goes on to completion.
func TestFaultsBeyondRetries(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 6, 0)
	// One test at a time with one retry: requests 1-2 (the first test) hang,
	// 3-4 (the second) get 500, 5-6 (the third) get a broken body. The
	// timeout ends the hung requests; it is long enough that the others
	// answer within it on a loaded machine (500 ms was not, at load 24),
	// and the test's wall time is mostly that wait, in parallel with
	// other tests.
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 1, maxRetries: 1, timeout: 3 * time.Second,
		llm: llmtest.Options{
			Timeouts:     llmtest.Schedule{First: 2},
			ServerErrors: llmtest.Schedule{First: 4},
			Garbage:      llmtest.Schedule{First: 6},
		}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.TotalTests != 6 {
		t.Fatalf("info = %+v", info)
	}
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 6 {
		t.Fatalf("%d results", len(results))
	}
	want := map[string]string{"d-l1-t0": "timeout", "d-l1-t1": "HTTP 500", "d-l1-t2": "malformed response"}
	for _, r := range results {
		reason, isErr := want[r.TestID]
		msg, _ := r.Details["error"].(string)
		switch {
		case isErr && (r.Status != runs.TestError || r.Score != 0 || !strings.Contains(msg, reason) || !strings.Contains(msg, "after 2 attempts")):
			t.Errorf("%s: %s, error %q; want an error saying %q after 2 attempts", r.TestID, r.Status, msg, reason)
		case isErr && r.DurationMS <= 0:
			t.Errorf("%s: duration %d ms", r.TestID, r.DurationMS)
		case !isErr && r.Status != runs.TestPassed:
			t.Errorf("%s: %s %v", r.TestID, r.Status, r.Details)
		}
	}
	st := f.mock.Stats()
	if st.Timeouts != 2 || st.Statuses[http.StatusInternalServerError] != 2 || st.Garbage != 2 {
		t.Errorf("faults: %+v", st)
	}
	stored, _ := f.runs.Run(ctx, id)
	// The errors say nothing about the model: the score is over the three
	// tests it answered, and the run is not complete.
	if stored.OverallScore == nil || *stored.OverallScore != 1 || stored.Errors != 3 || stored.Passed != 3 || stored.Complete {
		t.Errorf("run %+v, overall score %v, want 1 over 3 scored tests and 3 errors", stored, ptr(stored.OverallScore))
	}
	m, _ := f.runs.Matrix(ctx, id)
	if c := m["d"]["1"]; c.Status != runs.CellPassed || c.Passed != 3 || c.Errors != 3 || c.Failed != 0 || c.Done != 6 {
		t.Errorf("cell = %+v", c)
	}
	lines, _ := f.eng.PollLogs()
	found := false
	for _, l := range lines {
		if strings.HasPrefix(l, "[d][L1] d-l1-t1 error") && strings.Contains(l, "HTTP 500") {
			found = true
		}
	}
	if !found || lines[len(lines)-1] != engine.EvalComplete {
		t.Errorf("logs lack the error line or EVAL_COMPLETE: %q", lines)
	}
}

// TestCatastrophicRegex scores responses with an extraction pattern that
// backtracks exponentially on them: the match timeout ends each
// extraction, the tests end in error (a timeout says nothing about the
// model) with the reason and the response kept, and the run finishes
// promptly.
func TestCatastrophicRegex(t *testing.T) {
	t.Parallel()
	const n = 6
	d := newDefs().domain("evil", "", true).sums("evil", 2, 2, 0)
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "backtrack", Name: "Backtracking",
		Type: harness.EvaluatorTypeRegex, ExtractionRegex: `(?=a)(a+)+$`})
	for i := range n {
		d.test(harness.Test{ID: fmt.Sprintf("evil-%d", i), DomainID: "evil", Level: 1, EvaluatorID: "backtrack",
			Prompt: fmt.Sprintf("[evil-%d] Shout.", i), Expected: harness.Expected{Answer: "a", Type: "exact"}})
	}
	d.level("evil", 1, "", harness.PromptAppend, 0.5)
	long := strings.Repeat("a", 64) + "!"
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 2, llm: llmtest.Options{Answers: map[string]string{"Shout": long}}})
	ctx := context.Background()
	start := time.Now()
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("run took %v", el)
	}
	if info.Status != runs.StatusCompleted || info.TotalTests != n+2 {
		t.Fatalf("info = %+v", info)
	}
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Level == 2 {
			if r.Status != runs.TestPassed {
				t.Errorf("%s: %s %v", r.TestID, r.Status, r.Details)
			}
			continue
		}
		msg, _ := r.Details["error"].(string)
		if r.Status != runs.TestError || r.Response != long || !strings.Contains(msg, "timed out") {
			t.Errorf("%s: %s, details %v", r.TestID, r.Status, r.Details)
		}
	}
}
