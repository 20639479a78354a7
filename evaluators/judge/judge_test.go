package judge_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/regexeval"
)

// fakeModel is a harness.ChatModel that answers with its replies in turn
// (the last one repeats), or with answer when set, and records requests.
type fakeModel struct {
	name    string
	replies []string
	answer  func(req *harness.ChatRequest) (string, error)
	usage   harness.Usage

	mu   sync.Mutex
	reqs []*harness.ChatRequest
}

func (m *fakeModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	n := len(m.reqs)
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	var text string
	switch {
	case m.answer != nil:
		var err error
		if text, err = m.answer(req); err != nil {
			return nil, err
		}
	case len(m.replies) > 0:
		text = m.replies[min(n, len(m.replies)-1)]
	}
	model := req.Model
	if model == "" {
		model = m.name
	}
	return &harness.ChatResponse{
		Message: harness.Message{Role: harness.RoleAssistant, Content: text},
		Usage:   m.usage,
		Model:   model,
	}, nil
}

func (m *fakeModel) requests() []*harness.ChatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*harness.ChatRequest(nil), m.reqs...)
}

func cfg(kv ...any) harness.EvaluatorConfig {
	c := map[string]any{"rubric": "The answer must name the capital of France."}
	for i := 0; i < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return harness.EvaluatorConfig{ID: "graded", Name: "Graded", Type: judge.Type, Config: c}
}

func request(model harness.ChatModel, ec harness.EvaluatorConfig, response string) *harness.EvalRequest {
	return &harness.EvalRequest{
		Test: harness.Test{
			ID: "capital", Prompt: "What is the capital of France?",
			Expected: harness.Expected{Answer: "Paris", Type: "exact"},
		},
		Evaluator: ec,
		Response:  response,
		Client:    model,
		Model:     "run-model",
	}
}

func TestEvaluateScores(t *testing.T) {
	tests := []struct {
		name       string
		reply      string
		ec         harness.EvaluatorConfig
		wantScore  float64
		wantPassed bool
	}{
		{"high score passes", "Correct and concise.\nScore: 0.9", cfg(), 0.9, true},
		{"default pass score is inclusive", "Score: 0.5", cfg(), 0.5, true},
		{"low score fails", "Wrong city.\nScore: 0.1", cfg(), 0.1, false},
		{"grade letter", "Grade: B", cfg(), 0.75, true},
		{"fail verdict", "FAIL", cfg(), 0, false},
		{"custom pass score", "Score: 0.8", cfg("pass_score", 0.85), 0.8, false},
		{"pass score zero passes anything", "Score: 0", cfg("pass_score", 0), 0, true},
		{"json verdict", `{"score": 1, "reasoning": "Names Paris."}`, cfg(), 1, true},
		// A key this version does not know is refused when the record is
		// written, but a stored record that has one still runs.
		{"unknown key in a stored record", "Score: 0.8", cfg("pass_score", 0.85, "from_a_newer_version", true), 0.8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{replies: []string{tt.reply}, usage: harness.Usage{PromptTokens: 100, CompletionTokens: 10}}
			res, err := judge.New(judge.Options{}).Evaluate(context.Background(), request(m, tt.ec, "Paris."))
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if math.Abs(res.Score-tt.wantScore) > 1e-9 || res.Passed != tt.wantPassed {
				t.Errorf("score, passed = %v, %v; want %v, %v", res.Score, res.Passed, tt.wantScore, tt.wantPassed)
			}
			d := res.Details
			if d["judge_score"] != res.Score || d["judge_attempts"] != 1 || d["judge_model"] != "run-model" {
				t.Errorf("details = %v", d)
			}
			if d["extracted_answer"] != "Paris." || d["pass2_used"] != false {
				t.Errorf("extracted_answer, pass2_used = %v, %v", d["extracted_answer"], d["pass2_used"])
			}
			if _, has := d["cascade"]; has {
				t.Errorf("cascade = %v without cascading", d["cascade"])
			}
			if _, has := d["reason"]; has == res.Passed {
				t.Errorf("reason present = %v with passed = %v", has, res.Passed)
			}
			if want := (harness.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}); res.Usage != want {
				t.Errorf("usage = %+v, want %+v", res.Usage, want)
			}
		})
	}
}

