package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// MaxImportBytes is the default bound of an import body
// (Limits.ImportBytes); other bodies are limited to Limits.BodyBytes.
const MaxImportBytes = 64 << 20

// definitionsStore is what export, import and sync need of the catalog.
type definitionsStore interface {
	Export(ctx context.Context) (*harness.Snapshot, error)
	Import(ctx context.Context, in *harness.Snapshot, merge bool) (*catalog.ImportResult, error)
	CheckImport(ctx context.Context, in *harness.Snapshot, merge bool) error
	Evaluator(ctx context.Context, id string) (harness.EvaluatorConfig, error)
	Sync(ctx context.Context) (*catalog.SyncResult, error)
	LastSync() *catalog.SyncResult
}

var _ definitionsStore = (*catalog.Catalog)(nil)

type definitionsHandler struct {
	problems
	store definitionsStore
}

// apiDefinitions is a whole set of definitions: the answer of export and of
// a run's definitions.
type apiDefinitions struct {
	Domains    []apiDomain    `json:"domains"`
	Levels     []apiLevel     `json:"levels"`
	Tests      []apiTest      `json:"tests"`
	Evaluators []apiEvaluator `json:"evaluators"`
	Tools      []apiTool      `json:"tools"`
	Targets    []apiTarget    `json:"targets"`
	Pricing    *apiPricing    `json:"pricing,omitempty"`
}

// apiPricing is a price list: model reference to its price in US dollars
// per million tokens.
type apiPricing struct {
	Models map[string]apiPrice `json:"models" doc:"Model reference ([provider/]model) to its price."`
}

// apiPrice is one model's price, as pricing.yaml holds it.
type apiPrice struct {
	Input         float64  `json:"input" doc:"US dollars per million prompt tokens not read from the provider's cache."`
	Output        float64  `json:"output" doc:"US dollars per million completion tokens, reasoning included."`
	CachedInput   *float64 `json:"cached_input,omitempty" doc:"US dollars per million prompt tokens read from the cache; absent: input."`
	BatchDiscount *float64 `json:"batch_discount,omitempty" doc:"Factor of the cost of a call made in batch mode, 0 to 1; absent: 1."`
}

// apiPricingImport is the prices of an import.
type apiPricingImport struct {
	Models map[string]apiPriceImport `json:"models" doc:"Model reference ([provider/]model) to its price."`
}

// apiPriceImport is one model's price in an import.
type apiPriceImport struct {
	Input         float64  `json:"input" minimum:"0" doc:"US dollars per million prompt tokens not read from the provider's cache."`
	Output        float64  `json:"output" minimum:"0" doc:"US dollars per million completion tokens, reasoning included."`
	CachedInput   *float64 `json:"cached_input,omitempty" minimum:"0" doc:"US dollars per million prompt tokens read from the cache; absent: input."`
	BatchDiscount *float64 `json:"batch_discount,omitempty" minimum:"0" maximum:"1" doc:"Factor of the cost of a call made in batch mode, 0 to 1; absent: 1."`
}

func toAPIPricing(p *harness.Pricing) *apiPricing {
	if p == nil {
		return nil
	}
	out := &apiPricing{Models: make(map[string]apiPrice, len(p.Models))}
	for ref, pr := range p.Models {
		out.Models[ref] = apiPrice(pr)
	}
	return out
}

func toAPIDefinitions(s *harness.Snapshot) apiDefinitions {
	out := apiDefinitions{
		Domains: make([]apiDomain, len(s.Domains)), Levels: make([]apiLevel, len(s.Levels)),
		Tests: toAPITests(s.Tests), Evaluators: toAPIEvaluators(s.Evaluators), Tools: toAPITools(s.Tools),
		Targets: toAPITargets(s.Targets), Pricing: toAPIPricing(s.Pricing),
	}
	for i, d := range s.Domains {
		out.Domains[i] = toAPIDomain(d)
	}
	for i, l := range s.Levels {
		out.Levels[i] = toAPILevel(l)
	}
	return out
}

// apiDefinitionsImport is the body of import-definitions: the export's
// shape plus merge.
type apiDefinitionsImport struct {
	// Merge defaults to true so that an import never wipes definitions
	// by accident.
	Merge      *bool                `json:"merge,omitempty" doc:"true (default): each definition replaces the one with the same id and the others stay. false: the import replaces every domain, level and test, and the evaluators and tools when their keys are present (an empty list removes them all); without those keys the current evaluators and tools stay."`
	Domains    []apiDomainCreate    `json:"domains,omitempty"`
	Levels     []apiLevelImport     `json:"levels,omitempty"`
	Tests      []apiTestCreate      `json:"tests,omitempty"`
	Evaluators []apiEvaluatorCreate `json:"evaluators,omitempty" doc:"Absent: the current evaluators stay, even with merge false."`
	Tools      []apiToolCreate      `json:"tools,omitempty" doc:"Absent: the current tools stay, even with merge false."`
	Targets    []apiTargetImport    `json:"targets,omitempty" doc:"Black-box targets. Absent: the current targets stay, even with merge false."`
	Pricing    *apiPricingImport    `json:"pricing,omitempty"`
}

