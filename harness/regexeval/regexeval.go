package regexeval

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Pass2Prompt is the default user message of the second pass, sent after
// the conversation when nothing usable was extracted from the response.
const Pass2Prompt = "Reply with only your final answer: no explanation, no working, no other text."

// Options configures an Evaluator. The zero value is ready to use.
type Options struct {
	// MatchTimeout bounds a regexp2 extraction (patterns the standard
	// library cannot run). Zero means 1 s: wall-clock time, so a busy machine
	// must not time out an honest match. regexp2's clock is coarse: a
	// timeout may fire up to about 100 ms late.
	MatchTimeout time.Duration
	// Pass2Prompt replaces the package's Pass2Prompt when not empty.
	Pass2Prompt string

	// forceRegexp2 runs every pattern on regexp2, for tests and benchmarks
	// of that path.
	forceRegexp2 bool
}

// Evaluator is the built-in regex evaluator. It is safe for concurrent
// use; compiled patterns are cached.
type Evaluator struct {
	pass2Prompt string
	patterns    cache
}

var (
	_ harness.Evaluator       = (*Evaluator)(nil)
	_ harness.ConfigValidator = (*Evaluator)(nil)
)

// defaultEvaluator backs the package-level Extract and Compare.
var defaultEvaluator = New(Options{})

// New returns an Evaluator with the given options.
func New(opts Options) *Evaluator {
	if opts.MatchTimeout <= 0 {
		opts.MatchTimeout = defaultMatchTimeout
	}
	if opts.Pass2Prompt == "" {
		opts.Pass2Prompt = Pass2Prompt
	}
	return &Evaluator{
		pass2Prompt: opts.Pass2Prompt,
		patterns:    cache{timeout: opts.MatchTimeout, forceRegexp2: opts.forceRegexp2},
	}
}

// ValidateConfig checks that an evaluator record's extraction_regex
// compiles on the engine that will run it. It implements
// harness.ConfigValidator.
func (e *Evaluator) ValidateConfig(cfg harness.EvaluatorConfig) error {
	if cfg.ExtractionRegex == "" {
		return nil
	}
	if _, err := e.patterns.get(cfg.ExtractionRegex); err != nil {
		return harness.Invalid("extraction_regex", "%v", err)
	}
	return nil
}

// Evaluate extracts the answer from req.Response with
// req.Evaluator.ExtractionRegex, asks the model to restate its final
// answer when nothing usable was extracted and uses_pass2 is set, and
// compares the answer with req.Test.Expected. The score is 1 or 0.
//
// Details always hold expected_type, extracted_answer and pass2_used; plus
// pass2_response, pass1_answer and pass1_reason (why the second pass was
// needed) when the second pass ran, regex_engine ("stdlib" or "regexp2")
// when extraction_regex was applied, tool_calls for the tool_call type, and
// reason when the test failed.
//
// Evaluate returns an error, and no result, when the test or the evaluator
// record is invalid (unknown expected type, an expected answer that does
// not parse for its type, an extraction_regex that does not compile; these
// wrap harness.ErrInvalid), when a regexp2 match ran past the match timeout
// (wrapping ErrMatchTimeout: the pattern, not the model, is at fault, so
// the test is an error rather than a failure and no second pass is tried),
// or when the second-pass request fails.
func (e *Evaluator) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("regexeval: nil request: %w", harness.ErrInvalid)
	}
	t, err := newTarget(req.Test.Expected, &e.patterns)
	if err != nil {
		return nil, fmt.Errorf("regexeval: test %s: %w", req.Test.ID, err)
	}
	details := map[string]any{
		"expected_type":    t.typ,
		"extracted_answer": "",
		"pass2_used":       false,
	}
	res := &harness.EvalResult{Details: details}

	if t.typ == typeToolCall {
		calls := toolCalls(req)
		name, v := t.judgeCalls(calls)
		details["extracted_answer"] = name
		details["tool_calls"] = calls
		return finish(res, v), nil
	}

	expr := req.Evaluator.ExtractionRegex
	if expr != "" {
		if _, err := e.patterns.get(expr); err != nil {
			return nil, fmt.Errorf("regexeval: extraction_regex: %v: %w", err, harness.ErrInvalid)
		}
	}
	answer, v, engine := e.attempt(t, expr, req.Response)
	if engine != "" {
		details["regex_engine"] = engine
	}
	if v.err != nil {
		return nil, fmt.Errorf("regexeval: test %s: %w", req.Test.ID, v.err)
	}
	if !v.usable {
		switch {
		case !req.Evaluator.UsesPass2:
		case req.Client == nil:
			v.reason += "; no model for the second pass"
		default:
			reply, usage, err := e.pass2(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("regexeval: second pass: %w", err)
			}
			res.Usage = usage
			details["pass2_used"] = true
			details["pass2_response"] = reply
			details["pass1_answer"] = answer
			details["pass1_reason"] = v.reason
			answer, v = e.rescue(t, expr, reply)
			if v.err != nil {
				return nil, fmt.Errorf("regexeval: test %s: second pass: %w", req.Test.ID, v.err)
			}
		}
	}
	details["extracted_answer"] = answer
	return finish(res, v), nil
}

