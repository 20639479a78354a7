package runs

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Message is one message of a result's transcript: a harness.Message and
// where it comes from.
type Message struct {
	harness.Message
	// Pass2 marks the evaluator's second pass: the request that asked the
	// model under test to restate its answer, and the model's reply.
	Pass2 bool `json:"pass2,omitempty"`
	// Truncated reports that the content or a tool call's arguments were
	// cut to fit the stored transcript's cap (TranscriptMaxBytes).
	Truncated bool `json:"truncated,omitempty"`
	// Omitted counts the messages left out just before this one, when the
	// transcript had more than TranscriptMaxMessages.
	Omitted int `json:"omitted,omitempty"`
}

// Purposes of a model call (Call.Purpose).
const (
	// CallTest is the first request of a test: the prompt.
	CallTest = "test"
	// CallToolRound is a later request of the test's tool loop, carrying
	// the answers to the tool calls of the round before (Call.Round).
	CallToolRound = "tool_round"
	// CallPass2 is the evaluator's second pass: the model under test asked
	// to restate its final answer.
	CallPass2 = "pass2"
	// CallJudge is a request an evaluator made to a judge model through
	// the run's client.
	CallJudge = "judge"
	// CallSimulator is a request to the model that plays a test's
	// simulated user. It is accounted as a judge's call is: its cost
	// counts in the result's judge cost.
	CallSimulator = "simulator"
)

// Call is one attempt of one model request made for a result: a request
// retried three times is three calls, attempts 1 to 3.
type Call struct {
	Purpose string `json:"purpose"` // test, tool_round, pass2, judge
	// Round is the tool-loop request the call belongs to, from 0 (the
	// test's first request); 0 for pass2 and judge calls.
	Round   int `json:"round"`
	Attempt int `json:"attempt"` // 1 for the first attempt of a request
	// StartMS is when the attempt began, in milliseconds from the start of
	// the test; DurationMS how long it took.
	StartMS    int64 `json:"start_ms"`
	DurationMS int64 `json:"duration_ms"`
	// TTFTMS is the time from the attempt's start to the first token of
	// its answer, when the answer was streamed; absent otherwise.
	TTFTMS int64 `json:"ttft_ms,omitempty"`
	// Model is the model reference the request named (the run's model
	// when it named none); a judge's calls name the judge's model. Empty
	// in calls stored before it was recorded.
	Model string `json:"model,omitempty"`
	// The four token counts the provider reported for the attempt:
	// PromptTokens include CachedTokens, CompletionTokens include
	// ReasoningTokens.
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	CachedTokens     int    `json:"cached_tokens"`
	ReasoningTokens  int    `json:"reasoning_tokens"`
	Status           string `json:"status"`                // harness.Attempt* statuses: ok, cached, http_error, timeout...
	HTTPStatus       int    `json:"http_status,omitempty"` // the endpoint's status code, when it answered with one
	Error            string `json:"error,omitempty"`       // why the attempt failed, at most CallErrorMaxBytes
}

// Bounds of what a result stores of its transcript and calls.
const (
	// TranscriptMaxBytes bounds the text a result's stored transcript
	// holds: the contents, tool-call arguments and reasoning parts' texts
	// of its messages, the
	// ones stored in their own columns (system prompt, prompt, response)
	// not counted. Above it, the longest texts are cut, each to the same
	// length, until the rest fits; the cut messages are marked Truncated.
	TranscriptMaxBytes = 256 << 10
	// TranscriptMaxMessages bounds the messages stored: above it the first
	// TranscriptMaxMessages-transcriptTail messages and the last
	// transcriptTail are kept, the first of those marked with how many
	// were left out (Omitted).
	TranscriptMaxMessages = 1000
	transcriptTail        = 20
	// MaxCalls bounds the calls stored: the first MaxCalls are kept.
	MaxCalls = 500
	// CallErrorMaxBytes bounds a call's error text.
	CallErrorMaxBytes = 500
)

// The stored transcript (column run_results.transcript) is JSON:
//
//	{"v": 1, "prefix": true, "messages": [...]}
//
// Compactness: with prefix true, the transcript's first messages (the
// system prompt, when not empty, then the prompt) are left out and
// rebuilt from their own columns on read; the final answer (the last
// assistant message outside the second pass whose content is the
// response, calling no tools) keeps no content but "response": true, and
// takes the response column's on read; so does the second pass's answer
// when details.pass2_response holds it ("pass2_response": true). Texts that are not valid UTF-8 are
// stored as {"b64": "..."} so that every byte survives.

type storedTranscript struct {
	V        int             `json:"v"`
	Prefix   bool            `json:"prefix,omitempty"`
	Messages []storedMessage `json:"messages"`
}

