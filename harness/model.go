package harness

import (
	"context"
	"time"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a chat conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a function call requested by a model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object of arguments as the model sent it.
	Arguments string `json:"arguments"`
}

// Usage counts the tokens of a completion.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// ChatRequest is one chat completion request.
type ChatRequest struct {
	// Model is the endpoint's model name; empty means the client's default.
	Model    string
	Messages []Message
	// Tools are the functions the model may call.
	Tools []FunctionDef
	// Temperature, when not nil, is sent as the sampling temperature.
	Temperature *float64
	// TopP, when not nil, is sent as top_p (nucleus sampling).
	TopP *float64
	// MaxTokens, when positive, bounds the tokens of the answer.
	MaxTokens int
	// Seed, when not nil, asks the endpoint for reproducible sampling.
	Seed *int64
	// Timeout, when positive, bounds each attempt of this request instead
	// of the model client's own timeout.
	Timeout time.Duration
	// MaxRetries, when not nil, replaces the model client's number of
	// retries for this request (0: a single attempt).
	MaxRetries *int
	// OnAttempt, when set, is told of every attempt of the request as it
	// ends, the retries included, in order; a client that cannot tell its
	// attempts apart (or a cache) reports the request as one attempt. It
	// is called from the goroutine of Chat before Chat returns. It is not
	// part of what is sent, and a ChatModel that ignores it is still a
	// correct ChatModel: the caller then measures the request as a whole.
	OnAttempt func(Attempt)
}

// ChatResponse is the model's answer to a ChatRequest.
type ChatResponse struct {
	Message      Message
	Usage        Usage
	Model        string
	FinishReason string
}

// ChatModel performs one chat completion. harness/llm implements it over
// any OpenAI-compatible endpoint; embedders may bring their own.
type ChatModel interface {
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
}

// ModelLister is an optional ChatModel capability: the names of the models
// the endpoint serves.
type ModelLister interface {
	Models(ctx context.Context) ([]string, error)
}

// Embedder turns texts into vectors for semantic search: one vector per
// text, in order, all of the same length, from the named model.
// harness/llm implements it over an OpenAI-compatible /embeddings
// endpoint.
type Embedder interface {
	Embed(ctx context.Context, model string, texts []string) ([][]float32, error)
}
