package server_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestBrowserRateLimit: while the model endpoint throttles, the live view
// says which provider does and the concurrency it allows; the notice goes
// once the run is over.
func TestBrowserRateLimit(t *testing.T) {
	var throttling atomic.Bool
	throttling.Store(true)
	e := newEngineEnv(t, engineConfig{concurrency: 4,
		llm: llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
			if throttling.Load() {
				return &llmtest.Reply{Status: http.StatusTooManyRequests, Content: "Rate limit reached"}
			}
			return nil
		}},
		client: func(o *llm.Options) { o.MaxConcurrency = 4; o.Name = "fake" }})
	e.start(map[string]any{"domains": []string{"arithmetic"}})
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/live")
	b.wait("the rate-limit notice", `(() => { const el = document.querySelector('#run-rate-limit');
		return el && !el.hidden && el.dataset.throttled === 'fake' && /of 4 requests at once/.test(el.textContent); })()`)
	if got := b.text("#run-rate-limit"); !strings.HasPrefix(got, "fake is rate limiting: ") || evalJS[string](b, `document.querySelector('#run-rate-limit').getAttribute('role')`) != "status" {
		t.Fatalf("notice %q", got)
	}
	throttling.Store(false)
	e.waitIdle()
	b.wait("the notice to go", `document.querySelector('#run-rate-limit').hidden && document.querySelector('#run-line').dataset.status !== 'running'`)
}
