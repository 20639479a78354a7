package judge_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// faithfulJudge is a judge model on an llmtest endpoint that grades
// faithfulness as a careful judge would: 1 when the number the response
// gives is in the retrieved text, 0 otherwise. Any other judge request is
// answered 0.5, so that a judge asked by the rubric shows.
type faithfulJudge struct {
	srv    *llmtest.Server
	client *llm.Client
	mu     sync.Mutex
	seen   []*llmtest.Request
}

func newFaithfulJudge(t *testing.T) *faithfulJudge {
	t.Helper()
	j := &faithfulJudge{}
	j.srv = llmtest.NewServer(llmtest.Options{Model: "judge-model", Respond: func(req *llmtest.Request) *llmtest.Reply {
		j.mu.Lock()
		j.seen = append(j.seen, req)
		j.mu.Unlock()
		if req.Messages[0].Content != judge.FaithfulnessSystemPrompt {
			return &llmtest.Reply{Content: "Score: 0.5"}
		}
		user := req.LastUser()
		retrieved := between(user, "<retrieved>", "</retrieved>")
		response := between(user, "<response>", "</response>")
		for _, n := range []string{"30", "14"} {
			if strings.Contains(response, n) {
				if strings.Contains(retrieved, n+" days") {
					return &llmtest.Reply{Content: "The response's " + n + " days is in the retrieved text.\nScore: 1"}
				}
				return &llmtest.Reply{Content: "The retrieved text does not say " + n + " days.\nScore: 0"}
			}
		}
		return &llmtest.Reply{Content: "Score: 0"}
	}})
	t.Cleanup(j.srv.Close)
	var err error
	if j.client, err = llm.New(llm.Options{BaseURL: j.srv.URL, Model: "judge-model"}); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j *faithfulJudge) requests() []*llmtest.Request {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]*llmtest.Request(nil), j.seen...)
}

func between(s, open, close string) string {
	_, rest, _ := strings.Cut(s, open)
	in, _, _ := strings.Cut(rest, close)
	return in
}

func faithfulCfg(kv ...any) harness.EvaluatorConfig {
	c := map[string]any{"faithfulness": true}
	for i := 0; i < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return harness.EvaluatorConfig{ID: "faithful", Name: "Faithful", Type: judge.Type, Config: c}
}

func faithfulRequest(ec harness.EvaluatorConfig, response string, r *harness.Retrieval) *harness.EvalRequest {
	return &harness.EvalRequest{
		Test:      harness.Test{ID: "refund", Prompt: "How long is the refund window?", Expected: harness.Expected{Answer: "30", Type: "numeric"}},
		Evaluator: ec, Response: response, Model: "run-model", Retrieval: r,
	}
}

var policy = &harness.Retrieval{Mode: "bm25", Text: "Knowledge base:\n\n### policy.md\n\nRefunds within 30 days of purchase.",
	Sources: []harness.Source{{File: "policy.md", Score: 2}}}

