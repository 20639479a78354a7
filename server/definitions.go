package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// MaxImportBytes bounds an import body; other bodies are limited to 1 MiB.
const MaxImportBytes = 64 << 20

type definitionsHandler struct{ s *Server }

type exportOutput struct {
	Body *harness.Snapshot
}

type importInput struct {
	Body struct {
		// Merge defaults to true so that an import never wipes definitions
		// by accident.
		Merge      *bool                     `json:"merge,omitempty" doc:"true (default): each definition replaces the one with the same id and the others stay. false: the import replaces every domain, level and test, and the evaluators and tools when their keys are present (an empty list removes them all); without those keys the current evaluators and tools stay."`
		Domains    []importDomain            `json:"domains,omitempty"`
		Levels     []importLevel             `json:"levels,omitempty"`
		Tests      []importTest              `json:"tests,omitempty"`
		Evaluators []harness.EvaluatorConfig `json:"evaluators,omitempty"`
		Tools      []harness.ToolDefinition  `json:"tools,omitempty"`
	}
}

// importDomain is a domain in an import body. Its fields are those of
// harness.Domain, but an absent enabled means true, as on creation and in a
// domain file, rather than false.
type importDomain struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	EvaluatorID  string `json:"evaluator_id"`
	Enabled      *bool  `json:"enabled,omitempty" doc:"Default true."`
	SystemPrompt string `json:"system_prompt"`
	Icon         string `json:"icon"`
	Color        string `json:"color" doc:"Hex colour #RRGGBB."`
}

func (d importDomain) domain() harness.Domain {
	return harness.Domain{
		ID: d.ID, Name: d.Name, Description: d.Description, EvaluatorID: d.EvaluatorID,
		Enabled: d.Enabled == nil || *d.Enabled, SystemPrompt: d.SystemPrompt, Icon: d.Icon, Color: d.Color,
	}
}

// importLevel is a level configuration in an import body. Its fields are
// those of harness.LevelConfig, but an absent pass_threshold means the
// default (0.5), as in a level file, rather than 0 (every cell passed).
type importLevel struct {
	DomainID         string   `json:"domain_id" doc:"Required."`
	Level            *int     `json:"level,omitempty" doc:"Required."`
	SystemPrompt     string   `json:"system_prompt"`
	SystemPromptMode string   `json:"system_prompt_mode" doc:"append (default), prepend or replace."`
	PassThreshold    *float64 `json:"pass_threshold,omitempty" doc:"Mean score at which the level's cell is passed (default 0.5)."`
	Tools            []string `json:"tools"`
}

func (l importLevel) config() harness.LevelConfig {
	out := harness.LevelConfig{
		DomainID: l.DomainID, SystemPrompt: l.SystemPrompt,
		SystemPromptMode: harness.PromptMode(l.SystemPromptMode),
		PassThreshold:    harness.DefaultPassThreshold, Tools: l.Tools,
	}
	if l.Level != nil {
		out.Level = *l.Level
	}
	if l.PassThreshold != nil {
		out.PassThreshold = *l.PassThreshold
	}
	return out
}

// importTest is a test in an import body. Its fields are those of
// harness.Test, but level is required, as on creation: a test without one
// would otherwise land in level 0 unnoticed.
type importTest struct {
	ID          string           `json:"id" doc:"Generated when absent."`
	DomainID    string           `json:"domain_id" doc:"Required."`
	Level       *int             `json:"level,omitempty" doc:"Required."`
	Name        string           `json:"name"`
	Prompt      string           `json:"prompt"`
	Expected    harness.Expected `json:"expected"`
	EvaluatorID string           `json:"evaluator_id"`
	Tools       []string         `json:"tools"`
}

func (t importTest) test() harness.Test {
	out := harness.Test{
		ID: t.ID, DomainID: t.DomainID, Name: t.Name, Prompt: t.Prompt,
		Expected: t.Expected, EvaluatorID: t.EvaluatorID, Tools: t.Tools,
	}
	if t.Level != nil {
		out.Level = *t.Level
	}
	return out
}

type importOutput struct {
	Body struct {
		Success bool `json:"success"`
		*catalog.ImportResult
	}
}

