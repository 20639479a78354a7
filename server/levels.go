package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

type levelHandler struct{ s *Server }

type levelPath struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	Level    int    `path:"level" minimum:"0" maximum:"1000" doc:"Level number, 0 to 1000 (harness.MaxLevel)."`
}

type levelOutput struct {
	Body harness.LevelConfig
}

type updateLevelInput struct {
	DomainID string `path:"domain_id" doc:"Domain id."`
	Level    int    `path:"level" minimum:"0" maximum:"1000" doc:"Level number, 0 to 1000 (harness.MaxLevel)."`
	Body     struct {
		SystemPrompt     *string  `json:"system_prompt,omitempty" doc:"Level-specific instructions."`
		SystemPromptMode *string  `json:"system_prompt_mode,omitempty" doc:"How the level's prompt combines with the domain's: append (default), prepend or replace."`
		PassThreshold    *float64 `json:"pass_threshold,omitempty" doc:"Mean score at which the level's cell is passed (default 0.5)."`
		Tools            []string `json:"tools,omitempty" doc:"Tool ids offered to the model for every test of the level."`
	}
}

func (h *levelHandler) register(api huma.API) {
	tags := []string{"Levels"}
	huma.Register(api, huma.Operation{
		OperationID: "get-level", Method: http.MethodGet, Path: "/api/settings/levels/{domain_id}/{level}",
		Summary: "Get a level's configuration", Tags: tags,
		Description: "A level without a configuration file yet has the default configuration.",
	}, h.get)
	huma.Register(api, huma.Operation{
		OperationID: "update-level", Method: http.MethodPut, Path: "/api/settings/levels/{domain_id}/{level}",
		Summary: "Update a level's configuration", Tags: tags,
		Description: "Changes the fields present in the body and keeps the others.",
	}, h.update)
}

func (h *levelHandler) get(ctx context.Context, in *levelPath) (*levelOutput, error) {
	l, err := h.s.opts.Catalog.Level(ctx, in.DomainID, in.Level)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &levelOutput{Body: l}, nil
}

func (h *levelHandler) update(ctx context.Context, in *updateLevelInput) (*levelOutput, error) {
	l, err := h.s.opts.Catalog.UpdateLevel(ctx, in.DomainID, in.Level, func(l *harness.LevelConfig) error {
		set(&l.SystemPrompt, in.Body.SystemPrompt)
		if in.Body.SystemPromptMode != nil {
			l.SystemPromptMode = harness.PromptMode(*in.Body.SystemPromptMode)
		}
		set(&l.PassThreshold, in.Body.PassThreshold)
		if in.Body.Tools != nil {
			l.Tools = in.Body.Tools
		}
		return nil
	})
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &levelOutput{Body: l}, nil
}