// TestFaithfulness: with faithfulness set, the judge grades whether the
// response is supported by the retrieved text (not whether it is right),
// the score and verdict are the judge's, and the details say that
// faithfulness was judged.
func TestFaithfulness(t *testing.T) {
	j := newFaithfulJudge(t)
	ev := judge.New(judge.Options{Client: j.client})
	ctx := context.Background()

	res, err := ev.Evaluate(ctx, faithfulRequest(faithfulCfg(), "The window is 30 days.", policy))
	if err != nil {
		t.Fatal(err)
	}
	if res.Score != 1 || !res.Passed || res.Details["faithfulness"] != true || res.Details["judge_score"] != 1.0 ||
		!strings.Contains(res.Details["judge_reasoning"].(string), "is in the retrieved text") {
		t.Errorf("supported answer: score %v passed %v details %v", res.Score, res.Passed, res.Details)
	}
	req := j.requests()[0]
	user := req.LastUser()
	for _, want := range []string{"<retrieved>\nKnowledge base:\n\n### policy.md\n\nRefunds within 30 days of purchase.\n</retrieved>",
		"<task>\nHow long is the refund window?\n</task>", "<response>\nThe window is 30 days.\n</response>", "Score: <a number from 0 to 1>"} {
		if !strings.Contains(user, want) {
			t.Errorf("the judge's prompt lacks %q:\n%s", want, user)
		}
	}
	if strings.Contains(user, "<criteria>") {
		t.Errorf("criteria without a rubric:\n%s", user)
	}

	// An answer the retrieved text does not support fails, however sure
	// it sounds; the reason says faithfulness.
	res, err = ev.Evaluate(ctx, faithfulRequest(faithfulCfg(), "The window is 14 days.", policy))
	if err != nil {
		t.Fatal(err)
	}
	if res.Score != 0 || res.Passed || res.Details["faithfulness"] != true ||
		res.Details["reason"] != "faithfulness score 0 is below pass_score 0.5" {
		t.Errorf("unsupported answer: score %v passed %v details %v", res.Score, res.Passed, res.Details)
	}

	// A rubric is given as further criteria.
	if _, err := ev.Evaluate(ctx, faithfulRequest(faithfulCfg("rubric", "Cite the policy."), "30 days.", policy)); err != nil {
		t.Fatal(err)
	}
	reqs := j.requests()
	if user := reqs[len(reqs)-1].LastUser(); !strings.Contains(user, "<criteria>\nCite the policy.\n</criteria>") {
		t.Errorf("the rubric is not among the criteria:\n%s", user)
	}

	// Without faithfulness the same judge grades by the rubric.
	res, err = ev.Evaluate(ctx, faithfulRequest(cfg(), "The window is 14 days.", policy))
	if err != nil || res.Score != 0.5 || res.Details["faithfulness"] != nil {
		t.Errorf("rubric judge: %v, %+v", err, res)
	}
}

// TestFaithfulnessWithoutRetrieval: a request with no retrieved text (not
// an agent run, or an agent whose knowledge base gave nothing) is an
// error wrapping ErrNoRetrieval saying which, never a pass, and the
// judge is not asked.
func TestFaithfulnessWithoutRetrieval(t *testing.T) {
	j := newFaithfulJudge(t)
	ev := judge.New(judge.Options{Client: j.client})
	for _, tc := range []struct {
		name string
		r    *harness.Retrieval
		why  string
	}{
		{"not an agent run", nil, "the run does not target an agent"},
		{"an empty knowledge base", &harness.Retrieval{Sources: []harness.Source{}}, "gave no text for this prompt"},
		{"blank text", &harness.Retrieval{Mode: "bm25", Text: " \n"}, "gave no text for this prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ev.Evaluate(context.Background(), faithfulRequest(faithfulCfg(), "30 days.", tc.r))
			if !errors.Is(err, judge.ErrNoRetrieval) || !strings.Contains(err.Error(), tc.why) || res != nil {
				t.Fatalf("Evaluate = %+v, %v; want an error wrapping ErrNoRetrieval saying %q", res, err, tc.why)
			}
		})
	}
	if n := len(j.requests()); n != 0 {
		t.Errorf("the judge was asked %d times", n)
	}
}

func TestFaithfulnessConfig(t *testing.T) {
	ev := judge.New(judge.Options{})
	for _, tc := range []struct {
		name   string
		ec     harness.EvaluatorConfig
		fields []string
	}{
		{"faithfulness needs no rubric", faithfulCfg(), nil},
		{"faithfulness with a rubric", faithfulCfg("rubric", "Cite the file."), nil},
		{"faithfulness off needs a rubric", faithfulCfg("faithfulness", false), []string{"config.rubric"}},
		{"faithfulness as text", faithfulCfg("faithfulness", "yes", "rubric", "r"), []string{"config.faithfulness"}},
		{"faithfulness and cascade", faithfulCfg("cascade", true), []string{"config.cascade"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ev.ValidateConfig(tc.ec)
			var got []string
			var ve *harness.ValidationError
			if errors.As(err, &ve) {
				for _, f := range ve.Fields {
					got = append(got, f.Field)
				}
			}
			if !reflect.DeepEqual(got, tc.fields) {
				t.Errorf("fields %q, want %q (%v)", got, tc.fields, err)
			}
		})
	}
}