func TestEvaluateReasoning(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string
	}{
		{"text reply", "It names Paris, the capital.\n\nScore: 1", "It names Paris, the capital.\n\nScore: 1"},
		{"json reasoning", `{"score": 1, "reasoning": "Names Paris."}`, "Names Paris."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{replies: []string{tt.reply}}
			res, err := judge.New(judge.Options{}).Evaluate(context.Background(), request(m, cfg(), "Paris"))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Details["judge_reasoning"]; got != tt.want {
				t.Errorf("judge_reasoning = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvaluatePrompt(t *testing.T) {
	m := &fakeModel{replies: []string{"Score: 1"}}
	req := request(m, cfg("temperature", 0), "Paris, of course.")
	req.SystemPrompt = "Answer in one word."
	req.ToolCalls = []harness.ToolCall{{ID: "c1", Name: "lookup_city", Arguments: `{"country":"France"}`}}
	if _, err := judge.New(judge.Options{}).Evaluate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d judge requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "run-model" {
		t.Errorf("model = %q, want run-model", r.Model)
	}
	if r.Temperature == nil || *r.Temperature != 0 {
		t.Errorf("temperature = %v, want 0", r.Temperature)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != harness.RoleSystem || r.Messages[0].Content != judge.SystemPrompt {
		t.Fatalf("messages = %+v", r.Messages)
	}
	user := r.Messages[1].Content
	for _, want := range []string{
		"<rubric>\nThe answer must name the capital of France.\n</rubric>",
		"<system_prompt>\nAnswer in one word.\n</system_prompt>",
		"<task>\nWhat is the capital of France?\n</task>",
		"Expected answer (type exact):\n<expected>\nParis\n</expected>",
		`- lookup_city({"country":"France"})`,
		"<response>\nParis, of course.\n</response>",
		"Score: <a number from 0 to 1>",
	} {
		if !strings.Contains(user, want) {
			t.Errorf("judge prompt lacks %q:\n%s", want, user)
		}
	}

	// No expected answer, no temperature: the judge grades by the rubric.
	m = &fakeModel{replies: []string{"Score: 1"}}
	req = request(m, cfg(), "Paris")
	req.Test.Expected = harness.Expected{}
	if _, err := judge.New(judge.Options{}).Evaluate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r = m.requests()[0]
	if r.Temperature != nil {
		t.Errorf("temperature = %v, want none", *r.Temperature)
	}
	if user := r.Messages[1].Content; !strings.Contains(user, "No expected answer was given") || strings.Contains(user, "<expected>") {
		t.Errorf("judge prompt without an expected answer:\n%s", user)
	}
}

// The rubric expected type: valid with or without an answer once
// registered, and an answer is shown to the judge as a reference.
func TestRubricExpectedType(t *testing.T) {
	reg := harness.NewRegistry()
	test := harness.Test{ID: "essay", DomainID: "d", Level: 1, Prompt: "Explain recursion.",
		Expected: harness.Expected{Type: judge.ExpectedType}}
	if err := (harness.Validator{Registry: reg}).Test(&test); err == nil {
		t.Fatal("rubric accepted before RegisterExpectedType")
	}
	if err := judge.RegisterExpectedType(reg); err != nil {
		t.Fatal(err)
	}
	if err := (harness.Validator{Registry: reg}).Test(&test); err != nil {
		t.Fatalf("rubric test without an answer: %v", err)
	}
	test.Expected.Answer = "A function that calls itself on a smaller input, with a base case."
	if err := (harness.Validator{Registry: reg}).Test(&test); err != nil {
		t.Fatalf("rubric test with a reference answer: %v", err)
	}

	m := &fakeModel{replies: []string{"Score: 1"}}
	req := request(m, cfg(), "It calls itself.")
	req.Test = test
	if _, err := judge.New(judge.Options{}).Evaluate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	user := m.requests()[0].Messages[1].Content
	if !strings.Contains(user, "Reference answer (a guide, not the only acceptable answer):\n<expected>\nA function that calls itself") {
		t.Errorf("judge prompt for a rubric test with a reference:\n%s", user)
	}
}

func TestEvaluateRetry(t *testing.T) {
	m := &fakeModel{
		replies: []string{"The response looks reasonable overall.", "Score: 0.9"},
		usage:   harness.Usage{PromptTokens: 50, CompletionTokens: 5, TotalTokens: 55},
	}
	res, err := judge.New(judge.Options{}).Evaluate(context.Background(), request(m, cfg(), "Paris"))
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Score != 0.9 || !res.Passed || res.Details["judge_attempts"] != 2 {
		t.Errorf("result = %v %v %v", res.Score, res.Passed, res.Details)
	}
	if want := (harness.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}); res.Usage != want {
		t.Errorf("usage = %+v, want both requests: %+v", res.Usage, want)
	}
	if got, want := res.Details["judge_reasoning"], "The response looks reasonable overall.\n\nScore: 0.9"; got != want {
		t.Errorf("judge_reasoning = %q, want %q", got, want)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d judge requests, want 2", len(reqs))
	}
	retry := reqs[1].Messages
	if n := len(retry); n != 4 || retry[2].Role != harness.RoleAssistant || retry[2].Content != "The response looks reasonable overall." ||
		retry[3].Role != harness.RoleUser || retry[3].Content != judge.RetryPrompt {
		t.Errorf("retry conversation = %+v", retry)
	}
}

func TestEvaluateUnparsableTwice(t *testing.T) {
	m := &fakeModel{replies: []string{"Hmm, hard to say.", "I would rather not give a number."}}
	res, err := judge.New(judge.Options{}).Evaluate(context.Background(), request(m, cfg(), "Paris"))
	if res != nil || !errors.Is(err, judge.ErrVerdict) {
		t.Fatalf("Evaluate = %v, %v; want an error wrapping ErrVerdict", res, err)
	}
	if !strings.Contains(err.Error(), "I would rather not give a number.") {
		t.Errorf("error %q does not quote the last reply", err)
	}
	if n := len(m.requests()); n != 2 {
		t.Errorf("%d judge requests, want 2", n)
	}
}

func TestEvaluateErrors(t *testing.T) {
	boom := errors.New("connection refused")
	tests := []struct {
		name    string
		opts    judge.Options
		req     *harness.EvalRequest
		wantIs  error
		wantMsg string
	}{
		{"nil request", judge.Options{}, nil, harness.ErrInvalid, "nil request"},
		{"no model at all", judge.Options{}, request(nil, cfg(), "Paris"), harness.ErrInvalid, "no judge model"},
		{"missing rubric", judge.Options{}, request(&fakeModel{}, harness.EvaluatorConfig{ID: "e", Type: judge.Type}, "Paris"),
			harness.ErrInvalid, "config.rubric"},
		{"bad pass score", judge.Options{}, request(&fakeModel{}, cfg("pass_score", 2), "Paris"),
			harness.ErrInvalid, "config.pass_score"},
		{"model error", judge.Options{},
			request(&fakeModel{answer: func(*harness.ChatRequest) (string, error) { return "", boom }}, cfg(), "Paris"),
			boom, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := judge.New(tt.opts).Evaluate(context.Background(), tt.req)
			if res != nil || !errors.Is(err, tt.wantIs) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Evaluate = %v, %v; want an error wrapping %v containing %q", res, err, tt.wantIs, tt.wantMsg)
			}
		})
	}
}

func TestEvaluateModelChoice(t *testing.T) {
	tests := []struct {
		name          string
		dedicated     bool
		optsModelName string
		judgeModel    string // config judge_model
		wantModelName string // sent to the judge and in details
		wantDetail    string
	}{
		{name: "run model", wantModelName: "run-model", wantDetail: "run-model"},
		{name: "run endpoint with judge_model", judgeModel: "big-judge", wantModelName: "big-judge", wantDetail: "big-judge"},
		{name: "dedicated model", dedicated: true, optsModelName: "judge-default", wantModelName: "judge-default", wantDetail: "judge-default"},
		{name: "dedicated model with judge_model", dedicated: true, optsModelName: "judge-default", judgeModel: "big-judge",
			wantModelName: "big-judge", wantDetail: "big-judge"},
		{name: "dedicated model's default name", dedicated: true, wantModelName: "", wantDetail: "endpoint-default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeModel{name: "run-endpoint", replies: []string{"Score: 0.2"}}
			ded := &fakeModel{name: "endpoint-default", replies: []string{"Score: 0.8"}}
			opts := judge.Options{Model: tt.optsModelName}
			if tt.dedicated {
				opts.Client = ded
			}
			ec := cfg()
			if tt.judgeModel != "" {
				ec = cfg("judge_model", tt.judgeModel)
			}
			res, err := judge.New(opts).Evaluate(context.Background(), request(run, ec, "Paris"))
			if err != nil {
				t.Fatal(err)
			}
			used, idle := run, ded
			wantScore := 0.2
			if tt.dedicated {
				used, idle, wantScore = ded, run, 0.8
			}
			if n := len(idle.requests()); n != 0 {
				t.Errorf("the other model got %d requests", n)
			}
			reqs := used.requests()
			if len(reqs) != 1 || reqs[0].Model != tt.wantModelName {
				t.Fatalf("judge requests = %d, model %q; want 1 for %q", len(reqs), reqs[0].Model, tt.wantModelName)
			}
			if res.Score != wantScore || res.Details["judge_model"] != tt.wantDetail {
				t.Errorf("score %v, judge_model %v; want %v, %v", res.Score, res.Details["judge_model"], wantScore, tt.wantDetail)
			}
		})
	}
}

