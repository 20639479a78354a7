package engine_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestThrottledRunAdapts: a provider answers 429 to half the requests for
// a while. With no retry allowed, the run still finishes without an error
// result; the status shows the concurrency halved while it throttles and
// back to the bound after, and the log says once that it throttled and
// once that it stopped.
func TestThrottledRunAdapts(t *testing.T) {
	const tests, phase, bound = 400, 300, 8
	d := newDefs().domain("d", "", true).sums("d", 1, tests, 0)
	var n atomic.Int64
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: bound, llm: llmtest.Options{Seed: 7, Respond: func(r *llmtest.Request) *llmtest.Reply {
		if i := n.Add(1); i <= phase && i%2 == 0 {
			return &llmtest.Reply{Status: http.StatusTooManyRequests, Content: "Rate limit reached for requests"}
		}
		return nil
	}}, client: func(o *llm.Options) { o.MaxConcurrency = bound; o.Name = "fake" }})
	zero := 0
	id := f.start(t, engine.StartRequest{Retries: &zero})
	lowest, throttled := bound, false
	for f.eng.Running() {
		if st, ok := f.eng.Status().RateLimit["fake"]; ok && st.ConcurrencyMax == bound {
			lowest, throttled = min(lowest, st.Concurrency), throttled || st.Throttled
		}
		time.Sleep(time.Millisecond)
	}
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.Errors != 0 || info.Passed != tests {
		t.Fatalf("run %+v: want %d passed, no error", info, tests)
	}
	if lowest >= bound || !throttled {
		t.Errorf("status during the run: lowest concurrency %d, throttled %v; want it adapted", lowest, throttled)
	}
	after := f.eng.Status().RateLimit["fake"]
	if after.Concurrency != bound || after.Throttled || after.WaitingS <= 0 {
		t.Errorf("after the run: %+v, want concurrency back to %d", after, bound)
	}
	if got := f.mock.Stats().Statuses[http.StatusTooManyRequests]; got != phase/2 {
		t.Errorf("%d 429s, want %d", got, phase/2)
	}
	log, err := os.ReadFile(f.eng.LogFile(id))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(log); strings.Count(s, "provider fake is throttling") != 1 || strings.Count(s, "provider fake is no longer throttling") != 1 {
		t.Errorf("log: want one line starting the episode and one ending it:\n%s", grepLines(s, "provider fake"))
	}
}

// TestRetryAfterOfAnHour: the provider asks one test's request to wait an
// hour, more than the rate-limit wait: that test is an error saying so,
// at once, and the others pass.
func TestRetryAfterOfAnHour(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 6, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 1,
		llm:    llmtest.Options{RateLimits: llmtest.Schedule{First: 1}, RetryAfter: time.Hour},
		client: func(o *llm.Options) { o.RateLimitWait = 30 * time.Second }})
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.Errors != 1 || info.Passed != 5 {
		t.Fatalf("run %+v: want 1 error and 5 passed", info)
	}
	results, err := f.runs.Results(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		msg, _ := r.Details["error"].(string)
		if r.Status == runs.TestError && !strings.Contains(msg, "the provider asks to wait 1h0m0s, more than the 30s left of the 30s rate-limit wait") {
			t.Errorf("%s: error %q", r.TestID, msg)
		}
		if r.Status == runs.TestError && r.DurationMS > 20_000 {
			t.Errorf("%s waited %d ms before giving up", r.TestID, r.DurationMS)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
