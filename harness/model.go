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
	// Parts are what an assistant message carries besides its content and
	// tool calls: the model's reasoning (PartReasoning). They are kept in
	// the transcript and sent back to the model with the conversation, but
	// never scored: evaluators see Content.
	Parts []Part `json:"parts,omitempty"`
}

// Kinds of a message part (Part.Kind).
const (
	// PartReasoning is the model's thinking before its answer: Anthropic's
	// thinking blocks, Gemini's thought parts, the reasoning_content some
	// OpenAI-compatible servers send.
	PartReasoning = "reasoning"
)

// Part is a piece of a message other than its text.
type Part struct {
	// Kind is PartReasoning.
	Kind string `json:"kind"`
	// Text is the part's text; empty for a reasoning block the provider
	// keeps hidden (Anthropic's redacted thinking), whose Signature then
	// carries it.
	Text string `json:"text,omitempty"`
	// Signature is the provider's opaque token for the part, sent back
	// with it in the next request of a conversation (Anthropic's thinking
	// signature, Gemini's thought signature).
	Signature string `json:"signature,omitempty"`
	// Redacted marks a part whose text the provider encrypted into
	// Signature.
	Redacted bool `json:"redacted,omitempty"`
}

// Reasoning returns the text of the message's reasoning parts, in order,
// separated by blank lines.
func (m Message) Reasoning() string {
	var s string
	for _, p := range m.Parts {
		if p.Kind != PartReasoning || p.Text == "" {
			continue
		}
		if s != "" {
			s += "\n\n"
		}
		s += p.Text
	}
	return s
}

// ToolCall is a function call requested by a model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON object of arguments as the model sent it.
	Arguments string `json:"arguments"`
}

// Usage counts the tokens of a completion, as the provider reports them.
// PromptTokens include the CachedTokens (read from the provider's prompt
// cache, usually at a lower price) and CompletionTokens the
// ReasoningTokens (the model's thinking), whatever the provider's own
// convention: each client converts.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
		CachedTokens:     u.CachedTokens + o.CachedTokens,
		ReasoningTokens:  u.ReasoningTokens + o.ReasoningTokens,
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
	// Reasoning, when not nil, asks the model to think before it answers,
	// with an effort or a budget of tokens (see ReasoningParams); each
	// client maps it to its provider's field.
	Reasoning *ReasoningParams
	// Stream asks for the answer as a stream of events, so that the time
	// to its first token is known (ChatResponse.TTFT). The answer is the
	// same as without it.
	Stream bool
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
	// TTFT is the time from sending the request to its first token, for a
	// streamed answer (ChatRequest.Stream); 0 when not measured.
	TTFT time.Duration
}

// ChatModel performs one chat completion. harness/llm implements it over
// any OpenAI-compatible endpoint; embedders may bring their own.
type ChatModel interface {
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
}

// RateLimitState is how a provider's rate limiting stands during a run.
type RateLimitState struct {
	// Concurrency is the number of requests the client lets be in flight
	// to the provider now; ConcurrencyMax the most it ever allows.
	Concurrency    int `json:"concurrency"`
	ConcurrencyMax int `json:"concurrency_max"`
	// Throttled reports that the provider has answered a request with a
	// rate limit (429, 529 or 503) and the client has not yet grown its
	// concurrency back.
	Throttled bool `json:"throttled"`
	// WaitingS is the total time, in seconds, requests have spent waiting
	// out rate limits.
	WaitingS float64 `json:"waiting_s"`
	// Episodes counts the throttling episodes so far (each from the first
	// rate-limited answer until the concurrency is back), so that a
	// reader that looks now and then sees an episode it missed.
	Episodes int `json:"-"`
}

// RateLimitReporter is an optional ChatModel capability: the rate-limit
// state toward each provider it sends requests to, by provider name.
type RateLimitReporter interface {
	RateLimits() map[string]RateLimitState
}

// ModelRouter is an optional ChatModel capability: a model that sends
// each model reference to one of several providers ("anthropic/claude-…"
// to Anthropic, a plain name to the default endpoint) says where a
// reference goes, and whether it can go there at all.
type ModelRouter interface {
	// Endpoint returns the provider a reference goes to ("" for the
	// default endpoint), that provider's kind and its base URL without
	// credentials.
	Endpoint(model string) (provider, kind, baseURL string)
	// Check returns why a request for the reference would fail before it
	// is sent (a provider without its key), nil when it can be sent.
	Check(model string) error
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