func TestEvaluateCascade(t *testing.T) {
	tests := []struct {
		name         string
		ec           harness.EvaluatorConfig
		expected     harness.Expected
		response     string
		runReplies   []string // replies of the run's model: the second pass, then the judge
		wantCalls    int
		wantCascade  string
		wantScore    float64
		wantPassed   bool
		wantAnswer   string
		wantPass2    bool
		wantUsage    int
		wantDetailOf string // a details key that must be present
	}{
		{
			name:     "regex passes: the judge is not asked",
			ec:       withRegex(cfg("cascade", true), `Answer:\s*(?<answer>\w+)`, false),
			expected: harness.Expected{Answer: "Paris", Type: "exact"},
			response: "Let me think. Answer: Paris", wantCalls: 0,
			wantCascade: judge.CascadeRegexPassed, wantScore: 1, wantPassed: true, wantAnswer: "Paris",
		},
		{
			name:     "regex fails: the judge decides",
			ec:       withRegex(cfg("cascade", true), `Answer:\s*(?<answer>\w+)`, false),
			expected: harness.Expected{Answer: "Paris", Type: "exact"},
			response: "The capital is Paris (Answer: the city of Paris)", runReplies: []string{"Score: 0.9"}, wantCalls: 1,
			wantCascade: judge.CascadeJudged, wantScore: 0.9, wantPassed: true, wantAnswer: "the", wantUsage: 11,
			wantDetailOf: "regex_reason",
		},
		{
			name:     "second pass counted, then judged",
			ec:       withRegex(cfg("cascade", true), `Answer:\s*(?<answer>\d+)`, true),
			expected: harness.Expected{Answer: "42", Type: "numeric"},
			response: "It is forty-one, I think.", runReplies: []string{"41", "The model said 41.\nScore: 0"}, wantCalls: 2,
			wantCascade: judge.CascadeJudged, wantScore: 0, wantPassed: false, wantAnswer: "41", wantPass2: true, wantUsage: 22,
			wantDetailOf: "regex_reason",
		},
		{
			name:     "type the regex evaluator does not know: judged",
			ec:       cfg("cascade", true),
			expected: harness.Expected{Answer: "a haiku about autumn", Type: "free_text"},
			response: "Leaves fall", runReplies: []string{"Score: 0.6"}, wantCalls: 1,
			wantCascade: judge.CascadeJudged, wantScore: 0.6, wantPassed: true, wantAnswer: "Leaves fall", wantUsage: 11,
			wantDetailOf: "regex_error",
		},
		{
			name:     "rubric test: judged without the regex evaluator",
			ec:       withRegex(cfg("cascade", true), `Answer:\s*(?<answer>\w+)`, true),
			expected: harness.Expected{Type: judge.ExpectedType},
			response: "Answer: Paris", runReplies: []string{"Score: 0.8"}, wantCalls: 1,
			wantCascade: judge.CascadeJudged, wantScore: 0.8, wantPassed: true, wantAnswer: "Answer: Paris", wantUsage: 11,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeModel{replies: tt.runReplies, usage: harness.Usage{PromptTokens: 10, CompletionTokens: 1}}
			req := request(run, tt.ec, tt.response)
			req.Test.Expected = tt.expected
			res, err := judge.New(judge.Options{}).Evaluate(context.Background(), req)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if n := len(run.requests()); n != tt.wantCalls {
				t.Errorf("%d model requests, want %d", n, tt.wantCalls)
			}
			d := res.Details
			if d["cascade"] != tt.wantCascade || res.Score != tt.wantScore || res.Passed != tt.wantPassed {
				t.Errorf("cascade %v, score %v, passed %v; want %v, %v, %v (details %v)",
					d["cascade"], res.Score, res.Passed, tt.wantCascade, tt.wantScore, tt.wantPassed, d)
			}
			if d["extracted_answer"] != tt.wantAnswer || d["pass2_used"] != tt.wantPass2 {
				t.Errorf("extracted_answer %q, pass2_used %v; want %q, %v", d["extracted_answer"], d["pass2_used"], tt.wantAnswer, tt.wantPass2)
			}
			if res.Usage.TotalTokens != tt.wantUsage {
				t.Errorf("total tokens %d, want %d", res.Usage.TotalTokens, tt.wantUsage)
			}
			if tt.wantDetailOf != "" {
				if _, ok := d[tt.wantDetailOf]; !ok {
					t.Errorf("details lack %s: %v", tt.wantDetailOf, d)
				}
			}
			if tt.wantCascade == judge.CascadeRegexPassed {
				if _, ok := d["judge_score"]; ok {
					t.Errorf("judge_score in details although the judge was not asked")
				}
			}
		})
	}
}

