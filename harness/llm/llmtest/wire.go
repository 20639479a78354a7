package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

//lint:file-ignore ST1005 decodeRequest's errors are the messages of 400 answers, worded as OpenAI words them

// The chat completions wire format, the parts the fake reads and writes.

type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools"`
	Temperature         *float64      `json:"temperature"`
	TopP                *float64      `json:"top_p"`
	Seed                *int64        `json:"seed"`
	MaxTokens           *int          `json:"max_tokens"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

type wireResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             wireUsage    `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type wireChoice struct {
	Index        int            `json:"index"`
	Message      wireOutMessage `json:"message"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type wireOutMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// The details OpenAI sends when there are cached or reasoning tokens.
	PromptDetails     *wireTokenDetails `json:"prompt_tokens_details,omitempty"`
	CompletionDetails *wireTokenDetails `json:"completion_tokens_details,omitempty"`
}

type wireTokenDetails struct {
	CachedTokens    int `json:"cached_tokens,omitempty"`
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// wireUsageOf is u as the chat completions API reports it.
func wireUsageOf(u harness.Usage) wireUsage {
	w := wireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if u.CachedTokens > 0 {
		w.PromptDetails = &wireTokenDetails{CachedTokens: u.CachedTokens}
	}
	if u.ReasoningTokens > 0 {
		w.CompletionDetails = &wireTokenDetails{ReasoningTokens: u.ReasoningTokens}
	}
	return w
}

// decodeRequest reads a chat completion request; its errors are the 400
// messages.
func decodeRequest(body []byte) (*Request, *wireRequest, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return nil, nil, fmt.Errorf("We could not parse the JSON body of your request: %v", err)
	}
	if len(wr.Messages) == 0 {
		return nil, nil, errors.New("[] is too short - 'messages': at least one message is required.")
	}
	req := &Request{Model: wr.Model, Temperature: wr.Temperature, TopP: wr.TopP, Seed: wr.Seed, Body: body}
	switch {
	case wr.MaxTokens != nil:
		req.MaxTokens = *wr.MaxTokens
	case wr.MaxCompletionTokens != nil:
		req.MaxTokens = *wr.MaxCompletionTokens
	}
	for i, m := range wr.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return nil, nil, fmt.Errorf("Invalid value for 'messages[%d].role': %q.", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, nil, fmt.Errorf("Invalid 'messages[%d].content': %v.", i, err)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return nil, nil, fmt.Errorf("Missing required parameter: 'messages[%d].tool_call_id'.", i)
		}
		hm := harness.Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			hm.ToolCalls = append(hm.ToolCalls, harness.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, hm)
	}
	for i, t := range wr.Tools {
		if t.Function.Name == "" {
			return nil, nil, fmt.Errorf("Missing required parameter: 'tools[%d].function.name'.", i)
		}
		req.Tools = append(req.Tools, harness.FunctionDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req, &wr, nil
}

// contentText flattens a message content: a string, null, or an array of
// parts whose text parts are joined.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("expected a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}
