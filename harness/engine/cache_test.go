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
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// judgeMark starts every request of fakeJudge.
const judgeMark = "JUDGE:"

// fakeJudge is an evaluator type "fakejudge" that asks EvalRequest.Client,
// as a judge does, with a conversation of its own; it passes a response
// that holds the test's expected answer.
type fakeJudge struct{ calls atomic.Int64 }

func (j *fakeJudge) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	j.calls.Add(1)
	resp, err := req.Client.Chat(ctx, &harness.ChatRequest{Model: req.Model, Messages: []harness.Message{
		{Role: harness.RoleUser, Content: judgeMark + " grade this: " + req.Response}}})
	if err != nil {
		return nil, err
	}
	ok := strings.Contains(req.Response, req.Test.Expected.Answer)
	score := 0.0
	if ok {
		score = 1
	}
	return &harness.EvalResult{Score: score, Passed: ok, Usage: resp.Usage,
		Details: map[string]any{"judge_reply": resp.Message.Content}}, nil
}

// cacheDefs: sums (one wrong), two tool tests, a test whose evaluator
// needs the second pass, and a judged test.
func cacheDefs() *defs {
	d := toolDefs()
	d.sums("math", 1, 4, 1)
	d.domain("math", "You are a careful calculator.", true)
	d.s.Evaluators = append(d.s.Evaluators,
		harness.EvaluatorConfig{ID: "strict", Name: "Strict", Type: harness.EvaluatorTypeRegex, ExtractionRegex: `ANSWER: (?<answer>-?\d+)`, UsesPass2: true},
		harness.EvaluatorConfig{ID: "judged", Name: "Judged", Type: "fakejudge"})
	d.domain("p2", "", true)
	d.test(harness.Test{ID: "p2-t", DomainID: "p2", Level: 1, Name: "Pass 2", EvaluatorID: "strict",
		Prompt: "[p2-t] What is 2 + 3?", Expected: harness.Expected{Answer: "5", Type: "numeric"}})
	d.domain("j", "", true)
	d.test(harness.Test{ID: "j-t", DomainID: "j", Level: 1, Name: "Judged", EvaluatorID: "judged",
		Prompt: "[j-t] What is 4 + 4?", Expected: harness.Expected{Answer: "8", Type: "numeric"}})
	return d
}

// countingLLM counts the chat requests that reach the fake endpoint,
// judge requests apart.
type countingLLM struct {
	model, judge atomic.Int64
}

func (c *countingLLM) respond(req *llmtest.Request) *llmtest.Reply {
	if strings.HasPrefix(req.LastUser(), judgeMark) {
		c.judge.Add(1)
		return &llmtest.Reply{Content: "Score: 1"}
	}
	c.model.Add(1)
	return nil
}

func cacheFixture(t *testing.T) (*fixture, *countingLLM, *fakeJudge) {
	t.Helper()
	reg := harness.NewRegistry()
	judge := &fakeJudge{}
	if err := reg.RegisterEvaluator("fakejudge", judge); err != nil {
		t.Fatal(err)
	}
	c := &countingLLM{}
	f := newFixture(t, fixtureOpts{snap: cacheDefs().snap(), registry: reg, llm: llmtest.Options{Respond: c.respond}})
	return f, c, judge
}

func runAndWait(t *testing.T, f *fixture, req engine.StartRequest) (runs.Info, map[string]runs.Result) {
	t.Helper()
	info, err := f.eng.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	rs, err := f.runs.Results(context.Background(), info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]runs.Result{}
	for _, r := range rs {
		key := r.TestID
		if r.Repeat > 0 {
			key += "#" + string(rune('0'+r.Repeat))
		}
		out[key] = r
	}
	return info, out
}

