package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

// chatService is what the chat operations need of the agent service.
type chatService interface {
	Chat(ctx context.Context, agentID, userID, message string) (*agent.ChatResult, error)
	Clear(ctx context.Context, agentID, userID string) error
}

var _ chatService = (*agent.Service)(nil)

type chatHandler struct {
	problems
	chat chatService
}

// apiChatMessage is the body of chat.
type apiChatMessage struct {
	Message string `json:"message,omitempty" api:"required" doc:"The user's message; not blank."`
	UserID  string `json:"user_id,omitempty" api:"required" doc:"External user identifier: each has its own conversation."`
}

// apiTokenUsage counts the tokens of model calls.
type apiTokenUsage struct {
	PromptTokens     int `json:"prompt_tokens" doc:"Tokens read, the cached ones included."`
	CompletionTokens int `json:"completion_tokens" doc:"Tokens written, the reasoning ones included."`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty" doc:"Tokens of the prompt read from the provider's prompt cache; absent when none."`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty" doc:"Tokens the model spent thinking; absent when none (or not reported)."`
}

// apiChatReply is the answer of chat.
type apiChatReply struct {
	Success            bool                 `json:"success" doc:"True: the agent answered."`
	Response           string               `json:"response" doc:"The agent's reply."`
	SessionID          string               `json:"session_id" doc:"Names the conversation of the agent and the user."`
	ToolCalls          []map[string]any     `json:"tool_calls" doc:"The turn's tool calls, in order, each {name, arguments, output} (arguments and output as JSON when they are JSON, else as text)."`
	Usage              apiTokenUsage        `json:"usage"`
	ToolRoundsExceeded bool                 `json:"tool_rounds_exceeded,omitempty" doc:"True when the model used every round of tool calls and was then asked for its answer without tools; absent otherwise."`
	Sources            []apiSource          `json:"sources" doc:"The knowledge-base chunks given to the model with the message, best first; empty when the agent's knowledge base gave nothing."`
	Retrieval          orNull[apiRetrieval] `json:"retrieval" doc:"How sources were found; null when the knowledge base gave nothing (the agent has none, or it could not be read)."`
}

// apiSource is a knowledge-base chunk given to the model for a reply.
type apiSource struct {
	File  string  `json:"file" doc:"The knowledge-base file the chunk is from."`
	Chunk int     `json:"chunk" doc:"The chunk's number in that file, from 0 (the model sees it as part chunk+1)."`
	Score float64 `json:"score" doc:"How well the chunk matched the message, higher is better: its BM25 score, or its fused score when retrieval is hybrid; 0 for a chunk given only because the whole knowledge base fits the model's budget."`
}

// apiRetrieval says how a reply's sources were found.
type apiRetrieval struct {
	Mode     string `json:"mode" enum:"bm25,hybrid" doc:"bm25: keyword search only. hybrid: keyword search and embeddings, fused by reciprocal rank."`
	Fallback string `json:"fallback,omitempty" doc:"Why retrieval meant to be hybrid was BM25 only (the embedding endpoint failed, say); absent when it was not."`
}

// toAPISources converts sources; nil stays nil (a message without any).
func toAPISources(src []harness.Source) []apiSource {
	if src == nil {
		return nil
	}
	out := make([]apiSource, len(src))
	for i, s := range src {
		out[i] = apiSource{File: s.File, Chunk: s.Chunk, Score: s.Score}
	}
	return out
}

// toAPIRetrieval converts how sources were found; nil is null.
func toAPIRetrieval(r *agent.RetrievalInfo) orNull[apiRetrieval] {
	if r == nil {
		return orNull[apiRetrieval]{}
	}
	return orNull[apiRetrieval]{V: &apiRetrieval{Mode: r.Mode, Fallback: r.Fallback}}
}

// apiChatClear is the body of clear-chat.
type apiChatClear struct {
	UserID string `json:"user_id,omitempty" api:"required" doc:"Whose conversation to clear."`
}

type chatInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    apiChatMessage
}

type chatOutput struct {
	Body apiChatReply
}

type clearInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    apiChatClear
}

// registerChat registers the chat operations.
func registerChat(api huma.API, chat chatService, log *slog.Logger) {
	h := &chatHandler{problems{log}, chat}
	tags := []string{tagChat}
	register(api, huma.Operation{
		OperationID: "chat", Method: http.MethodPost, Path: "/api/agents/{agent_id}/chat",
		Summary: "Send a message to an agent", Tags: tags,
		Description: "One conversation per (agent, user_id), kept across restarts. When the model endpoint fails, " +
			"the answer is a 502 with success false and the reason; the user's message stays in the history. " +
			"sources lists the knowledge-base chunks the model was given, and retrieval how they were found.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusBadGateway},
	}, h.chatTurn)
	register(api, huma.Operation{
		OperationID: "clear-chat", Method: http.MethodPost, Path: "/api/agents/{agent_id}/chat/clear",
		Summary: "Clear one user's conversation", Tags: tags,
		Description: "Forgets the conversation of the agent with that user. 404 for an unknown agent.",
		Errors:      []int{http.StatusNotFound},
	}, h.clear)
}

func (h *chatHandler) chatTurn(ctx context.Context, in *chatInput) (*chatOutput, error) {
	res, err := h.chat.Chat(ctx, in.AgentID, in.Body.UserID, in.Body.Message)
	if err != nil {
		if errors.Is(err, harness.ErrInvalid) || errors.Is(err, harness.ErrNotFound) || errors.Is(err, harness.ErrConflict) {
			return nil, h.problem(ctx, err)
		}
		if errors.Is(err, harness.ErrToolUnavailable) {
			return nil, huma.NewError(http.StatusBadGateway, "a tool of the agent failed: "+err.Error())
		}
		return nil, huma.NewError(http.StatusBadGateway, "the model endpoint failed: "+err.Error())
	}
	return &chatOutput{Body: toAPIChatReply(res)}, nil
}

func toAPIChatReply(res *agent.ChatResult) apiChatReply {
	calls := res.ToolCalls
	if calls == nil {
		calls = []map[string]any{}
	}
	return apiChatReply{
		Success: true, Response: res.Response, SessionID: res.SessionID, ToolCalls: calls,
		Usage:              apiTokenUsage(res.Usage),
		ToolRoundsExceeded: res.ToolRoundsExceeded,
		Sources:            nonNil(toAPISources(res.Sources)), Retrieval: toAPIRetrieval(res.Retrieval),
	}
}

func (h *chatHandler) clear(ctx context.Context, in *clearInput) (*successOutput, error) {
	if in.Body.UserID == "" {
		return nil, h.problem(ctx, harness.Invalid("user_id", "is required"))
	}
	if err := h.chat.Clear(ctx, in.AgentID, in.Body.UserID); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}
