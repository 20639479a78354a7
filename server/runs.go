package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
)

// StopWait is how long POST /api/stop waits for the run to wind down.
const StopWait = 5 * time.Second

type runHandler struct{ s *Server }

type startInput struct {
	// Body is optional: a POST without one starts a run of every enabled
	// domain labelled "default".
	Body *startBody `required:"false"`
}

type startBody struct {
	ModelName *string  `json:"model_name,omitempty" doc:"Label of the run (default \"default\")."`
	Domains   []string `json:"domains,omitempty" nullable:"true" doc:"Domain ids to run; null or absent means every enabled domain."`
	Model     *string  `json:"model,omitempty" doc:"Endpoint model for this run; default the configured one."`
	TimeoutS  *float64 `json:"timeout_s,omitempty" minimum:"0" maximum:"3600" doc:"Bound of each model request of this run, in seconds; default the server's --llm-timeout."`
	Retries   *int     `json:"retries,omitempty" minimum:"0" maximum:"10" doc:"Retries of a failed model request in this run; default the server's --llm-retries."`
}

type resumeOutput struct {
	Body struct {
		Success bool   `json:"success"`
		RunID   string `json:"run_id"`
		Message string `json:"message"`
	}
}

type startOutput struct {
	Body struct {
		Success bool   `json:"success"`
		RunID   string `json:"run_id"`
		Message string `json:"message"`
	}
}

type messageOutput struct {
	Body struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
		RunID   string `json:"run_id,omitempty" doc:"The run stopped or aborted, if any."`
	}
}

type statusOutput struct {
	Body engine.Status
}

type matrixOutput struct {
	Body engine.LiveMatrix
}

type logPollInput struct {
	Since int64 `query:"since" default:"-1" minimum:"-1" doc:"Follow the log without draining it: the cursor of the previous answer (0 the first time). Absent: drain the pending lines."`
}

type logPollOutput struct {
	Body struct {
		Messages  []string `json:"messages" doc:"Pending log lines, at most 100: \"[<domain>][L<level>] <text>\", and EVAL_COMPLETE at the end of a run."`
		IsRunning bool     `json:"is_running"`
		Cursor    *uint64  `json:"cursor,omitempty" doc:"With since: the since of the next poll."`
	}
}

func (h *runHandler) register(api huma.API) {
	tags := []string{"Evaluation"}
	huma.Register(api, huma.Operation{
		OperationID: "start-run", Method: http.MethodPost, Path: "/api/start",
		Summary: "Start an evaluation", Tags: tags,
		Description: "One run at a time: starting while a run is active is a 409. Unknown domains, or a selection without tests, are a 422.",
	}, h.start)
	huma.Register(api, huma.Operation{
		OperationID: "resume-run", Method: http.MethodPost, Path: "/api/run/{run_id}/resume",
		Summary: "Resume a run", Tags: tags,
		Description: "Runs again, into the same run and with the definitions it stored when it started, every test that has no result " +
			"or ended in error (a stopped, interrupted or aborted run, or one whose endpoint failed). Passed and failed results are kept. " +
			"The run is running again and ends as any run does. 409 while a run is active, 404 for an unknown run, " +
			"422 when nothing is left to run or the run stored no definitions.",
	}, h.resume)
	huma.Register(api, huma.Operation{
		OperationID: "stop-run", Method: http.MethodPost, Path: "/api/stop",
		Summary: "Stop the running evaluation", Tags: tags,
		Description: "Requests in flight are cancelled; finished results are kept; cells not reached are skipped. With no run active, success is false.",
	}, h.stop)
	huma.Register(api, huma.Operation{
		OperationID: "reset-engine", Method: http.MethodPost, Path: "/api/reset",
		Summary: "Reset the engine to idle", Tags: tags,
		Description: "For a stuck engine: an active run is cancelled at once and recorded as aborted; its finished results are kept.",
	}, h.reset)
	huma.Register(api, huma.Operation{
		OperationID: "get-status", Method: http.MethodGet, Path: "/api/status",
		Summary: "Engine status", Tags: tags,
	}, h.status)
	huma.Register(api, huma.Operation{
		OperationID: "get-test-matrix", Method: http.MethodGet, Path: "/api/test_matrix",
		Summary: "Live matrix", Tags: tags,
		Description: "The domain × level matrix of the current run (of the last run when idle). A cell not finished has score null.",
	}, h.matrix)
	huma.Register(api, huma.Operation{
		OperationID: "poll-log", Method: http.MethodGet, Path: "/api/log_poll",
		Summary: "Drain pending log lines", Tags: tags,
		Description: "Without since, each line is handed out once, to whichever poll comes first. " +
			"With since (0, then the cursor of each answer), a client follows the log on its own and sees every line; " +
			"any number of clients can, and none takes lines from another.",
	}, h.logPoll)
}

