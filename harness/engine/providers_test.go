package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// providerKinds are the provider kinds the provider tests run through,
// each with its base URL on the fake endpoint (which serves every kind's
// wire format on one port).
var providerKinds = []struct {
	kind string
	base func(url string) string
}{
	{llm.KindOpenAI, func(url string) string { return url }},
	{llm.KindAnthropic, func(url string) string { return strings.TrimSuffix(url, "/v1") }},
	{llm.KindGemini, func(url string) string { return strings.TrimSuffix(url, "/v1") }},
}

// providerFixture is a fixture whose client routes "mock-<kind>/model" to a
// second fake endpoint through a provider of that kind, and plain
// references to the fixture's own. seen counts the requests of each.
func providerFixture(t *testing.T, env map[string]string) (f *fixture, prov *llmtest.Server, seenProv *atomic.Int64) {
	t.Helper()
	seenProv = new(atomic.Int64)
	var sent atomic.Value
	prov = llmtest.NewServer(llmtest.Options{APIKey: "prov-key", Latency: 20 * time.Millisecond, Respond: func(req *llmtest.Request) *llmtest.Reply {
		seenProv.Add(1)
		sent.Store(req.Model)
		return nil
	}})
	t.Cleanup(prov.Close)
	var specs []string
	for _, k := range providerKinds {
		specs = append(specs, "mock-"+k.kind+"="+k.kind+",base_url="+k.base(prov.URL)+",api_key_env=PROV_KEY")
	}
	snap := newDefs().domain("math", "Answer with the number alone.", true).sums("math", 1, 4, 1).sums("math", 2, 3, 0).snap()
	f = newFixture(t, fixtureOpts{anyDB: true, snap: snap, model: func(m harness.ChatModel) harness.ChatModel {
		ps, err := llm.ParseProviders(specs)
		if err != nil {
			t.Fatal(err)
		}
		r, err := llm.NewRouter(llm.RouterOptions{Default: m.(*llm.Client), Providers: ps,
			Client: llm.Options{RetryBaseDelay: 1}, Getenv: func(k string) string {
				if k == "PROV_KEY" {
					return "prov-key"
				}
				return env[k]
			}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}})
	return f, prov, seenProv
}

// TestProviderRuns: a run of "<provider>/model" goes to the provider with
// the model's name alone, gives the scores a run of the default endpoint
// gives, and records the provider in its configuration.
func TestProviderRuns(t *testing.T) {
	t.Parallel()
	f, prov, seen := providerFixture(t, nil)
	base, baseRes := runAndWait(t, f, engine.StartRequest{})
	if base.Status != runs.StatusCompleted || seen.Load() != 0 {
		t.Fatalf("default run %+v; %d requests reached the provider", base, seen.Load())
	}
	for _, k := range providerKinds {
		t.Run(k.kind, func(t *testing.T) {
			before := seen.Load()
			info, res := runAndWait(t, f, engine.StartRequest{Model: "mock-" + k.kind + "/test-model"})
			if info.Status != runs.StatusCompleted || seen.Load() == before {
				t.Fatalf("run %+v; the provider saw %d requests", info, seen.Load()-before)
			}
			c := info.Config
			if c.Model != "mock-"+k.kind+"/test-model" || c.Provider != "mock-"+k.kind || c.ProviderKind != k.kind || c.BaseURL != k.base(prov.URL) {
				t.Errorf("config %+v", c)
			}
			if info.Passed != base.Passed || info.Failed != base.Failed || info.Errors != 0 {
				t.Errorf("%d passed, %d failed, %d errors; the default endpoint gave %d, %d, 0", info.Passed, info.Failed, info.Errors, base.Passed, base.Failed)
			}
			for id, r := range res {
				if b := baseRes[id]; r.Status != b.Status || r.Score != b.Score || r.Response != b.Response {
					t.Errorf("%s: %s %.2f %q through %s, %s %.2f %q on the default endpoint", id, r.Status, r.Score, r.Response, k.kind, b.Status, b.Score, b.Response)
				}
				if r.CompletionTokens == 0 || r.PromptTokens == 0 || len(r.Calls) == 0 || r.Calls[0].PromptTokens != r.PromptTokens {
					t.Errorf("%s through %s: tokens %d/%d, calls %+v", id, k.kind, r.PromptTokens, r.CompletionTokens, r.Calls)
				}
			}
		})
	}
	if c := base.Config; c.Provider != "" || c.ProviderKind != "" || c.BaseURL != f.mock.URL {
		t.Errorf("the default run's config %+v", c)
	}
}

// TestProviderWithoutKey: a run of a built-in provider whose key variable
// is not set is refused at start, naming the variable; no test runs.
func TestProviderWithoutKey(t *testing.T) {
	t.Parallel()
	f, _, _ := providerFixture(t, nil)
	_, err := f.eng.Start(context.Background(), engine.StartRequest{Model: "anthropic/claude-sonnet-4-5"})
	if !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("start = %v; want ErrInvalid naming ANTHROPIC_API_KEY", err)
	}
	if st := f.mock.Stats(); st.ChatCompletions != 0 {
		t.Fatalf("%d requests sent", st.ChatCompletions)
	}
}

// TestProviderInCacheKey: the response cache tells providers apart: the
// same requests to another provider are asked again, and a second run of
// the provider is answered from the cache.
func TestProviderInCacheKey(t *testing.T) {
	t.Parallel()
	f, _, seen := providerFixture(t, nil)
	first, _ := runAndWait(t, f, engine.StartRequest{Cache: true})
	if first.CacheHits != 0 {
		t.Fatalf("first run %+v", first)
	}
	k := "mock-" + providerKinds[0].kind
	other, _ := runAndWait(t, f, engine.StartRequest{Cache: true, Model: k + "/test-model"})
	if other.CacheHits != 0 || seen.Load() == 0 {
		t.Fatalf("the provider's run had %d cache hits and sent %d requests; want 0 hits", other.CacheHits, seen.Load())
	}
	before := seen.Load()
	again, _ := runAndWait(t, f, engine.StartRequest{Cache: true, Model: k + "/test-model"})
	if again.CacheHits == 0 || seen.Load() != before {
		t.Fatalf("the provider's second run: %d hits, %d requests sent", again.CacheHits, seen.Load()-before)
	}
}

// TestStreamedRun: a run with Stream asks for streams, records each
// call's time to first token and scores as a run without it; its config
// says so, and a resume streams too.
func TestStreamedRun(t *testing.T) {
	t.Parallel()
	f, _, _ := providerFixture(t, nil)
	plain, plainRes := runAndWait(t, f, engine.StartRequest{})
	for _, k := range providerKinds {
		t.Run(k.kind, func(t *testing.T) {
			// Through the provider, whose answers come after 20 ms.
			streamed, res := runAndWait(t, f, engine.StartRequest{Stream: true, Model: "mock-" + k.kind + "/test-model"})
			if !streamed.Config.Stream || plain.Config.Stream || streamed.Passed != plain.Passed || streamed.Failed != plain.Failed || streamed.Errors != 0 {
				t.Fatalf("streamed %+v; plain %+v", streamed, plain)
			}
			for id, r := range res {
				if r.Response != plainRes[id].Response || len(r.Calls) == 0 {
					t.Errorf("%s: streamed %q with %d calls; plain %q", id, r.Response, len(r.Calls), plainRes[id].Response)
					continue
				}
				if c := r.Calls[0]; c.Status != harness.AttemptOK || c.TTFTMS < 20 || c.TTFTMS > c.DurationMS {
					t.Errorf("%s: call %+v", id, c)
				}
				if plainRes[id].Calls[0].TTFTMS != 0 {
					t.Errorf("%s: a call not streamed has a ttft", id)
				}
			}
		})
	}
}

// modelJudge is an evaluator type "modeljudge" that asks the judge model
// its config names, as the judge plugin does.
type modelJudge struct{}

func (modelJudge) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	model, _ := req.Evaluator.Config["model"].(string)
	resp, err := req.Client.Chat(ctx, &harness.ChatRequest{Model: model, Messages: []harness.Message{
		{Role: harness.RoleUser, Content: "Grade this answer: " + req.Response}}})
	if err != nil {
		return nil, err
	}
	return &harness.EvalResult{Score: 1, Passed: true, Usage: resp.Usage, Details: map[string]any{"judge": resp.Message.Content}}, nil
}

