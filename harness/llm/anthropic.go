package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// AnthropicVersion is the version of the Messages API the anthropic kind
// asks for (the anthropic-version header), whatever the SDK's own default:
// the request and answer shapes this file reads and writes are those of
// this version.
const AnthropicVersion = "2023-06-01"

// DefaultAnthropicMaxTokens is the max_tokens sent to the anthropic kind
// when a request sets none: the Messages API requires one. With reasoning,
// the thinking budget is added to it.
const DefaultAnthropicMaxTokens = 4096

// anthropicMinBudget is the smallest thinking budget the Messages API
// accepts.
const anthropicMinBudget = 1024

// anthropicBackend speaks Anthropic's Messages API through the official
// SDK.
type anthropicBackend struct {
	messages anthropic.MessageService
	models   anthropic.ModelService
	// key is the API key, kept out of the messages of malformed answers.
	key string
}

// newAnthropic returns the backend of the anthropic kind. Its services are
// built directly rather than through anthropic.NewClient, which would read
// ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_CUSTOM_HEADERS, a
// profile on disk... from the environment: only Options configure it. The
// key goes in x-api-key, as the Messages API expects; the SDK's own
// retries are off (see retry.go).
func newAnthropic(opts Options, hc *http.Client) (backend, error) {
	ro := []aoption.RequestOption{
		aoption.WithBaseURL(opts.BaseURL),
		aoption.WithHTTPClient(hc),
		aoption.WithMaxRetries(0),
		aoption.WithHeader("anthropic-version", AnthropicVersion),
	}
	if opts.APIKey != "" {
		ro = append(ro, aoption.WithHeader("x-api-key", opts.APIKey))
	}
	if opts.MaxResponseBytes > 0 {
		ro = append(ro, aoption.WithMiddleware(limitBody(opts.MaxResponseBytes)))
	}
	return &anthropicBackend{messages: anthropic.NewMessageService(ro...), models: anthropic.NewModelService(ro...), key: opts.APIKey}, nil
}

func (b *anthropicBackend) prepare(model string, req *harness.ChatRequest) (attemptFunc, error) {
	params, err := anthropicParams(model, req)
	if err != nil {
		return nil, err
	}
	if req.Stream {
		return func(actx context.Context, n int, hres **http.Response) (*harness.ChatResponse, error) {
			return b.stream(actx, n, hres, params, model)
		}, nil
	}
	return func(actx context.Context, n int, hres **http.Response) (*harness.ChatResponse, error) {
		m, err := b.messages.New(actx, params, anthropicAttemptOptions(actx, n, hres)...)
		if err != nil {
			return nil, err
		}
		resp, err := anthropicResponse(m, model)
		if err != nil {
			return nil, b.malformed(*hres, err)
		}
		return resp, nil
	}, nil
}

// stream sends one attempt of a streamed request and accumulates its
// events into the message. A stream that breaks off, carries an event
// that does not parse, or ends before message_stop is malformed, never a
// half answer; an error event is classified by its type, as the same
// error would be before the stream began.
func (b *anthropicBackend) stream(actx context.Context, n int, hres **http.Response, params anthropic.MessageNewParams, model string) (*harness.ChatResponse, error) {
	start := time.Now()
	s := b.messages.NewStreaming(actx, params, anthropicAttemptOptions(actx, n, hres)...)
	defer s.Close()
	var (
		m       anthropic.Message
		ttft    time.Duration
		stopped bool
	)
	for s.Next() {
		ev := s.Current()
		if ev.Type == "content_block_delta" && ttft == 0 {
			ttft = max(time.Since(start), time.Nanosecond)
		}
		if err := m.Accumulate(ev); err != nil {
			return nil, b.malformed(*hres, err)
		}
		if ev.Type == "message_stop" {
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, b.streamError(actx, hres, err)
	}
	if !stopped {
		return nil, b.malformed(*hres, errors.New("the event stream ended before message_stop"))
	}
	resp, err := anthropicResponse(&m, model)
	if err != nil {
		return nil, b.malformed(*hres, err)
	}
	resp.TTFT = ttft
	return resp, nil
}

// streamError classifies what broke a stream. The request itself failing
// (an error status, a refused connection), the attempt's timeout and an
// answer too large go to Client.classify as they are. An error event in
// the stream becomes the response its type stands for (overloaded_error a
// 529, rate_limit_error a 429...), so that it is retried or not as the
// same error answered before the stream would be. Anything else (an event
// that does not parse, a body cut short) is malformed.
func (b *anthropicBackend) streamError(actx context.Context, hres **http.Response, err error) error {
	var aerr *anthropic.Error
	var tooLarge *tooLargeError
	switch {
	case *hres == nil || (*hres).StatusCode >= 400 || actx.Err() != nil || errors.As(err, &tooLarge):
		return err
	case errors.As(err, &aerr):
		if code := anthropicErrorStatus(string(aerr.Type())); code != 0 {
			raw := []byte(aerr.RawJSON())
			r := *(*hres)
			r.StatusCode, r.Status = code, fmt.Sprintf("%d %s", code, http.StatusText(code))
			r.Body = io.NopCloser(bytes.NewReader(raw))
			*hres = &r
			return err
		}
	}
	return b.malformed(*hres, err)
}

// malformed is the error of an answer that could not be understood, its
// message without the API key (a body quoted in it might echo the key).
func (b *anthropicBackend) malformed(hres *http.Response, err error) *Error {
	e := malformed("chat completion", hres, err)
	if len(b.key) >= 4 {
		e.Message = strings.ReplaceAll(e.Message, b.key, "[redacted]")
	}
	return e
}

// anthropicErrorStatus is the HTTP status the Messages API answers an
// error type with; 0 for a type it does not know.
func anthropicErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "api_error":
		return http.StatusInternalServerError
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return 0
}