func withRegex(ec harness.EvaluatorConfig, re string, pass2 bool) harness.EvaluatorConfig {
	ec.ExtractionRegex, ec.UsesPass2 = re, pass2
	return ec
}

// The judge scores each response by its content; many tests are scored at
// once on one Evaluator. Run with -race.
func TestEvaluateConcurrent(t *testing.T) {
	m := &fakeModel{
		usage: harness.Usage{PromptTokens: 7, CompletionTokens: 3},
		answer: func(req *harness.ChatRequest) (string, error) {
			user := req.Messages[len(req.Messages)-1].Content
			if strings.Contains(user, "<response>\nParis") {
				return "Right.\nScore: 1", nil
			}
			return "Wrong.\nScore: 0", nil
		},
	}
	ev := judge.New(judge.Options{Client: m, Model: "judge"})
	var wg sync.WaitGroup
	var failures atomic.Int64
	for i := range 100 {
		wg.Go(func() {
			response, want := "Paris", true
			if i%3 == 0 {
				response, want = "Lyon", false
			}
			ec := cfg()
			if i%2 == 0 {
				ec = withRegex(cfg("cascade", true), "", false)
			}
			req := request(nil, ec, response)
			req.Test.ID = fmt.Sprint("t", i)
			res, err := ev.Evaluate(context.Background(), req)
			if err != nil || res.Passed != want {
				failures.Add(1)
				t.Errorf("test %d (%s): %v, %v", i, response, res, err)
			}
		})
	}
	wg.Wait()
	if failures.Load() > 0 {
		return
	}
	// Cascading tests with the right answer pass on the regex evaluator:
	// i even and not a multiple of 3, 33 of them.
	if got, want := len(m.requests()), 100-33; got != want {
		t.Errorf("%d judge requests, want %d", got, want)
	}
}

