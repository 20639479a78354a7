package regexeval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// fakeModel answers every chat request with a fixed reply and records the
// requests.
type fakeModel struct {
	reply string
	usage harness.Usage
	err   error

	mu   sync.Mutex
	reqs []*harness.ChatRequest
}

func (f *fakeModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return &harness.ChatResponse{
		Message: harness.Message{Role: harness.RoleAssistant, Content: f.reply},
		Usage:   f.usage,
	}, nil
}

func (f *fakeModel) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func numericReq(response, regex string, pass2 bool, model harness.ChatModel) *harness.EvalRequest {
	return &harness.EvalRequest{
		Test: harness.Test{ID: "t1", Prompt: "What is 6 × 7?",
			Expected: harness.Expected{Answer: "42", Type: "numeric"}},
		Evaluator:    harness.EvaluatorConfig{ID: "e", Type: harness.EvaluatorTypeRegex, ExtractionRegex: regex, UsesPass2: pass2},
		SystemPrompt: "Be brief.",
		Response:     response,
		Client:       model,
		Model:        "test-model",
	}
}

func TestEvaluateDetails(t *testing.T) {
	ev := New(Options{})
	cases := []struct {
		name      string
		req       *harness.EvalRequest
		passed    bool
		extracted string
		engine    string // "" when no pattern applied
		reason    string
	}{
		{"extracted and passed", numericReq("6 × 7 is 42.\nAnswer: 42", `Answer: (\d+)`, false, nil), true, "42", engineStdlib, ""},
		{"extracted and wrong", numericReq("Answer: 41", `Answer: (\d+)`, false, nil), false, "41", engineStdlib, "got 41"},
		{"no match", numericReq("no idea", `Answer: (\d+)`, false, nil), false, "", engineStdlib, "found no answer"},
		{"no regex: whole response", numericReq(" 42\n", "", false, nil), true, "42", "", ""},
		{"no regex: the last number of the response", numericReq("It is 42.", "", false, nil), true, "42", "", ""},
		{"no regex: no number in the response", numericReq("It is forty-two.", "", false, nil), false, "It is forty-two.", "", "not a number"},
		{"regexp2 pattern", numericReq("42 is it", `(\d+)(?= is it)`, false, nil), true, "42", engineRegexp2, ""},
		{"contains on the whole response", &harness.EvalRequest{
			Test:     harness.Test{Expected: harness.Expected{Answer: "PARIS", Type: "contains"}},
			Response: "The capital of France is Paris.",
		}, true, "The capital of France is Paris.", "", ""},
		{"contains on the extraction only", &harness.EvalRequest{
			Test:      harness.Test{Expected: harness.Expected{Answer: "paris", Type: "contains"}},
			Evaluator: harness.EvaluatorConfig{ExtractionRegex: `City: (\w+)`},
			Response:  "Paris is lovely. City: Lyon",
		}, false, "Lyon", engineStdlib, "does not contain"},
		{"no pass 2 without a model", numericReq("no idea", `Answer: (\d+)`, true, nil), false, "", engineStdlib, "no model"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.Evaluate(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Details
			if res.Passed != tc.passed || res.Score != map[bool]float64{true: 1, false: 0}[tc.passed] {
				t.Fatalf("score %v passed %v, details %v", res.Score, res.Passed, d)
			}
			if d["extracted_answer"] != tc.extracted {
				t.Errorf("extracted_answer = %q, want %q", d["extracted_answer"], tc.extracted)
			}
			if d["pass2_used"] != false {
				t.Errorf("pass2_used = %v", d["pass2_used"])
			}
			if _, ok := d["pass2_response"]; ok {
				t.Errorf("pass2_response set: %v", d)
			}
			if d["expected_type"] != tc.req.Test.Expected.Type {
				t.Errorf("expected_type = %v", d["expected_type"])
			}
			if engine, _ := d["regex_engine"].(string); engine != tc.engine {
				t.Errorf("regex_engine = %q, want %q", engine, tc.engine)
			}
			reason, hasReason := d["reason"].(string)
			if tc.passed == hasReason {
				t.Errorf("reason %q on passed=%v", reason, tc.passed)
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q does not mention %q", reason, tc.reason)
			}
		})
	}
}