type storedMessage struct {
	Role     string    `json:"role"`
	Content  exactText `json:"content,omitempty"`
	Response bool      `json:"response,omitempty"`
	// Pass2Response: the content is details.pass2_response.
	Pass2Response bool             `json:"pass2_response,omitempty"`
	ToolCalls     []storedToolCall `json:"tool_calls,omitempty"`
	ToolCallID    exactText        `json:"tool_call_id,omitempty"`
	Pass2         bool             `json:"pass2,omitempty"`
	Truncated     bool             `json:"truncated,omitempty"`
	Omitted       int              `json:"omitted,omitempty"`
	Parts         []storedPart     `json:"parts,omitempty"`
}

// storedPart is a harness.Part, its text and signature byte for byte.
type storedPart struct {
	Kind      string    `json:"kind"`
	Text      exactText `json:"text,omitempty"`
	Signature exactText `json:"signature,omitempty"`
	Redacted  bool      `json:"redacted,omitempty"`
}

type storedToolCall struct {
	ID        exactText `json:"id,omitempty"`
	Name      exactText `json:"name,omitempty"`
	Arguments exactText `json:"arguments,omitempty"`
}

// exactText is text stored byte for byte: a JSON string when it is valid
// UTF-8, else {"b64": "<base64 of the bytes>"}.
type exactText string

func (t exactText) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(t)) {
		return json.Marshal(string(t))
	}
	return json.Marshal(struct {
		B64 string `json:"b64"`
	}{base64.StdEncoding.EncodeToString([]byte(t))})
}