// anthropicAttemptOptions are the SDK options of attempt n: those of every
// kind, and a request timeout a second longer than what remains of the
// attempt's. The attempt's context bounds the attempt, so that its end is
// classified as a timeout; the SDK's own timeout must never fire first,
// but without one the SDK refuses to send a non-streamed request whose
// max_tokens might take it more than 10 minutes.
func anthropicAttemptOptions(actx context.Context, n int, hres **http.Response) []aoption.RequestOption {
	opts := []aoption.RequestOption{aoption.WithResponseInto(hres)}
	if n > 1 {
		opts = append(opts, aoption.WithHeader("X-Stainless-Retry-Count", fmt.Sprint(n-1)))
	}
	if dl, ok := actx.Deadline(); ok {
		opts = append(opts, aoption.WithRequestTimeout(max(time.Until(dl), 0)+time.Second))
	}
	return opts
}

func (b *anthropicBackend) listModels(ctx context.Context, hres **http.Response) ([]string, error) {
	var names []string
	p := anthropic.ModelListParams{Limit: param.NewOpt[int64](1000)}
	// A page holds up to 1000 models; a few more pages at most are read.
	for range 10 {
		page, err := b.models.List(ctx, p, aoption.WithResponseInto(hres))
		if err != nil {
			return nil, err
		}
		for _, m := range page.Data {
			names = append(names, m.ID)
		}
		if !page.HasMore || page.LastID == "" {
			break
		}
		p.AfterID = param.NewOpt(page.LastID)
	}
	return names, nil
}

// anthropicParams translates a harness request into a Messages API
// request: system messages into the top-level system, one text block each;
// no text that is empty or whitespace only, which the API refuses (such a
// message is left out, one with other blocks keeps them, and a request
// left with no user message is invalid);
// assistant tool calls into tool_use blocks (their arguments, a JSON
// object, as input); tool messages into tool_result blocks of a user
// message, consecutive ones together, as the API requires; reasoning parts
// back into thinking blocks before the text. Seed is not sent: the API
// has none.
func anthropicParams(model string, req *harness.ChatRequest) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(model)}
	var ve harness.ValidationError
	if len(req.Messages) == 0 {
		ve.Add("messages", "at least one message is required")
	}
	// add appends blocks to the conversation: to the last message when it
	// has the same role (tool results and the user text after them go in
	// one user message), else as a new one.
	add := func(role string, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if k := len(p.Messages) - 1; k >= 0 && role == "user" && p.Messages[k].OfUser != nil {
			p.Messages[k].OfUser.Content = append(p.Messages[k].OfUser.Content, blocks...)
			return
		}
		if role == "user" {
			p.Messages = append(p.Messages, anthropic.MessageParam{OfUser: &anthropic.UserMessageParam{Content: blocks}})
		} else {
			p.Messages = append(p.Messages, anthropic.MessageParam{OfAssistant: &anthropic.AssistantMessageParam{Content: blocks}})
		}
	}
	for i, m := range req.Messages {
		switch m.Role {
		case harness.RoleSystem, "developer":
			if !blank(m.Content) {
				p.System = append(p.System, anthropic.TextBlockParam{Text: m.Content})
			}
		case harness.RoleUser:
			// An empty or blank user message is left out: the API takes no
			// such text, and joins the turns around it.
			if !blank(m.Content) {
				add("user", anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: m.Content}})
			}
		case harness.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			for _, part := range m.Parts {
				switch {
				case part.Kind != harness.PartReasoning || part.Signature == "":
					// Thinking without a signature (another provider's)
					// cannot be verified by the API: it is not sent.
				case part.Redacted:
					blocks = append(blocks, anthropic.ContentBlockParamUnion{OfRedactedThinking: &anthropic.RedactedThinkingBlockParam{Data: part.Signature}})
				default:
					blocks = append(blocks, anthropic.ContentBlockParamUnion{OfThinking: &anthropic.ThinkingBlockParam{Thinking: part.Text, Signature: part.Signature}})
				}
			}
			if !blank(m.Content) {
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: m.Content}})
			}
			for j, tc := range m.ToolCalls {
				input, err := anthropicToolInput(tc.Arguments)
				if err != nil {
					ve.Add(fmt.Sprintf("messages[%d].tool_calls[%d].arguments", i, j), "%v", err)
				}
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{ID: tc.ID, Name: tc.Name, Input: input}})
			}
			// An empty assistant message is left out: the API refuses
			// empty content, and merges the user turns around it.
			add("assistant", blocks...)
		case harness.RoleTool:
			if m.ToolCallID == "" {
				ve.Add(fmt.Sprintf("messages[%d].tool_call_id", i), "a tool message needs the id of the call it answers")
			}
			r := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if !blank(m.Content) {
				r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
			}
			add("user", anthropic.ContentBlockParamUnion{OfToolResult: &r})
		default:
			ve.Add(fmt.Sprintf("messages[%d].role", i), "unknown role %q", m.Role)
		}
	}
	if len(req.Messages) > 0 && !slices.ContainsFunc(p.Messages, func(m anthropic.MessageParam) bool { return m.OfUser != nil }) {
		ve.Add("messages", "no user message has text that is not whitespace: the Anthropic Messages API takes no empty text")
	}
	for i, f := range req.Tools {
		if f.Name == "" {
			ve.Add(fmt.Sprintf("tools[%d].name", i), "is required")
		}
		t := anthropic.ToolParam{Name: f.Name, InputSchema: anthropicInputSchema(f.Parameters)}
		if f.Description != "" {
			t.Description = param.NewOpt(f.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &t})
	}
	// temperature and top_p are not fields of the SDK's request any more
	// (newer API versions refuse them on newer models); the 2023-06-01
	// API takes them, so they go as extra fields, each when set.
	extra := map[string]any{}
	if req.Temperature != nil {
		extra["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		extra["top_p"] = *req.TopP
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	p.MaxTokens = DefaultAnthropicMaxTokens
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if r := req.Reasoning; r != nil {
		// max_tokens must exceed the budget: MaxTokens bounds the answer,
		// the thinking gets its budget on top.
		budget := int64(max(anthropicMinBudget, r.Budget()))
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: budget}}
		p.MaxTokens += budget
	}
	return p, ve.Err()
}

