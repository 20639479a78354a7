package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

type chatHandler struct{ s *Server }

type chatInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    struct {
		Message string `json:"message" doc:"The user's message. Required."`
		UserID  string `json:"user_id" doc:"External user identifier: each has its own conversation. Required."`
	}
}

type chatOutput struct {
	Body struct {
		Success bool `json:"success"`
		*agent.ChatResult
	}
}

type clearInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    struct {
		UserID string `json:"user_id" doc:"Whose history to clear. Required."`
	}
}

func (h *chatHandler) register(api huma.API) {
	tags := []string{"Agent chat"}
	huma.Register(api, huma.Operation{
		OperationID: "chat", Method: http.MethodPost, Path: "/api/agents/{agent_id}/chat",
		Summary: "Send a message to an agent", Tags: tags,
		Description: "One conversation per (agent, user_id), kept across restarts. When the model endpoint fails, " +
			"the answer is a 502 with success false and the reason; the user's message stays in the history.",
	}, h.chat)
	huma.Register(api, huma.Operation{
		OperationID: "clear-chat", Method: http.MethodPost, Path: "/api/agents/{agent_id}/chat/clear",
		Summary: "Clear one user's conversation", Tags: tags,
	}, h.clear)
}

func (h *chatHandler) chat(ctx context.Context, in *chatInput) (*chatOutput, error) {
	res, err := h.s.opts.Agents.Chat(ctx, in.AgentID, in.Body.UserID, in.Body.Message)
	if err != nil {
		if errors.Is(err, harness.ErrInvalid) || errors.Is(err, harness.ErrNotFound) || errors.Is(err, harness.ErrConflict) {
			return nil, h.s.problem(ctx, err)
		}
		return nil, huma.NewError(http.StatusBadGateway, "the model endpoint failed: "+err.Error())
	}
	out := &chatOutput{}
	out.Body.Success, out.Body.ChatResult = true, res
	return out, nil
}

func (h *chatHandler) clear(ctx context.Context, in *clearInput) (*ok, error) {
	if in.Body.UserID == "" {
		return nil, h.s.problem(ctx, harness.Invalid("user_id", "is required"))
	}
	if err := h.s.opts.Agents.Clear(ctx, in.AgentID, in.Body.UserID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}
