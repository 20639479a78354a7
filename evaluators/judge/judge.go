package judge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/regexeval"
)

// Type is the evaluator type an evaluator record names to use this
// evaluator, and the name a plugin executable of it carries
// (gauntlet-evaluator-judge).
const Type = "judge"

// ExpectedType is the expected answer type of tests graded by the rubric:
// expected.answer is an optional reference answer, and a test may have
// none. RegisterExpectedType makes it valid in a Registry.
const ExpectedType = "rubric"

// RegisterExpectedType registers ExpectedType in reg. Tests of that type
// need no expected answer; when they have one, the judge is shown it as
// a reference.
func RegisterExpectedType(reg *harness.Registry) error {
	return reg.RegisterExpectedType(ExpectedType, CheckExpected)
}

// CheckExpected is the write-time check of ExpectedType: any answer,
// including none, is valid. It is a harness.ExpectedChecker.
func CheckExpected(harness.Expected) error { return nil }

// Values of details["cascade"].
const (
	// CascadeRegexPassed: the regex evaluator passed the test; the judge
	// was not asked.
	CascadeRegexPassed = "regex_passed"
	// CascadeJudged: the regex evaluator did not pass the test (or could
	// not score it), and the judge decided.
	CascadeJudged = "judged"
)

// ErrNoRetrieval reports that a faithfulness judge (Config.Faithfulness)
// was asked to grade a response with no retrieved text to grade it
// against: the run does not target an agent, or the agent's knowledge
// base gave no text for the prompt (it is empty, or nothing matched). The
// engine records such a test as an error, never as passed.
var ErrNoRetrieval = errors.New("no retrieved text to judge faithfulness against")

// ErrVerdict reports that the judge's replies held no verdict ParseVerdict
// could read, after the retry.
var ErrVerdict = errors.New("no readable verdict from the judge")

// maxQuoted bounds the judge reply quoted in an ErrVerdict error.
const maxQuoted = 200

// Options configures an Evaluator. The zero value is ready to use: the
// judge is then the run's model.
type Options struct {
	// Client is a dedicated judge model. Nil means the run's model, the
	// request's EvalRequest.Client.
	Client harness.ChatModel
	// Model is the model name sent to Client when the evaluator record
	// sets no judge_model; empty means Client's default. It is not used
	// when Client is nil: the run's model name (EvalRequest.Model) is.
	Model string
	// Logger receives a line when a verdict could not be read and the
	// judge is asked again; nil discards them. Prompts and replies are
	// never logged.
	Logger *slog.Logger
}

// Evaluator is model-graded scoring: a judge model grades the response by
// the rubric of the evaluator record. It implements harness.Evaluator and
// harness.ConfigValidator, and is safe for concurrent use. Create it with
// New.
type Evaluator struct {
	model     harness.ChatModel
	modelName string
	log       *slog.Logger
	regex     *regexeval.Evaluator
}

var (
	_ harness.Evaluator       = (*Evaluator)(nil)
	_ harness.ConfigValidator = (*Evaluator)(nil)
)

// New returns an Evaluator with the given options.
func New(opts Options) *Evaluator {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{
		model:     opts.Client,
		modelName: opts.Model,
		log:       log,
		regex:     regexeval.New(regexeval.Options{}),
	}
}

// ValidateConfig checks an evaluator record of this type: its config
// decodes into a Config with harness.DecodeConfig (config.rubric is a
// non-empty string, optional with faithfulness; judge_model a string;
// cascade and faithfulness booleans, not both true; pass_score a number
// from 0 to 1; temperature a number from 0 to 2; no other key), and
// extraction_regex, used when cascading, compiles. Errors are a
// *harness.ValidationError naming fields such as "config.rubric". It
// implements harness.ConfigValidator.
func (e *Evaluator) ValidateConfig(cfg harness.EvaluatorConfig) error {
	ve := &harness.ValidationError{}
	_, err := parseConfig(cfg.Config, true)
	ve.Merge("", err)
	ve.Merge("", e.regex.ValidateConfig(cfg))
	return ve.Err()
}

