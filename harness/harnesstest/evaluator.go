package harnesstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// EvalCase is a request the evaluator under test accepts, and optionally
// the verdict it must give.
type EvalCase struct {
	Name    string
	Request *harness.EvalRequest
	// Want, when set, is the verdict: the score (to within 1e-9) and
	// whether the response passed.
	Want *Verdict
}

// Verdict is an evaluator's score and pass/fail.
type Verdict struct {
	Score  float64
	Passed bool
}

// TestEvaluator checks that e behaves as every harness.Evaluator must.
// cases are requests e accepts (its config in Request.Evaluator); without
// any, the kit uses generic requests — a test with an exact answer, right
// and wrong responses, a tool call — each with a stand-in model, and
// needs at least one of them scored.
//
// The checks, each a subtest:
//   - cases: each request is scored (an error fails a given case), the
//     score is a finite number in [0, 1], Passed agrees with it (not
//     passed with score 1, nor passed with score 0), Details encode as
//     JSON, Usage is not negative, and Want matches;
//   - request-unchanged: the cases' requests are as they were before
//     Evaluate saw them;
//   - nil-request: Evaluate(ctx, nil) returns an error, without panicking;
//   - empty-request: an empty request gives an error or a valid verdict;
//   - cancelled-context: with a context already cancelled, Evaluate
//     returns within 2 s (an error or a valid verdict);
//   - deadline: with a model that answers only when its context is done
//     and a 100 ms deadline, Evaluate returns within 2 s of the deadline;
//   - model-error: a model that fails gives an error or a valid verdict;
//   - concurrent: 8 goroutines evaluate the cases at once (run with -race);
//   - validate-config, when e is a harness.ConfigValidator: each case's
//     config is accepted, and an empty config gives nil or an error
//     wrapping harness.ErrInvalid, without panicking.
func TestEvaluator(t *testing.T, e harness.Evaluator, cases ...EvalCase) {
	t.Helper()
	given := len(cases) > 0
	if !given {
		cases = defaultEvalCases()
	}
	var accepted []EvalCase
	before := make([]string, len(cases))
	for i, c := range cases {
		before[i] = requestSnapshot(c.Request)
	}

	t.Run("cases", func(t *testing.T) {
		for i, c := range cases {
			name := c.Name
			if name == "" {
				name = fmt.Sprintf("case %d", i)
			}
			res, ok := evaluate(t, e, t.Context(), c.Request, name, given)
			if !ok {
				continue
			}
			accepted = append(accepted, c)
			if c.Want != nil && (math.Abs(res.Score-c.Want.Score) > 1e-9 || res.Passed != c.Want.Passed) {
				t.Errorf("%s: verdict score %v passed %v, want score %v passed %v", name, res.Score, res.Passed, c.Want.Score, c.Want.Passed)
			}
		}
		if !given && len(accepted) == 0 {
			t.Errorf("none of the generic requests was scored; pass EvalCases with requests (and configs) the evaluator accepts")
		}
	})
	if len(accepted) == 0 {
		accepted = cases[:1]
	}

	t.Run("request-unchanged", func(t *testing.T) {
		for i, c := range cases {
			if now := requestSnapshot(c.Request); now != before[i] {
				t.Errorf("%s: Evaluate modified its request:\nbefore %s\nafter  %s", c.Name, before[i], now)
			}
		}
	})

	t.Run("nil-request", func(t *testing.T) {
		o := call(callLimit, func() (*harness.EvalResult, error) { return e.Evaluate(t.Context(), nil) })
		if p := o.problem("Evaluate(ctx, nil)"); p != "" {
			t.Fatal(p)
		}
		if o.err == nil {
			t.Errorf("Evaluate(ctx, nil) returned %+v and no error", o.v)
		}
	})

	t.Run("empty-request", func(t *testing.T) {
		evaluate(t, e, t.Context(), &harness.EvalRequest{}, "empty request", false)
	})

	t.Run("cancelled-context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for _, c := range accepted {
			req := withModel(c.Request, blockingModel{})
			o := call(promptLimit, func() (*harness.EvalResult, error) { return e.Evaluate(ctx, req) })
			if p := o.problem("Evaluate with a cancelled context"); p != "" {
				t.Errorf("%s: %s", c.Name, p)
				break // the others would wait as long
			}
			if o.err == nil {
				checkResult(t, c.Name, o.v)
			}
		}
	})

	t.Run("deadline", func(t *testing.T) {
		for _, c := range accepted {
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			req := withModel(c.Request, blockingModel{})
			o := call(deadline+promptLimit, func() (*harness.EvalResult, error) { return e.Evaluate(ctx, req) })
			cancel()
			if p := o.problem(fmt.Sprintf("Evaluate with a %s deadline and a model that waits for it", deadline)); p != "" {
				t.Errorf("%s: %s", c.Name, p)
				break // the others would wait as long
			}
			if o.err == nil {
				checkResult(t, c.Name, o.v)
			}
		}
	})

	t.Run("model-error", func(t *testing.T) {
		for _, c := range accepted {
			req := withModel(c.Request, failingModel{})
			o := call(callLimit, func() (*harness.EvalResult, error) { return e.Evaluate(t.Context(), req) })
			if p := o.problem("Evaluate with a failing model"); p != "" {
				t.Errorf("%s: %s", c.Name, p)
				continue
			}
			if o.err == nil {
				checkResult(t, c.Name, o.v)
			}
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range concurrency {
			wg.Go(func() {
				for i := range 2 * len(accepted) {
					c := accepted[(g+i)%len(accepted)]
					evaluate(t, e, t.Context(), c.Request, c.Name, given)
				}
			})
		}
		wg.Wait()
	})

	if cv, ok := e.(harness.ConfigValidator); ok {
		t.Run("validate-config", func(t *testing.T) {
			for _, c := range accepted {
				if c.Request == nil {
					continue
				}
				o := call(callLimit, func() (struct{}, error) { return struct{}{}, cv.ValidateConfig(c.Request.Evaluator) })
				if p := o.problem("ValidateConfig"); p != "" {
					t.Errorf("%s: %s", c.Name, p)
				} else if o.err != nil {
					t.Errorf("%s: ValidateConfig refuses the config its Evaluate accepts: %v", c.Name, o.err)
				}
			}
			o := call(callLimit, func() (struct{}, error) { return struct{}{}, cv.ValidateConfig(harness.EvaluatorConfig{}) })
			if p := o.problem("ValidateConfig of an empty config"); p != "" {
				t.Error(p)
			} else if o.err != nil && !errors.Is(o.err, harness.ErrInvalid) {
				t.Errorf("ValidateConfig of an empty config: %v does not wrap harness.ErrInvalid", o.err)
			}
		})
	}
}

