package harness

import (
	"context"
	"slices"
)

// AgentTarget is an agent as an evaluation runs it: each test's prompt
// goes through the agent's own pipeline (its system prompt, the
// knowledge-base text retrieved for the prompt, its tools and its model),
// as a chat with it would, in a conversation of its own that nothing
// stores. The agent service builds it (agent.Service.EvalTarget); the
// engine uses it for a run whose StartRequest names an agent.
type AgentTarget struct {
	// Definition is the agent as it was when the target was made: what a
	// run records as its provenance.
	Definition AgentDefinition
	// Model is the model the agent asks for: its own, else the agent
	// service's configured one.
	Model string
	// Tools are the tool records the agent lists (a tool deleted from the
	// catalog since it was assigned is left out), offered to the model
	// before a test's own tools.
	Tools []ToolDefinition
	// System returns the system message the agent's pipeline builds for a
	// user's message: the agent's system prompt, then the knowledge-base
	// text retrieved for that message, exactly as a chat builds it; and
	// what the retrieval gave. A knowledge base that cannot be read is left
	// out, with a log line, as in a chat. "" means no system message.
	System func(ctx context.Context, message string) (string, Retrieval)
}

// AgentDefinition is what decides how an agent answers, at one time: its
// record, the ids of its tools and the content of its knowledge base (a
// hash per file). Two runs of the same suite against the same agent whose
// knowledge base changed in between are told apart by it.
type AgentDefinition struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	SystemPrompt string `json:"system_prompt"`
	// Model is the agent's own model; nil means the configured one.
	Model *string `json:"model"`
	// Tools are the ids of the tools the agent lists, in order.
	Tools []string `json:"tools"`
	// KnowledgeBase lists the knowledge-base files the agent's chats
	// read, by name.
	KnowledgeBase []KBDocument `json:"knowledge_base"`
}

// KBDocument identifies the content of one knowledge-base file.
type KBDocument struct {
	File string `json:"file"`
	// SHA256 is the hex SHA-256 of the file's text.
	SHA256 string `json:"sha256"`
	// Bytes is the length of the text.
	Bytes int64 `json:"bytes"`
}

// Changes names the parts of the definition that differ in other:
// "name", "system_prompt", "model", "tools", "knowledge_base". None
// means the agent would answer as before.
func (d AgentDefinition) Changes(other AgentDefinition) []string {
	var out []string
	if d.Name != other.Name {
		out = append(out, "name")
	}
	if d.SystemPrompt != other.SystemPrompt {
		out = append(out, "system_prompt")
	}
	if (d.Model == nil) != (other.Model == nil) || (d.Model != nil && *d.Model != *other.Model) {
		out = append(out, "model")
	}
	if !slices.Equal(d.Tools, other.Tools) {
		out = append(out, "tools")
	}
	if !slices.Equal(d.KnowledgeBase, other.KnowledgeBase) {
		out = append(out, "knowledge_base")
	}
	return out
}

// Source is a knowledge-base chunk given to a model with a user's
// message: its file, its number within the file (from 0) and its
// retrieval score (higher is better; the fused score when retrieval is
// hybrid).
type Source struct {
	File  string  `json:"file"`
	Chunk int     `json:"chunk"`
	Score float64 `json:"score"`
}

// Retrieval is what an agent's knowledge base gave a model for one user
// message.
type Retrieval struct {
	// Sources are the chunks given to the model, best first.
	Sources []Source `json:"sources"`
	// Text is the knowledge-base text given (the chunks, as the system
	// message holds them): what a judge checks an answer against.
	Text string `json:"-"`
	// Mode is "bm25" or "hybrid", how the chunks were ranked; "" when the
	// knowledge base is empty.
	Mode string `json:"mode,omitempty"`
	// Fallback says why retrieval meant to be hybrid was BM25 only (the
	// embedding endpoint failed, say); "" when it was not.
	Fallback string `json:"fallback,omitempty"`
}