// TestCache: a second cached run asks the endpoint nothing but the judge,
// and scores the same; the model's second pass is cached with its
// conversation; runs without the cache, with other parameters or another
// repeat ask the endpoint again.
func TestCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, c, _ := cacheFixture(t)

	first, res1 := runAndWait(t, f, engine.StartRequest{Cache: true})
	model1, judge1 := c.model.Load(), c.judge.Load()
	if first.Status != runs.StatusCompleted || first.CacheHits != 0 || first.Config == nil || !first.Config.Cache {
		t.Fatalf("first cached run = %+v", first)
	}
	if judge1 != 1 || model1 < int64(len(res1)) {
		t.Fatalf("first run asked the model %d times and the judge %d for %d tests", model1, judge1, len(res1))
	}
	if res1["p2-t"].Details["pass2_used"] != true || res1["p2-t"].Status != runs.TestPassed {
		t.Fatalf("the second-pass test = %+v", res1["p2-t"])
	}
	if n, err := f.runs.CacheSize(ctx); err != nil || int64(n) != model1 {
		t.Errorf("cache holds %d answers, %v; want the %d model requests (the judge is never cached)", n, err, model1)
	}

	second, res2 := runAndWait(t, f, engine.StartRequest{Cache: true})
	if got := c.model.Load() - model1; got != 0 {
		t.Errorf("the second cached run asked the model %d times; want 0", got)
	}
	if got := c.judge.Load() - judge1; got != 1 {
		t.Errorf("the second cached run asked the judge %d times; want 1 (a judge is scored afresh)", got)
	}
	if int64(second.CacheHits) != model1 {
		t.Errorf("cache_hits = %d; want %d", second.CacheHits, model1)
	}
	stored, err := f.runs.Run(ctx, second.RunID)
	if err != nil || stored.CacheHits != second.CacheHits {
		t.Errorf("stored cache_hits = %d, %v; want %d", stored.CacheHits, err, second.CacheHits)
	}
	if second.Passed != first.Passed || second.Failed != first.Failed || second.Errors != 0 {
		t.Errorf("second run %d/%d/%d; first %d/%d/%d", second.Passed, second.Failed, second.Errors, first.Passed, first.Failed, first.Errors)
	}
	for id, r := range res1 {
		r2 := res2[id]
		if r2.Response != r.Response || r2.Status != r.Status || r2.PromptTokens != r.PromptTokens {
			t.Errorf("%s: cached %q %s %d; first %q %s %d", id, r2.Response, r2.Status, r2.PromptTokens, r.Response, r.Status, r.PromptTokens)
		}
		if id != "j-t" && r2.Details["cache_hits"] == nil {
			t.Errorf("%s: details.cache_hits missing: %v", id, r2.Details)
		}
	}
	if calls := toolCallsOf(t, res2["tools-weather"]); len(calls) != 1 || calls[0]["name"] != "get_weather" {
		t.Errorf("cached tool calls = %v", calls)
	}

	// Without the cache every request goes to the endpoint.
	before := c.model.Load()
	plain, _ := runAndWait(t, f, engine.StartRequest{})
	if got := c.model.Load() - before; got != model1 || plain.CacheHits != 0 || plain.Config.Cache {
		t.Errorf("uncached run: %d model requests, %d hits; want %d, 0", got, plain.CacheHits, model1)
	}
	// Other sampling parameters are other requests. (The second pass sends
	// none: the fake answered as before, so it is the same request, a hit.)
	before = c.model.Load()
	temp := 0.5
	warm, _ := runAndWait(t, f, engine.StartRequest{Cache: true, Params: harness.Params{Temperature: &temp}})
	if got := c.model.Load() - before; got != model1-1 || warm.CacheHits != 1 {
		t.Errorf("run with another temperature: %d model requests, %d hits; want %d, 1", got, warm.CacheHits, model1-1)
	}
	// Repeat 0 is cached; repeat 1 is a sample of its own.
	before = c.model.Load()
	rep, _ := runAndWait(t, f, engine.StartRequest{Cache: true, Repeats: 2})
	if got := c.model.Load() - before; got != model1 || int64(rep.CacheHits) != model1 {
		t.Errorf("two repeats: %d model requests, %d hits; want %d and %d", got, rep.CacheHits, model1, model1)
	}
}

// failingFor fails every request of the tests whose prompt holds one of
// the marks, while on is set.
type failingFor struct {
	next  harness.ChatModel
	on    atomic.Bool
	marks []string
}

func (m *failingFor) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	if m.on.Load() {
		for _, msg := range req.Messages {
			for _, mark := range m.marks {
				if msg.Role == harness.RoleUser && strings.Contains(msg.Content, mark) {
					return nil, errors.New("endpoint failure for the test")
				}
			}
		}
	}
	return m.next.Chat(ctx, req)
}

// TestCacheKeepsOnlyAnswers: a failed request is not cached, so the next
// cached run asks it again; a cache that cannot be written never fails a
// test.
func TestCacheKeepsOnlyAnswers(t *testing.T) {
	t.Parallel()
	var fail *failingFor
	var once sync.Once
	c := &countingLLM{}
	f := newFixture(t, fixtureOpts{snap: newDefs().domain("math", "", true).sums("math", 1, 3, 0).snap(),
		llm: llmtest.Options{Respond: c.respond},
		model: func(m harness.ChatModel) harness.ChatModel {
			once.Do(func() { fail = &failingFor{next: m, marks: []string{"[math-l1-t1]"}} })
			fail.on.Store(true)
			return fail
		}})
	first, res := runAndWait(t, f, engine.StartRequest{Cache: true})
	if first.Errors != 1 || res["math-l1-t1"].Status != runs.TestError {
		t.Fatalf("first run = %+v", first)
	}
	fail.on.Store(false)
	before := c.model.Load()
	second, res := runAndWait(t, f, engine.StartRequest{Cache: true})
	if got := c.model.Load() - before; got != 1 || second.CacheHits != 2 || second.Errors != 0 {
		t.Errorf("second run asked the model %d times with %d hits and %d errors; want 1, 2, 0", got, second.CacheHits, second.Errors)
	}
	if res["math-l1-t1"].Status != runs.TestPassed {
		t.Errorf("the test that failed before = %+v", res["math-l1-t1"])
	}

	// The cache table gone: the run still completes, asking the model.
	if _, err := sqldb.Bun(f.db).ExecContext(context.Background(), `DROP TABLE "response_cache"`); err != nil {
		t.Fatal(err)
	}
	third, _ := runAndWait(t, f, engine.StartRequest{Cache: true})
	if third.Status != runs.StatusCompleted || third.Errors != 0 || third.Passed != 3 || third.CacheHits != 0 {
		t.Errorf("run with a broken cache = %+v", third)
	}
}
