package host

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

func evalRequest(response, answer string) *harness.EvalRequest {
	return &harness.EvalRequest{
		Test: harness.Test{ID: "t1", DomainID: "d", Level: 2, Prompt: "What is 6*7?",
			Expected: harness.Expected{Answer: answer, Type: "exact"}},
		Evaluator: harness.EvaluatorConfig{ID: "e1", Name: "Test", Type: "testeval", Config: map[string]any{"n": 1.5}},
		Response:  response,
		Messages: []harness.Message{
			{Role: harness.RoleUser, Content: "What is 6*7?"},
			{Role: harness.RoleAssistant, Content: response, ToolCalls: []harness.ToolCall{{ID: "c1", Name: "calc", Arguments: `{"x":6}`}}},
		},
		ToolCalls: []harness.ToolCall{{ID: "c1", Name: "calc", Arguments: `{"x":6}`}},
		Model:     "m1",
	}
}

func TestEvaluatorRoundTrip(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir})

	if s := status(t, m, "gauntlet-evaluator-testeval"); s.Health != HealthStopped || s.PID != 0 {
		t.Fatalf("before first use: %+v, want stopped and no process", s)
	}
	ev, ok := reg.Evaluator("testeval")
	if !ok {
		t.Fatal("evaluator type testeval not registered")
	}
	res, err := ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Score != 1 || !res.Passed || res.Details["response"] != "42" {
		t.Errorf("result %+v", res)
	}
	res, err = ev.Evaluate(t.Context(), evalRequest("41", "42"))
	if err != nil || res.Score != 0 || res.Passed {
		t.Errorf("wrong answer: %+v, %v", res, err)
	}

	s := status(t, m, "gauntlet-evaluator-testeval")
	if s.Health != HealthRunning || s.Version != "1.2.3" || s.PID == 0 || s.Kind != plugin.KindEvaluator || s.Type != "testeval" {
		t.Errorf("status %+v", s)
	}
	if len(s.Capabilities) != 1 || s.Capabilities[0] != plugin.CapValidateConfig {
		t.Errorf("capabilities %v, want [validate_config]", s.Capabilities)
	}
	if pid, _ := res.Details["pid"].(float64); int(pid) != s.PID {
		t.Errorf("scored by pid %v, listed pid %d", res.Details["pid"], s.PID)
	}

	// Many calls at once share one process.
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			res, err := ev.Evaluate(t.Context(), evalRequest("42", "42"))
			if err != nil || res.Score != 1 {
				t.Errorf("call %d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	if s2 := status(t, m, "gauntlet-evaluator-testeval"); s2.PID != s.PID || s2.Restarts != 0 {
		t.Errorf("after concurrent calls: %+v", s2)
	}

	pid := s.PID
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if _, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); !errors.Is(err, plugin.ErrUnavailable) {
		t.Errorf("after Close: %v, want ErrUnavailable", err)
	}
}

// A run that targets an agent gives the plugin what its knowledge base
// retrieved (for a faithfulness judge), and the test's expected sources.
func TestEvaluatorSeesRetrieval(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	_, reg := newManager(t, Options{Dir: dir})
	ev, _ := reg.Evaluator("testeval")
	req := evalRequest("42", "42")
	req.Test.Expected.Sources = []string{"faq.md", "guide.pdf"}
	req.Retrieval = &harness.Retrieval{Mode: "bm25", Fallback: "embeddings being built: 1 of 2 chunks",
		Text: "## faq.md\nOpen from nine.", Sources: []harness.Source{{File: "faq.md", Chunk: 3, Score: 0.75}}}
	res, err := ev.Evaluate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(map[string]any{"expected_sources": res.Details["expected_sources"], "retrieval": res.Details["retrieval"]})
	want := `{"expected_sources":["faq.md","guide.pdf"],"retrieval":{"fallback":"embeddings being built: 1 of 2 chunks","mode":"bm25","sources":["faq.md#3@0.75"],"text":"## faq.md\nOpen from nine."}}`
	if string(got) != want {
		t.Errorf("the plugin saw %s\nwant %s", got, want)
	}
	// Without an agent: no retrieval at all.
	res, err = ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if err != nil || res.Details["retrieval"] != nil || res.Details["expected_sources"] != nil {
		t.Errorf("a bare model's run: %+v, %v", res.Details, err)
	}
}