// TestEvaluateTimeout checks that a regexp2 match timeout makes the test an
// error (Evaluate returns an error wrapping ErrMatchTimeout), not a
// failure: in the extraction pattern, with or without a second pass, and in
// an expected pattern of the regex type.
func TestEvaluateTimeout(t *testing.T) {
	ev := New(Options{MatchTimeout: 50 * time.Millisecond})
	const evil = "aaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
	regexTyped := &harness.EvalRequest{
		Test: harness.Test{ID: "t1", Prompt: "Shout.",
			Expected: harness.Expected{Answer: `^(?=a)(a+)+$`, Type: "regex"}},
		Evaluator: harness.EvaluatorConfig{ID: "e", Type: harness.EvaluatorTypeRegex},
		Response:  evil,
	}
	cases := []struct {
		name  string
		req   *harness.EvalRequest
		model *fakeModel
	}{
		{"extraction", numericReq(evil, `(?=a)(a+)+$`, false, nil), nil},
		{"extraction with pass2 on", nil, &fakeModel{reply: "42"}},
		{"expected pattern", regexTyped, nil},
		{"second-pass reply", nil, &fakeModel{reply: evil}},
	}
	cases[1].req = numericReq(evil, `(?=a)(a+)+$`, true, cases[1].model)
	// The first answer extracts nothing quickly; the reply then times out.
	cases[3].req = numericReq("no digits here", `(?=\d)(\d+)+$|(?=a)(a+)+$`, true, cases[3].model)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := ev.Evaluate(context.Background(), tc.req)
			if !errors.Is(err, ErrMatchTimeout) || res != nil {
				t.Fatalf("got %v, %v; want an error wrapping ErrMatchTimeout", res, err)
			}
			if errors.Is(err, harness.ErrInvalid) {
				t.Errorf("a timeout is not an invalid definition: %v", err)
			}
			// Backtracking would take minutes; 10 s is slack for a busy CI.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	// A timeout on the first answer is not rescued by a second pass.
	if m := cases[1].model; len(m.reqs) != 0 {
		t.Errorf("second pass sent %d requests after a timeout", len(m.reqs))
	}
	if m := cases[3].model; len(m.reqs) != 1 {
		t.Errorf("second pass sent %d requests, want 1", len(m.reqs))
	}
}

func TestPass2(t *testing.T) {
	usage := harness.Usage{PromptTokens: 30, CompletionTokens: 2}
	cases := []struct {
		name      string
		regex     string
		response  string
		reply     string
		passed    bool
		extracted string
	}{
		{"no match, the reply matches", `Answer: (\d+)`, "Six sevens... forty-two!", "Answer: 42", true, "42"},
		{"no match, the reply is the bare answer", `Answer: (\d+)`, "Six sevens... forty-two!", " 42\n", true, "42"},
		{"extracted text not a number", `Answer: (.+)`, "Answer: forty-two", "42", true, "42"},
		{"no regex, response not a number", "", "I believe it is forty-two.", "42", true, "42"},
		{"labelled reply", "", "I believe it is forty-two.", "Final answer: 42.", true, "42"},
		{"the reply is wrong", `Answer: (\d+)`, "hmm", "Answer: 41", false, "41"},
		{"the reply is unusable too", `Answer: (\d+)`, "hmm", "I cannot say.", false, "I cannot say."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeModel{reply: tc.reply, usage: usage}
			ev := New(Options{})
			res, err := ev.Evaluate(context.Background(), numericReq(tc.response, tc.regex, true, model))
			if err != nil {
				t.Fatal(err)
			}
			d := res.Details
			if res.Passed != tc.passed || d["extracted_answer"] != tc.extracted {
				t.Fatalf("passed %v extracted %q; want %v %q (details %v)", res.Passed, d["extracted_answer"], tc.passed, tc.extracted, d)
			}
			if d["pass2_used"] != true || d["pass2_response"] != tc.reply {
				t.Errorf("pass2_used %v pass2_response %q", d["pass2_used"], d["pass2_response"])
			}
			if want := (harness.Usage{PromptTokens: 30, CompletionTokens: 2, TotalTokens: 32}); res.Usage != want {
				t.Errorf("usage %+v, want %+v", res.Usage, want)
			}
			if tc.extracted == "I cannot say." && !strings.HasPrefix(d["reason"].(string), "second pass: ") {
				t.Errorf("reason %q", d["reason"])
			}
			if model.calls() != 1 {
				t.Fatalf("%d requests", model.calls())
			}
			req := model.reqs[0]
			if req.Model != "test-model" {
				t.Errorf("model %q", req.Model)
			}
			want := []harness.Message{
				{Role: harness.RoleSystem, Content: "Be brief."},
				{Role: harness.RoleUser, Content: "What is 6 × 7?"},
				{Role: harness.RoleAssistant, Content: tc.response},
				{Role: harness.RoleUser, Content: Pass2Prompt},
			}
			if fmt.Sprint(req.Messages) != fmt.Sprint(want) {
				t.Errorf("messages\n%v\nwant\n%v", req.Messages, want)
			}
		})
	}
}