// TestJudgeOnItsOwnProvider: a judge whose model names a provider is
// asked there, while the model under test stays on the default endpoint;
// its calls are recorded as the judge's.
func TestJudgeOnItsOwnProvider(t *testing.T) {
	t.Parallel()
	for _, k := range providerKinds {
		t.Run(k.kind, func(t *testing.T) {
			var judged atomic.Int64
			prov := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
				if req.Model == "judge-model" && strings.HasPrefix(req.LastUser(), "Grade this answer") {
					judged.Add(1)
					return &llmtest.Reply{Content: "PASS"}
				}
				return &llmtest.Reply{Status: 400, Content: "unexpected request for " + req.Model}
			}})
			t.Cleanup(prov.Close)
			reg := harness.NewRegistry()
			if err := reg.RegisterEvaluator("modeljudge", modelJudge{}); err != nil {
				t.Fatal(err)
			}
			d := newDefs()
			d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "judge", Name: "Judge", Type: "modeljudge",
				Config: map[string]any{"model": "mock-" + k.kind + "/judge-model"}})
			d.domain("j", "", true)
			d.test(harness.Test{ID: "j-t", DomainID: "j", Level: 1, Name: "Judged", EvaluatorID: "judge",
				Prompt: "What is 4 + 4?", Expected: harness.Expected{Answer: "8", Type: "numeric"}})
			f := newFixture(t, fixtureOpts{snap: d.snap(), registry: reg, model: func(m harness.ChatModel) harness.ChatModel {
				ps, err := llm.ParseProviders([]string{"mock-" + k.kind + "=" + k.kind + ",base_url=" + k.base(prov.URL) + ",api_key_env=K"})
				if err != nil {
					t.Fatal(err)
				}
				r, err := llm.NewRouter(llm.RouterOptions{Default: m.(*llm.Client), Providers: ps, Getenv: func(string) string { return "k" }})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}})
			info, res := runAndWait(t, f, engine.StartRequest{})
			r := res["j-t"]
			if info.Status != runs.StatusCompleted || r.Status != runs.TestPassed || judged.Load() != 1 || r.Details["judge"] != "PASS" {
				t.Fatalf("run %+v; result %+v; the judge was asked %d times", info, r, judged.Load())
			}
			if n := len(r.Calls); n != 2 || r.Calls[0].Purpose != runs.CallTest || r.Calls[1].Purpose != runs.CallJudge {
				t.Fatalf("calls %+v", r.Calls)
			}
		})
	}
}