// attempt extracts an answer from text and judges it. When the pattern
// finds nothing, the verdict is unusable with the reason.
func (e *Evaluator) attempt(t *target, expr, text string) (string, verdict, string) {
	answer, ok, engine, err := e.patterns.extract(expr, text)
	switch {
	case err != nil:
		return "", verdict{err: fmt.Errorf("extraction_regex: %w", err)}, engine
	case !ok && expr == "":
		return "", unusable("empty response"), engine
	case !ok:
		return "", unusable("extraction_regex found no answer in the response"), engine
	}
	v := t.judge(answer)
	if !v.usable && expr == "" {
		// No pattern and the whole response is not an answer of the type
		// ("The answer is 42."): take the type's last candidate in it.
		if cand, found := lastCandidate(t.typ, text); found {
			if cv := t.judge(cand); cv.usable {
				return cand, cv, engine
			}
		}
	}
	return answer, v, engine
}

var (
	numberCandidate = regexp.MustCompile(`[-+\x{2212}]?\$?\d[\d,]*(?:\.\d+)?(?:/\d+)?%?`)
	choiceCandidate = regexp.MustCompile(`(?:^|[\s(\[*])([A-Z])(?:$|[\s).\]:*,])`)
	boolCandidate   = regexp.MustCompile(`(?i)\b(yes|no|true|false)\b`)
)

// lastCandidate finds the answer a response without an extraction_regex
// most likely gives: its last number (numeric, integer), its last lone
// capital letter (choice), its first yes/no (boolean).
func lastCandidate(typ, text string) (string, bool) {
	switch typ {
	case typeNumeric, typeInteger:
		if all := numberCandidate.FindAllString(text, -1); len(all) > 0 {
			return strings.TrimRight(all[len(all)-1], ","), true
		}
	case typeChoice:
		if all := choiceCandidate.FindAllStringSubmatch(text, -1); len(all) > 0 {
			return all[len(all)-1][1], true
		}
	case typeBoolean:
		if m := boolCandidate.FindStringSubmatch(text); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// rescue judges the second-pass reply: extraction on the reply first;
// when that finds nothing usable, the trimmed reply itself; then the reply
// without an "Answer:" label. The first usable candidate wins.
func (e *Evaluator) rescue(t *target, expr, reply string) (string, verdict) {
	answer, v, _ := e.attempt(t, expr, reply)
	if v.usable || v.err != nil {
		return answer, v
	}
	trimmed := strings.TrimSpace(reply)
	if answer == "" {
		answer, v = trimmed, t.judge(trimmed)
		if v.usable || v.err != nil {
			return answer, v
		}
	} else if tv := t.judge(trimmed); tv.usable || tv.err != nil {
		return trimmed, tv
	}
	if s := stripLabel(reply); s != trimmed && s != "" {
		if sv := t.judge(s); sv.usable || sv.err != nil {
			return s, sv
		}
	}
	v.reason = "second pass: " + v.reason
	return answer, v
}

// answerLabel matches a label a model may put before its restated answer.
var answerLabel = regexp.MustCompile(`(?i)^\W*(?:(?:my|the)\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:=\-]?\s*`)

func stripLabel(s string) string {
	s = strings.TrimSpace(s)
	s = answerLabel.ReplaceAllString(s, "")
	return strings.TrimSpace(strings.TrimRight(s, "."))
}

// pass2 asks the model to restate only its final answer.
func (e *Evaluator) pass2(ctx context.Context, req *harness.EvalRequest) (string, harness.Usage, error) {
	msgs := conversation(req)
	msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: e.pass2Prompt})
	resp, err := req.Client.Chat(ctx, &harness.ChatRequest{Model: req.Model, Messages: msgs})
	if err != nil {
		return "", harness.Usage{}, err
	}
	if resp == nil {
		return "", harness.Usage{}, errors.New("empty response")
	}
	u := resp.Usage
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return resp.Message.Content, u, nil
}

// conversation is the conversation the second pass continues: the
// request's messages, or system prompt, test prompt and response when it
// has none. It ends with the model's answer.
func conversation(req *harness.EvalRequest) []harness.Message {
	msgs := make([]harness.Message, 0, len(req.Messages)+4)
	if len(req.Messages) > 0 {
		msgs = append(msgs, req.Messages...)
	} else {
		if req.SystemPrompt != "" {
			msgs = append(msgs, harness.Message{Role: harness.RoleSystem, Content: req.SystemPrompt})
		}
		msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: req.Test.Prompt})
	}
	if msgs[len(msgs)-1].Role != harness.RoleAssistant {
		msgs = append(msgs, harness.Message{Role: harness.RoleAssistant, Content: req.Response})
	}
	return msgs
}

// toolCalls are the calls the model made: req.ToolCalls, else those of the
// assistant messages of the conversation.
func toolCalls(req *harness.EvalRequest) []harness.ToolCall {
	if len(req.ToolCalls) > 0 {
		return append([]harness.ToolCall(nil), req.ToolCalls...)
	}
	calls := []harness.ToolCall{}
	for _, m := range req.Messages {
		if m.Role == harness.RoleAssistant {
			calls = append(calls, m.ToolCalls...)
		}
	}
	return calls
}

func finish(res *harness.EvalResult, v verdict) *harness.EvalResult {
	if v.passed {
		res.Score, res.Passed = 1, true
		return res
	}
	res.Details["reason"] = v.reason
	return res
}