// Evaluate grades req.Response with the judge model.
//
// With cascade set, the regex evaluator scores the response first, with
// the record's extraction_regex and uses_pass2; when it passes the test,
// its result is returned as is, with details["cascade"] =
// "regex_passed", and the judge is not asked. Otherwise — the regex
// evaluator failed the test, or returned an error such as an expected
// type it does not know (details["regex_error"]) — the judge decides.
//
// The judge gets the rubric, the system prompt and the test's prompt, the
// expected answer and its type, the tool calls the model made, and the
// response, and is asked to end with "Score: <0 to 1>". When ParseVerdict
// reads no verdict from the reply, the judge is asked once more, with a
// stricter instruction (RetryPrompt); when that reply holds none either,
// Evaluate returns an error wrapping ErrVerdict. The score is the judge's;
// the test passes when it reaches pass_score.
//
// With faithfulness set, the judge is instead given the knowledge-base
// text the agent's retrieval gave the model (req.Retrieval.Text), the
// test's prompt, the rubric when there is one, and the response, and is
// asked how fully the response is supported by that text
// (FaithfulnessSystemPrompt); details["faithfulness"] is true. A request
// without retrieved text (not an agent run, or nothing retrieved) is an
// error wrapping ErrNoRetrieval: the judge is not asked.
//
// Details: judge_score, judge_reasoning, judge_model, judge_verdict (the
// text the score was read from), judge_attempts, pass_score,
// extracted_answer (the response; the regex evaluator's answer when
// cascading), pass2_used, cascade (when cascading), regex_reason (why the
// regex evaluator failed the test), and reason when the test failed.
// Usage counts the tokens of the judge requests and of the regex
// evaluator's second pass.
//
// Evaluate returns an error wrapping harness.ErrInvalid when the record's
// config is invalid or there is no judge model, and an error when a judge
// request fails. A config key Config has no field for is ignored here (it
// is refused when the record is written), so that a record stored by
// another version still runs.
func (e *Evaluator) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("judge: nil request: %w", harness.ErrInvalid)
	}
	s, err := parseConfig(req.Evaluator.Config, false)
	if err != nil {
		return nil, fmt.Errorf("judge: evaluator %s: %w", req.Evaluator.ID, err)
	}
	model, name := e.target(req, s)
	if model == nil {
		return nil, fmt.Errorf("judge: no judge model: the request has no model and Options.Model is nil: %w", harness.ErrInvalid)
	}

	details := map[string]any{
		"extracted_answer": req.Response,
		"pass2_used":       false,
		"pass_score":       s.PassScore,
	}
	var usage harness.Usage
	// A rubric test has nothing for the regex evaluator to check.
	if s.Cascade && req.Test.Expected.Type != ExpectedType {
		res, err := e.regex.Evaluate(ctx, req)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("judge: %w", context.Cause(ctx))
		case err != nil:
			details["regex_error"] = err.Error()
		case res.Passed:
			if res.Details == nil {
				res.Details = map[string]any{}
			}
			res.Details["cascade"] = CascadeRegexPassed
			return res, nil
		default:
			usage = res.Usage
			for _, k := range []string{"extracted_answer", "pass2_used"} {
				if v, ok := res.Details[k]; ok {
					details[k] = v
				}
			}
			if r, ok := res.Details["reason"]; ok {
				details["regex_reason"] = r
			}
		}
	}
	if s.Cascade {
		details["cascade"] = CascadeJudged
	}

	var msgs []harness.Message
	if s.Faithfulness {
		if err := hasRetrieval(req); err != nil {
			return nil, err
		}
		msgs = faithfulnessMessages(s.Rubric, req)
		details["faithfulness"] = true
	} else {
		msgs = messages(s.Rubric, req)
	}
	a, err := e.ask(ctx, model, name, s, req, msgs)
	if err != nil {
		return nil, err
	}
	v := a.verdict
	reasoning := v.Reasoning
	if reasoning == "" {
		reasoning = a.transcript
	}
	judgeModel := name
	if judgeModel == "" {
		judgeModel = a.reported
	}
	usage = usage.Add(a.usage)
	details["judge_score"] = v.Score
	details["judge_reasoning"] = reasoning
	details["judge_model"] = judgeModel
	details["judge_verdict"] = v.Text
	details["judge_attempts"] = a.attempts
	res := &harness.EvalResult{Score: v.Score, Passed: v.Score >= s.PassScore, Details: details, Usage: usage}
	if !res.Passed {
		what := "judge score"
		if s.Faithfulness {
			what = "faithfulness score"
		}
		details["reason"] = fmt.Sprintf("%s %v is below pass_score %v", what, v.Score, s.PassScore)
	}
	return res, nil
}

