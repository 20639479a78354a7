package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

type historyHandler struct{ s *Server }

type runPath struct {
	RunID string `path:"run_id" doc:"Run id."`
}

type cellInput struct {
	RunID  string `path:"run_id" doc:"Run id."`
	Domain string `path:"domain" doc:"Domain id."`
	Level  int    `path:"level" doc:"Level number."`
}

type lastCellInput struct {
	Domain string `path:"domain" doc:"Domain id."`
	Level  int    `path:"level" doc:"Level number."`
}

type cellOutput struct {
	Body struct {
		RunID  string        `json:"run_id"`
		Domain string        `json:"domain"`
		Level  int           `json:"level"`
		Tests  []runs.Result `json:"tests"`
	}
}

type runDetailsOutput struct {
	Body struct {
		RunInfo     runs.Info     `json:"run_info"`
		TestResults []runs.Result `json:"test_results"`
		Stats       runs.Stats    `json:"stats"`
	}
}

type lastRunOutput struct {
	Body struct {
		RunID       string  `json:"run_id"`
		ModelName   string  `json:"model_name"`
		StartedAt   string  `json:"started_at"`
		CompletedAt *string `json:"completed_at"`
		Status      string  `json:"status"`
	}
}

type historyInput struct {
	Limit  int `query:"limit" default:"50" minimum:"1" maximum:"1000" doc:"Runs per page."`
	Offset int `query:"offset" default:"0" minimum:"0" doc:"Runs to skip."`
}

type historyOutput struct {
	Body struct {
		Runs   []runs.Info `json:"runs"`
		Total  int         `json:"total"`
		Limit  int         `json:"limit"`
		Offset int         `json:"offset"`
	}
}

func (h *historyHandler) register(api huma.API) {
	tags := []string{"Results and history"}
	huma.Register(api, huma.Operation{
		OperationID: "get-run-matrix", Method: http.MethodGet, Path: "/api/run/{run_id}/matrix",
		Summary: "A run's matrix", Tags: tags, Description: "Same format as the live matrix.",
	}, h.matrix)
	huma.Register(api, huma.Operation{
		OperationID: "get-run-cell", Method: http.MethodGet, Path: "/api/run/{run_id}/tests/{domain}/{level}",
		Summary: "A run's results for one domain and level", Tags: tags,
	}, h.cell)
	huma.Register(api, huma.Operation{
		OperationID: "get-run", Method: http.MethodGet, Path: "/api/run/{run_id}",
		Summary: "A run's details, results and stats", Tags: tags,
	}, h.run)
	huma.Register(api, huma.Operation{
		OperationID: "get-run-definitions", Method: http.MethodGet, Path: "/api/run/{run_id}/definitions",
		Summary: "The definitions a run used", Tags: tags,
		Description: "The domains, levels, tests, evaluators and tools as they were when the run started, in the export's shape. " +
			"404 for an unknown run, or a run made before definitions were recorded.",
	}, h.definitions)
	huma.Register(api, huma.Operation{
		OperationID: "delete-run", Method: http.MethodDelete, Path: "/api/history/{run_id}",
		Summary: "Delete a run", Tags: tags,
		Description: "Deletes the run, its results, level scores and log file. The active run cannot be deleted (409).",
	}, h.delete)
	huma.Register(api, huma.Operation{
		OperationID: "list-runs", Method: http.MethodGet, Path: "/api/history",
		Summary: "List runs, newest first", Tags: tags,
	}, h.list)
	huma.Register(api, huma.Operation{
		OperationID: "get-last-run-id", Method: http.MethodGet, Path: "/api/v1/history/last/id",
		Summary: "The most recent run", Tags: tags, Description: "404 when there has been no run.",
	}, h.lastID)
	huma.Register(api, huma.Operation{
		OperationID: "get-last-run-cell", Method: http.MethodGet, Path: "/api/v1/history/last/{domain}/{level}",
		Summary: "The most recent run's results for one domain and level", Tags: tags,
	}, h.lastCell)
	huma.Register(api, huma.Operation{
		OperationID: "get-history-cell", Method: http.MethodGet, Path: "/api/v1/history/{run_id}/{domain}/{level}",
		Summary: "A run's results for one domain and level", Tags: tags,
	}, h.cell)
}

func (h *historyHandler) runs() *runs.Store { return h.s.opts.Runs }

func (h *historyHandler) matrix(ctx context.Context, in *runPath) (*matrixOutput, error) {
	info, err := h.runs().Run(ctx, in.RunID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	if live, _ := h.s.opts.Engine.Matrix(ctx); live.RunID != nil && *live.RunID == in.RunID && live.Status == runs.StatusRunning {
		return &matrixOutput{Body: live}, nil
	}
	m, err := h.runs().Matrix(ctx, in.RunID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &matrixOutput{Body: engine.LiveMatrix{Domains: m, RunID: &info.RunID, ModelName: &info.ModelName, Status: info.Status}}, nil
}

func (h *historyHandler) cell(ctx context.Context, in *cellInput) (*cellOutput, error) {
	results, err := h.runs().CellResults(ctx, in.RunID, in.Domain, in.Level)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &cellOutput{}
	out.Body.RunID, out.Body.Domain, out.Body.Level, out.Body.Tests = in.RunID, in.Domain, in.Level, results
	return out, nil
}

func (h *historyHandler) lastCell(ctx context.Context, in *lastCellInput) (*cellOutput, error) {
	last, err := h.runs().Last(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return h.cell(ctx, &cellInput{RunID: last.RunID, Domain: in.Domain, Level: in.Level})
}

func (h *historyHandler) run(ctx context.Context, in *runPath) (*runDetailsOutput, error) {
	info, err := h.runs().Run(ctx, in.RunID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	results, err := h.runs().Results(ctx, in.RunID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	stats, err := h.runs().Stats(ctx, in.RunID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &runDetailsOutput{}
	out.Body.RunInfo, out.Body.TestResults, out.Body.Stats = info, results, stats
	return out, nil
}

func (h *historyHandler) definitions(ctx context.Context, in *runPath) (*exportOutput, error) {
	snap, err := h.runs().Definitions(ctx, in.RunID)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &exportOutput{Body: snap}, nil
}

func (h *historyHandler) delete(ctx context.Context, in *runPath) (*ok, error) {
	if err := h.s.opts.Engine.DeleteRun(ctx, in.RunID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return success(), nil
}

func (h *historyHandler) list(ctx context.Context, in *historyInput) (*historyOutput, error) {
	list, total, err := h.runs().List(ctx, in.Limit, in.Offset)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &historyOutput{}
	out.Body.Runs, out.Body.Total, out.Body.Limit, out.Body.Offset = list, total, in.Limit, in.Offset
	return out, nil
}

func (h *historyHandler) lastID(ctx context.Context, _ *struct{}) (*lastRunOutput, error) {
	last, err := h.runs().Last(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &lastRunOutput{}
	out.Body.RunID, out.Body.ModelName, out.Body.StartedAt = last.RunID, last.ModelName, last.StartedAt
	out.Body.CompletedAt, out.Body.Status = last.CompletedAt, last.Status
	return out, nil
}
