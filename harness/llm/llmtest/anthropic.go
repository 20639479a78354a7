package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
)

//lint:file-ignore ST1005 the errors of this file are the messages of 400 answers, worded as Anthropic words them

// The Anthropic Messages API (POST /v1/messages), the parts the fake reads
// and writes.

// anthropicWire is Anthropic's Messages API: the key in x-api-key, the
// anthropic-version header required, errors as {"type": "error", "error":
// {"type", "message"}}, answers as messages of content blocks, streamed
// as server-sent events when asked.
type anthropicWire struct{}

var (
	_ wireFormat     = anthropicWire{}
	_ overloadWriter = anthropicWire{}
)

type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   *int               `json:"max_tokens"`
	Messages    []anthropicMessage `json:"messages"`
	System      json.RawMessage    `json:"system"`
	Tools       []anthropicTool    `json:"tools"`
	Temperature *float64           `json:"temperature"`
	TopP        *float64           `json:"top_p"`
	Thinking    *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Stream bool `json:"stream"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is a content block of any type, as a request carries it.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

type anthropicTool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"input_schema"`
}

func (anthropicWire) authorized(r *http.Request, key string) bool {
	return r.Header.Get("X-Api-Key") == key
}

// decode reads a Messages request into a Request: the system blocks as
// system messages first, tool_result blocks as tool messages (before the
// text of their user message), tool_use blocks as tool calls, thinking
// blocks as reasoning parts. It checks what the API checks and a client
// gets wrong: the anthropic-version header, max_tokens, the roles, every
// tool_use answered by a tool_result in the next message and every
// tool_result answering one, no empty text block and no message of
// whitespace text only, the thinking budget, the thinking signatures
// sent back, and, with thinking on, the thinking block that must start the
// assistant turn of a tool loop.
func (anthropicWire) decode(r *http.Request, body []byte) (*Request, bool, error) {
	if r.Header.Get("Anthropic-Version") == "" {
		return nil, false, errors.New("anthropic-version: header is required")
	}
	var ar anthropicRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		return nil, false, fmt.Errorf("There was an error parsing the body: %v", err)
	}
	switch {
	case ar.Model == "":
		return nil, false, errors.New("model: Field required")
	case ar.MaxTokens == nil:
		return nil, false, errors.New("max_tokens: Field required")
	case *ar.MaxTokens < 0:
		return nil, false, errors.New("max_tokens: Input should be greater than or equal to 0")
	case len(ar.Messages) == 0:
		return nil, false, errors.New("messages: at least one message is required")
	}
	req := &Request{Model: ar.Model, MaxTokens: *ar.MaxTokens, Temperature: ar.Temperature, TopP: ar.TopP, Stream: ar.Stream, Body: body}
	if t := ar.Thinking; t != nil && t.Type == "enabled" {
		switch {
		case t.BudgetTokens < 1024:
			return nil, false, errors.New("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
		case *ar.MaxTokens <= t.BudgetTokens:
			return nil, false, errors.New("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
		}
		req.Reasoning = &harness.ReasoningParams{BudgetTokens: t.BudgetTokens}
	}
	system, err := anthropicSystem(ar.System)
	if err != nil {
		return nil, false, err
	}
	for _, s := range system {
		req.Messages = append(req.Messages, harness.Message{Role: harness.RoleSystem, Content: s})
	}
	blocks := make([][]anthropicBlock, len(ar.Messages))
	for i, m := range ar.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, false, fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if blocks[i], err = anthropicBlocks(m.Content); err != nil {
			return nil, false, fmt.Errorf("messages.%d.content: %v", i, err)
		}
		if err := anthropicTextRules(i, len(ar.Messages), m.Role, blocks[i]); err != nil {
			return nil, false, err
		}
	}
	if err := anthropicToolPairs(ar.Messages, blocks); err != nil {
		return nil, false, err
	}
	if req.Reasoning != nil {
		if err := anthropicThinkingFirst(ar.Messages, blocks); err != nil {
			return nil, false, err
		}
	}
	for i, m := range ar.Messages {
		msgs, err := anthropicToHarness(i, m.Role, blocks[i])
		if err != nil {
			return nil, false, err
		}
		req.Messages = append(req.Messages, msgs...)
	}
	for i, t := range ar.Tools {
		if t.Name == "" {
			return nil, false, fmt.Errorf("tools.%d.name: Field required", i)
		}
		if t.Type == "" || t.Type == "custom" {
			if t.InputSchema == nil {
				return nil, false, fmt.Errorf("tools.%d.input_schema: Field required", i)
			}
		}
		req.Tools = append(req.Tools, harness.FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return req, ar.Stream, nil
}

// anthropicSystem reads the top-level system: a string, or text blocks.
func anthropicSystem(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("system: Input should be a valid string or a list of text blocks")
	}
	var out []string
	for i, b := range blocks {
		if b.Type != "text" {
			return nil, fmt.Errorf("system.%d.type: Input should be 'text'", i)
		}
		if b.Text == "" {
			return nil, errors.New("system: text content blocks must be non-empty")
		}
		out = append(out, b.Text)
	}
	return out, nil
}

// anthropicTextRules checks message i of n (its role and blocks) as the
// API does: content that is not empty (only a final assistant message
// may have none), no empty text block (a string content is one text
// block), and, when the message has text blocks, some text that is not
// whitespace.
func anthropicTextRules(i, n int, role string, blocks []anthropicBlock) error {
	if len(blocks) == 0 {
		if role == "assistant" && i == n-1 {
			return nil
		}
		return fmt.Errorf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
	}
	texts, blank := 0, 0
	for _, b := range blocks {
		if b.Type != "text" {
			continue
		}
		if b.Text == "" {
			return errors.New("messages: text content blocks must be non-empty")
		}
		texts++
		if strings.TrimSpace(b.Text) == "" {
			blank++
		}
	}
	if texts > 0 && blank == texts {
		return errors.New("messages: text content blocks must contain non-whitespace text")
	}
	return nil
}

// anthropicBlocks reads a message's content: a string (one text block) or
// an array of blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil || len(raw) == 0 {
		return nil, errors.New("Input should be a valid string or a list of content blocks")
	}
	return blocks, nil
}

