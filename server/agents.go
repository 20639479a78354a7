package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

// agentStore is what the agent operations need: the agent service, or a
// fake in tests.
type agentStore interface {
	List(ctx context.Context) ([]harness.Agent, error)
	Get(ctx context.Context, id string) (*agent.Detail, error)
	Create(ctx context.Context, a harness.Agent) (harness.Agent, error)
	Update(ctx context.Context, id string, apply func(*harness.Agent) error) (harness.Agent, error)
	Delete(ctx context.Context, id string) error
	Tools(ctx context.Context, id string) ([]string, error)
	SetTools(ctx context.Context, id string, toolIDs []string) ([]string, error)
}

var _ agentStore = (*agent.Service)(nil)

type agentHandler struct {
	problems
	agents agentStore
}

// apiAgent is an agent as the API returns it.
type apiAgent struct {
	ID           string  `json:"id" doc:"^[a-zA-Z0-9_]+$, at most 128 characters."`
	Name         string  `json:"name"`
	Description  string  `json:"description"`
	SystemPrompt string  `json:"system_prompt"`
	Model        *string `json:"model" doc:"The agent's model; null means the configured one."`
	CreatedAt    string  `json:"created_at" doc:"YYYY-MM-DD HH:MM:SS, UTC."`
}

func toAPIAgent(a harness.Agent) apiAgent {
	return apiAgent{ID: a.ID, Name: a.Name, Description: a.Description, SystemPrompt: a.SystemPrompt, Model: a.Model, CreatedAt: a.CreatedAt}
}

// apiAgentDetail is an agent with its tools and channels: the answer of
// get-agent.
type apiAgentDetail struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Description  string       `json:"description"`
	SystemPrompt string       `json:"system_prompt"`
	Model        *string      `json:"model" doc:"The agent's model; null means the configured one."`
	CreatedAt    string       `json:"created_at" doc:"YYYY-MM-DD HH:MM:SS, UTC."`
	Tools        []string     `json:"tools" doc:"Ids of the tools assigned to the agent."`
	Channels     []apiChannel `json:"channels"`
}

func toAPIAgentDetail(d *agent.Detail) apiAgentDetail {
	out := apiAgentDetail{
		ID: d.ID, Name: d.Name, Description: d.Description, SystemPrompt: d.SystemPrompt, Model: d.Model,
		CreatedAt: d.CreatedAt, Tools: nonNil(d.Tools), Channels: make([]apiChannel, len(d.Channels)),
	}
	for i, c := range d.Channels {
		out.Channels[i] = toAPIChannel(c)
	}
	return out
}

// apiAgentList is the answer of list-agents.
type apiAgentList struct {
	Agents []apiAgent `json:"agents" doc:"Oldest first."`
	Total  int        `json:"total" doc:"The number of agents, without paging."`
}

// apiAgentCreate is the body of create-agent.
type apiAgentCreate struct {
	ID           string  `json:"id,omitempty" api:"required" doc:"^[a-zA-Z0-9_]+$, at most 128 characters."`
	Name         string  `json:"name,omitempty"`
	Description  string  `json:"description,omitempty"`
	SystemPrompt string  `json:"system_prompt,omitempty"`
	Model        *string `json:"model,omitempty" doc:"The agent's model; absent means the configured one."`
}

// apiAgentUpdate is the body of update-agent: the fields present change.
type apiAgentUpdate struct {
	ID           *string          `json:"id,omitempty" doc:"If present, must equal the id in the path."`
	Name         *string          `json:"name,omitempty"`
	Description  *string          `json:"description,omitempty"`
	SystemPrompt *string          `json:"system_prompt,omitempty"`
	Model        optional[string] `json:"model,omitzero" doc:"The agent's model; null clears it: the configured one."`
}

func (f *apiAgentUpdate) apply(a *harness.Agent) {
	set(&a.ID, f.ID)
	set(&a.Name, f.Name)
	set(&a.Description, f.Description)
	set(&a.SystemPrompt, f.SystemPrompt)
	if f.Model.Set {
		a.Model = f.Model.Value
	}
}

// apiAgentTools is an agent's tool list.
type apiAgentTools struct {
	Tools []string `json:"tools" doc:"Tool ids."`
}

// apiAgentToolsUpdate is the body of set-agent-tools.
type apiAgentToolsUpdate struct {
	Tools []string `json:"tools" required:"true" doc:"The whole list of tool ids; it replaces the current one."`
}

type agentPath struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
}

type agentOutput struct {
	Body apiAgent
}

type agentDetailOutput struct {
	Body apiAgentDetail
}

type listAgentsOutput struct {
	Body apiAgentList
}

type createAgentInput struct {
	Body apiAgentCreate
}

type updateAgentInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    apiAgentUpdate
}