// Over the wire: a dedicated judge on an OpenAI-compatible endpoint.
func TestEvaluateOverHTTP(t *testing.T) {
	var seen atomic.Pointer[llmtest.Request]
	srv := llmtest.NewServer(llmtest.Options{
		Model: "judge-model",
		Respond: func(req *llmtest.Request) *llmtest.Reply {
			seen.Store(req)
			return &llmtest.Reply{Content: "The response names Paris.\nScore: 8/10"}
		},
	})
	defer srv.Close()
	client, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "judge-model"})
	if err != nil {
		t.Fatal(err)
	}
	ev := judge.New(judge.Options{Client: client})
	res, err := ev.Evaluate(context.Background(), request(nil, cfg("temperature", 0.2, "pass_score", 0.75), "Paris"))
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Score != 0.8 || !res.Passed || res.Details["judge_model"] != "judge-model" {
		t.Errorf("result %v %v %v", res.Score, res.Passed, res.Details)
	}
	if res.Usage.PromptTokens == 0 || res.Usage.CompletionTokens == 0 ||
		res.Usage.TotalTokens != res.Usage.PromptTokens+res.Usage.CompletionTokens {
		t.Errorf("usage = %+v", res.Usage)
	}
	req := seen.Load()
	if req == nil || req.Temperature == nil || *req.Temperature != 0.2 {
		t.Fatalf("request = %+v", req)
	}
	if roles := []string{req.Messages[0].Role, req.Messages[1].Role}; !reflect.DeepEqual(roles, []string{"system", "user"}) {
		t.Errorf("roles = %v", roles)
	}
}