type syncOutput struct {
	Body struct {
		Success bool `json:"success" doc:"False when some files were refused; see errors."`
		*catalog.SyncResult
	}
}

func newSyncOutput(res *catalog.SyncResult) *syncOutput {
	out := &syncOutput{}
	out.Body.Success = len(res.Errors) == 0
	out.Body.SyncResult = res
	return out
}

func (h *definitionsHandler) register(api huma.API) {
	tags := []string{"Definitions"}
	huma.Register(api, huma.Operation{
		OperationID: "export-definitions", Method: http.MethodGet, Path: "/api/settings/export",
		Summary: "Export every definition", Tags: tags,
		Description: "Top-level keys: domains, levels, tests, evaluators, tools. Importing it with merge false reproduces the same definitions.",
	}, h.export)
	huma.Register(api, huma.Operation{
		OperationID: "import-definitions", Method: http.MethodPost, Path: "/api/settings/import",
		Summary: "Import definitions", Tags: tags, MaxBodyBytes: MaxImportBytes,
		Description: "Takes the export's shape plus merge. A replace (merge false) keeps the evaluators and tools " +
			"unless the body has those keys, and switches the definition files as one: a crash leaves the old files or the new. " +
			"The whole import is validated first; " +
			"on any error nothing changes and the 422 names each field (e.g. body.tests[3].expected.type). Bodies up to 64 MiB.",
	}, h.importDefs)
	huma.Register(api, huma.Operation{
		OperationID: "sync-definitions", Method: http.MethodPost, Path: "/api/settings/sync",
		Summary: "Rebuild the cache from the definition files", Tags: tags,
		Description: "Reads the definitions directory again (after a git pull or a hand edit). " +
			"A file that fails to load is listed in errors and loads nothing; the others load. " +
			"Each error gives the file, the line (from 1) when known, and for a key the format does not know, the key.",
	}, h.sync)
	huma.Register(api, huma.Operation{
		OperationID: "get-sync-result", Method: http.MethodGet, Path: "/api/settings/sync",
		Summary: "The result of the last sync", Tags: tags,
		Description: "What the last sync loaded and which files it refused, in the shape POST returns, " +
			"without reading the files again. The server syncs at start-up, so this lists the files that did not load then.",
	}, h.lastSync)
}

func (h *definitionsHandler) lastSync(_ context.Context, _ *struct{}) (*syncOutput, error) {
	return newSyncOutput(h.s.opts.Catalog.LastSync()), nil
}

func (h *definitionsHandler) export(ctx context.Context, _ *struct{}) (*exportOutput, error) {
	snap, err := h.s.opts.Catalog.Export(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &exportOutput{Body: snap}, nil
}

func (h *definitionsHandler) importDefs(ctx context.Context, in *importInput) (*importOutput, error) {
	merge := in.Body.Merge == nil || *in.Body.Merge
	snap := &harness.Snapshot{Evaluators: in.Body.Evaluators, Tools: in.Body.Tools}
	missing := &harness.ValidationError{}
	for i, t := range in.Body.Tests {
		if t.Level == nil {
			missing.Add(fmt.Sprintf("tests[%d].level", i), "is required")
		}
		snap.Tests = append(snap.Tests, t.test())
	}
	for i, l := range in.Body.Levels {
		if l.Level == nil {
			missing.Add(fmt.Sprintf("levels[%d].level", i), "is required")
		}
		snap.Levels = append(snap.Levels, l.config())
	}
	for _, d := range in.Body.Domains {
		snap.Domains = append(snap.Domains, d.domain())
	}
	if missing.Err() != nil {
		// Report the other errors of the import along with these.
		err := h.s.opts.Catalog.CheckImport(ctx, snap, merge)
		if err != nil && !errors.Is(err, harness.ErrInvalid) {
			return nil, h.s.problem(ctx, err)
		}
		missing.Merge("", err)
		return nil, h.s.problem(ctx, missing)
	}
	res, err := h.s.opts.Catalog.Import(ctx, snap, merge)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &importOutput{}
	out.Body.Success = true
	out.Body.ImportResult = res
	return out, nil
}

func (h *definitionsHandler) sync(ctx context.Context, _ *struct{}) (*syncOutput, error) {
	res, err := h.s.opts.Catalog.Sync(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return newSyncOutput(res), nil
}