// The plugin receives the test's expected trajectory whole, and the
// calls made, and can score them with harness.MatchTrajectory.
func TestEvaluatorSeesTrajectory(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	_, reg := newManager(t, Options{Dir: dir})
	ev, _ := reg.Evaluator("testeval")
	req := evalRequest("42", "42")
	three := 3
	req.Test.Expected.Trajectory = &harness.Trajectory{Tools: []string{"search", "book"}, Mode: harness.TrajectoryAnyOrder,
		Arguments: []map[string]any{nil, {"seat": map[string]any{"row": 12}}}, MaxSteps: &three}
	req.ToolCalls = []harness.ToolCall{{ID: "c1", Name: "book", Arguments: `{"seat":{"row":12,"letter":"A"}}`}, {ID: "c2", Name: "search", Arguments: `{"q":`}}
	res, err := ev.Evaluate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Details["expected_trajectory"])
	if want := `{"arguments":[null,{"seat":{"row":12}}],"max_steps":3,"mode":"any_order","tools":["search","book"]}`; string(got) != want {
		t.Errorf("the plugin saw %s\nwant %s", got, want)
	}
	tr, _ := res.Details["trajectory"].(map[string]any)
	if tr["passed"] != true || tr["matched"] != 2.0 {
		t.Errorf("the plugin's match: %v", tr)
	}
	// A test without a trajectory sends none.
	res, err = ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if err != nil || res.Details["expected_trajectory"] != nil {
		t.Errorf("no trajectory: %+v, %v", res.Details, err)
	}
}

// A judge-like plugin calls the run's model, which the host serves over
// the broker.
func TestJudgeCallsHostModel(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	_, reg := newManager(t, Options{Dir: dir})
	ev, _ := reg.Evaluator("testeval")

	model := &fakeModel{answer: "0.75"}
	req := evalRequest("judge", "42")
	req.Client = model
	res, err := ev.Evaluate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Score != 0.75 || !res.Passed || res.Details["verdict"] != "0.75" {
		t.Errorf("result %+v", res)
	}
	if res.Usage.TotalTokens != 9 {
		t.Errorf("usage %+v, want the judge's 9 tokens", res.Usage)
	}
	if len(model.reqs) != 1 || model.reqs[0].Model != "m1" || model.reqs[0].Messages[0].Content != "grade: What is 6*7?" {
		t.Errorf("model saw %+v", model.reqs)
	}

	// The model's error keeps its kind through both boundaries.
	model.err = harness.ErrNotFound
	if _, err := ev.Evaluate(t.Context(), req); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("model error: %v, want ErrNotFound", err)
	}

	// No model: the plugin sees nil.
	req.Client = nil
	if _, err := ev.Evaluate(t.Context(), req); err == nil || err.Error() != "judge: no model" {
		t.Errorf("no model: %v", err)
	}
}