func TestValidateConfig(t *testing.T) {
	ev := judge.New(judge.Options{})
	tests := []struct {
		name       string
		ec         harness.EvaluatorConfig
		wantFields []string
	}{
		{"minimal", cfg(), nil},
		{"everything", cfg("judge_model", "gpt-4o", "cascade", true, "pass_score", 0.7, "temperature", 0), nil},
		{"integer pass score", cfg("pass_score", 1), nil},
		{"unsigned from YAML", cfg("pass_score", uint64(0), "temperature", uint64(1)), nil},
		{"nil values are unset", cfg("judge_model", nil, "pass_score", nil), nil},
		{"no config", harness.EvaluatorConfig{ID: "e", Type: judge.Type}, []string{"config.rubric"}},
		{"blank rubric", cfg("rubric", "  "), []string{"config.rubric"}},
		{"rubric not a string", cfg("rubric", 3), []string{"config.rubric"}},
		{"pass score above 1", cfg("pass_score", 1.5), []string{"config.pass_score"}},
		{"pass score negative", cfg("pass_score", -0.1), []string{"config.pass_score"}},
		{"pass score NaN", cfg("pass_score", math.NaN()), []string{"config.pass_score"}},
		{"pass score as text", cfg("pass_score", "0.5"), []string{"config.pass_score"}},
		{"cascade as text", cfg("cascade", "yes"), []string{"config.cascade"}},
		{"judge model not a string", cfg("judge_model", 4), []string{"config.judge_model"}},
		{"temperature too high", cfg("temperature", 3), []string{"config.temperature"}},
		{"unknown keys", cfg("rubrik", "x", "model", "y"), []string{"config.model", "config.rubrik"}},
		{"bad extraction regex", withRegex(cfg("cascade", true), "(", false), []string{"extraction_regex"}},
		{"several at once", harness.EvaluatorConfig{Config: map[string]any{"pass_score": 9, "cascade": 1}},
			[]string{"config.rubric", "config.cascade", "config.pass_score"}},
		{"temperature null is unset", cfg("temperature", nil), nil},
		{"temperature as text", cfg("temperature", "0"), []string{"config.temperature"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ev.ValidateConfig(tt.ec)
			var got []string
			var ve *harness.ValidationError
			if errors.As(err, &ve) {
				for _, f := range ve.Fields {
					got = append(got, f.Field)
				}
			} else if err != nil {
				t.Fatalf("ValidateConfig: %v is not a *harness.ValidationError", err)
			}
			if !reflect.DeepEqual(got, tt.wantFields) {
				t.Errorf("fields = %q, want %q (%v)", got, tt.wantFields, err)
			}
			if err != nil && !errors.Is(err, harness.ErrInvalid) {
				t.Errorf("error does not match harness.ErrInvalid")
			}
		})
	}
}

