package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Chat performs one chat completion (POST /chat/completions, not
// streamed): every message of req, its tools offered as function tools,
// temperature, top_p, max_tokens and seed when set. The answer carries the first
// choice's message (text, tool calls with their raw JSON arguments), its
// finish reason, the token usage and the model that answered.
//
// An empty req.Model means the client's default Model. A positive
// req.Timeout bounds each attempt instead of Options.Timeout, and a non-nil
// req.MaxRetries replaces Options.MaxRetries (0 or less: a single
// attempt). Failures are retried as the package documentation says; the
// error is an *Error, or one matching harness.ErrInvalid when req cannot be
// sent at all.
func (c *Client) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	c.stats.calls.Add(1)
	resp, err := c.chatCompletion(ctx, req)
	if err != nil {
		c.stats.failures.Add(1)
	}
	return resp, err
}

func (c *Client) chatCompletion(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	const op = "chat completion"
	if req == nil {
		return nil, fmt.Errorf("llm: %s: %w", op, harness.Invalid("request", "is nil"))
	}
	model := req.Model
	if model == "" {
		model = c.opts.Model
	}
	params, err := chatParams(model, req)
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %w", op, err)
	}
	timeout, retries := c.opts.Timeout, c.opts.MaxRetries
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	if req.MaxRetries != nil {
		retries = max(*req.MaxRetries, 0)
	}
	var resp *harness.ChatResponse
	err = c.do(ctx, op, timeout, retries, func(actx context.Context, n int, hres **http.Response) error {
		cc, err := c.chat.New(actx, params, attemptOptions(n, hres)...)
		if err != nil {
			return err
		}
		resp, err = chatResponse(cc, model)
		if err != nil {
			return malformed(op, *hres, err)
		}
		return nil
	}, observer(req, &resp))
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// observer reports each attempt of a request to its OnAttempt; nil when
// the request has none. *resp is the answer once an attempt succeeded.
func observer(req *harness.ChatRequest, resp **harness.ChatResponse) func(int, time.Time, time.Duration, *Error) {
	if req.OnAttempt == nil {
		return nil
	}
	return func(n int, start time.Time, d time.Duration, e *Error) {
		a := harness.Attempt{N: n, Start: start, Duration: d, Status: harness.AttemptOK}
		if e != nil {
			a.Status, a.HTTPStatus = e.AttemptStatus()
			a.Err = e
		} else if *resp != nil {
			a.Usage = (*resp).Usage
		}
		req.OnAttempt(a)
	}
}

// chatParams translates a harness request into the SDK's.
func chatParams(model string, req *harness.ChatRequest) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(model)}
	var ve harness.ValidationError
	if len(req.Messages) == 0 {
		ve.Add("messages", "at least one message is required")
	}
	for i, m := range req.Messages {
		switch m.Role {
		case harness.RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case "developer":
			p.Messages = append(p.Messages, openai.DeveloperMessage(m.Content))
		case harness.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case harness.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case harness.RoleTool:
			if m.ToolCallID == "" {
				ve.Add(fmt.Sprintf("messages[%d].tool_call_id", i), "a tool message needs the id of the call it answers")
			}
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			ve.Add(fmt.Sprintf("messages[%d].role", i), "unknown role %q", m.Role)
		}
	}
	for i, f := range req.Tools {
		if f.Name == "" {
			ve.Add(fmt.Sprintf("tools[%d].name", i), "is required")
		}
		def := shared.FunctionDefinitionParam{Name: f.Name, Parameters: shared.FunctionParameters(f.Parameters)}
		if f.Description != "" {
			def.Description = param.NewOpt(f.Description)
		}
		if def.Parameters == nil {
			// Some servers (llama.cpp, older vLLM) insist on a schema.
			def.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if req.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.TopP != nil {
		p.TopP = param.NewOpt(*req.TopP)
	}
	if req.Seed != nil {
		p.Seed = param.NewOpt(*req.Seed)
	}
	if req.MaxTokens > 0 {
		// max_tokens rather than max_completion_tokens: Ollama, llama.cpp
		// and vLLM all read it, and OpenAI still accepts it for
		// non-reasoning models.
		p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
	}
	return p, ve.Err()
}

// chatResponse translates the SDK's answer; an answer with no choice is
// malformed.
func chatResponse(cc *openai.ChatCompletion, model string) (*harness.ChatResponse, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return nil, errors.New("no choices in the chat completion")
	}
	ch := cc.Choices[0]
	msg := harness.Message{Role: harness.RoleAssistant, Content: ch.Message.Content}
	if msg.Content == "" && ch.Message.Refusal != "" {
		msg.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		call := harness.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		if tc.Type == "custom" {
			call.Name, call.Arguments = tc.Custom.Name, tc.Custom.Input
		}
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	//lint:ignore SA1019 some servers still send only the deprecated function_call
	if fc := ch.Message.FunctionCall; len(msg.ToolCalls) == 0 && fc.Name != "" {
		// The deprecated single function_call some servers still send.
		msg.ToolCalls = []harness.ToolCall{{Name: fc.Name, Arguments: fc.Arguments}}
	}
	u := harness.Usage{
		PromptTokens:     int(cc.Usage.PromptTokens),
		CompletionTokens: int(cc.Usage.CompletionTokens),
		TotalTokens:      int(cc.Usage.TotalTokens),
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	resp := &harness.ChatResponse{Message: msg, Usage: u, Model: cc.Model, FinishReason: ch.FinishReason}
	if resp.Model == "" {
		resp.Model = model
	}
	return resp, nil
}

// attemptOptions are the SDK options of attempt n of a request: the HTTP
// response is stored in *hres, and a retry says which it is.
func attemptOptions(n int, hres **http.Response) []option.RequestOption {
	opts := []option.RequestOption{option.WithResponseInto(hres)}
	if n > 1 {
		opts = append(opts, option.WithHeader("X-Stainless-Retry-Count", strconv.Itoa(n-1)))
	}
	return opts
}

// malformed is the error of an answer whose body could not be understood:
// retryable, matching ErrMalformedResponse, with the answer's status.
func malformed(op string, hres *http.Response, err error) *Error {
	e := &Error{Op: op, Message: "malformed response: " + err.Error(), retryable: true, err: ErrMalformedResponse}
	if hres != nil {
		e.StatusCode = hres.StatusCode
	}
	return e
}