func (t *exactText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = exactText(s)
		return nil
	}
	var o struct {
		B64 string `json:"b64"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(o.B64)
	if err != nil {
		return err
	}
	*t = exactText(raw)
	return nil
}

// prefixOf is the start of a result's conversation that its own columns
// hold: the system prompt (when not empty) and the prompt.
func prefixOf(r *Result) []harness.Message {
	var out []harness.Message
	if r.SystemPrompt != "" {
		out = append(out, harness.Message{Role: harness.RoleSystem, Content: r.SystemPrompt})
	}
	return append(out, harness.Message{Role: harness.RoleUser, Content: r.Prompt})
}

func plainEqual(a Message, b harness.Message) bool {
	return !a.Pass2 && !a.Truncated && a.Omitted == 0 && a.Role == b.Role && a.Content == b.Content &&
		len(a.ToolCalls) == 0 && a.ToolCallID == "" && len(a.Parts) == 0
}

// encodeTranscript returns the stored form of a result's transcript; nil
// (NULL) when it has none.
func encodeTranscript(r *Result) *string {
	if r.Transcript == nil {
		return nil
	}
	msgs := r.Transcript
	st := storedTranscript{V: 1}
	if pre := prefixOf(r); len(msgs) >= len(pre) {
		st.Prefix = true
		for i, p := range pre {
			if !plainEqual(msgs[i], p) {
				st.Prefix = false
				break
			}
		}
		if st.Prefix {
			msgs = msgs[len(pre):]
		}
	}
	final := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == harness.RoleAssistant && !m.Pass2 && !m.Truncated && len(m.ToolCalls) == 0 {
			if m.Content == r.Response {
				final = i
			}
			break
		}
	}
	// The second pass's answer is in the details too, unless JSON could
	// not keep its bytes there.
	pass2, _ := r.Details["pass2_response"].(string)
	if !utf8.ValidString(pass2) {
		pass2 = ""
	}
	st.Messages = make([]storedMessage, 0, min(len(msgs), TranscriptMaxMessages))
	omitted := 0
	if len(msgs) > TranscriptMaxMessages {
		omitted = len(msgs) - TranscriptMaxMessages
	}
	head := TranscriptMaxMessages - transcriptTail
	for i, m := range msgs {
		if omitted > 0 && i >= head && i < head+omitted {
			continue
		}
		s := storedMessage{Role: m.Role, Content: exactText(m.Content), ToolCallID: exactText(m.ToolCallID),
			Pass2: m.Pass2, Truncated: m.Truncated, Omitted: m.Omitted}
		if omitted > 0 && i == head+omitted {
			s.Omitted += omitted
		}
		if i == final {
			s.Content, s.Response = "", true
		} else if m.Pass2 && m.Role == harness.RoleAssistant && m.Content != "" && !m.Truncated && m.Content == pass2 {
			s.Content, s.Pass2Response = "", true
		}
		for _, c := range m.ToolCalls {
			s.ToolCalls = append(s.ToolCalls, storedToolCall{ID: exactText(c.ID), Name: exactText(c.Name), Arguments: exactText(c.Arguments)})
		}
		for _, p := range m.Parts {
			s.Parts = append(s.Parts, storedPart{Kind: p.Kind, Text: exactText(p.Text), Signature: exactText(p.Signature), Redacted: p.Redacted})
		}
		st.Messages = append(st.Messages, s)
	}
	capTexts(st.Messages, TranscriptMaxBytes)
	b, err := json.Marshal(st)
	if err != nil {
		return nil
	}
	s := string(b)
	return &s
}

// capTexts cuts the contents, arguments and reasoning texts of msgs so that together they
// hold at most max bytes: every text longer than a limit L is cut to L,
// L being the largest that fits (the short texts stay whole).
func capTexts(msgs []storedMessage, max int) {
	var lens []int
	total := 0
	for _, m := range msgs {
		lens = append(lens, len(m.Content))
		total += len(m.Content)
		for _, c := range m.ToolCalls {
			lens = append(lens, len(c.Arguments))
			total += len(c.Arguments)
		}
		for _, p := range m.Parts {
			lens = append(lens, len(p.Text))
			total += len(p.Text)
		}
	}
	if total <= max {
		return
	}
	slices.Sort(lens)
	limit, left := 0, max
	for k, l := range lens {
		if rest := len(lens) - k; l*rest > left {
			limit = left / rest
			break
		}
		left -= l
	}
	for i := range msgs {
		m := &msgs[i]
		if len(m.Content) > limit {
			m.Content, m.Truncated = cut(m.Content, limit), true
		}
		for k := range m.ToolCalls {
			if c := &m.ToolCalls[k]; len(c.Arguments) > limit {
				c.Arguments, m.Truncated = cut(c.Arguments, limit), true
			}
		}
		for k := range m.Parts {
			if p := &m.Parts[k]; len(p.Text) > limit {
				p.Text, m.Truncated = cut(p.Text, limit), true
			}
		}
	}
}

// cut returns the first n bytes of s, fewer when that would split a
// UTF-8 sequence.
func cut(s exactText, n int) exactText {
	for k := n; k > 0 && k > n-utf8.UTFMax; k-- {
		if utf8.RuneStart(s[k]) {
			return s[:k]
		}
	}
	return s[:n]
}

// decodeTranscript rebuilds a result's transcript from its stored form.
// A result stored before transcripts were recorded (NULL), or whose
// stored form cannot be read, gets the conversation its columns hold: the
// system prompt, the prompt and the response (no response for an error
// that has none).
func decodeTranscript(r *Result, raw *string) []Message {
	var st storedTranscript
	if raw == nil || json.Unmarshal([]byte(*raw), &st) != nil || st.V != 1 {
		out := wrap(prefixOf(r))
		if r.Response != "" || r.Status != TestError {
			out = append(out, Message{Message: harness.Message{Role: harness.RoleAssistant, Content: r.Response}})
		}
		return out
	}
	var out []Message
	if st.Prefix {
		out = wrap(prefixOf(r))
	}
	out = slices.Grow(out, len(st.Messages))
	for _, s := range st.Messages {
		m := Message{Message: harness.Message{Role: s.Role, Content: string(s.Content), ToolCallID: string(s.ToolCallID)},
			Pass2: s.Pass2, Truncated: s.Truncated, Omitted: s.Omitted}
		if s.Response {
			m.Content = r.Response
		}
		if s.Pass2Response {
			m.Content, _ = r.Details["pass2_response"].(string)
		}
		for _, c := range s.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, harness.ToolCall{ID: string(c.ID), Name: string(c.Name), Arguments: string(c.Arguments)})
		}
		for _, p := range s.Parts {
			m.Parts = append(m.Parts, harness.Part{Kind: p.Kind, Text: string(p.Text), Signature: string(p.Signature), Redacted: p.Redacted})
		}
		out = append(out, m)
	}
	if out == nil {
		out = []Message{}
	}
	return out
}

func wrap(msgs []harness.Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{Message: m}
	}
	return out
}

// encodeCalls returns the stored form of a result's calls (JSON, at most
// MaxCalls of them, errors bounded); nil (NULL) when it has none.
func encodeCalls(calls []Call) *string {
	if calls == nil {
		return nil
	}
	calls = calls[:min(len(calls), MaxCalls)]
	out := make([]Call, len(calls))
	for i, c := range calls {
		c.Error = cleanText(c.Error)
		if len(c.Error) > CallErrorMaxBytes {
			c.Error = string(cut(exactText(c.Error), CallErrorMaxBytes)) + "…"
		}
		out[i] = c
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	s := string(b)
	return &s
}

// decodeCalls reads stored calls; none for a result stored before calls
// were recorded, or whose stored form cannot be read.
func decodeCalls(raw *string) []Call {
	var out []Call
	if raw == nil || json.Unmarshal([]byte(*raw), &out) != nil || out == nil {
		return []Call{}
	}
	return out
}
