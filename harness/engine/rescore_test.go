package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
)

// TestRescore: a rescore asks the model nothing (a judge only), scores
// the stored responses with today's expected answers and evaluators,
// keeps the tool calls and the second pass of the source, and scores a
// test deleted since with the definitions the source stored.
func TestRescore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, c, _ := cacheFixture(t)
	src, srcRes := runAndWait(t, f, engine.StartRequest{})
	// Failed: math-l1-t3 (expects a wrong sum) and tools-weather (the fake
	// guesses the city "Call").
	if src.Passed != 6 || src.Failed != 2 {
		for id, r := range srcRes {
			t.Logf("%s %s %q %v", id, r.Status, r.Response, r.Details)
		}
		t.Fatalf("source run = %+v", src)
	}
	model, judge := c.model.Load(), c.judge.Load()

	// The wrong test's expected answer is fixed, a right one broken, one
	// deleted; the tool call's expected arguments become those the model
	// gave.
	setAnswer := func(id, answer string) {
		if _, err := f.cat.UpdateTest(ctx, id, func(t *harness.Test) error { t.Expected.Answer = answer; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	setAnswer("math-l1-t3", "4")
	setAnswer("math-l1-t0", "99")
	if _, err := f.cat.UpdateTest(ctx, "tools-weather", func(t *harness.Test) error {
		t.Expected.Arguments = map[string]any{"city": "Call"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.cat.DeleteTest(ctx, "math-l1-t2"); err != nil {
		t.Fatal(err)
	}

	info, res := runAndWait(t, f, engine.StartRequest{RescoreFrom: src.RunID})
	if got := c.model.Load() - model; got != 0 {
		t.Errorf("the rescore asked the model %d times", got)
	}
	if got := c.judge.Load() - judge; got != 1 {
		t.Errorf("the rescore asked the judge %d times; want 1", got)
	}
	if info.RescoredFrom != src.RunID || info.Status != runs.StatusCompleted || !info.Complete || info.TotalTests != src.TotalTests ||
		info.ModelName != src.ModelName || info.Model != src.Model {
		t.Errorf("rescore = %+v", info)
	}
	if info.Config == nil || info.Config.Model != src.Config.Model || info.Config.Repeats != 1 || info.Config.BaseURL != src.Config.BaseURL ||
		info.Config.DefinitionsHash == src.Config.DefinitionsHash {
		t.Errorf("rescore config = %+v; source %+v", info.Config, src.Config)
	}
	if stored, err := f.runs.Run(ctx, info.RunID); err != nil || stored.RescoredFrom != src.RunID {
		t.Errorf("stored rescored_from = %q, %v", stored.RescoredFrom, err)
	}
	runstest.CheckCounters(t, f.db, src.RunID)
	runstest.CheckCounters(t, f.db, info.RunID)
	want := map[string]string{"math-l1-t0": runs.TestFailed, "math-l1-t1": runs.TestPassed, "math-l1-t2": runs.TestPassed,
		"math-l1-t3": runs.TestPassed, "tools-weather": runs.TestPassed, "tools-lookup": runs.TestPassed,
		"p2-t": runs.TestPassed, "j-t": runs.TestPassed}
	for id, status := range want {
		r := res[id]
		if r.Status != status || r.Response != srcRes[id].Response || r.Prompt != srcRes[id].Prompt || r.RunID != info.RunID {
			t.Errorf("%s = %s %q; want %s and the source's response %q", id, r.Status, r.Response, status, srcRes[id].Response)
		}
	}
	if res["math-l1-t3"].Expected.Answer != "4" {
		t.Errorf("the rescore did not use today's expected answer: %+v", res["math-l1-t3"].Expected)
	}
	if res["p2-t"].Details["pass2_used"] != true || res["p2-t"].Details["pass2_response"] != srcRes["p2-t"].Details["pass2_response"] {
		t.Errorf("second pass = %v", res["p2-t"].Details)
	}
	if calls := toolCallsOf(t, res["tools-weather"]); len(calls) != 1 || calls[0]["name"] != "get_weather" {
		t.Errorf("tool calls = %v", calls)
	}
	got, evs := f.wait(t, info.RunID)
	finished := 0
	for _, ev := range evs {
		if ev.Kind == engine.EventTestFinished {
			finished++
		}
	}
	if finished != info.TotalTests || got.RunID != info.RunID {
		t.Errorf("%d test events for %d tests", finished, info.TotalTests)
	}

	// Evaluators changed: the math domain's now needs a second pass, which
	// the source never made and a rescore cannot ask for; the strict one
	// no longer finds the answer.
	if _, err := f.cat.UpdateEvaluator(ctx, "number", func(e *harness.EvaluatorConfig) error {
		e.ExtractionRegex, e.UsesPass2 = `ANSWER: (?<answer>-?\d+)`, true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cat.UpdateEvaluator(ctx, "strict", func(e *harness.EvaluatorConfig) error {
		e.ExtractionRegex, e.UsesPass2 = `NOPE (?<answer>-?\d+)`, false
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	again, res := runAndWait(t, f, engine.StartRequest{RescoreFrom: src.RunID, ModelName: "rescored"})
	if got := c.model.Load() - model; got != 0 {
		t.Errorf("the rescores asked the model %d times", got)
	}
	if again.ModelName != "rescored" || again.Complete {
		t.Errorf("second rescore = %+v", again)
	}
	for _, id := range []string{"math-l1-t0", "math-l1-t1", "math-l1-t3"} {
		if msg, _ := res[id].Details["error"].(string); res[id].Status != runs.TestError || !strings.Contains(msg, "asks no model but a judge") {
			t.Errorf("%s = %s %v; want an error: no second pass to replay", id, res[id].Status, res[id].Details)
		}
	}
	if res["p2-t"].Status != runs.TestFailed {
		t.Errorf("p2-t with the changed evaluator = %s %v", res["p2-t"].Status, res["p2-t"].Details)
	}
	// The deleted test is scored with the source's definitions, evaluator included.
	if res["math-l1-t2"].Status != runs.TestPassed {
		t.Errorf("deleted test = %s %v", res["math-l1-t2"].Status, res["math-l1-t2"].Details)
	}

	// A rescored run cannot be resumed: it would ask the model.
	if err := f.eng.Resume(ctx, again.RunID); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("resume a rescore: %v", err)
	}
}

// gate holds every model request while closed.
type gate struct {
	next    harness.ChatModel
	mu      sync.Mutex
	open    chan struct{}
	waiting atomic.Int64
}

func (g *gate) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.next.Chat(ctx, req)
}

// TestRescoreErrors: errors stay errors when there is nothing to score;
// a rescore is refused while a run is active, for a run still running,
// an unknown run, and with settings that are the source's.
func TestRescoreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var fail *failingFor
	var once sync.Once
	g := &gate{open: make(chan struct{})}
	close(g.open)
	c := &countingLLM{}
	f := newFixture(t, fixtureOpts{snap: newDefs().domain("math", "", true).sums("math", 1, 3, 0).snap(),
		llm: llmtest.Options{Respond: c.respond},
		model: func(m harness.ChatModel) harness.ChatModel {
			once.Do(func() { fail = &failingFor{next: m, marks: []string{"[math-l1-t1]"}}; g.next = fail })
			fail.on.Store(true)
			return g
		}})
	src, _ := runAndWait(t, f, engine.StartRequest{})
	if src.Errors != 1 || src.Passed != 2 {
		t.Fatalf("source = %+v", src)
	}
	before := c.model.Load()
	info, res := runAndWait(t, f, engine.StartRequest{RescoreFrom: src.RunID})
	if c.model.Load() != before {
		t.Error("the rescore asked the model")
	}
	msg, _ := res["math-l1-t1"].Details["error"].(string)
	if info.Errors != 1 || info.Passed != 2 || res["math-l1-t1"].Status != runs.TestError ||
		!strings.Contains(msg, "not rescored") || !strings.Contains(msg, "endpoint failure") {
		t.Errorf("rescore of an error = %+v; error %q", info, msg)
	}

	if _, err := f.eng.Rescore(ctx, "no-such-run"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	var ve *harness.ValidationError
	if _, err := f.eng.Start(ctx, engine.StartRequest{RescoreFrom: src.RunID, Model: "other", Repeats: 2}); !errors.As(err, &ve) ||
		!errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "model") || !strings.Contains(err.Error(), "repeats") {
		t.Errorf("rescore with the source's settings given: %v", err)
	}
	// A run left running (by another process, as far as this engine knows).
	if err := f.runs.CreateRun(ctx, runs.Info{RunID: "elsewhere", StartedAt: runs.Now(), ModelName: "x", Model: "m",
		Status: runs.StatusRunning, TotalTests: 1, Domains: []string{"math"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.eng.Rescore(ctx, "elsewhere"); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("rescore of a running run: %v", err)
	}

	// While a run is active.
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
	id := f.start(t, engine.StartRequest{})
	if _, err := f.eng.Rescore(ctx, src.RunID); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("rescore while %s runs: %v", id, err)
	}
	if _, err := f.eng.Rescore(ctx, id); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("rescore of the active run: %v", err)
	}
	close(g.open)
	if info, _ := f.wait(t, id); info.Status != runs.StatusCompleted {
		t.Errorf("held run = %+v", info)
	}
}