// The messages say what is wrong, and suggest the known key for a typo.
func TestValidateConfigMessages(t *testing.T) {
	ev := judge.New(judge.Options{})
	tests := []struct {
		ec   harness.EvaluatorConfig
		want string
	}{
		{harness.EvaluatorConfig{}, "config.rubric: is required: say what a good response must do (or set faithfulness)"},
		{cfg("rubric", 3), "config.rubric: must be a string, not a number"},
		{cfg("cascade", "yes"), "config.cascade: must be true or false, not a string"},
		{cfg("pass_score", "0.5"), "config.pass_score: must be a number, not a string"},
		{cfg("pass_score", 1.5), "config.pass_score: must be between 0 and 1, not 1.5"},
		{cfg("temperature", 3), "config.temperature: must be between 0 and 2, not 3"},
		{cfg("passscore", 0.5), `config.passscore: unknown setting (did you mean "pass_score"?)`},
		{cfg("judge", "gpt-4o"), `config.judge: unknown setting (did you mean "judge_model"?)`},
		{cfg("zzzz", 1), "config.zzzz: unknown setting (known: cascade, faithfulness, judge_model, pass_score, rubric, temperature)"},
	}
	for _, tt := range tests {
		err := ev.ValidateConfig(tt.ec)
		if err == nil || err.Error() != "invalid: "+tt.want {
			t.Errorf("ValidateConfig(%v) = %v, want %q", tt.ec.Config, err, tt.want)
		}
	}
}

// The registry's validator calls ValidateConfig when a record is written.
func TestValidatorUsesValidateConfig(t *testing.T) {
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(judge.Type, judge.New(judge.Options{})); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterEvaluator(harness.EvaluatorTypeRegex, regexeval.New(regexeval.Options{})); err != nil {
		t.Fatal(err)
	}
	v := harness.Validator{Registry: reg}
	if err := v.Evaluator(&harness.EvaluatorConfig{ID: "j", Name: "J", Type: judge.Type}); err == nil ||
		!strings.Contains(err.Error(), "config.rubric") {
		t.Errorf("Validator.Evaluator = %v, want an error on config.rubric", err)
	}
	ec := cfg()
	if err := v.Evaluator(&ec); err != nil {
		t.Errorf("Validator.Evaluator: %v", err)
	}
}