type agentToolsOutput struct {
	Body apiAgentTools
}

type setAgentToolsInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Body    apiAgentToolsUpdate
}

// registerAgents registers the agent operations, the agent's tools
// included.
func registerAgents(api huma.API, agents agentStore, log *slog.Logger) {
	h := &agentHandler{problems{log}, agents}
	tags := []string{tagAgents}
	register(api, huma.Operation{
		OperationID: "list-agents", Method: http.MethodGet, Path: "/api/agents",
		Summary: "List agents", Tags: tags, Description: "Every agent, oldest first." + pagingDoc,
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-agent", Method: http.MethodGet, Path: "/api/agents/{agent_id}",
		Summary: "Get an agent with its tools and channels", Tags: tags,
		Description: "Channel secrets are masked. 404 for an unknown id.",
		Errors:      []int{http.StatusNotFound},
	}, h.get)
	register(api, huma.Operation{
		OperationID: "create-agent", Method: http.MethodPost, Path: "/api/agents",
		Summary: "Create an agent", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "409 when the id exists; 422 for an id that does not match ^[a-zA-Z0-9_]+$.",
		Errors:      []int{http.StatusConflict},
	}, h.create)
	register(api, huma.Operation{
		OperationID: "update-agent", Method: http.MethodPut, Path: "/api/agents/{agent_id}",
		Summary: "Update an agent", Tags: tags,
		Description: "Changes any of name, description, system_prompt, model (null: the configured model); keeps the others.",
		Errors:      []int{http.StatusNotFound},
	}, h.update)
	register(api, huma.Operation{
		OperationID: "delete-agent", Method: http.MethodDelete, Path: "/api/agents/{agent_id}",
		Summary: "Delete an agent", Tags: tags,
		Description: "Removes the agent, its channels (stopped first), sessions, messages and knowledge-base directory.",
		Errors:      []int{http.StatusNotFound},
	}, h.delete)
	register(api, huma.Operation{
		OperationID: "get-agent-tools", Method: http.MethodGet, Path: "/api/agents/{agent_id}/tools",
		Summary: "An agent's tools", Tags: tags, Description: "The ids of the tools assigned to the agent. 404 for an unknown agent.",
		Errors: []int{http.StatusNotFound},
	}, h.tools)
	register(api, huma.Operation{
		OperationID: "set-agent-tools", Method: http.MethodPut, Path: "/api/agents/{agent_id}/tools",
		Summary: "Replace an agent's tools", Tags: tags,
		Description: "Replaces the whole list. An unknown tool id is a 422 and nothing changes.",
		Errors:      []int{http.StatusNotFound},
	}, h.setTools)
}

func (h *agentHandler) list(ctx context.Context, in *PageParams) (*listAgentsOutput, error) {
	all, err := h.agents.List(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	as, total := page(all, *in)
	out := &listAgentsOutput{Body: apiAgentList{Agents: make([]apiAgent, len(as)), Total: total}}
	for i, a := range as {
		out.Body.Agents[i] = toAPIAgent(a)
	}
	return out, nil
}

func (h *agentHandler) get(ctx context.Context, in *agentPath) (*agentDetailOutput, error) {
	d, err := h.agents.Get(ctx, in.AgentID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &agentDetailOutput{Body: toAPIAgentDetail(d)}, nil
}

func (h *agentHandler) create(ctx context.Context, in *createAgentInput) (*agentOutput, error) {
	b := in.Body
	a, err := h.agents.Create(ctx, harness.Agent{ID: b.ID, Name: b.Name, Description: b.Description, SystemPrompt: b.SystemPrompt, Model: b.Model})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &agentOutput{Body: toAPIAgent(a)}, nil
}

func (h *agentHandler) update(ctx context.Context, in *updateAgentInput) (*agentOutput, error) {
	a, err := h.agents.Update(ctx, in.AgentID, func(a *harness.Agent) error {
		in.Body.apply(a)
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &agentOutput{Body: toAPIAgent(a)}, nil
}

func (h *agentHandler) delete(ctx context.Context, in *agentPath) (*successOutput, error) {
	if err := h.agents.Delete(ctx, in.AgentID); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}

func (h *agentHandler) tools(ctx context.Context, in *agentPath) (*agentToolsOutput, error) {
	ts, err := h.agents.Tools(ctx, in.AgentID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &agentToolsOutput{Body: apiAgentTools{Tools: nonNil(ts)}}, nil
}

func (h *agentHandler) setTools(ctx context.Context, in *setAgentToolsInput) (*agentToolsOutput, error) {
	ts, err := h.agents.SetTools(ctx, in.AgentID, nonNil(in.Body.Tools))
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &agentToolsOutput{Body: apiAgentTools{Tools: nonNil(ts)}}, nil
}