func TestPass2NotAttempted(t *testing.T) {
	cases := []struct {
		name string
		req  func(m harness.ChatModel) *harness.EvalRequest
	}{
		{"uses_pass2 false", func(m harness.ChatModel) *harness.EvalRequest {
			return numericReq("no idea", `Answer: (\d+)`, false, m)
		}},
		{"extraction succeeded and passed", func(m harness.ChatModel) *harness.EvalRequest {
			return numericReq("Answer: 42", `Answer: (\d+)`, true, m)
		}},
		{"extraction succeeded but wrong", func(m harness.ChatModel) *harness.EvalRequest {
			return numericReq("Answer: 41", `Answer: (\d+)`, true, m)
		}},
		{"tool_call type", func(m harness.ChatModel) *harness.EvalRequest {
			r := numericReq("", "", true, m)
			r.Test.Expected = harness.Expected{Type: "tool_call", Answer: "search"}
			return r
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeModel{reply: "42"}
			res, err := New(Options{}).Evaluate(context.Background(), tc.req(model))
			if err != nil {
				t.Fatal(err)
			}
			if model.calls() != 0 || res.Details["pass2_used"] != false || res.Usage != (harness.Usage{}) {
				t.Fatalf("calls %d details %v usage %+v", model.calls(), res.Details, res.Usage)
			}
		})
	}
}

func TestPass2Conversation(t *testing.T) {
	model := &fakeModel{reply: "42"}
	req := numericReq("let me think", `Answer: (\d+)`, true, model)
	req.Messages = []harness.Message{
		{Role: harness.RoleSystem, Content: "sys"},
		{Role: harness.RoleUser, Content: "What is 6 × 7?"},
		{Role: harness.RoleAssistant, ToolCalls: []harness.ToolCall{{ID: "c1", Name: "calc", Arguments: `{"x":"6*7"}`}}},
		{Role: harness.RoleTool, ToolCallID: "c1", Content: "42"},
		{Role: harness.RoleAssistant, Content: "let me think"},
	}
	ev := New(Options{Pass2Prompt: "Just the number, please (final answer)."})
	res, err := ev.Evaluate(context.Background(), req)
	if err != nil || !res.Passed {
		t.Fatalf("err %v details %v", err, res.Details)
	}
	got := model.reqs[0].Messages
	if len(got) != 6 || got[3].Role != harness.RoleTool || got[5].Content != "Just the number, please (final answer)." {
		t.Fatalf("messages %v", got)
	}
	if len(req.Messages) != 5 {
		t.Fatal("the request's messages were modified")
	}
}

func TestPass2PromptAsksForTheFinalAnswer(t *testing.T) {
	if !strings.Contains(Pass2Prompt, "final answer") {
		t.Fatalf("Pass2Prompt %q", Pass2Prompt)
	}
}

