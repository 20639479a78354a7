package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

type evaluatorHandler struct{ s *Server }

// evaluatorFields are the writable fields of an evaluator; absent fields
// are nil.
type evaluatorFields struct {
	ID              *string        `json:"id,omitempty" doc:"Identifier. Required on creation."`
	Name            *string        `json:"name,omitempty" doc:"Required on creation."`
	Description     *string        `json:"description,omitempty"`
	Type            *string        `json:"type,omitempty" doc:"regex (default), or a registered or plugin evaluator type."`
	ExtractionRegex *string        `json:"extraction_regex,omitempty" doc:"Pattern extracting the answer: named group 'answer', else group 1, else the whole match. Must compile."`
	UsesPass2       *bool          `json:"uses_pass2,omitempty" doc:"Ask the model to restate its final answer when extraction finds nothing."`
	Config          map[string]any `json:"config,omitempty" doc:"Settings of other evaluator types."`
}

func (f *evaluatorFields) apply(e *harness.EvaluatorConfig) {
	set(&e.ID, f.ID)
	set(&e.Name, f.Name)
	set(&e.Description, f.Description)
	set(&e.Type, f.Type)
	set(&e.ExtractionRegex, f.ExtractionRegex)
	set(&e.UsesPass2, f.UsesPass2)
	if f.Config != nil {
		e.Config = f.Config
	}
}

type evaluatorPath struct {
	EvaluatorID string `path:"evaluator_id" doc:"Evaluator id."`
}

type evaluatorOutput struct {
	Body harness.EvaluatorConfig
}

type listEvaluatorsOutput struct {
	Body struct {
		Evaluators []harness.EvaluatorConfig `json:"evaluators"`
	}
}

type createEvaluatorInput struct {
	Body evaluatorFields
}

type updateEvaluatorInput struct {
	EvaluatorID string `path:"evaluator_id" doc:"Evaluator id."`
	Body        evaluatorFields
}

func (h *evaluatorHandler) register(api huma.API) {
	tags := []string{"Evaluators"}
	huma.Register(api, huma.Operation{
		OperationID: "list-evaluators", Method: http.MethodGet, Path: "/api/settings/evaluators",
		Summary: "List evaluators", Tags: tags,
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "get-evaluator", Method: http.MethodGet, Path: "/api/settings/evaluators/{evaluator_id}",
		Summary: "Get an evaluator", Tags: tags,
	}, h.get)
	huma.Register(api, huma.Operation{
		OperationID: "create-evaluator", Method: http.MethodPost, Path: "/api/settings/evaluators",
		Summary: "Create an evaluator", Tags: tags, DefaultStatus: http.StatusCreated,
	}, h.create)
	huma.Register(api, huma.Operation{
		OperationID: "update-evaluator", Method: http.MethodPut, Path: "/api/settings/evaluators/{evaluator_id}",
		Summary: "Update an evaluator", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others.",
	}, h.update)
	huma.Register(api, huma.Operation{
		OperationID: "delete-evaluator", Method: http.MethodDelete, Path: "/api/settings/evaluators/{evaluator_id}",
		Summary: "Delete an evaluator", Tags: tags,
		Description: "An evaluator still used by a domain or a test is not deleted (409).",
	}, h.delete)
}

func (h *evaluatorHandler) list(ctx context.Context, _ *struct{}) (*listEvaluatorsOutput, error) {
	es, err := h.s.opts.Catalog.Evaluators(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &listEvaluatorsOutput{}
	out.Body.Evaluators = es
	return out, nil
}

func (h *evaluatorHandler) get(ctx context.Context, in *evaluatorPath) (*evaluatorOutput, error) {
	e, err := h.s.opts.Catalog.Evaluator(ctx, in.EvaluatorID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &evaluatorOutput{Body: e}, nil
}

func (h *evaluatorHandler) create(ctx context.Context, in *createEvaluatorInput) (*evaluatorOutput, error) {
	var e harness.EvaluatorConfig
	in.Body.apply(&e)
	e, err := h.s.opts.Catalog.CreateEvaluator(ctx, e)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &evaluatorOutput{Body: e}, nil
}

func (h *evaluatorHandler) update(ctx context.Context, in *updateEvaluatorInput) (*evaluatorOutput, error) {
	e, err := h.s.opts.Catalog.UpdateEvaluator(ctx, in.EvaluatorID, func(e *harness.EvaluatorConfig) error {
		in.Body.apply(e)
		return nil
	})
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &evaluatorOutput{Body: e}, nil
}

func (h *evaluatorHandler) delete(ctx context.Context, in *evaluatorPath) (*ok, error) {
	if err := h.s.opts.Catalog.DeleteEvaluator(ctx, in.EvaluatorID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}
