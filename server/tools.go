package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// toolStore is what the tool operations need of the catalog.
type toolStore interface {
	Tools(ctx context.Context) ([]harness.ToolDefinition, error)
	Tool(ctx context.Context, id string) (harness.ToolDefinition, error)
	CreateTool(ctx context.Context, t harness.ToolDefinition) (harness.ToolDefinition, error)
	UpdateTool(ctx context.Context, id string, apply func(*harness.ToolDefinition) error) (harness.ToolDefinition, error)
	DeleteToolIf(ctx context.Context, id string, check func(harness.ToolDefinition) error) error
}

var _ toolStore = (*catalog.Catalog)(nil)

type toolHandler struct {
	problems
	store toolStore
}

// apiToolFunction is a tool's function definition, as in the OpenAI tools
// API.
type apiToolFunction struct {
	Name        string         `json:"name" doc:"The function name the model calls: ^[a-zA-Z0-9_-]{1,64}$."`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters,omitempty" doc:"A JSON Schema object: type object, properties, required."`
}

// apiToolMCP is the MCP server that answers a tool's calls, as the API
// returns it.
type apiToolMCP struct {
	Transport string            `json:"transport" enum:"stdio,http" doc:"How the server is reached: stdio (command, a program started for the tool) or http (url). Not part of a request: command or url says it."`
	Command   []string          `json:"command,omitempty" doc:"The program started for the tool, speaking MCP on its standard input and output, and its arguments."`
	Env       map[string]string `json:"env,omitempty" doc:"Environment variables of the program, as written: ${VAR} references unresolved."`
	URL       string            `json:"url,omitempty" doc:"The MCP server's streamable HTTP endpoint."`
	Tool      string            `json:"tool,omitempty" doc:"The server's tool called; absent: the function's name."`
}

func toAPIToolMCP(m *harness.ToolMCP) *apiToolMCP {
	if m == nil {
		return nil
	}
	transport := "stdio"
	if len(m.Command) == 0 {
		transport = "http"
	}
	return &apiToolMCP{Transport: transport, Command: m.Command, Env: m.Env, URL: m.URL, Tool: m.Tool}
}

// apiToolMCPInput is a tool's MCP server in a request.
type apiToolMCPInput struct {
	Command []string          `json:"command,omitempty" doc:"A program speaking MCP on its standard input and output, and its arguments: started on the tool's first call. Exclusive with url."`
	Env     map[string]string `json:"env,omitempty" doc:"Environment variables of the program (with command only). A value may name variables of the server's environment as ${VAR}: resolved when the program starts, never stored resolved; other values are stored and shown as written, so put secrets as ${VAR}."`
	URL     string            `json:"url,omitempty" doc:"An MCP server's streamable HTTP endpoint, http or https. Exclusive with command."`
	Tool    string            `json:"tool,omitempty" doc:"The server's tool to call; default the function's name."`
}

func (m *apiToolMCPInput) mcp() *harness.ToolMCP {
	if m == nil {
		return nil
	}
	return &harness.ToolMCP{Command: m.Command, Env: m.Env, URL: m.URL, Tool: m.Tool}
}

// apiTool is a tool as the API returns it.
type apiTool struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Function     apiToolFunction `json:"function"`
	MockResponse any             `json:"mock_response,omitempty" doc:"Free-form JSON returned as the tool's output when the model calls it; absent when the tool has none."`
	MCP          *apiToolMCP     `json:"mcp,omitempty"`
}

func toAPITool(t harness.ToolDefinition) apiTool {
	return apiTool{
		ID: t.ID, Name: t.Name, Description: t.Description,
		Function:     apiToolFunction{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters},
		MockResponse: t.MockResponse,
		MCP:          toAPIToolMCP(t.MCP),
	}
}

func toAPITools(ts []harness.ToolDefinition) []apiTool {
	out := make([]apiTool, len(ts))
	for i, t := range ts {
		out[i] = toAPITool(t)
	}
	return out
}

// apiToolList is the answer of list-tools.
type apiToolList struct {
	Tools []apiTool `json:"tools" doc:"Ordered by id."`
	Total int       `json:"total" doc:"The number of tool records, without paging."`
}

// apiToolFunctionInput is a function definition in a request.
type apiToolFunctionInput struct {
	Name        string         `json:"name,omitempty" api:"required" doc:"The function name the model calls: ^[a-zA-Z0-9_-]{1,64}$."`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty" doc:"A JSON Schema object: type object, properties (each a schema object), required (names of properties)."`
}

func (f *apiToolFunctionInput) function() harness.FunctionDef {
	return harness.FunctionDef{Name: f.Name, Description: f.Description, Parameters: f.Parameters}
}

// apiToolCreate is the body of create-tool, and a tool of an import.
type apiToolCreate struct {
	ID           string                `json:"id,omitempty" api:"required" doc:"Identifier: ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$."`
	Name         string                `json:"name,omitempty" doc:"Default: the function's name."`
	Description  string                `json:"description,omitempty"`
	Function     *apiToolFunctionInput `json:"function,omitempty" api:"required"`
	MockResponse any                   `json:"mock_response,omitempty" doc:"Free-form JSON returned as the tool's output when the model calls it."`
	MCP          *apiToolMCPInput      `json:"mcp,omitempty"`
}