// anthropicToolPairs checks that each tool_use block is answered by a
// tool_result in the very next message, a user message, and that each
// tool_result answers a tool_use of the message before it.
func anthropicToolPairs(msgs []anthropicMessage, blocks [][]anthropicBlock) error {
	for i := range msgs {
		if msgs[i].Role == "user" {
			asked := map[string]bool{}
			if i > 0 && msgs[i-1].Role == "assistant" {
				for _, b := range blocks[i-1] {
					if b.Type == "tool_use" {
						asked[b.ID] = true
					}
				}
			}
			for j, b := range blocks[i] {
				if b.Type == "tool_result" && !asked[b.ToolUseID] {
					return fmt.Errorf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
			}
			continue
		}
		answered := map[string]bool{}
		if i+1 < len(msgs) && msgs[i+1].Role == "user" {
			for _, b := range blocks[i+1] {
				if b.Type == "tool_result" {
					answered[b.ToolUseID] = true
				}
			}
		}
		var missing []string
		for _, b := range blocks[i] {
			if b.Type == "tool_use" && !answered[b.ID] {
				missing = append(missing, b.ID)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
	}
	return nil
}

// anthropicThinkingFirst checks, with thinking on, that the assistant message
// of an unfinished tool loop (the last assistant message, with tool_use
// blocks, followed by their results) starts with its thinking block, as
// the API requires.
func anthropicThinkingFirst(msgs []anthropicMessage, blocks [][]anthropicBlock) error {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "assistant" {
			continue
		}
		uses := false
		for _, b := range blocks[i] {
			uses = uses || b.Type == "tool_use"
		}
		if !uses || len(blocks[i]) == 0 {
			return nil
		}
		if t := blocks[i][0].Type; t != "thinking" && t != "redacted_thinking" {
			return fmt.Errorf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns.", i, t)
		}
		return nil
	}
	return nil
}

// anthropicToHarness turns message i of the request into harness
// messages: a user message's tool_result blocks into tool messages, then
// its text (when it has any) into a user message; an assistant message's
// blocks into one message.
func anthropicToHarness(i int, role string, blocks []anthropicBlock) ([]harness.Message, error) {
	if role == "assistant" {
		m := harness.Message{Role: harness.RoleAssistant}
		for j, b := range blocks {
			switch b.Type {
			case "text":
				m.Content += b.Text
			case "tool_use":
				var args bytes.Buffer
				if err := json.Compact(&args, b.Input); err != nil || !bytes.HasPrefix(args.Bytes(), []byte("{")) {
					return nil, fmt.Errorf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
				}
				m.ToolCalls = append(m.ToolCalls, harness.ToolCall{ID: b.ID, Name: b.Name, Arguments: args.String()})
			case "thinking":
				if b.Signature != anthropicSignature(b.Thinking) {
					return nil, fmt.Errorf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
				m.Parts = append(m.Parts, harness.Part{Kind: harness.PartReasoning, Text: b.Thinking, Signature: b.Signature})
			case "redacted_thinking":
				m.Parts = append(m.Parts, harness.Part{Kind: harness.PartReasoning, Redacted: true, Signature: b.Data})
			case "tool_result":
				return nil, fmt.Errorf("messages.%d.content.%d: `tool_result` blocks can only be in `user` messages", i, j)
			}
		}
		return []harness.Message{m}, nil
	}
	var out []harness.Message
	var text []string
	for j, b := range blocks {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_result":
			content, err := anthropicToolResultText(b.Content)
			if err != nil {
				return nil, fmt.Errorf("messages.%d.content.%d.tool_result.content: %v", i, j, err)
			}
			out = append(out, harness.Message{Role: harness.RoleTool, ToolCallID: b.ToolUseID, Content: content})
		case "tool_use", "thinking", "redacted_thinking":
			return nil, fmt.Errorf("messages.%d.content.%d: `%s` blocks can only be in `assistant` messages", i, j, b.Type)
		}
	}
	if len(text) > 0 || len(out) == 0 {
		out = append(out, harness.Message{Role: harness.RoleUser, Content: strings.Join(text, "")})
	}
	return out, nil
}

// anthropicToolResultText flattens a tool_result's content: a string, nothing, or
// blocks whose text is joined.
func anthropicToolResultText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", errors.New("Input should be a valid string or a list of content blocks")
	}
	var b strings.Builder
	for _, p := range blocks {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// anthropicSignature is the signature the fake gives a thinking text, and
// checks when a client sends the block back.
func anthropicSignature(text string) string {
	sum := sha256.Sum256([]byte("llmtest thinking\x00" + text))
	return "llmtest-" + base64.StdEncoding.EncodeToString(sum[:])
}

// ThinkingText is the thinking the fake shows before its answer to a
// request that asks for thinking (Anthropic's thinking budget): a fixed
// sentence about the last user message.
func ThinkingText(req *Request) string {
	prompt := req.LastUser()
	if r := []rune(prompt); len(r) > 120 {
		prompt = string(r[:120]) + "…"
	}
	return fmt.Sprintf("The user asks: %q. I work it out step by step before I answer.", prompt)
}

// anthropicErrorType is the error type of the Messages API for an HTTP
// status.
func anthropicErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusPaymentRequired:
		return "billing_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusGatewayTimeout:
		return "timeout_error"
	case status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

// anthropicError is the body of an error answer.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id,omitempty"`
}

func newAnthropicError(typ, msg string) anthropicError {
	e := anthropicError{Type: "error"}
	e.Error.Type, e.Error.Message = typ, msg
	return e
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, newAnthropicError(typ, msg))
}

