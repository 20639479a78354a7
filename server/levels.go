package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// levelStore is what the level operations need of the catalog.
type levelStore interface {
	Level(ctx context.Context, domainID string, level int) (harness.LevelConfig, error)
	UpdateLevel(ctx context.Context, domainID string, level int, apply func(*harness.LevelConfig) error) (harness.LevelConfig, error)
}

var _ levelStore = (*catalog.Catalog)(nil)

type levelHandler struct {
	problems
	store levelStore
}

// apiLevel is a level's configuration as the API returns it.
type apiLevel struct {
	DomainID         string              `json:"domain_id"`
	Level            int                 `json:"level"`
	SystemPrompt     string              `json:"system_prompt" doc:"Level-specific instructions."`
	SystemPromptMode apiSystemPromptMode `json:"system_prompt_mode"`
	PassThreshold    float64             `json:"pass_threshold" minimum:"0" maximum:"1" doc:"Mean score at which the level's cell is passed."`
	Tools            []string            `json:"tools" doc:"Tool ids offered to the model for every test of the level."`
	Params           map[string]any      `json:"params,omitempty" doc:"Default sampling parameters of the level's model requests (temperature, top_p, max_tokens, seed), only the keys set; a run's own override them key by key. Absent when the level sets none."`
}

func toAPILevel(l harness.LevelConfig) apiLevel {
	out := apiLevel{
		DomainID: l.DomainID, Level: l.Level, SystemPrompt: l.SystemPrompt,
		SystemPromptMode: apiSystemPromptMode(l.SystemPromptMode), PassThreshold: l.PassThreshold, Tools: nonNil(l.Tools),
	}
	if l.Params != nil && !l.Params.IsZero() {
		out.Params = l.Params.Map()
	}
	return out
}

// apiLevelUpdate is the body of update-level: the fields present change.
type apiLevelUpdate struct {
	SystemPrompt     *string              `json:"system_prompt,omitempty" doc:"Level-specific instructions."`
	SystemPromptMode *apiSystemPromptMode `json:"system_prompt_mode,omitempty"`
	PassThreshold    *float64             `json:"pass_threshold,omitempty" doc:"Mean score at which the level's cell is passed, 0 to 1. A new level's is 0.5."`
	Tools            []string             `json:"tools,omitempty" doc:"Tool ids offered to the model for every test of the level; the list replaces the current one."`
	Params           paramsPatch          `json:"params,omitempty" doc:"Default sampling parameters of the level: an object replaces them all, null removes them, absent keeps them."`
}

func (b *apiLevelUpdate) apply(l *harness.LevelConfig) {
	set(&l.SystemPrompt, b.SystemPrompt)
	if b.SystemPromptMode != nil {
		l.SystemPromptMode = harness.PromptMode(*b.SystemPromptMode)
	}
	set(&l.PassThreshold, b.PassThreshold)
	if b.Tools != nil {
		l.Tools = b.Tools
	}
	if b.Params.Set {
		l.Params = nil
		if b.Params.V != nil {
			p := harness.Params(*b.Params.V)
			l.Params = &p
		}
	}
}

// paramsPatch is a params field of an update body, which tells an absent
// field (keep) from null (remove).
type paramsPatch struct {
	Set bool            // the field was present
	V   *apiParamsInput // nil: null
}

// UnmarshalJSON records that the field was present, and its value.
func (p *paramsPatch) UnmarshalJSON(b []byte) error {
	p.Set, p.V = true, nil
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	p.V = new(apiParamsInput)
	return json.Unmarshal(b, p.V)
}

// Schema is the parameters' schema or null.
func (paramsPatch) Schema(r huma.Registry) *huma.Schema {
	return nullable(r.Schema(reflect.TypeFor[apiParamsInput](), true, ""))
}

// apiLevelImport is a level configuration in an import body. An absent
// mode or pass threshold is the default, as in a level file.
type apiLevelImport struct {
	DomainID         string              `json:"domain_id,omitempty" api:"required"`
	Level            *int                `json:"level,omitempty" api:"required" doc:"0 to 1000."`
	SystemPrompt     string              `json:"system_prompt,omitempty"`
	SystemPromptMode apiSystemPromptMode `json:"system_prompt_mode,omitempty"`
	PassThreshold    *float64            `json:"pass_threshold,omitempty" doc:"0 to 1; default 0.5."`
	Tools            []string            `json:"tools,omitempty"`
	Params           *apiParamsInput     `json:"params,omitempty"`
}

func (b *apiLevelImport) config() harness.LevelConfig {
	out := harness.LevelConfig{
		DomainID: b.DomainID, SystemPrompt: b.SystemPrompt,
		SystemPromptMode: harness.PromptMode(b.SystemPromptMode),
		PassThreshold:    harness.DefaultPassThreshold, Tools: b.Tools,
	}
	if b.Level != nil {
		out.Level = *b.Level
	}
	if b.PassThreshold != nil {
		out.PassThreshold = *b.PassThreshold
	}
	if b.Params != nil {
		p := harness.Params(*b.Params)
		out.Params = &p
	}
	return out
}

type getLevelInput struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	Level    int    `path:"level" minimum:"0" maximum:"1000" doc:"Level number, 0 to 1000."`
	IfNoneMatchHeader
}

type levelOutput struct {
	ETag string `header:"ETag" doc:"The level configuration's entity tag, for If-Match and If-None-Match."`
	Body apiLevel
}

func newLevelOutput(l harness.LevelConfig) *levelOutput {
	b := toAPILevel(l)
	return &levelOutput{ETag: etagOf(b), Body: b}
}

type updateLevelInput struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	Level    int    `path:"level" minimum:"0" maximum:"1000" doc:"Level number, 0 to 1000."`
	IfMatchHeader
	Body apiLevelUpdate
}

// registerLevels registers the level operations.
func registerLevels(api huma.API, store levelStore, log *slog.Logger) {
	h := &levelHandler{problems{log}, store}
	tags := []string{tagLevels}
	register(api, huma.Operation{
		OperationID: "get-level", Method: http.MethodGet, Path: "/api/settings/levels/{domain_id}/{level}",
		Summary: "Get a level's configuration", Tags: tags,
		Description: "A level without a configuration file yet has the default configuration. 404 for an unknown domain." + etagReadDoc,
		Errors:      []int{http.StatusNotFound},
	}, h.get)
	documentNotModified(api, "/api/settings/levels/{domain_id}/{level}")
	register(api, huma.Operation{
		OperationID: "update-level", Method: http.MethodPut, Path: "/api/settings/levels/{domain_id}/{level}",
		Summary: "Update a level's configuration", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others. 422 for an unknown tool id; " +
			"409 when the level's file was edited by hand since the last sync." + etagWriteDoc,
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusPreconditionFailed},
	}, h.update)
}

func (h *levelHandler) get(ctx context.Context, in *getLevelInput) (*levelOutput, error) {
	l, err := h.store.Level(ctx, in.DomainID, in.Level)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := newLevelOutput(l)
	return out, in.IfNoneMatchHeader.check(out.ETag)
}

func (h *levelHandler) update(ctx context.Context, in *updateLevelInput) (*levelOutput, error) {
	l, err := h.store.UpdateLevel(ctx, in.DomainID, in.Level, func(l *harness.LevelConfig) error {
		if err := in.IfMatchHeader.check(etagOf(toAPILevel(*l))); err != nil {
			return err
		}
		in.Body.apply(l)
		return nil
	})
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return newLevelOutput(l), nil
}

// nonNil returns s, or an empty slice for nil: lists are [] in answers,
// never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