// deadline is the deadline of the deadline check.
const deadline = 100 * time.Millisecond

// evaluate calls e and checks its verdict; ok is true for a verdict. An
// error is reported when mustScore.
func evaluate(t *testing.T, e harness.Evaluator, ctx context.Context, req *harness.EvalRequest, name string, mustScore bool) (*harness.EvalResult, bool) {
	t.Helper()
	o := call(callLimit, func() (*harness.EvalResult, error) { return e.Evaluate(ctx, req) })
	if p := o.problem("Evaluate"); p != "" {
		t.Errorf("%s: %s", name, p)
		return nil, false
	}
	if o.err != nil {
		if mustScore {
			t.Errorf("%s: Evaluate: %v", name, o.err)
		}
		return nil, false
	}
	return o.v, checkResult(t, name, o.v)
}

// checkResult checks a verdict given with no error.
func checkResult(t *testing.T, name string, res *harness.EvalResult) bool {
	t.Helper()
	ok := true
	fail := func(format string, args ...any) {
		t.Errorf(name+": "+format, args...)
		ok = false
	}
	if res == nil {
		fail("Evaluate returned neither a result nor an error")
		return false
	}
	switch {
	case math.IsNaN(res.Score) || math.IsInf(res.Score, 0) || res.Score < 0 || res.Score > 1:
		fail("score %v is not within [0, 1]", res.Score)
	case res.Passed && res.Score == 0:
		fail("passed with score 0")
	case !res.Passed && res.Score == 1:
		fail("failed with score 1")
	}
	if _, err := json.Marshal(res.Details); err != nil {
		fail("details do not encode as JSON: %v", err)
	}
	if u := res.Usage; u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 {
		fail("negative usage %+v", u)
	}
	return ok
}

func requestSnapshot(req *harness.EvalRequest) string {
	if req == nil {
		return "nil"
	}
	c := *req
	c.Client = nil
	return snapshot(c)
}

// withModel is a copy of req with another model.
func withModel(req *harness.EvalRequest, m harness.ChatModel) *harness.EvalRequest {
	if req == nil {
		return nil
	}
	c := *req
	c.Client = m
	if c.Model == "" {
		c.Model = "harnesstest-model"
	}
	return &c
}

// kitModel answers every request with a fixed text.
type kitModel struct{}

func (kitModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("nil request: %w", harness.ErrInvalid)
	}
	return &harness.ChatResponse{
		Message: harness.Message{Role: harness.RoleAssistant, Content: "The answer is 4.\nScore: 1\nGrade: A"},
		Usage:   harness.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		Model:   req.Model, FinishReason: "stop",
	}, nil
}

// blockingModel answers only when the context is done, with its error.
type blockingModel struct{}

func (blockingModel) Chat(ctx context.Context, _ *harness.ChatRequest) (*harness.ChatResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// failingModel always fails.
type failingModel struct{}

func (failingModel) Chat(context.Context, *harness.ChatRequest) (*harness.ChatResponse, error) {
	return nil, errors.New("harnesstest: the model is down")
}

func defaultEvalCases() []EvalCase {
	test := harness.Test{
		ID: "harnesstest", DomainID: "harnesstest", Level: 1, Name: "Two plus two",
		Prompt: "What is 2+2? Answer with a number.", Expected: harness.Expected{Answer: "4", Type: "exact"},
	}
	cfg := harness.EvaluatorConfig{ID: "harnesstest", Name: "harnesstest", Type: "harnesstest"}
	req := func(response string, mod func(*harness.EvalRequest)) *harness.EvalRequest {
		r := &harness.EvalRequest{
			Test: test, Evaluator: cfg, SystemPrompt: "You are a careful assistant.", Response: response,
			Messages: []harness.Message{
				{Role: harness.RoleSystem, Content: "You are a careful assistant."},
				{Role: harness.RoleUser, Content: test.Prompt},
				{Role: harness.RoleAssistant, Content: response},
			},
			Client: kitModel{}, Model: "harnesstest-model",
		}
		if mod != nil {
			mod(r)
		}
		return r
	}
	return []EvalCase{
		{Name: "right answer", Request: req("4", nil)},
		{Name: "wrong answer", Request: req("5", nil)},
		{Name: "verbose answer", Request: req("Let me think… 2 + 2 = **4** ✓\n```json\n{\"answer\": 4}\n```", nil)},
		{Name: "tool call", Request: req("Done.", func(r *harness.EvalRequest) {
			r.Test.Expected = harness.Expected{Answer: "add", Type: "tool_call", Arguments: map[string]any{"a": 2.0}}
			r.ToolCalls = []harness.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":2,"b":2}`}}
		})},
	}
}