// anthropicToolInput is the input of a tool_use block: the call's arguments, which
// must be a JSON object ("" stands for {}).
func anthropicToolInput(args string) (json.RawMessage, error) {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return json.RawMessage("{}"), errors.New("must be a JSON object for the anthropic kind")
	}
	return json.RawMessage(args), nil
}

// anthropicInputSchema is a tool's input_schema: its JSON Schema, an empty object
// schema when it has none.
func anthropicInputSchema(schema map[string]any) anthropic.ToolInputSchemaParam {
	s := anthropic.ToolInputSchemaParam{Properties: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			switch rq := v.(type) {
			case []string:
				s.Required = rq
			case []any:
				for _, r := range rq {
					if name, ok := r.(string); ok {
						s.Required = append(s.Required, name)
					}
				}
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s
}

// anthropicResponse translates a Messages API answer: its text blocks
// joined into the content, tool_use blocks into tool calls, thinking and
// redacted_thinking blocks into reasoning parts. An answer that is not a
// message is malformed.
func anthropicResponse(m *anthropic.Message, model string) (*harness.ChatResponse, error) {
	if m == nil || (m.Type != "message" && !m.JSON.Content.Valid()) {
		return nil, errors.New("the answer is not a message")
	}
	msg := harness.Message{Role: harness.RoleAssistant}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := string(b.Input)
			if strings.TrimSpace(args) == "" || args == "null" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, harness.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		case "thinking":
			msg.Parts = append(msg.Parts, harness.Part{Kind: harness.PartReasoning, Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			msg.Parts = append(msg.Parts, harness.Part{Kind: harness.PartReasoning, Redacted: true, Signature: b.Data})
		}
	}
	msg.Content = text.String()
	u := harness.Usage{
		PromptTokens:     int(m.Usage.InputTokens + m.Usage.CacheReadInputTokens + m.Usage.CacheCreationInputTokens),
		CachedTokens:     int(m.Usage.CacheReadInputTokens),
		CompletionTokens: int(m.Usage.OutputTokens),
		// Anthropic counts thinking inside output_tokens; it reports the
		// thinking part apart only in newer API versions.
		ReasoningTokens: int(m.Usage.OutputTokensDetails.ThinkingTokens),
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	resp := &harness.ChatResponse{Message: msg, Usage: u, Model: string(m.Model), FinishReason: anthropicFinishReason(string(m.StopReason))}
	if resp.Model == "" {
		resp.Model = model
	}
	return resp, nil
}

// anthropicFinishReason maps a stop_reason to the finish reasons of the chat
// completions API; others are kept as they are.
func anthropicFinishReason(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	}
	return stop
}

// blank reports whether a message's text is empty or whitespace only: the
// Messages API refuses it as a text block.
func blank(s string) bool { return strings.TrimSpace(s) == "" }
