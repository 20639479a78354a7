package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// evaluatorStore is what the evaluator operations need of the catalog.
type evaluatorStore interface {
	Evaluators(ctx context.Context) ([]harness.EvaluatorConfig, error)
	Evaluator(ctx context.Context, id string) (harness.EvaluatorConfig, error)
	CreateEvaluator(ctx context.Context, e harness.EvaluatorConfig) (harness.EvaluatorConfig, error)
	UpdateEvaluator(ctx context.Context, id string, apply func(*harness.EvaluatorConfig) error) (harness.EvaluatorConfig, error)
	DeleteEvaluatorIf(ctx context.Context, id string, check func(harness.EvaluatorConfig) error) error
}

var _ evaluatorStore = (*catalog.Catalog)(nil)

type evaluatorHandler struct {
	problems
	store evaluatorStore
}

// apiEvaluator is an evaluator as the API returns it.
type apiEvaluator struct {
	ID              string         `json:"id"`
	Name            string         `json:"name"`
	Description     string         `json:"description"`
	Type            string         `json:"type" doc:"regex (the built-in evaluator), or a registered or plugin evaluator type."`
	ExtractionRegex string         `json:"extraction_regex" doc:"Pattern extracting the answer: the named group answer, else group 1, else the whole match."`
	UsesPass2       bool           `json:"uses_pass2" doc:"Whether the model is asked to restate its final answer when extraction finds nothing."`
	Config          map[string]any `json:"config,omitempty" doc:"Settings of other evaluator types. Credentials in a URL are masked: https://user:********@host/..."`
}

func toAPIEvaluator(e harness.EvaluatorConfig) apiEvaluator {
	return apiEvaluator{
		ID: e.ID, Name: e.Name, Description: e.Description, Type: e.Type,
		ExtractionRegex: e.ExtractionRegex, UsesPass2: e.UsesPass2, Config: maskedConfig(e.Config),
	}
}

func toAPIEvaluators(es []harness.EvaluatorConfig) []apiEvaluator {
	out := make([]apiEvaluator, len(es))
	for i, e := range es {
		out[i] = toAPIEvaluator(e)
	}
	return out
}

// apiEvaluatorList is the answer of list-evaluators.
type apiEvaluatorList struct {
	Evaluators []apiEvaluator `json:"evaluators" doc:"Ordered by id."`
	Total      int            `json:"total" doc:"The number of evaluator records, without paging."`
}

// apiEvaluatorCreate is the body of create-evaluator, and an evaluator of
// an import.
type apiEvaluatorCreate struct {
	ID              string         `json:"id,omitempty" api:"required" doc:"Identifier: ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$."`
	Name            string         `json:"name,omitempty" api:"required" doc:"Not blank."`
	Description     string         `json:"description,omitempty"`
	Type            string         `json:"type,omitempty" doc:"regex (the default), or a registered or plugin evaluator type."`
	ExtractionRegex string         `json:"extraction_regex,omitempty" doc:"Pattern extracting the answer: the named group answer, else group 1, else the whole match. It must compile."`
	UsesPass2       bool           `json:"uses_pass2,omitempty" doc:"Ask the model to restate its final answer when extraction finds nothing."`
	Config          map[string]any `json:"config,omitempty" doc:"Settings of other evaluator types."`
}

func (b *apiEvaluatorCreate) evaluator() harness.EvaluatorConfig {
	return harness.EvaluatorConfig{
		ID: b.ID, Name: b.Name, Description: b.Description, Type: b.Type,
		ExtractionRegex: b.ExtractionRegex, UsesPass2: b.UsesPass2, Config: b.Config,
	}
}

// apiEvaluatorUpdate is the body of update-evaluator: the fields present
// change.
type apiEvaluatorUpdate struct {
	ID              *string        `json:"id,omitempty" doc:"If present, must equal the id in the path."`
	Name            *string        `json:"name,omitempty"`
	Description     *string        `json:"description,omitempty"`
	Type            *string        `json:"type,omitempty" doc:"regex, or a registered or plugin evaluator type."`
	ExtractionRegex *string        `json:"extraction_regex,omitempty" doc:"It must compile."`
	UsesPass2       *bool          `json:"uses_pass2,omitempty"`
	Config          map[string]any `json:"config,omitempty" doc:"Replaces the current settings. A URL with masked credentials, as read, keeps the stored one; with anything else changed it is a 422."`
}

