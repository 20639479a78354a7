package harness

import "context"

// EvalRequest is everything an Evaluator may look at to score a response.
type EvalRequest struct {
	Test      Test
	Evaluator EvaluatorConfig
	// SystemPrompt is the effective system prompt the model was given.
	SystemPrompt string
	// Response is the model's final answer.
	Response string
	// Messages is the whole conversation, tool rounds included.
	Messages []Message
	// ToolCalls are the calls the model made while answering.
	ToolCalls []ToolCall
	// Client lets an evaluator ask follow-up questions (a second pass, a
	// judge). It may be nil.
	Client ChatModel
	// Model is the model name the run uses, for follow-up requests.
	Model string
	// Retrieval is what the agent's knowledge base gave the model, in a
	// run that targets an agent; nil otherwise.
	Retrieval *Retrieval
}

// EvalResult is an Evaluator's verdict.
type EvalResult struct {
	// Score is between 0 and 1.
	Score  float64
	Passed bool
	// Details is free-form and stored with the result; the regex evaluator
	// puts extracted_answer and pass2_used there.
	Details map[string]any
	// Usage counts tokens the evaluator itself spent (second pass, judge).
	Usage Usage
}

// Evaluator scores one response. Implementations must be safe for
// concurrent use: the engine scores many tests at once.
type Evaluator interface {
	Evaluate(ctx context.Context, req *EvalRequest) (*EvalResult, error)
}

// ConfigValidator is an optional Evaluator capability: it checks an
// evaluator record of its type before the record is stored.
type ConfigValidator interface {
	ValidateConfig(cfg EvaluatorConfig) error
}