func (b *apiToolCreate) tool() harness.ToolDefinition {
	t := harness.ToolDefinition{
		ID: b.ID, Name: b.Name, Description: b.Description,
		MockResponse: b.MockResponse,
		MCP:          b.MCP.mcp(),
	}
	if b.Function != nil {
		t.Function = b.Function.function()
	}
	return t
}

// apiToolUpdate is the body of update-tool: the fields present change.
type apiToolUpdate struct {
	ID           *string                   `json:"id,omitempty" doc:"If present, must equal the id in the path."`
	Name         *string                   `json:"name,omitempty"`
	Description  *string                   `json:"description,omitempty"`
	Function     *apiToolFunctionInput     `json:"function,omitempty"`
	MockResponse optional[any]             `json:"mock_response,omitzero" doc:"Free-form JSON returned as the tool's output. null clears it: the tool has none."`
	MCP          optional[apiToolMCPInput] `json:"mcp,omitzero" doc:"The MCP server that answers the tool's calls. null clears it: the tool has none."`
}

func (f *apiToolUpdate) apply(t *harness.ToolDefinition) {
	set(&t.ID, f.ID)
	set(&t.Name, f.Name)
	set(&t.Description, f.Description)
	if f.Function != nil {
		t.Function = f.Function.function()
	}
	f.MockResponse.apply(&t.MockResponse)
	if f.MCP.Set {
		t.MCP = f.MCP.Value.mcp()
	}
}

type getToolInput struct {
	ToolID string `path:"tool_id" doc:"Tool id."`
	IfNoneMatchHeader
}

type deleteToolInput struct {
	ToolID string `path:"tool_id" doc:"Tool id."`
	IfMatchHeader
}

type toolOutput struct {
	ETag string `header:"ETag" doc:"The tool's entity tag, for If-Match and If-None-Match."`
	Body apiTool
}

func newToolOutput(x harness.ToolDefinition) *toolOutput {
	b := toAPITool(x)
	return &toolOutput{ETag: etagOf(b), Body: b}
}

type listToolsOutput struct {
	Body apiToolList
}

type createToolInput struct {
	Body apiToolCreate
}

type updateToolInput struct {
	ToolID string `path:"tool_id" doc:"Tool id."`
	IfMatchHeader
	Body apiToolUpdate
}

// registerTools registers the tool operations.
func registerTools(api huma.API, store toolStore, log *slog.Logger) {
	h := &toolHandler{problems{log}, store}
	tags := []string{tagTools}
	register(api, huma.Operation{
		OperationID: "list-tools", Method: http.MethodGet, Path: "/api/settings/tools",
		Summary: "List tools", Tags: tags, Description: "Every tool record, ordered by id." + pagingDoc,
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-tool", Method: http.MethodGet, Path: "/api/settings/tools/{tool_id}",
		Summary: "Get a tool", Tags: tags, Description: "404 for an unknown id." + etagReadDoc,
		Errors: []int{http.StatusNotFound},
	}, h.get)
	documentNotModified(api, "/api/settings/tools/{tool_id}")
	register(api, huma.Operation{
		OperationID: "create-tool", Method: http.MethodPost, Path: "/api/settings/tools",
		Summary: "Create a tool", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "409 when the id exists; 422 for a bad function name or parameters that are not a JSON Schema object.",
		Errors:      []int{http.StatusConflict},
	}, h.create)
	register(api, huma.Operation{
		OperationID: "update-tool", Method: http.MethodPut, Path: "/api/settings/tools/{tool_id}",
		Summary: "Update a tool", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others; mock_response null clears it. " +
			"409 when its file was edited by hand since the last sync." + etagWriteDoc,
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.update)
	register(api, huma.Operation{
		OperationID: "delete-tool", Method: http.MethodDelete, Path: "/api/settings/tools/{tool_id}",
		Summary: "Delete a tool", Tags: tags,
		Description: "A tool still listed by a test, a level or an agent is not deleted (409). " +
			"With If-Match, it is deleted only if its current ETag is listed (or the list is *), else 412.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.delete)
}

func (h *toolHandler) list(ctx context.Context, in *PageParams) (*listToolsOutput, error) {
	all, err := h.store.Tools(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	ts, total := page(all, *in)
	return &listToolsOutput{Body: apiToolList{Tools: toAPITools(ts), Total: total}}, nil
}

func (h *toolHandler) get(ctx context.Context, in *getToolInput) (*toolOutput, error) {
	t, err := h.store.Tool(ctx, in.ToolID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := newToolOutput(t)
	return out, in.IfNoneMatchHeader.check(out.ETag)
}

func (h *toolHandler) create(ctx context.Context, in *createToolInput) (*toolOutput, error) {
	t, err := h.store.CreateTool(ctx, in.Body.tool())
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newToolOutput(t), nil
}

func (h *toolHandler) update(ctx context.Context, in *updateToolInput) (*toolOutput, error) {
	t, err := h.store.UpdateTool(ctx, in.ToolID, func(t *harness.ToolDefinition) error {
		if err := in.IfMatchHeader.check(etagOf(toAPITool(*t))); err != nil {
			return err
		}
		in.Body.apply(t)
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newToolOutput(t), nil
}

func (h *toolHandler) delete(ctx context.Context, in *deleteToolInput) (*successOutput, error) {
	check := func(t harness.ToolDefinition) error { return in.IfMatchHeader.check(etagOf(toAPITool(t))) }
	if err := h.store.DeleteToolIf(ctx, in.ToolID, check); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}
