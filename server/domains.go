package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// domainStore is what the domain operations need: the catalog, or a fake
// in tests.
type domainStore interface {
	Domains(ctx context.Context) ([]harness.Domain, error)
	Domain(ctx context.Context, id string) (harness.Domain, error)
	CreateDomain(ctx context.Context, d harness.Domain) (harness.Domain, error)
	UpdateDomain(ctx context.Context, id string, apply func(*harness.Domain) error) (harness.Domain, error)
	DeleteDomainIf(ctx context.Context, id string, check func(harness.Domain) error) error
}

var _ domainStore = (*catalog.Catalog)(nil)

type domainHandler struct {
	problems
	store domainStore
}

// apiDomain is a domain as the API returns it.
type apiDomain struct {
	ID           string `json:"id" doc:"Identifier chosen at creation."`
	Name         string `json:"name"`
	Description  string `json:"description"`
	EvaluatorID  string `json:"evaluator_id" doc:"The evaluator scoring the domain's tests; empty means the built-in regex evaluator."`
	Enabled      bool   `json:"enabled" doc:"Whether a run over all domains includes it."`
	SystemPrompt string `json:"system_prompt"`
	Icon         string `json:"icon"`
	Color        string `json:"color" doc:"Hex colour #RRGGBB, or empty."`
}

func toAPIDomain(d harness.Domain) apiDomain {
	return apiDomain{
		ID: d.ID, Name: d.Name, Description: d.Description, EvaluatorID: d.EvaluatorID,
		Enabled: d.Enabled, SystemPrompt: d.SystemPrompt, Icon: d.Icon, Color: d.Color,
	}
}

// apiDomainList is the answer of list-domains.
type apiDomainList struct {
	Domains []apiDomain `json:"domains" doc:"Ordered by id."`
	Total   int         `json:"total" doc:"The number of domains, without paging."`
}

// apiDomainCreate is the body of create-domain, and a domain of an import.
type apiDomainCreate struct {
	ID           string `json:"id,omitempty" api:"required" doc:"Identifier: ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$."`
	Name         string `json:"name,omitempty" api:"required" doc:"Not blank."`
	Description  string `json:"description,omitempty"`
	EvaluatorID  string `json:"evaluator_id,omitempty" doc:"Id of an existing evaluator; empty or absent means the built-in regex evaluator."`
	Enabled      *bool  `json:"enabled,omitempty" doc:"Whether a run over all domains includes it. Default true."`
	SystemPrompt string `json:"system_prompt,omitempty"`
	Icon         string `json:"icon,omitempty"`
	Color        string `json:"color,omitempty" doc:"Hex colour #RRGGBB."`
}

func (b *apiDomainCreate) domain() harness.Domain {
	return harness.Domain{
		ID: b.ID, Name: b.Name, Description: b.Description, EvaluatorID: b.EvaluatorID,
		Enabled: b.Enabled == nil || *b.Enabled, SystemPrompt: b.SystemPrompt, Icon: b.Icon, Color: b.Color,
	}
}

// apiDomainUpdate is the body of update-domain: the fields present change.
type apiDomainUpdate struct {
	ID           *string `json:"id,omitempty" doc:"If present, must equal the id in the path."`
	Name         *string `json:"name,omitempty"`
	Description  *string `json:"description,omitempty"`
	EvaluatorID  *string `json:"evaluator_id,omitempty" doc:"Id of an existing evaluator; empty means the built-in regex evaluator."`
	Enabled      *bool   `json:"enabled,omitempty"`
	SystemPrompt *string `json:"system_prompt,omitempty"`
	Icon         *string `json:"icon,omitempty"`
	Color        *string `json:"color,omitempty" doc:"Hex colour #RRGGBB, or empty."`
}

func (f *apiDomainUpdate) apply(d *harness.Domain) {
	set(&d.ID, f.ID)
	set(&d.Name, f.Name)
	set(&d.Description, f.Description)
	set(&d.EvaluatorID, f.EvaluatorID)
	set(&d.Enabled, f.Enabled)
	set(&d.SystemPrompt, f.SystemPrompt)
	set(&d.Icon, f.Icon)
	set(&d.Color, f.Color)
}

