package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// blackBoxServer is a system under test reachable over HTTP only: it
// answers "The answer is <a+b>" to the last "What is a + b?" it is
// sent, reports a tool call and a source, and counts the turns of each
// conversation. A prompt holding "broken" gets an HTML page.
type blackBoxServer struct {
	*httptest.Server
	mu    sync.Mutex
	turns map[string]int // conversation id → turns received
	hist  map[string]int // conversation id → messages in its last request
}

var blackBoxSum = regexp.MustCompile(`What is (\d+) \+ (\d+)\?`)

func newBlackBox(t *testing.T) *blackBoxServer {
	b := &blackBoxServer{turns: map[string]int{}, hist: map[string]int{}}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Q       string            `json:"q"`
			Conv    string            `json:"conv"`
			History []harness.Message `json:"history"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.turns[in.Conv]++
		b.hist[in.Conv] = len(in.History)
		b.mu.Unlock()
		if strings.Contains(in.Q, "huge") {
			json.NewEncoder(w).Encode(map[string]any{"reply": map[string]any{"text": strings.Repeat("x", 64<<10)}})
			return
		}
		if strings.Contains(in.Q, "broken") {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>Bad gateway</body></html>")
			return
		}
		answer := "I cannot tell."
		if m := blackBoxSum.FindStringSubmatch(in.Q); m != nil {
			a, _ := strconv.Atoi(m[1])
			c, _ := strconv.Atoi(m[2])
			answer = fmt.Sprintf("The answer is %d", a+c)
		}
		json.NewEncoder(w).Encode(map[string]any{"reply": map[string]any{"text": answer},
			"calls":   []map[string]any{{"name": "add", "arguments": map[string]any{"q": in.Q}}},
			"sources": []string{"sums.md"}})
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *blackBoxServer) target(id string) harness.TargetDefinition {
	return harness.TargetDefinition{ID: id, URL: b.URL + "/chat",
		Body:     map[string]any{"q": "{{prompt}}", "conv": "{{conversation_id}}", "history": "{{messages}}"},
		Response: harness.TargetResponse{Answer: "/reply/text", ToolCalls: "/calls", Sources: "/sources"}}
}

// TestBlackBoxTarget runs a suite against a black-box target: every
// user turn goes to the target's URL (the model endpoint gets none), a
// multi-turn test's turns share one conversation id with the history
// sent along, the target's tool calls and sources are the result's, an
// HTML answer is that test's error naming it, and the run records the
// target; the run resumes against it.
func TestBlackBoxTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bb := newBlackBox(t)
	d := newDefs().domain("d", "", true).sums("d", 1, 3, 0)
	d.test(harness.Test{ID: "mt", DomainID: "d", Level: 1, Turns: []harness.Turn{
		{User: "What is 1 + 1?", Expected: &harness.Expected{Answer: "2", Type: "numeric"}},
		{User: "And now: What is 2 + 5?", Expected: &harness.Expected{Answer: "7", Type: "numeric"}},
	}})
	d.test(harness.Test{ID: "broken", DomainID: "d", Level: 1, Prompt: "this is broken",
		Expected: harness.Expected{Answer: "1", Type: "numeric"}})
	d.test(harness.Test{ID: "huge", DomainID: "d", Level: 1, Prompt: "a huge answer, please",
		Expected: harness.Expected{Answer: "1", Type: "numeric"}})
	snap := d.snap()
	snap.Targets = []harness.TargetDefinition{bb.target("bb")}
	// The reply limit is the engine's, as a model answer's is.
	f := newFixture(t, fixtureOpts{snap: snap, concurrency: 2, anyDB: true, maxResponseBytes: 16 << 10})

	for _, bad := range []struct {
		req   engine.StartRequest
		field string
	}{
		{engine.StartRequest{TargetID: "nope"}, "target_id"},
		{engine.StartRequest{TargetID: "bb", Model: "m"}, "model"},
		{engine.StartRequest{TargetID: "bb", AgentID: "a"}, "_id"}, // agent_id or target_id: one system a run
		{engine.StartRequest{TargetID: "bb", Cache: true}, "cache"},
	} {
		_, err := f.eng.Start(ctx, bad.req)
		var ve *harness.ValidationError
		if !errors.Is(err, harness.ErrInvalid) || !errors.As(err, &ve) || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("start %+v: %v; want invalid %s", bad.req, err, bad.field)
		}
	}

	id := f.start(t, engine.StartRequest{TargetID: "bb"})
	info, _ := f.wait(t, id)
	if info.Config == nil || info.Config.TargetID != "bb" || info.Config.Target == nil || info.Config.Target.URL != bb.URL+"/chat" {
		t.Fatalf("config %+v; want the target recorded", info.Config)
	}
	if info.ModelName != "bb" || info.Passed != 4 || info.Errors != 2 {
		t.Errorf("run %+v; want label bb, 4 passed, the broken and huge ones errors", info)
	}
	if n := f.mock.Stats().ChatCompletions; n != 0 {
		t.Errorf("the model endpoint got %d requests; the target answers", n)
	}
	results, err := f.runs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		switch r.TestID {
		case "huge":
			if msg, _ := r.Details["error"].(string); r.Status != runs.TestError || !strings.Contains(msg, "too large") {
				t.Errorf("huge: %s %q; want an error naming the reply too large", r.Status, msg)
			}
		case "broken":
			if msg, _ := r.Details["error"].(string); r.Status != runs.TestError || !strings.Contains(msg, "HTML") {
				t.Errorf("broken: %s %q; want an error naming the HTML answer", r.Status, msg)
			}
		case "mt":
			turns, _ := r.Details["turns"].([]any)
			if r.Status != runs.TestPassed || len(turns) != 2 {
				t.Errorf("mt: %s, turns %v", r.Status, r.Details["turns"])
			}
			users := 0
			for _, m := range r.Transcript {
				if m.Role == harness.RoleUser {
					users++
				}
			}
			if users != 2 || r.Response != "The answer is 7" {
				t.Errorf("mt: %d user messages, response %q", users, r.Response)
			}
		default:
			if r.Status != runs.TestPassed {
				t.Errorf("%s: %s %v", r.TestID, r.Status, r.Details)
			}
		}
		if r.TestID == "broken" || r.TestID == "huge" {
			continue
		}
		if calls, _ := r.Details["tool_calls"].([]any); len(calls) == 0 {
			t.Errorf("%s: no tool calls recorded from the target: %v", r.TestID, r.Details)
		}
		if ret, _ := r.Details["retrieval"].(map[string]any); ret == nil && len(r.Expected.Sources) > 0 {
			t.Errorf("%s: no retrieval", r.TestID)
		}
	}
	bb.mu.Lock()
	mtConv := "gauntlet-" + id + "-mt"
	if bb.turns[mtConv] != 2 || bb.hist[mtConv] != 3 {
		t.Errorf("the multi-turn test's conversation %s: %d turns, last with %d messages; want 2 turns, the second with the 3 so far (all: %v)",
			mtConv, bb.turns[mtConv], bb.hist[mtConv], bb.turns)
	}
	bb.mu.Unlock()
}
