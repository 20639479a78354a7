package engine_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/regexeval"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// roles lists the roles of a transcript, a pass-2 message with a "*".
func roles(tr []runs.Message) string {
	var out []string
	for _, m := range tr {
		s := m.Role
		if m.Pass2 {
			s += "*"
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

// shape lists the calls as purpose/round/attempt/status[/http].
func shape(calls []runs.Call) string {
	var out []string
	for _, c := range calls {
		s := c.Purpose + "/" + string(rune('0'+c.Round)) + "/" + string(rune('0'+c.Attempt)) + "/" + c.Status
		if c.HTTPStatus != 0 {
			s += "/" + string(rune('0'+c.HTTPStatus/100)) + "xx"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// checkTokens: the tokens of a result are those of its calls that got
// an answer.
func checkTokens(t *testing.T, r runs.Result) {
	t.Helper()
	var p, c int
	for i, call := range r.Calls {
		p, c = p+call.PromptTokens, c+call.CompletionTokens
		if i > 0 && call.StartMS < r.Calls[i-1].StartMS {
			t.Errorf("%s: calls out of order: %+v", r.TestID, r.Calls)
		}
		if call.DurationMS < 0 || call.StartMS < 0 || call.StartMS > r.DurationMS {
			t.Errorf("%s: call %+v outside the test's %d ms", r.TestID, call, r.DurationMS)
		}
	}
	if p != r.PromptTokens || c != r.CompletionTokens {
		t.Errorf("%s: calls count %d+%d tokens, the result %d+%d", r.TestID, p, c, r.PromptTokens, r.CompletionTokens)
	}
}

// TestTranscriptAndCalls: every result keeps the messages of its test in
// order (tool rounds, the second pass marked) and each attempt of each
// model request (retries, tool rounds, second pass, judge), stored and
// read back; a cached run's calls say so, and a rescore keeps the
// source's conversation with calls of its own.
func TestTranscriptAndCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator("fakejudge", &fakeJudge{}); err != nil {
		t.Fatal(err)
	}
	c := &countingLLM{}
	var mu sync.Mutex
	flaky := 0
	f := newFixture(t, fixtureOpts{snap: cacheDefs().snap(), registry: reg, llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		switch promptID(req.LastUser()) {
		case "math-l1-t0": // two failures, then an answer
			mu.Lock()
			defer mu.Unlock()
			if flaky++; flaky <= 2 {
				return &llmtest.Reply{Status: 503, Content: "overloaded"}
			}
		case "math-l1-t1": // always failing
			return &llmtest.Reply{Status: 500, Content: "broken"}
		}
		return c.respond(req)
	}}})

	info, res := runAndWait(t, f, engine.StartRequest{})
	if info.DoneTests != len(res) || len(res) != 8 {
		t.Fatalf("run %+v with %d results", info, len(res))
	}
	for _, r := range res {
		checkTokens(t, r)
		if r.Transcript[0].Role == harness.RoleSystem && r.Transcript[0].Content != r.SystemPrompt {
			t.Errorf("%s: transcript starts with %q, system prompt %q", r.TestID, r.Transcript[0].Content, r.SystemPrompt)
		}
	}

	for _, tc := range []struct {
		test, roles, calls string
	}{
		{"tools-weather", "system,user,assistant,tool,assistant", "test/0/1/ok tool_round/1/1/ok"},
		{"p2-t", "user,assistant,user*,assistant*", "test/0/1/ok pass2/0/1/ok"},
		{"j-t", "user,assistant", "test/0/1/ok judge/0/1/ok"},
		{"math-l1-t0", "system,user,assistant", "test/0/1/http_error/5xx test/0/2/http_error/5xx test/0/3/ok"},
		{"math-l1-t1", "system,user", "test/0/1/http_error/5xx test/0/2/http_error/5xx test/0/3/http_error/5xx"},
	} {
		r := res[tc.test]
		if got := roles(r.Transcript); got != tc.roles {
			t.Errorf("%s: transcript %s, want %s", tc.test, got, tc.roles)
		}
		if got := shape(r.Calls); got != tc.calls {
			t.Errorf("%s: calls %s, want %s", tc.test, got, tc.calls)
		}
	}
	w := res["tools-weather"].Transcript
	if len(w) == 5 && (len(w[2].ToolCalls) != 1 || w[2].ToolCalls[0].Name != "get_weather" || w[3].ToolCallID != w[2].ToolCalls[0].ID ||
		!strings.Contains(w[3].Content, "celsius") || w[4].Content != res["tools-weather"].Response) {
		t.Errorf("tool round trip: %+v", w)
	}
	p2 := res["p2-t"]
	if tr := p2.Transcript; len(tr) == 4 && (tr[1].Content != p2.Response || tr[2].Content != regexeval.Pass2Prompt || tr[3].Content != p2.Details["pass2_response"]) {
		t.Errorf("second pass: %+v", tr)
	}
	bad := res["math-l1-t1"]
	if bad.Status != runs.TestError || !strings.Contains(bad.Calls[0].Error, "broken") {
		t.Errorf("failing test: %s, calls %+v", bad.Status, bad.Calls)
	}

	// A cached run: the model's answers come from the cache, the judge is
	// asked again.
	_, warm := runAndWait(t, f, engine.StartRequest{Cache: true, Domains: []string{"p2", "j", "tools"}})
	_, cached := runAndWait(t, f, engine.StartRequest{Cache: true, Domains: []string{"p2", "j", "tools"}})
	for test, want := range map[string]string{
		"p2-t":          "test/0/1/cached pass2/0/1/cached",
		"j-t":           "test/0/1/cached judge/0/1/ok",
		"tools-weather": "test/0/1/cached tool_round/1/1/cached",
	} {
		if got := shape(cached[test].Calls); got != want {
			t.Errorf("cached %s: calls %s, want %s", test, got, want)
		}
		if !reflect.DeepEqual(cached[test].Transcript, warm[test].Transcript) {
			t.Errorf("cached %s: transcript %+v, want the run's that filled the cache %+v", test, cached[test].Transcript, warm[test].Transcript)
		}
		checkTokens(t, cached[test])
	}

	// A rescore: the source's conversation, the rescore's own calls.
	id, err := f.eng.Rescore(ctx, info.RunID)
	if err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	rescored := resultByID(t, f, id)
	for test, src := range res {
		r := rescored[test]
		if !reflect.DeepEqual(r.Transcript, src.Transcript) {
			t.Errorf("rescored %s: transcript %s, the source's %s", test, roles(r.Transcript), roles(src.Transcript))
		}
		want := ""
		if test == "j-t" {
			want = "judge/0/1/ok"
		}
		if got := shape(r.Calls); got != want {
			t.Errorf("rescored %s: calls %q, want %q", test, got, want)
		}
	}
}

// opaque is a ChatModel that reports no attempts (as one brought by an
// embedder may not).
type opaque struct{ next harness.ChatModel }

func (o opaque) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	r := *req
	r.OnAttempt = nil
	return o.next.Chat(ctx, &r)
}

// TestCallsOfAnOpaqueClient: a client that reports no attempts has each
// request recorded as one call, measured around it, its failure
// classified from its error (here the llm client's, which retried the
// request unseen).
func TestCallsOfAnOpaqueClient(t *testing.T) {
	t.Parallel()
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator("fakejudge", &fakeJudge{}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{snap: cacheDefs().snap(), registry: reg, model: func(m harness.ChatModel) harness.ChatModel { return opaque{m} },
		llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
			if promptID(req.LastUser()) == "math-l1-t1" {
				return &llmtest.Reply{Status: 500, Content: "broken"}
			}
			return nil
		}}})
	_, res := runAndWait(t, f, engine.StartRequest{Domains: []string{"math", "tools"}})
	for test, want := range map[string]string{
		"math-l1-t0":    "test/0/1/ok",
		"math-l1-t1":    "test/0/1/http_error/5xx",
		"tools-weather": "test/0/1/ok tool_round/1/1/ok",
	} {
		if got := shape(res[test].Calls); got != want {
			t.Errorf("%s: calls %s, want %s", test, got, want)
		}
		checkTokens(t, res[test])
	}
}
