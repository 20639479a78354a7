package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

type domainHandler struct{ s *Server }

// domainFields are the writable fields of a domain; absent fields are nil.
type domainFields struct {
	ID           *string `json:"id,omitempty" doc:"Identifier: ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$. Required on creation."`
	Name         *string `json:"name,omitempty" doc:"Required on creation."`
	Description  *string `json:"description,omitempty"`
	EvaluatorID  *string `json:"evaluator_id,omitempty" doc:"Id of an existing evaluator; empty means the built-in regex evaluator."`
	Enabled      *bool   `json:"enabled,omitempty" doc:"Whether runs over all domains include it. Default true."`
	SystemPrompt *string `json:"system_prompt,omitempty"`
	Icon         *string `json:"icon,omitempty"`
	Color        *string `json:"color,omitempty" doc:"Hex colour #RRGGBB."`
}

func (f *domainFields) apply(d *harness.Domain) {
	set(&d.ID, f.ID)
	set(&d.Name, f.Name)
	set(&d.Description, f.Description)
	set(&d.EvaluatorID, f.EvaluatorID)
	set(&d.Enabled, f.Enabled)
	set(&d.SystemPrompt, f.SystemPrompt)
	set(&d.Icon, f.Icon)
	set(&d.Color, f.Color)
}

type domainPath struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
}

type domainOutput struct {
	Body harness.Domain
}

type listDomainsOutput struct {
	Body struct {
		Domains []harness.Domain `json:"domains"`
	}
}

type createDomainInput struct {
	Body domainFields
}

type updateDomainInput struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	Body     domainFields
}

func (h *domainHandler) register(api huma.API) {
	tags := []string{"Domains"}
	huma.Register(api, huma.Operation{
		OperationID: "list-domains", Method: http.MethodGet, Path: "/api/settings/domains",
		Summary: "List domains", Tags: tags,
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "get-domain", Method: http.MethodGet, Path: "/api/settings/domains/{domain_id}",
		Summary: "Get a domain", Tags: tags,
	}, h.get)
	huma.Register(api, huma.Operation{
		OperationID: "create-domain", Method: http.MethodPost, Path: "/api/settings/domains",
		Summary: "Create a domain", Tags: tags, DefaultStatus: http.StatusCreated,
	}, h.create)
	huma.Register(api, huma.Operation{
		OperationID: "update-domain", Method: http.MethodPut, Path: "/api/settings/domains/{domain_id}",
		Summary: "Update a domain", Description: "Changes the fields present in the body and keeps the others.", Tags: tags,
	}, h.update)
	huma.Register(api, huma.Operation{
		OperationID: "delete-domain", Method: http.MethodDelete, Path: "/api/settings/domains/{domain_id}",
		Summary: "Delete a domain", Description: "Removes the domain with all its tests and level configurations.", Tags: tags,
	}, h.delete)
}

func (h *domainHandler) list(ctx context.Context, _ *struct{}) (*listDomainsOutput, error) {
	ds, err := h.s.opts.Catalog.Domains(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &listDomainsOutput{}
	out.Body.Domains = ds
	return out, nil
}

func (h *domainHandler) get(ctx context.Context, in *domainPath) (*domainOutput, error) {
	d, err := h.s.opts.Catalog.Domain(ctx, in.DomainID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &domainOutput{Body: d}, nil
}

func (h *domainHandler) create(ctx context.Context, in *createDomainInput) (*domainOutput, error) {
	d := harness.Domain{Enabled: true}
	in.Body.apply(&d)
	d, err := h.s.opts.Catalog.CreateDomain(ctx, d)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &domainOutput{Body: d}, nil
}

func (h *domainHandler) update(ctx context.Context, in *updateDomainInput) (*domainOutput, error) {
	d, err := h.s.opts.Catalog.UpdateDomain(ctx, in.DomainID, func(d *harness.Domain) error {
		in.Body.apply(d)
		return nil
	})
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &domainOutput{Body: d}, nil
}

func (h *domainHandler) delete(ctx context.Context, in *domainPath) (*ok, error) {
	if err := h.s.opts.Catalog.DeleteDomain(ctx, in.DomainID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}
