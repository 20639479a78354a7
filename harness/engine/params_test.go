package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestSamplingParams: every model request of a run, tool rounds included,
// carries the run's parameters over its level's defaults; the run records
// its own, and a resumed run sends them again.
func TestSamplingParams(t *testing.T) {
	t.Parallel()
	var on atomic.Bool
	on.Store(true)
	d := toolDefs()
	d.s.Levels[0].Params = &harness.Params{Temperature: ptrTo(0.2), TopP: ptrTo(0.9), MaxTokens: ptrTo(500)}
	d.domain("plain", "", true).sums("plain", 1, 2, 0)
	d.test(harness.Test{ID: "plain-fail", DomainID: "plain", Level: 1, Prompt: "[plain-fail] What is 1 + 1? FAIL",
		Expected: harness.Expected{Answer: "2", Type: "numeric"}})
	seen := &requestLog{}
	fail := failPrompts("FAIL", &on)
	f := newFixture(t, fixtureOpts{snap: d.snap(), maxRetries: -1, llm: llmtest.Options{Respond: recorder(seen, fail)}})
	ctx := context.Background()

	seed := int64(1)<<62 + 1 // beyond float64's exact integers
	run := harness.Params{Temperature: ptrTo(0.7), Seed: &seed}
	id := f.start(t, engine.StartRequest{Params: run})
	info, _ := f.wait(t, id)
	if info.DoneTests != 5 || info.Errors != 1 {
		t.Fatalf("run = %+v", info)
	}

	check := func(id string, wantRequests int, topP *float64, maxTokens int) {
		t.Helper()
		reqs := seen.get(id)
		if len(reqs) < wantRequests {
			t.Fatalf("%s: %d requests, want at least %d", id, len(reqs), wantRequests)
		}
		for i, r := range reqs {
			ok := r.Temperature != nil && *r.Temperature == 0.7 && r.Seed != nil && *r.Seed == seed && r.MaxTokens == maxTokens
			if topP == nil {
				ok = ok && r.TopP == nil
			} else {
				ok = ok && r.TopP != nil && *r.TopP == *topP
			}
			if !ok {
				t.Errorf("%s request %d sent %s", id, i, r.Body)
			}
		}
	}
	// The tool level: two requests a test (the call, then the answer).
	check("tools-weather", 2, ptrTo(0.9), 500)
	check("tools-lookup", 2, ptrTo(0.9), 500)
	// A level without defaults: the run's only.
	check("plain-l1-t0", 1, nil, 0)
	check("plain-fail", 1, nil, 0)

	want := `{"seed":4611686018427387905,"temperature":0.7}`
	if b, _ := json.Marshal(info.Config.Params); string(b) != want {
		t.Errorf("run_info.config.params = %s, want %s", b, want)
	}
	stored, err := f.runs.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(stored.Config.Params); string(b) != want {
		t.Errorf("stored config.params = %s, want %s", b, want)
	}

	// The resume sends the run's stored parameters.
	on.Store(false)
	before := len(seen.get("plain-fail"))
	if err := f.eng.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.wait(t, id); again.Status != runs.StatusCompleted || again.Errors != 0 {
		t.Fatalf("resumed = %+v", again)
	}
	if n := len(seen.get("plain-fail")); n != before+1 {
		t.Fatalf("resume made %d requests for the failed test", n-before)
	}
	check("plain-fail", before+1, nil, 0)

	// A run without parameters sends none beyond its levels'.
	id = f.start(t, engine.StartRequest{Domains: []string{"plain"}})
	if info, _ := f.wait(t, id); len(info.Config.Params) != 0 || info.Config.Params == nil {
		t.Errorf("params of a run without any = %#v", info.Config.Params)
	}
	last := seen.get("plain-l1-t1")
	if r := last[len(last)-1]; r.Temperature != nil || r.Seed != nil || r.TopP != nil || r.MaxTokens != 0 {
		t.Errorf("a run without parameters sent %s", r.Body)
	}
}

func TestSamplingParamsInvalid(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 1, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap()})
	for _, tc := range []struct {
		name  string
		p     harness.Params
		field string
	}{
		{"temperature", harness.Params{Temperature: ptrTo(-1.0)}, "params.temperature"},
		{"top_p", harness.Params{TopP: ptrTo(1.5)}, "params.top_p"},
		{"max_tokens", harness.Params{MaxTokens: ptrTo(0)}, "params.max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.eng.Start(context.Background(), engine.StartRequest{Params: tc.p})
			var ve *harness.ValidationError
			if !errors.Is(err, harness.ErrInvalid) || !errors.As(err, &ve) || ve.Fields[0].Field != tc.field {
				t.Fatalf("start: %v; want a field error on %s", err, tc.field)
			}
		})
	}
	if f.eng.Running() {
		t.Error("a refused start left a run active")
	}
}
