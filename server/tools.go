package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

type toolHandler struct{ s *Server }

// toolFields are the writable fields of a tool; absent fields are nil.
type toolFields struct {
	ID           *string              `json:"id,omitempty" doc:"Identifier. Required on creation."`
	Name         *string              `json:"name,omitempty" doc:"Defaults to the function's name."`
	Description  *string              `json:"description,omitempty"`
	Function     *harness.FunctionDef `json:"function,omitempty" doc:"The function definition (name, description, parameters as a JSON Schema object). Required on creation."`
	MockResponse optional[any]        `json:"mock_response,omitempty" doc:"Free-form JSON returned as the tool's simulated output. null on update: none."`
}

func (f *toolFields) apply(t *harness.ToolDefinition) {
	set(&t.ID, f.ID)
	set(&t.Name, f.Name)
	set(&t.Description, f.Description)
	set(&t.Function, f.Function)
	f.MockResponse.apply(&t.MockResponse)
}

type toolPath struct {
	ToolID string `path:"tool_id" doc:"Tool id."`
}

type toolOutput struct {
	Body harness.ToolDefinition
}

type listToolsOutput struct {
	Body struct {
		Tools []harness.ToolDefinition `json:"tools"`
	}
}

type createToolInput struct {
	Body toolFields
}

type updateToolInput struct {
	ToolID string `path:"tool_id" doc:"Tool id."`
	Body   toolFields
}

func (h *toolHandler) register(api huma.API) {
	tags := []string{"Tools"}
	huma.Register(api, huma.Operation{
		OperationID: "list-tools", Method: http.MethodGet, Path: "/api/settings/tools",
		Summary: "List tools", Tags: tags,
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "get-tool", Method: http.MethodGet, Path: "/api/settings/tools/{tool_id}",
		Summary: "Get a tool", Tags: tags,
	}, h.get)
	huma.Register(api, huma.Operation{
		OperationID: "create-tool", Method: http.MethodPost, Path: "/api/settings/tools",
		Summary: "Create a tool", Tags: tags, DefaultStatus: http.StatusCreated,
	}, h.create)
	huma.Register(api, huma.Operation{
		OperationID: "update-tool", Method: http.MethodPut, Path: "/api/settings/tools/{tool_id}",
		Summary: "Update a tool", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others.",
	}, h.update)
	huma.Register(api, huma.Operation{
		OperationID: "delete-tool", Method: http.MethodDelete, Path: "/api/settings/tools/{tool_id}",
		Summary: "Delete a tool", Tags: tags,
		Description: "A tool still listed by a test or a level is not deleted (409).",
	}, h.delete)
}

func (h *toolHandler) list(ctx context.Context, _ *struct{}) (*listToolsOutput, error) {
	ts, err := h.s.opts.Catalog.Tools(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &listToolsOutput{}
	out.Body.Tools = ts
	return out, nil
}

func (h *toolHandler) get(ctx context.Context, in *toolPath) (*toolOutput, error) {
	t, err := h.s.opts.Catalog.Tool(ctx, in.ToolID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &toolOutput{Body: t}, nil
}

func (h *toolHandler) create(ctx context.Context, in *createToolInput) (*toolOutput, error) {
	var t harness.ToolDefinition
	in.Body.apply(&t)
	t, err := h.s.opts.Catalog.CreateTool(ctx, t)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &toolOutput{Body: t}, nil
}

func (h *toolHandler) update(ctx context.Context, in *updateToolInput) (*toolOutput, error) {
	t, err := h.s.opts.Catalog.UpdateTool(ctx, in.ToolID, func(t *harness.ToolDefinition) error {
		in.Body.apply(t)
		return nil
	})
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &toolOutput{Body: t}, nil
}

func (h *toolHandler) delete(ctx context.Context, in *toolPath) (*ok, error) {
	if err := h.s.opts.Catalog.DeleteTool(ctx, in.ToolID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}