// snapshot returns the definitions of the import. Evaluators and tools are
// nil when their keys are absent, and an empty list when present and
// empty: with merge false, that is the difference between keeping them and
// removing them all.
func (b *apiDefinitionsImport) snapshot() *harness.Snapshot {
	snap := &harness.Snapshot{}
	for _, d := range b.Domains {
		snap.Domains = append(snap.Domains, d.domain())
	}
	for _, l := range b.Levels {
		snap.Levels = append(snap.Levels, l.config())
	}
	for _, t := range b.Tests {
		snap.Tests = append(snap.Tests, t.test())
	}
	if b.Evaluators != nil {
		snap.Evaluators = make([]harness.EvaluatorConfig, len(b.Evaluators))
		for i, e := range b.Evaluators {
			snap.Evaluators[i] = e.evaluator()
		}
	}
	if b.Tools != nil {
		snap.Tools = make([]harness.ToolDefinition, len(b.Tools))
		for i, t := range b.Tools {
			snap.Tools[i] = t.tool()
		}
	}
	if b.Pricing != nil {
		snap.Pricing = &harness.Pricing{Models: make(map[string]harness.Price, len(b.Pricing.Models))}
		for ref, p := range b.Pricing.Models {
			snap.Pricing.Models[ref] = harness.Price(p)
		}
	}
	return snap
}

// apiDefinitionCounts counts definitions of each kind.
type apiDefinitionCounts struct {
	Domains    int `json:"domains"`
	Levels     int `json:"levels"`
	Tests      int `json:"tests"`
	Evaluators int `json:"evaluators"`
	Tools      int `json:"tools"`
	Targets    int `json:"targets"`
}

func toAPICounts(c catalog.Counts) apiDefinitionCounts {
	return apiDefinitionCounts{Domains: c.Domains, Levels: c.Levels, Tests: c.Tests, Evaluators: c.Evaluators, Tools: c.Tools, Targets: c.Targets}
}

// apiImportResult is the answer of import-definitions.
type apiImportResult struct {
	Success  bool                `json:"success" doc:"True: the import was stored."`
	Merge    bool                `json:"merge" doc:"Whether the import merged or replaced."`
	Imported apiDefinitionCounts `json:"imported"`
	Total    apiDefinitionCounts `json:"total"`
}

func toAPIImportResult(res *catalog.ImportResult) apiImportResult {
	return apiImportResult{Success: true, Merge: res.Merge, Imported: toAPICounts(res.Imported), Total: toAPICounts(res.Total)}
}

// apiSyncFileError is a definition file a sync refused.
type apiSyncFileError struct {
	File  string `json:"file" doc:"Path relative to the definitions directory."`
	Line  int    `json:"line,omitempty" doc:"Line of the error, from 1; absent when the error is about the whole file."`
	Key   string `json:"key,omitempty" doc:"For a key the format does not know: the key."`
	Error string `json:"error" doc:"What is wrong, with the nearest known key as a suggestion for an unknown one."`
}

// apiSyncResult is the answer of sync-definitions and get-sync-result.
type apiSyncResult struct {
	Success bool                `json:"success" doc:"False when some files were refused; see errors."`
	Loaded  apiDefinitionCounts `json:"loaded"`
	Errors  []apiSyncFileError  `json:"errors" doc:"The files that did not load: each loads nothing, the others load."`
}

func toAPISyncResult(res *catalog.SyncResult) apiSyncResult {
	out := apiSyncResult{Success: len(res.Errors) == 0, Loaded: toAPICounts(res.Loaded), Errors: make([]apiSyncFileError, len(res.Errors))}
	for i, e := range res.Errors {
		// An evaluator type's refusal may quote a URL of the file, with
		// its credentials.
		out.Errors[i] = apiSyncFileError{File: e.File, Line: e.Line, Key: e.Key, Error: redactURLs(e.Error)}
	}
	return out
}

type definitionsOutput struct {
	Body apiDefinitions
}

type importInput struct {
	Body apiDefinitionsImport
}

type importOutput struct {
	Body apiImportResult
}

type syncOutput struct {
	Body apiSyncResult
}