// TestProviderMalformedAnswers: an answer cut inside its JSON, or a
// stream cut short or with an event that does not parse, makes that test
// an error saying so, on every kind; the other tests are scored.
func TestProviderMalformedAnswers(t *testing.T) {
	t.Parallel()
	for _, k := range providerKinds {
		for _, c := range []struct {
			name   string
			stream bool
			faults llmtest.Options
			want   string
		}{
			{"truncated JSON", false, llmtest.Options{Garbage: llmtest.Schedule{Every: 2}}, "malformed"},
			{"malformed stream", true, llmtest.Options{Garbage: llmtest.Schedule{Every: 2}}, "malformed"},
			{"stream cut short", true, llmtest.Options{CutStreams: llmtest.Schedule{Every: 2}}, "llm: chat completion"},
		} {
			t.Run(k.kind+"/"+c.name, func(t *testing.T) {
				prov := llmtest.NewServer(c.faults)
				t.Cleanup(prov.Close)
				snap := newDefs().domain("math", "", true).sums("math", 1, 6, 0).snap()
				f := newFixture(t, fixtureOpts{snap: snap, concurrency: 1, model: func(m harness.ChatModel) harness.ChatModel {
					ps, _ := llm.ParseProviders([]string{"p=" + k.kind + ",base_url=" + k.base(prov.URL) + ",api_key_env=K"})
					r, err := llm.NewRouter(llm.RouterOptions{Default: m.(*llm.Client), Providers: ps, Getenv: func(string) string { return "k" },
						Client: llm.Options{MaxRetries: -1}})
					if err != nil {
						t.Fatal(err)
					}
					return r
				}})
				zero := 0
				info, res := runAndWait(t, f, engine.StartRequest{Model: "p/m", Stream: c.stream, Retries: &zero})
				if info.Errors != 3 || info.Passed != 3 {
					t.Fatalf("run %+v; want 3 errors and 3 passed", info)
				}
				for id, r := range res {
					if r.Status != runs.TestError {
						continue
					}
					if msg, _ := r.Details["error"].(string); !strings.Contains(msg, c.want) {
						t.Errorf("%s: error %q does not say %q", id, msg, c.want)
					}
				}
			})
		}
	}
}