func (f *apiEvaluatorUpdate) apply(e *harness.EvaluatorConfig) {
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

type getEvaluatorInput struct {
	EvaluatorID string `path:"evaluator_id" doc:"Evaluator id."`
	IfNoneMatchHeader
}

type deleteEvaluatorInput struct {
	EvaluatorID string `path:"evaluator_id" doc:"Evaluator id."`
	IfMatchHeader
}

type evaluatorOutput struct {
	ETag string `header:"ETag" doc:"The evaluator's entity tag, for If-Match and If-None-Match."`
	Body apiEvaluator
}

func newEvaluatorOutput(x harness.EvaluatorConfig) *evaluatorOutput {
	b := toAPIEvaluator(x)
	return &evaluatorOutput{ETag: etagOf(b), Body: b}
}

type listEvaluatorsOutput struct {
	Body apiEvaluatorList
}

type createEvaluatorInput struct {
	Body apiEvaluatorCreate
}

type updateEvaluatorInput struct {
	EvaluatorID string `path:"evaluator_id" doc:"Evaluator id."`
	IfMatchHeader
	Body apiEvaluatorUpdate
}

// registerEvaluators registers the evaluator operations.
func registerEvaluators(api huma.API, store evaluatorStore, log *slog.Logger) {
	h := &evaluatorHandler{problems{log}, store}
	tags := []string{tagEvaluators}
	register(api, huma.Operation{
		OperationID: "list-evaluators", Method: http.MethodGet, Path: "/api/settings/evaluators",
		Summary: "List evaluators", Tags: tags, Description: "Every evaluator record, ordered by id." + pagingDoc,
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-evaluator", Method: http.MethodGet, Path: "/api/settings/evaluators/{evaluator_id}",
		Summary: "Get an evaluator", Tags: tags, Description: "404 for an unknown id." + etagReadDoc,
		Errors: []int{http.StatusNotFound},
	}, h.get)
	documentNotModified(api, "/api/settings/evaluators/{evaluator_id}")
	register(api, huma.Operation{
		OperationID: "create-evaluator", Method: http.MethodPost, Path: "/api/settings/evaluators",
		Summary: "Create an evaluator", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "409 when the id exists; 422 for an unknown type, a regex that does not compile or settings the type refuses.",
		Errors:      []int{http.StatusConflict},
	}, h.create)
	register(api, huma.Operation{
		OperationID: "update-evaluator", Method: http.MethodPut, Path: "/api/settings/evaluators/{evaluator_id}",
		Summary: "Update an evaluator", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others. " +
			"A config URL whose credentials are masked as read back keeps the stored credentials. " +
			"409 when its file was edited by hand since the last sync." + etagWriteDoc,
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.update)
	register(api, huma.Operation{
		OperationID: "delete-evaluator", Method: http.MethodDelete, Path: "/api/settings/evaluators/{evaluator_id}",
		Summary: "Delete an evaluator", Tags: tags,
		Description: "An evaluator still used by a domain or a test is not deleted (409). " +
			"With If-Match, it is deleted only if its current ETag is listed (or the list is *), else 412.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.delete)
}

func (h *evaluatorHandler) list(ctx context.Context, in *PageParams) (*listEvaluatorsOutput, error) {
	all, err := h.store.Evaluators(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	es, total := page(all, *in)
	return &listEvaluatorsOutput{Body: apiEvaluatorList{Evaluators: toAPIEvaluators(es), Total: total}}, nil
}

func (h *evaluatorHandler) get(ctx context.Context, in *getEvaluatorInput) (*evaluatorOutput, error) {
	e, err := h.store.Evaluator(ctx, in.EvaluatorID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := newEvaluatorOutput(e)
	return out, in.IfNoneMatchHeader.check(out.ETag)
}

func (h *evaluatorHandler) create(ctx context.Context, in *createEvaluatorInput) (*evaluatorOutput, error) {
	ve := &harness.ValidationError{}
	restoreConfigURLs(ve, "config", in.Body.Config, nil)
	if err := ve.Err(); err != nil {
		return nil, h.problem(ctx, err)
	}
	e, err := h.store.CreateEvaluator(ctx, in.Body.evaluator())
	if err != nil {
		return nil, h.problem(ctx, withoutCredentials(err, configCredentials(in.Body.Config)))
	}
	return newEvaluatorOutput(e), nil
}

func (h *evaluatorHandler) update(ctx context.Context, in *updateEvaluatorInput) (*evaluatorOutput, error) {
	e, err := h.store.UpdateEvaluator(ctx, in.EvaluatorID, func(e *harness.EvaluatorConfig) error {
		if err := in.IfMatchHeader.check(etagOf(toAPIEvaluator(*e))); err != nil {
			return err
		}
		ve := &harness.ValidationError{}
		restoreConfigURLs(ve, "config", in.Body.Config, e.Config)
		if err := ve.Err(); err != nil {
			return err
		}
		in.Body.apply(e)
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, withoutCredentials(err, configCredentials(in.Body.Config)))
	}
	return newEvaluatorOutput(e), nil
}

func (h *evaluatorHandler) delete(ctx context.Context, in *deleteEvaluatorInput) (*successOutput, error) {
	check := func(e harness.EvaluatorConfig) error { return in.IfMatchHeader.check(etagOf(toAPIEvaluator(e))) }
	if err := h.store.DeleteEvaluatorIf(ctx, in.EvaluatorID, check); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}