func TestPass2Error(t *testing.T) {
	boom := errors.New("endpoint down")
	model := &fakeModel{err: boom}
	_, err := New(Options{}).Evaluate(context.Background(), numericReq("hmm", `Answer: (\d+)`, true, model))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestEvaluateToolCall(t *testing.T) {
	calls := []harness.ToolCall{
		{ID: "1", Name: "search", Arguments: `{"q":"weather"}`},
		{ID: "2", Name: "get_weather", Arguments: `{"city":"Paris","unit":"C"}`},
	}
	exp := harness.Expected{Type: "tool_call", Answer: "get_weather", Arguments: map[string]any{"city": "Paris"}}
	t.Run("from ToolCalls", func(t *testing.T) {
		res, err := New(Options{}).Evaluate(context.Background(), &harness.EvalRequest{
			Test: harness.Test{Expected: exp}, ToolCalls: calls, Response: "It is sunny.",
		})
		if err != nil || !res.Passed || res.Score != 1 {
			t.Fatalf("err %v result %+v", err, res)
		}
		if got := res.Details["tool_calls"].([]harness.ToolCall); len(got) != 2 || got[1].Name != "get_weather" {
			t.Errorf("tool_calls %v", got)
		}
		if res.Details["extracted_answer"] != "get_weather" || res.Details["expected_type"] != "tool_call" {
			t.Errorf("details %v", res.Details)
		}
	})
	t.Run("from the conversation", func(t *testing.T) {
		res, err := New(Options{}).Evaluate(context.Background(), &harness.EvalRequest{
			Test: harness.Test{Expected: exp},
			Messages: []harness.Message{
				{Role: harness.RoleUser, Content: "weather?"},
				{Role: harness.RoleAssistant, ToolCalls: calls},
				{Role: harness.RoleAssistant, Content: "sunny"},
			},
		})
		if err != nil || !res.Passed {
			t.Fatalf("err %v result %+v", err, res)
		}
	})
	t.Run("wrong arguments", func(t *testing.T) {
		exp := exp
		exp.Arguments = map[string]any{"city": "Lyon"}
		res, err := New(Options{}).Evaluate(context.Background(), &harness.EvalRequest{
			Test: harness.Test{Expected: exp}, ToolCalls: calls,
		})
		if err != nil || res.Passed || res.Score != 0 || res.Details["reason"] == nil {
			t.Fatalf("err %v result %+v", err, res)
		}
		if res.Details["extracted_answer"] != "" {
			t.Errorf("extracted_answer %q", res.Details["extracted_answer"])
		}
	})
	t.Run("no calls", func(t *testing.T) {
		res, err := New(Options{}).Evaluate(context.Background(), &harness.EvalRequest{Test: harness.Test{Expected: exp}})
		if err != nil || res.Passed {
			t.Fatalf("err %v result %+v", err, res)
		}
		if got := res.Details["tool_calls"].([]harness.ToolCall); got == nil || len(got) != 0 {
			t.Errorf("tool_calls %#v, want an empty list", got)
		}
	})
}

func TestEvaluateErrors(t *testing.T) {
	cases := []struct {
		name string
		req  *harness.EvalRequest
	}{
		{"nil request", nil},
		{"unknown type", &harness.EvalRequest{Test: harness.Test{Expected: harness.Expected{Answer: "x", Type: "fuzzy"}}}},
		{"expected not a number", &harness.EvalRequest{Test: harness.Test{Expected: harness.Expected{Answer: "x", Type: "numeric"}}}},
		{"bad extraction regex", &harness.EvalRequest{
			Test:      harness.Test{Expected: harness.Expected{Answer: "x"}},
			Evaluator: harness.EvaluatorConfig{ExtractionRegex: `(`},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := New(Options{}).Evaluate(context.Background(), tc.req)
			if !errors.Is(err, harness.ErrInvalid) || res != nil {
				t.Fatalf("res %v err %v; want ErrInvalid", res, err)
			}
		})
	}
}

func TestValidateConfig(t *testing.T) {
	ev := New(Options{})
	for _, tc := range []struct {
		regex string
		ok    bool
	}{
		{"", true},
		{`Answer: (\d+)`, true},
		{`(?<answer>\d+)(?=\.)`, true},
		{`(?P<answer>\d+)`, true},
		{`(\d+`, false},
		{`(?<=a+`, false},
	} {
		t.Run(tc.regex, func(t *testing.T) {
			err := ev.ValidateConfig(harness.EvaluatorConfig{ID: "e", Name: "E", ExtractionRegex: tc.regex})
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				var ve *harness.ValidationError
				if !errors.As(err, &ve) || ve.Fields[0].Field != "extraction_regex" {
					t.Fatalf("err = %#v", err)
				}
			}
		})
	}
}

// Many goroutines share one Evaluator, its pattern cache and its model.
func TestConcurrentEvaluate(t *testing.T) {
	ev := New(Options{MatchTimeout: time.Minute}) // -race on a busy machine: no spurious timeouts
	model := &fakeModel{reply: "Answer: 42", usage: harness.Usage{TotalTokens: 5}}
	reqs := []struct {
		req    *harness.EvalRequest
		passed bool
	}{
		{numericReq("Answer: 42", `Answer: (\d+)`, false, nil), true},
		{numericReq("Answer: 41", `Answer: (\d+)`, false, nil), false},
		{numericReq("42!", `(\d+)(?=!)`, false, nil), true},
		{numericReq("no idea", `Answer: (\d+)`, true, model), true},
		{&harness.EvalRequest{Test: harness.Test{Expected: harness.Expected{Answer: "B", Type: "choice"}},
			Evaluator: harness.EvaluatorConfig{ExtractionRegex: `(?i)answer:\s*(?<answer>\(?[a-d]\)?)`},
			Response:  "Answer: (b)"}, true},
		{&harness.EvalRequest{Test: harness.Test{Expected: harness.Expected{Answer: `^\w+$`, Type: "regex"}},
			Response: "word"}, true},
		{&harness.EvalRequest{Test: harness.Test{Expected: harness.Expected{Type: "tool_call", Answer: "f"}},
			ToolCalls: []harness.ToolCall{{Name: "f"}}}, true},
	}
	const goroutines, rounds = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				r := reqs[(g+i)%len(reqs)]
				res, err := ev.Evaluate(context.Background(), r.req)
				if err == nil && res.Passed != r.passed {
					err = fmt.Errorf("request %d: passed %v, details %v", (g+i)%len(reqs), res.Passed, res.Details)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