func (anthropicWire) writeError(w http.ResponseWriter, status int, msg string) {
	writeAnthropicError(w, status, anthropicErrorType(status), msg)
}

func (anthropicWire) writeRateLimit(w http.ResponseWriter, msg string) {
	writeAnthropicError(w, http.StatusTooManyRequests, "rate_limit_error", msg)
}

func (anthropicWire) writeOverloaded(w http.ResponseWriter, msg string) {
	writeAnthropicError(w, 529, "overloaded_error", msg)
}

// The answer's shapes.

type anthropicOutBlock struct {
	Type      string           `json:"type"`
	Text      *string          `json:"text,omitempty"`
	Thinking  *string          `json:"thinking,omitempty"`
	Signature *string          `json:"signature,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     *json.RawMessage `json:"input,omitempty"`
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int `json:"thinking_tokens"`
	} `json:"output_tokens_details,omitempty"`
}

type anthropicAnswer struct {
	ID           string              `json:"id"`
	Type         string              `json:"type"`
	Role         string              `json:"role"`
	Model        string              `json:"model"`
	Content      []anthropicOutBlock `json:"content"`
	StopReason   *string             `json:"stop_reason"`
	StopSequence *string             `json:"stop_sequence"`
	Usage        anthropicUsage      `json:"usage"`
}

// anthropicMessageOf builds the answer to req: a thinking block when
// thinking was asked, the text (cut to what max_tokens leaves after the
// thinking), the tool calls; the usage counted as CountTokens counts, or
// the Reply's (its CachedTokens read from the cache, its ReasoningTokens
// the thinking).
func (h *Handler) anthropicMessageOf(req *Request, rep *Reply) anthropicAnswer {
	model := req.Model
	if model == "" {
		model = h.opts.Model
	}
	a := anthropicAnswer{ID: fmt.Sprintf("msg_llmtest_%d", req.N), Type: "message", Role: "assistant", Model: model, Content: []anthropicOutBlock{}}
	output, thinking := 0, 0
	if req.Reasoning != nil {
		t := ThinkingText(req)
		sig := anthropicSignature(t)
		a.Content = append(a.Content, anthropicOutBlock{Type: "thinking", Thinking: &t, Signature: &sig})
		thinking = CountTokens(t)
		output += thinking
	}
	content := rep.Content
	stop := "end_turn"
	if limit := req.MaxTokens - thinking; CountTokens(content) > limit {
		content = string([]rune(content)[:max(limit, 0)*4])
		stop = "max_tokens"
	}
	if content != "" || len(rep.ToolCalls) == 0 {
		a.Content = append(a.Content, anthropicOutBlock{Type: "text", Text: &content})
		output += CountTokens(content)
	}
	for i, tc := range rep.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_llmtest_%d_%d", req.N, i)
		}
		args := json.RawMessage(tc.Arguments)
		if strings.TrimSpace(tc.Arguments) == "" {
			args = json.RawMessage("{}")
		}
		a.Content = append(a.Content, anthropicOutBlock{Type: "tool_use", ID: id, Name: tc.Name, Input: &args})
		output += CountTokens(tc.Name) + CountTokens(string(args))
		stop = "tool_use"
	}
	switch rep.FinishReason {
	case "":
	case "stop":
		stop = "end_turn"
	case "tool_calls":
		stop = "tool_use"
	case "length":
		stop = "max_tokens"
	default:
		stop = rep.FinishReason
	}
	a.StopReason = &stop
	u := harness.Usage{PromptTokens: promptTokens(req.Messages), CompletionTokens: output, ReasoningTokens: thinking}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	a.Usage = anthropicUsage{
		InputTokens:          u.PromptTokens - u.CachedTokens,
		CacheReadInputTokens: u.CachedTokens,
		OutputTokens:         u.CompletionTokens,
	}
	if u.ReasoningTokens > 0 {
		a.Usage.OutputTokensDetails = &struct {
			ThinkingTokens int `json:"thinking_tokens"`
		}{u.ReasoningTokens}
	}
	return a
}

func (anthropicWire) writeAnswer(h *Handler, w http.ResponseWriter, req *Request, rep *Reply, stream bool) {
	a := h.anthropicMessageOf(req, rep)
	if !stream {
		writeJSON(w, http.StatusOK, a)
		return
	}
	sw := newAnthropicSSE(w)
	usage := a.Usage
	start := a
	start.Content, start.StopReason = []anthropicOutBlock{}, nil
	start.Usage.OutputTokens, start.Usage.OutputTokensDetails = 1, nil
	sw.event("message_start", map[string]any{"type": "message_start", "message": start})
	sw.event("ping", map[string]any{"type": "ping"})
	for i, b := range a.Content {
		switch b.Type {
		case "thinking":
			sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, c := range anthropicChunks(*b.Thinking, 24) {
				sw.delta(i, map[string]any{"type": "thinking_delta", "thinking": c})
			}
			sw.delta(i, map[string]any{"type": "signature_delta", "signature": *b.Signature})
		case "text":
			sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, c := range anthropicChunks(*b.Text, 16) {
				sw.delta(i, map[string]any{"type": "text_delta", "text": c})
				if rep.cut {
					cutConnection(w)
					return
				}
			}
		case "tool_use":
			sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			sw.delta(i, map[string]any{"type": "input_json_delta", "partial_json": ""})
			for _, c := range anthropicChunks(string(*b.Input), 10) {
				sw.delta(i, map[string]any{"type": "input_json_delta", "partial_json": c})
				if rep.cut {
					cutConnection(w)
					return
				}
			}
		}
		sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sw.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.StopReason, "stop_sequence": nil}, "usage": usage})
	sw.event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicChunks cuts s into pieces of n runes (the last shorter); "" is one
// empty piece.
func anthropicChunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if out == nil {
		out = []string{""}
	}
	return out
}

// anthropicSSE writes server-sent events, each flushed as it is written.
type anthropicSSE struct {
	w   http.ResponseWriter
	f   http.Flusher
	err error
}

func newAnthropicSSE(w http.ResponseWriter) *anthropicSSE {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &anthropicSSE{w: w, f: f}
}

// raw writes b as it is and flushes it; it reports the number of bytes
// written.
func (s *anthropicSSE) raw(b []byte) int {
	if s.err != nil {
		return 0
	}
	n, err := s.w.Write(b)
	s.err = err
	if s.f != nil && err == nil {
		s.f.Flush()
	}
	return n
}

func (s *anthropicSSE) event(name string, data any) int {
	b, err := json.Marshal(data)
	if err != nil {
		s.err = err
		return 0
	}
	return s.raw([]byte("event: " + name + "\ndata: " + string(b) + "\n\n"))
}

func (s *anthropicSSE) delta(index int, delta map[string]any) int {
	return s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": delta})
}

// writeGarbage answers 200 with a message cut short (an event stream cut
// short when the request asked for a stream).
func (a anthropicWire) writeGarbage(w http.ResponseWriter, req *Request) {
	if req.Stream {
		a.writeGarbageStream(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `{"id":"msg_llmtest_%d","type":"message","role":"assistant","content":[{"type":"text","text":"The ans`, req.N)
}

// writeGarbageStream answers a streamed request with an event stream cut
// short: the message begins, its text too, and the stream ends in the
// middle of an event, without message_stop.
func (anthropicWire) writeGarbageStream(w http.ResponseWriter, req *Request) {
	sw := newAnthropicSSE(w)
	sw.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_llmtest_%d", req.N), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
	sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	sw.delta(0, map[string]any{"type": "text_delta", "text": "The "})
	sw.raw([]byte(`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ans`))
}

// writeHuge answers with a valid message whose text is Options.HugeBytes
// long, written as it goes (as text deltas when streamed), until it is
// done, the client hangs up or the handler is closed.
func (anthropicWire) writeHuge(h *Handler, w http.ResponseWriter, r *http.Request, req *Request) {
	model := req.Model
	if model == "" {
		model = h.opts.Model
	}
	size := h.opts.HugeBytes
	usage := anthropicUsage{InputTokens: promptTokens(req.Messages), OutputTokens: int((size + 3) / 4)}
	// each writes the text in chunks with write; it reports false when it
	// stopped early.
	each := func(write func(string) bool) bool { return h.writeFiller(r, size, write) }
	stop := "max_tokens"
	if req.Stream {
		sw := newAnthropicSSE(w)
		sent := func(n int) bool { h.hugeSent.Add(int64(n)); return sw.err == nil }
		start := anthropicAnswer{ID: fmt.Sprintf("msg_llmtest_%d", req.N), Type: "message", Role: "assistant", Model: model,
			Content: []anthropicOutBlock{}, Usage: anthropicUsage{InputTokens: usage.InputTokens, OutputTokens: 1}}
		if !sent(sw.event("message_start", map[string]any{"type": "message_start", "message": start})) ||
			!sent(sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})) {
			return
		}
		if !each(func(c string) bool { return sent(sw.delta(0, map[string]any{"type": "text_delta", "text": c})) }) {
			return
		}
		sent(sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}))
		sent(sw.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage}))
		sent(sw.event("message_stop", map[string]any{"type": "message_stop"}))
		return
	}
	name, _ := json.Marshal(model)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	write := func(s string) bool {
		n, err := w.Write([]byte(s))
		h.hugeSent.Add(int64(n))
		return err == nil
	}
	if !write(fmt.Sprintf(`{"id":"msg_llmtest_%d","type":"message","role":"assistant","model":%s,"content":[{"type":"text","text":"`, req.N, name)) ||
		!each(write) {
		return
	}
	u, _ := json.Marshal(usage)
	write(`"}],"stop_reason":"` + stop + `","stop_sequence":null,"usage":` + string(u) + `}`)
}