// hasRetrieval checks that a faithfulness judge has retrieved text to
// grade against: an error wrapping ErrNoRetrieval says why not.
func hasRetrieval(req *harness.EvalRequest) error {
	switch {
	case req.Retrieval == nil:
		return fmt.Errorf("judge: faithfulness: %w: the run does not target an agent, so nothing was retrieved", ErrNoRetrieval)
	case strings.TrimSpace(req.Retrieval.Text) == "":
		return fmt.Errorf("judge: faithfulness: %w: the agent's knowledge base gave no text for this prompt (it is empty, or nothing matched)", ErrNoRetrieval)
	}
	return nil
}

// target picks the judge model and the model name sent to it.
func (e *Evaluator) target(req *harness.EvalRequest, s Config) (harness.ChatModel, string) {
	if e.model != nil {
		if s.JudgeModel != "" {
			return e.model, s.JudgeModel
		}
		return e.model, e.modelName
	}
	if s.JudgeModel != "" {
		return req.Client, s.JudgeModel
	}
	return req.Client, req.Model
}

// answer is what ask got from the judge.
type answer struct {
	verdict    Verdict
	transcript string // the judge's replies, joined by a blank line
	reported   string // the model name the endpoint reported
	attempts   int
	usage      harness.Usage
}

// ask asks the judge for a verdict, once more with RetryPrompt when the
// first reply holds none.
func (e *Evaluator) ask(ctx context.Context, model harness.ChatModel, name string, s Config,
	req *harness.EvalRequest, msgs []harness.Message) (answer, error) {
	var (
		a       answer
		replies []string
	)
	for a.attempts = 1; ; a.attempts++ {
		resp, err := model.Chat(ctx, &harness.ChatRequest{Model: name, Messages: msgs, Temperature: s.Temperature})
		if err == nil && resp == nil {
			err = errors.New("empty response")
		}
		if err != nil {
			return a, fmt.Errorf("judge: model %q: %w", name, err)
		}
		a.usage = a.usage.Add(total(resp.Usage))
		if a.reported == "" {
			a.reported = resp.Model
		}
		reply := resp.Message.Content
		replies = append(replies, strings.TrimSpace(reply))
		if v, ok := ParseVerdict(reply); ok {
			a.verdict, a.transcript = v, strings.Join(replies, "\n\n")
			return a, nil
		}
		if a.attempts == 2 {
			return a, fmt.Errorf("judge: test %s: model %q: %w after %d replies; last: %q",
				req.Test.ID, name, ErrVerdict, a.attempts, quote(reply))
		}
		e.log.WarnContext(ctx, "judge: no verdict in the reply, asking again",
			"test_id", req.Test.ID, "evaluator_id", req.Evaluator.ID, "judge_model", name, "reply_chars", len(reply))
		msgs = append(msgs,
			harness.Message{Role: harness.RoleAssistant, Content: reply},
			harness.Message{Role: harness.RoleUser, Content: RetryPrompt})
	}
}

// total fills in TotalTokens when an endpoint left it out.
func total(u harness.Usage) harness.Usage {
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

func quote(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxQuoted {
		return string(r[:maxQuoted]) + "…"
	}
	return s
}