// registerDefinitions registers export, import and sync.
func registerDefinitions(api huma.API, store definitionsStore, log *slog.Logger) {
	h := &definitionsHandler{problems{log}, store}
	tags := []string{tagDefinitions}
	register(api, huma.Operation{
		OperationID: "export-definitions", Method: http.MethodGet, Path: "/api/settings/export",
		Summary: "Export every definition", Tags: tags,
		Description: "Top-level keys: domains, levels, tests, evaluators, tools, targets (and pricing when there is a price list). Importing it with merge false reproduces the same definitions. " +
			"Credentials in the URLs of evaluator configs are masked (https://user:********@host/...); " +
			"imported here again, a masked URL keeps the stored one, so the round trip keeps them.",
	}, h.export)
	register(api, huma.Operation{
		OperationID: "import-definitions", Method: http.MethodPost, Path: "/api/settings/import",
		Summary: "Import definitions", Tags: tags, MaxBodyBytes: MaxImportBytes,
		Description: "Takes the export's shape plus merge. A replace (merge false) keeps the evaluators, tools and targets " +
			"unless the body has those keys, and switches the definition files as one: a crash leaves the old files or the new. " +
			"The whole import is validated first; " +
			"on any error nothing changes and the 422 names each field (e.g. body.tests[3].expected.type). Bodies up to 64 MiB unless the server sets another limit. " +
			"An evaluator config URL with masked credentials takes those of the stored evaluator with the same id, " +
			"if it is the same URL; otherwise it is a 422 naming it. " +
			"409 when a definition file was edited by hand since the last sync.",
		Errors: []int{http.StatusConflict},
	}, h.importDefs)
	register(api, huma.Operation{
		OperationID: "sync-definitions", Method: http.MethodPost, Path: "/api/settings/sync",
		Summary: "Rebuild the cache from the definition files", Tags: tags,
		Description: "Reads the definitions directory again (after a git pull or a hand edit). " +
			"A file that fails to load is listed in errors and loads nothing; the others load. " +
			"Each error gives the file, the line (from 1) when known, and for a key the format does not know, the key.",
	}, h.sync)
	register(api, huma.Operation{
		OperationID: "get-sync-result", Method: http.MethodGet, Path: "/api/settings/sync",
		Summary: "The result of the last sync", Tags: tags,
		Description: "What the last sync loaded and which files it refused, in the shape POST returns, " +
			"without reading the files again. The server syncs at start-up, so this lists the files that did not load then.",
	}, h.lastSync)
}

func (h *definitionsHandler) lastSync(_ context.Context, _ *struct{}) (*syncOutput, error) {
	return &syncOutput{Body: toAPISyncResult(h.store.LastSync())}, nil
}

func (h *definitionsHandler) export(ctx context.Context, _ *struct{}) (*definitionsOutput, error) {
	snap, err := h.store.Export(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &definitionsOutput{Body: toAPIDefinitions(snap)}, nil
}

func (h *definitionsHandler) importDefs(ctx context.Context, in *importInput) (*importOutput, error) {
	merge := in.Body.Merge == nil || *in.Body.Merge
	// An evaluator's URLs masked as exported get the stored evaluator's
	// credentials back.
	missing := &harness.ValidationError{}
	var creds []string
	for i, ev := range in.Body.Evaluators {
		creds = append(creds, configCredentials(ev.Config)...)
		if ev.Config == nil || !harness.HasMaskedURLs(ev.Config) {
			continue
		}
		old, err := h.store.Evaluator(ctx, ev.ID)
		if err != nil && !errors.Is(err, harness.ErrNotFound) {
			return nil, h.problem(ctx, err)
		}
		restoreConfigURLs(missing, fmt.Sprintf("evaluators[%d].config", i), ev.Config, old.Config)
		creds = append(creds, configCredentials(ev.Config)...)
	}
	slices.SortFunc(creds, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	snap := in.Body.snapshot()
	snap.Targets = importTargets(missing, in.Body.Targets)
	// A level is required: a test or level without one would otherwise
	// land in level 0 unnoticed.
	for i, t := range in.Body.Tests {
		if t.Level == nil {
			missing.Add(fmt.Sprintf("tests[%d].level", i), "is required")
		}
	}
	for i, l := range in.Body.Levels {
		if l.Level == nil {
			missing.Add(fmt.Sprintf("levels[%d].level", i), "is required")
		}
	}
	if missing.Err() != nil {
		// Report the other errors of the import along with these.
		err := h.store.CheckImport(ctx, snap, merge)
		if err != nil && !errors.Is(err, harness.ErrInvalid) {
			return nil, h.problem(ctx, err)
		}
		missing.Merge("", err)
		return nil, h.problem(ctx, withoutCredentials(missing, creds))
	}
	res, err := h.store.Import(ctx, snap, merge)
	if err != nil {
		return nil, h.problem(ctx, withoutCredentials(err, creds))
	}
	return &importOutput{Body: toAPIImportResult(res)}, nil
}

func (h *definitionsHandler) sync(ctx context.Context, _ *struct{}) (*syncOutput, error) {
	res, err := h.store.Sync(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &syncOutput{Body: toAPISyncResult(res)}, nil
}