// serveAnthropicModels answers GET /v1/models in Anthropic's shape, for a
// request that carries anthropic-version: a page of models (limit, default
// 20; after_id), each with its type, id, display name and date.
func (h *Handler) serveAnthropicModels(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.APIKey != "" && !(anthropicWire{}).authorized(r, h.opts.APIKey) {
		writeAnthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return false
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeAnthropicError(w, http.StatusMethodNotAllowed, "invalid_request_error", "Use GET for /v1/models.")
		return false
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "limit: Input should be between 1 and 1000")
			return false
		}
		limit = n
	}
	names := h.models()
	if after := q.Get("after_id"); after != "" {
		i := 0
		for i < len(names) && names[i] != after {
			i++
		}
		names = names[min(i+1, len(names)):]
	}
	type model struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	page := struct {
		Data    []model `json:"data"`
		HasMore bool    `json:"has_more"`
		FirstID *string `json:"first_id"`
		LastID  *string `json:"last_id"`
	}{Data: []model{}, HasMore: len(names) > limit}
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	for _, n := range names[:min(limit, len(names))] {
		page.Data = append(page.Data, model{Type: "model", ID: n, DisplayName: n, CreatedAt: created})
	}
	if len(page.Data) > 0 {
		page.FirstID, page.LastID = &page.Data[0].ID, &page.Data[len(page.Data)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
	return false
}