type getDomainInput struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	IfNoneMatchHeader
}

type deleteDomainInput struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	IfMatchHeader
}

type domainOutput struct {
	ETag string `header:"ETag" doc:"The domain's entity tag, for If-Match and If-None-Match."`
	Body apiDomain
}

func newDomainOutput(d harness.Domain) *domainOutput {
	b := toAPIDomain(d)
	return &domainOutput{ETag: etagOf(b), Body: b}
}

type listDomainsOutput struct {
	Body apiDomainList
}

type createDomainInput struct {
	Body apiDomainCreate
}

type updateDomainInput struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	IfMatchHeader
	Body apiDomainUpdate
}

// registerDomains registers the domain operations.
func registerDomains(api huma.API, store domainStore, log *slog.Logger) {
	h := &domainHandler{problems{log}, store}
	tags := []string{tagDomains}
	register(api, huma.Operation{
		OperationID: "list-domains", Method: http.MethodGet, Path: "/api/settings/domains",
		Summary: "List domains", Tags: tags, Description: "Every domain, enabled or not, ordered by id." + pagingDoc,
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-domain", Method: http.MethodGet, Path: "/api/settings/domains/{domain_id}",
		Summary: "Get a domain", Tags: tags, Description: "404 for an unknown id." + etagReadDoc,
		Errors: []int{http.StatusNotFound},
	}, h.get)
	documentNotModified(api, "/api/settings/domains/{domain_id}")
	register(api, huma.Operation{
		OperationID: "create-domain", Method: http.MethodPost, Path: "/api/settings/domains",
		Summary: "Create a domain", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "Writes the domain's file, then the cache. 409 when the id exists; " +
			"422 for a bad id or colour, a blank name or an unknown evaluator_id.",
		Errors: []int{http.StatusConflict},
	}, h.create)
	register(api, huma.Operation{
		OperationID: "update-domain", Method: http.MethodPut, Path: "/api/settings/domains/{domain_id}",
		Summary: "Update a domain", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others. " +
			"409 when the domain's file was edited by hand since the last sync." + etagWriteDoc,
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.update)
	register(api, huma.Operation{
		OperationID: "delete-domain", Method: http.MethodDelete, Path: "/api/settings/domains/{domain_id}",
		Summary: "Delete a domain", Tags: tags,
		Description: "Removes the domain with all its tests and level configurations. " +
			"409 when its files were edited by hand since the last sync. " +
			"With If-Match, the domain is deleted only if its current ETag is listed (or the list is *), else 412.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.delete)
}

func (h *domainHandler) list(ctx context.Context, in *PageParams) (*listDomainsOutput, error) {
	all, err := h.store.Domains(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	ds, total := page(all, *in)
	out := &listDomainsOutput{Body: apiDomainList{Domains: make([]apiDomain, len(ds)), Total: total}}
	for i, d := range ds {
		out.Body.Domains[i] = toAPIDomain(d)
	}
	return out, nil
}

func (h *domainHandler) get(ctx context.Context, in *getDomainInput) (*domainOutput, error) {
	d, err := h.store.Domain(ctx, in.DomainID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := newDomainOutput(d)
	return out, in.IfNoneMatchHeader.check(out.ETag)
}

func (h *domainHandler) create(ctx context.Context, in *createDomainInput) (*domainOutput, error) {
	d, err := h.store.CreateDomain(ctx, in.Body.domain())
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newDomainOutput(d), nil
}

func (h *domainHandler) update(ctx context.Context, in *updateDomainInput) (*domainOutput, error) {
	d, err := h.store.UpdateDomain(ctx, in.DomainID, func(d *harness.Domain) error {
		if err := in.IfMatchHeader.check(etagOf(toAPIDomain(*d))); err != nil {
			return err
		}
		in.Body.apply(d)
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newDomainOutput(d), nil
}

func (h *domainHandler) delete(ctx context.Context, in *deleteDomainInput) (*successOutput, error) {
	check := func(d harness.Domain) error { return in.IfMatchHeader.check(etagOf(toAPIDomain(d))) }
	if err := h.store.DeleteDomainIf(ctx, in.DomainID, check); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}