func (h *runHandler) start(ctx context.Context, in *startInput) (*startOutput, error) {
	var req engine.StartRequest
	if b := in.Body; b != nil {
		req.Domains = b.Domains
		set(&req.ModelName, b.ModelName)
		set(&req.Model, b.Model)
		if b.TimeoutS != nil {
			req.Timeout = time.Duration(*b.TimeoutS * float64(time.Second))
		}
		req.Retries = b.Retries
	}
	id, err := h.s.opts.Engine.Start(context.WithoutCancel(ctx), req) // the run outlives the request
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &startOutput{}
	out.Body.Success, out.Body.RunID, out.Body.Message = true, id, "evaluation started"
	return out, nil
}

func (h *runHandler) resume(ctx context.Context, in *runPath) (*resumeOutput, error) {
	if err := h.s.opts.Engine.Resume(context.WithoutCancel(ctx), in.RunID); err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out := &resumeOutput{}
	out.Body.Success, out.Body.RunID, out.Body.Message = true, in.RunID, "run resumed"
	return out, nil
}

func (h *runHandler) stop(ctx context.Context, _ *struct{}) (*messageOutput, error) {
	out := &messageOutput{}
	id, err := h.s.opts.Engine.Stop(StopWait)
	if errors.Is(err, engine.ErrNotRunning) {
		out.Body.Message = err.Error()
		return out, nil
	}
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	out.Body.Success, out.Body.RunID, out.Body.Message = true, id, "evaluation stopped; finished results are kept"
	return out, nil
}

func (h *runHandler) reset(ctx context.Context, _ *struct{}) (*messageOutput, error) {
	out := &messageOutput{}
	out.Body.Success = true
	if id := h.s.opts.Engine.Reset(); id != "" {
		out.Body.RunID, out.Body.Message = id, "engine reset; run "+id+" aborted"
	} else {
		out.Body.Message = "engine reset; it was idle"
	}
	return out, nil
}

func (h *runHandler) status(ctx context.Context, _ *struct{}) (*statusOutput, error) {
	return &statusOutput{Body: h.s.opts.Engine.Status()}, nil
}

func (h *runHandler) matrix(ctx context.Context, _ *struct{}) (*matrixOutput, error) {
	m, err := h.s.opts.Engine.Matrix(ctx)
	if err != nil {
		return nil, h.s.problem(ctx, err)
	}
	return &matrixOutput{Body: m}, nil
}

func (h *runHandler) logPoll(ctx context.Context, in *logPollInput) (*logPollOutput, error) {
	out := &logPollOutput{}
	if in.Since < 0 {
		out.Body.Messages, out.Body.IsRunning = h.s.opts.Engine.PollLogs()
		return out, nil
	}
	var cursor uint64
	out.Body.Messages, cursor, out.Body.IsRunning = h.s.opts.Engine.ReadLogs(uint64(in.Since))
	out.Body.Cursor = &cursor
	return out, nil
}
