package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// openaiBackend speaks the chat completions API of OpenAI and of every
// server compatible with it.
type openaiBackend struct {
	chat   openai.ChatCompletionService
	models openai.ModelService
}

func (b *openaiBackend) prepare(model string, req *harness.ChatRequest) (attemptFunc, error) {
	params, err := chatParams(model, req)
	if err != nil {
		return nil, err
	}
	if req.Stream {
		params.StreamOptions.IncludeUsage = param.NewOpt(true)
		return func(actx context.Context, n int, hres **http.Response) (*harness.ChatResponse, error) {
			return b.stream(actx, params, model, n, hres)
		}, nil
	}
	return func(actx context.Context, n int, hres **http.Response) (*harness.ChatResponse, error) {
		cc, err := b.chat.New(actx, params, attemptOptions(n, hres)...)
		if err != nil {
			return nil, err
		}
		resp, err := chatResponse(cc, model)
		if err != nil {
			return nil, malformed("chat completion", *hres, err)
		}
		return resp, nil
	}, nil
}

// stream sends one attempt of a streamed chat completion and gathers its
// chunks into the answer a non-streamed one would give, with the time to
// its first token. A stream that breaks off (no finish reason) or whose
// events do not parse is a malformed answer; an error status, a lost
// connection or a body over the limit keep their own meaning (classify).
func (b *openaiBackend) stream(ctx context.Context, params openai.ChatCompletionNewParams, model string, n int, hres **http.Response) (*harness.ChatResponse, error) {
	start := time.Now()
	s := b.chat.NewStreaming(ctx, params, attemptOptions(n, hres)...)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	var ttft time.Duration
	var reasoning strings.Builder
	for s.Next() {
		ch := s.Current()
		if !acc.AddChunk(ch) {
			return nil, malformed("chat completion", *hres, errors.New("a stream event does not continue the answer"))
		}
		if len(ch.Choices) == 0 {
			continue
		}
		d := ch.Choices[0].Delta
		if f, ok := d.JSON.ExtraFields["reasoning_content"]; ok {
			var text string
			if json.Unmarshal([]byte(f.Raw()), &text) == nil {
				reasoning.WriteString(text)
			}
		}
		if ttft == 0 && (d.Content != "" || len(d.ToolCalls) > 0 || reasoning.Len() > 0) {
			ttft = time.Since(start)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		return nil, malformed("chat completion", *hres, errors.New("the stream ended before the answer did (no finish reason)"))
	}
	resp, err := chatResponse(&acc.ChatCompletion, model)
	if err != nil {
		return nil, malformed("chat completion", *hres, err)
	}
	if reasoning.Len() > 0 {
		resp.Message.Parts = []harness.Part{{Kind: harness.PartReasoning, Text: reasoning.String()}}
	}
	if ttft == 0 {
		ttft = time.Since(start)
	}
	resp.TTFT = ttft
	return resp, nil
}

func (b *openaiBackend) listModels(ctx context.Context, hres **http.Response) ([]string, error) {
	page, err := b.models.List(ctx, attemptOptions(1, hres)...)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		names = append(names, m.ID)
	}
	return names, nil
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
	if r := req.Reasoning; r != nil {
		p.ReasoningEffort = shared.ReasoningEffort(r.EffortLevel())
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
	if f, ok := ch.Message.JSON.ExtraFields["reasoning_content"]; ok {
		// The thinking that DeepSeek, vLLM and others send beside the
		// answer (OpenAI itself keeps it hidden).
		var text string
		if json.Unmarshal([]byte(f.Raw()), &text) == nil && text != "" {
			msg.Parts = []harness.Part{{Kind: harness.PartReasoning, Text: text}}
		}
	}
	u := harness.Usage{
		PromptTokens:     int(cc.Usage.PromptTokens),
		CompletionTokens: int(cc.Usage.CompletionTokens),
		TotalTokens:      int(cc.Usage.TotalTokens),
		CachedTokens:     int(cc.Usage.PromptTokensDetails.CachedTokens),
		ReasoningTokens:  int(cc.Usage.CompletionTokensDetails.ReasoningTokens),
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
