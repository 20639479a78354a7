package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

type agentHandler struct{ s *Server }

type agentFields struct {
	ID           *string          `json:"id,omitempty" doc:"Identifier: ^[a-zA-Z0-9_]+$. Required on creation."`
	Name         *string          `json:"name,omitempty"`
	Description  *string          `json:"description,omitempty"`
	SystemPrompt *string          `json:"system_prompt,omitempty"`
	Model        optional[string] `json:"model,omitempty" doc:"Model name; null means the configured model."`
}

func (f *agentFields) apply(a *harness.Agent) {
	set(&a.ID, f.ID)
	set(&a.Name, f.Name)
	set(&a.Description, f.Description)
	set(&a.SystemPrompt, f.SystemPrompt)
	if f.Model.Set {
		a.Model = f.Model.Value
	}
}

type agentPath struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
}

type agentOutput struct {
	Body harness.Agent
}

type agentDetailOutput struct {
	Body *agent.Detail
}

type listAgentsOutput struct {
	Body struct {
		Agents []harness.Agent `json:"agents"`
	}
}

type createAgentInput struct {
	Body agentFields
}

type updateAgentInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    agentFields
}

type agentToolsOutput struct {
	Body struct {
		Tools []string `json:"tools" doc:"Tool ids."`
	}
}

type setAgentToolsInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    struct {
		Tools []string `json:"tools" required:"true" doc:"The whole list of tool ids; it replaces the current one."`
	}
}

func (h *agentHandler) register(api huma.API) {
	tags := []string{"Agents"}
	huma.Register(api, huma.Operation{
		OperationID: "list-agents", Method: http.MethodGet, Path: "/api/agents",
		Summary: "List agents", Tags: tags,
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "get-agent", Method: http.MethodGet, Path: "/api/agents/{agent_id}",
		Summary: "Get an agent with its tools and channels", Tags: tags,
	}, h.get)
	huma.Register(api, huma.Operation{
		OperationID: "create-agent", Method: http.MethodPost, Path: "/api/agents",
		Summary: "Create an agent", Tags: tags, DefaultStatus: http.StatusCreated,
	}, h.create)
	huma.Register(api, huma.Operation{
		OperationID: "update-agent", Method: http.MethodPut, Path: "/api/agents/{agent_id}",
		Summary: "Update an agent", Tags: tags,
		Description: "Changes any of name, description, system_prompt, model (null: the configured model); keeps the others.",
	}, h.update)
	huma.Register(api, huma.Operation{
		OperationID: "delete-agent", Method: http.MethodDelete, Path: "/api/agents/{agent_id}",
		Summary: "Delete an agent", Tags: tags,
		Description: "Removes the agent, its channels (stopped first), sessions, messages and knowledge-base directory.",
	}, h.delete)
	huma.Register(api, huma.Operation{
		OperationID: "get-agent-tools", Method: http.MethodGet, Path: "/api/agents/{agent_id}/tools",
		Summary: "An agent's tools", Tags: tags,
	}, h.tools)
	huma.Register(api, huma.Operation{
		OperationID: "set-agent-tools", Method: http.MethodPut, Path: "/api/agents/{agent_id}/tools",
		Summary: "Replace an agent's tools", Tags: tags,
		Description: "Replaces the whole list. An unknown tool id is a 422 and nothing changes.",
	}, h.setTools)
}

func (h *agentHandler) list(ctx context.Context, _ *struct{}) (*listAgentsOutput, error) {
	as, err := h.s.opts.Agents.List(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &listAgentsOutput{}
	out.Body.Agents = as
	return out, nil
}

func (h *agentHandler) get(ctx context.Context, in *agentPath) (*agentDetailOutput, error) {
	d, err := h.s.opts.Agents.Get(ctx, in.AgentID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &agentDetailOutput{Body: d}, nil
}

func (h *agentHandler) create(ctx context.Context, in *createAgentInput) (*agentOutput, error) {
	var a harness.Agent
	in.Body.apply(&a)
	a, err := h.s.opts.Agents.Create(ctx, a)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &agentOutput{Body: a}, nil
}

func (h *agentHandler) update(ctx context.Context, in *updateAgentInput) (*agentOutput, error) {
	a, err := h.s.opts.Agents.Update(ctx, in.AgentID, func(a *harness.Agent) error {
		in.Body.apply(a)
		return nil
	})
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &agentOutput{Body: a}, nil
}

func (h *agentHandler) delete(ctx context.Context, in *agentPath) (*ok, error) {
	if err := h.s.opts.Agents.Delete(ctx, in.AgentID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}

func (h *agentHandler) tools(ctx context.Context, in *agentPath) (*agentToolsOutput, error) {
	ts, err := h.s.opts.Agents.Tools(ctx, in.AgentID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &agentToolsOutput{}
	out.Body.Tools = ts
	return out, nil
}

func (h *agentHandler) setTools(ctx context.Context, in *setAgentToolsInput) (*agentToolsOutput, error) {
	tools := in.Body.Tools
	if tools == nil {
		tools = []string{}
	}
	ts, err := h.s.opts.Agents.SetTools(ctx, in.AgentID, tools)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &agentToolsOutput{}
	out.Body.Tools = ts
	return out, nil
}