func TestErrorsKeepKind(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir})
	ev, _ := reg.Evaluator("testeval")

	for _, tc := range []struct {
		response string
		want     error
		text     string
	}{
		{"invalid", harness.ErrInvalid, "invalid: config.keywords: is required"},
		{"invalid-wrapped", harness.ErrInvalid, "check config: invalid: config.keywords: is required"},
		{"notfound", harness.ErrNotFound, `rubric "r1": not found`},
		{"conflict", harness.ErrConflict, "busy: conflict"},
		{"unauthorized", harness.ErrUnauthorized, "judge key: unauthorized"},
		{"unavailable", plugin.ErrUnavailable, "judge endpoint down: unavailable"},
		{"plain", nil, "something else went wrong"},
		{"panic", nil, "Evaluate panicked: boom"},
	} {
		t.Run(tc.response, func(t *testing.T) {
			_, err := ev.Evaluate(t.Context(), evalRequest(tc.response, "42"))
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tc.text {
				t.Errorf("text %q, want %q", err, tc.text)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%v is not %v", err, tc.want)
			}
			for _, other := range []error{harness.ErrInvalid, harness.ErrNotFound, harness.ErrConflict, harness.ErrUnauthorized, plugin.ErrUnavailable} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("%v is also %v", err, other)
				}
			}
			if tc.want == harness.ErrInvalid {
				var ve *harness.ValidationError
				if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "config.keywords" {
					t.Errorf("validation error %#v", err)
				}
			}
		})
	}
	// An error of the implementation (even "unavailable", or a panic) is
	// not a crash.
	if s := status(t, m, "gauntlet-evaluator-testeval"); s.Health != HealthRunning || s.Restarts != 0 {
		t.Errorf("status %+v, want running, no restart", s)
	}

	// ValidateConfig: the fields (and their values) come back as a
	// *harness.ValidationError, and the harness validator merges them.
	cv := ev.(harness.ConfigValidator)
	err := cv.ValidateConfig(harness.EvaluatorConfig{ID: "e", Type: "testeval", Config: map[string]any{"mode": "bad"}})
	ve, ok := err.(*harness.ValidationError)
	if !ok || len(ve.Fields) != 1 || ve.Fields[0].Field != "config.mode" || ve.Fields[0].Value != "bad" {
		t.Fatalf("ValidateConfig: %#v", err)
	}
	if err := cv.ValidateConfig(harness.EvaluatorConfig{ID: "e", Type: "testeval", Config: map[string]any{"mode": "good"}}); err != nil {
		t.Errorf("good config: %v", err)
	}
	v := harness.Validator{Registry: reg}
	err = v.Evaluator(&harness.EvaluatorConfig{ID: "e", Name: "E", Type: "testeval", Config: map[string]any{"mode": "bad"}})
	if !errors.As(err, &ve) || ve.Fields[0].Field != "config.mode" {
		t.Errorf("harness.Validator: %v", err)
	}
}

// The caller's deadline reaches the plugin; the caller's cancellation
// ends the call there.
func TestContextCrosses(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir})
	ev, _ := reg.Evaluator("testeval")

	ctx, cancel := context.WithTimeout(t.Context(), 5e9)
	defer cancel()
	res, err := ev.Evaluate(ctx, evalRequest("deadline", ""))
	if err != nil {
		t.Fatal(err)
	}
	// About 5000, less the call's way to the plugin: 2.3 s of it at load
	// 20, so only a deadline lost on the way (none, or CallTimeout's 30 s)
	// fails.
	if ms, _ := res.Details["deadline_ms"].(float64); ms < 500 || ms > 5000 {
		t.Errorf("the plugin saw %v ms left, want about 5000", res.Details["deadline_ms"])
	}
	// No caller deadline: CallTimeout (30 s) applies.
	res, err = ev.Evaluate(t.Context(), evalRequest("deadline", ""))
	if ms, _ := res.Details["deadline_ms"].(float64); err != nil || ms < 25000 || ms > 30000 {
		t.Errorf("the plugin saw %v ms left, want about 30000 (%v)", res.Details["deadline_ms"], err)
	}

	ctx, cancel = context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := ev.Evaluate(ctx, evalRequest("block", ""))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 2e8)
	defer cancel()
	if _, err := ev.Evaluate(ctx, evalRequest("block", "")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v, want context.DeadlineExceeded", err)
	}
	if s := status(t, m, "gauntlet-evaluator-testeval"); s.Health != HealthRunning || s.Restarts != 0 {
		t.Errorf("status %+v, want running, no restart", s)
	}
}
