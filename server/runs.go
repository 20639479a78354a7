package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// StopWait is how long POST /api/stop waits for the run to wind down.
const StopWait = 5 * time.Second

// runEngine is what the evaluation operations need: the engine, or a fake
// in tests.
type runEngine interface {
	Start(ctx context.Context, req engine.StartRequest) (string, error)
	ResumeWith(ctx context.Context, runID string, opts engine.ResumeOptions) error
	Rescore(ctx context.Context, runID string) (string, error)
	Stop(wait time.Duration) (string, error)
	Reset() string
	Status() engine.Status
	Matrix(ctx context.Context) (engine.LiveMatrix, error)
	PollLogs() (lines []string, running bool)
	ReadLogs(after uint64) (lines []string, cursor uint64, running bool)
	ReadLogTail(after uint64, n int) (lines []string, cursor uint64, running bool)
}

var _ runEngine = (*engine.Engine)(nil)

type runHandler struct {
	problems
	engine runEngine
}

// apiRunStart is the body of start-run; every field is optional.
type apiRunStart struct {
	ModelName      string          `json:"model_name,omitempty" doc:"Label of the run (default \"default\", or the agent's name with agent_id)."`
	Domains        []string        `json:"domains,omitempty" nullable:"true" doc:"Domain ids to run; null or absent means every enabled domain."`
	Model          string          `json:"model,omitempty" doc:"Model reference for this run, [provider/]model: a reference whose first segment names a configured provider (--provider, or the built-in anthropic and gemini) goes to that provider without the prefix; any other goes unchanged to the server's endpoint. Default the configured one. A provider whose key variable is not set is a 422 naming the variable. Not with agent_id (422): the agent decides its model."`
	AgentID        string          `json:"agent_id,omitempty" doc:"Evaluate this agent instead of the bare model: each test's prompt goes through the agent's pipeline, as a chat would (its system prompt with the knowledge-base text retrieved for the prompt, its tools before the test's own, its model), in a fresh conversation that is not stored. The domains' and levels' system prompts are not used. The run's config records the agent id and its definition. An unknown agent is a 422."`
	TargetID       string          `json:"target_id,omitempty" doc:"Evaluate this black-box target (a file targets/<id>.yaml of the definitions) instead of a model: every user turn of every test, multi-turn and simulated ones included, is sent to its URL with the conversation so far, and its answer is scored. The levels' system prompts and tools are not used; the run's model still plays judges and simulated users. The run's config records the target id and its definition (${VAR} references as written). An unknown target, one whose environment variables are not set on the server, or target_id with agent_id, model or cache, is a 422."`
	SimulatorModel string          `json:"simulator_model,omitempty" doc:"The model reference that plays the simulated users of tests that name no model of their own (default: the server's --simulator-model, else the run's model). A reference the server cannot serve is a 422."`
	TimeoutS       *float64        `json:"timeout_s,omitempty" minimum:"0" maximum:"3600" doc:"Bound of each model request of this run, in seconds; default the server's --llm-timeout."`
	Retries        *int            `json:"retries,omitempty" minimum:"0" maximum:"10" doc:"Retries of a failed model request in this run; default the server's --llm-retries."`
	Repeats        *int            `json:"repeats,omitempty" minimum:"1" maximum:"100" doc:"How many times each test is asked, 1 to 100 (default 1). Each asking is a result of its own, numbered by repeat from 0; the run's and the cells' counts are then of samples, tests × repeats."`
	Params         *apiParamsInput `json:"params,omitempty"`
	MaxCostUSD     *float64        `json:"max_cost_usd,omitempty" minimum:"0" doc:"Budget of the run in US dollars: once what its results cost (run_info.cost_usd, judges' calls included, at the prices of pricing.yaml) reaches it, no new model request is sent, the tests in flight finish, and the run ends stopped with run_info.error naming the budget. Resume it with a new one. Absent or 0: no budget."`
	Stream         bool            `json:"stream,omitempty" doc:"Ask for every answer as a stream, so that each call records the time to its first token (ttft_ms). The answers are the same. Default false."`
	Cache          bool            `json:"cache,omitempty" doc:"Answer each model request identical to one made before (same endpoint, model, messages, tools, sampling parameters and repeat) from the response cache, and store new answers there; run_info.cache_hits counts the requests so answered. A judge is never cached. Default false."`
}

// apiParamsInput are sampling parameters in a request body: each key is
// optional, and an absent key is not sent to the endpoint. Its fields
// match harness.Params one to one (the conversion is a plain type
// conversion, which the compiler checks).
type apiParamsInput struct {
	Temperature *float64 `json:"temperature,omitempty" minimum:"0" maximum:"2" doc:"Sampling temperature, 0 to 2."`
	TopP        *float64 `json:"top_p,omitempty" exclusiveMinimum:"0" maximum:"1" doc:"Nucleus sampling mass: greater than 0, at most 1."`
	MaxTokens   *int     `json:"max_tokens,omitempty" minimum:"1" maximum:"1048576" doc:"Bound on the tokens of each answer, 1 to 1048576."`
	Seed        *int64   `json:"seed,omitempty" doc:"Seed for reproducible sampling, where the endpoint supports it."`
	// Reasoning is described by its schema, ReasoningParams (a
	// reference takes no description of its own).
	Reasoning *harness.ReasoningParams `json:"reasoning,omitempty"`
}

// apiRunStarted is the answer of start-run and resume-run.
type apiRunStarted struct {
	Success bool   `json:"success" doc:"True: the run is running."`
	RunID   string `json:"run_id"`
	Message string `json:"message"`
}

// apiRunRescored is the answer of rescore-run.
type apiRunRescored struct {
	RunID string `json:"run_id" doc:"The new run, whose run_info.rescored_from names the source."`
}

type runRescoredOutput struct {
	Body apiRunRescored
}

// apiEngineResult is the answer of stop-run and reset-engine.
type apiEngineResult struct {
	Success bool   `json:"success" doc:"stop-run: false when no run was active."`
	Message string `json:"message"`
	RunID   string `json:"run_id,omitempty" doc:"The run stopped or aborted, if any."`
}

// apiEngineStatus is the answer of get-status.
type apiEngineStatus struct {
	Status        string                  `json:"status" enum:"idle,running"`
	RunID         *string                 `json:"run_id" doc:"The active run; null when idle."`
	CurrentDomain *string                 `json:"current_domain" doc:"The domain of the test that started last; null when idle."`
	CurrentLevel  *int                    `json:"current_level" doc:"Its level; null when idle."`
	Progress      int                     `json:"progress" doc:"Tests finished."`
	TotalTests    int                     `json:"total_tests"`
	ModelName     *string                 `json:"model_name" doc:"The active run's label; null when idle."`
	LastRunID     *string                 `json:"last_run_id" doc:"The most recent run, running or finished; null when there has been none."`
	Preparing     bool                    `json:"preparing" doc:"The active run is being prepared (its definitions stored with it, its cells and jobs recorded) and has started no test yet; total_tests is its size as the definitions are now. false when idle."`
	RateLimit     map[string]apiRateLimit `json:"rate_limit" doc:"The model client's rate-limit state toward each provider, by provider name (idle too); {} when it reports none."`
}

// apiRateLimit is the rate-limit state toward one provider.
type apiRateLimit struct {
	Concurrency    int     `json:"concurrency" minimum:"0" doc:"Model requests allowed in flight now: halved (floor 1) on a rate-limited answer, grown back by one per 20 answers. 0: no bound."`
	ConcurrencyMax int     `json:"concurrency_max" minimum:"0" doc:"The most it grows back to (--concurrency); 0: no bound."`
	Throttled      bool    `json:"throttled" doc:"The provider answered with a rate limit (429, 529, 503) and the concurrency has not grown back yet."`
	WaitingS       float64 `json:"waiting_s" minimum:"0" doc:"Seconds requests have spent waiting out rate limits and rpm/tpm pacing, in all, since the server started."`
}

func toAPIEngineStatus(s engine.Status) apiEngineStatus {
	out := apiEngineStatus{
		Status: s.Status, RunID: s.RunID, CurrentDomain: s.CurrentDomain, CurrentLevel: s.CurrentLevel,
		Progress: s.Progress, TotalTests: s.TotalTests, ModelName: s.ModelName, LastRunID: s.LastRunID,
		Preparing: s.Preparing, RateLimit: make(map[string]apiRateLimit, len(s.RateLimit)),
	}
	for name, st := range s.RateLimit {
		out.RateLimit[name] = apiRateLimit{Concurrency: st.Concurrency, ConcurrencyMax: st.ConcurrencyMax,
			Throttled: st.Throttled, WaitingS: st.WaitingS}
	}
	return out
}

// apiMatrixCell is one domain × level cell of a matrix.
type apiMatrixCell struct {
	Status     string    `json:"status" enum:"pending,running,passed,failed,error,partial,skipped" doc:"passed and failed: every test finished, and the score reached the level's pass threshold or not. error: every finished test ended in error. partial: the run ended with some of the tests finished. skipped: none was reached."`
	Score      *float64  `json:"score" doc:"Mean score over the scored (passed and failed) tests; null when none was scored."`
	DurationMS *int64    `json:"duration_ms,omitempty" doc:"Present on finished cells."`
	Tests      int       `json:"tests" doc:"Samples in the cell: its tests × the run's repeats."`
	Done       int       `json:"done" doc:"Tests finished: passed + failed + errors."`
	Passed     int       `json:"passed"`
	Failed     int       `json:"failed"`
	Errors     int       `json:"errors" doc:"Tests that ended in error: not scored, never counted as failed."`
	StdErr     *float64  `json:"stderr" doc:"Standard error of the score, over tests (a test's repeats are averaged first); null until the cell is finished or when nothing was scored."`
	CI95       []float64 `json:"ci95" minItems:"2" maxItems:"2" nullable:"true" doc:"95% interval of the score, [low, high], over tests (a test's repeats are averaged first); null until the cell is finished or when nothing was scored."`
	// Retrieval: absent when no result of the cell measured retrieval
	// (schemaDocs describes it; a reference takes no description).
	Retrieval    *apiCellRetrieval `json:"retrieval,omitempty"`
	CostUSD      *float64          `json:"cost_usd" doc:"What the cell's results cost in US dollars, judges' calls included; null when none had a price."`
	JudgeCostUSD *float64          `json:"judge_cost_usd" doc:"The part of cost_usd the judges' calls cost; null when no result had a price."`
	// Tokens is described by its schema, Tokens.
	Tokens       apiTokens `json:"tokens"`
	LatencyP50MS *int64    `json:"latency_p50_ms" doc:"Median of the duration_ms of the cell's answered (passed and failed) results, nearest-rank; measured once when the cell finishes (or the run leaves it partial): null while it runs and when nothing was answered."`
	LatencyP95MS *int64    `json:"latency_p95_ms" doc:"95th percentile of the duration_ms of the cell's answered results, nearest-rank; null as latency_p50_ms."`
	TTFTP50MS    *int64    `json:"ttft_p50_ms" doc:"Median of the ttft_ms of the cell's answered results: null unless the run streamed (stream: true), and as latency_p50_ms."`
}

// apiCellRetrieval is a cell's retrieval figures.
type apiCellRetrieval struct {
	RecallAtK float64 `json:"recall_at_k" minimum:"0" maximum:"1" doc:"Mean of the results' details.retrieval.recall_at_k: the share of a test's expected files found among the distinct files of the best k chunks retrieved (k = 5, or fewer when fewer were retrieved)."`
	HitRate   float64 `json:"hit_rate" minimum:"0" maximum:"1" doc:"Share of those results that retrieved at least one expected file."`
	Tests     int     `json:"tests" doc:"Results the means are over: scored (passed or failed) results with details.retrieval; results in error are left out."`
}

// apiMatrix is a run's domain × level matrix: the live one, or a stored
// run's.
type apiMatrix struct {
	Domains   map[string]map[string]apiMatrixCell `json:"domains" doc:"Domain id → level (a string of digits) → cell."`
	RunID     *string                             `json:"run_id" doc:"Null when there has been no run."`
	ModelName *string                             `json:"model_name" doc:"The run's label; null when there has been no run."`
	Status    string                              `json:"status" enum:"idle,running,completed,stopped,interrupted,aborted" doc:"The run's status, or idle when there has been no run."`
}

func toAPIMatrix(m engine.LiveMatrix) apiMatrix {
	return apiMatrix{Domains: toAPICells(m.Domains), RunID: m.RunID, ModelName: m.ModelName, Status: m.Status}
}

func toAPICells(m runs.Matrix) map[string]map[string]apiMatrixCell {
	out := make(map[string]map[string]apiMatrixCell, len(m))
	for domain, levels := range m {
		row := make(map[string]apiMatrixCell, len(levels))
		for level, c := range levels {
			row[level] = apiMatrixCell{
				Status: c.Status, Score: c.Score, DurationMS: c.DurationMS,
				Tests: c.Tests, Done: c.Done, Passed: c.Passed, Failed: c.Failed, Errors: c.Errors, StdErr: c.StdErr,
				CostUSD: c.CostUSD, JudgeCostUSD: c.JudgeCostUSD, Tokens: apiTokens(c.Tokens),
				LatencyP50MS: c.LatencyP50MS, LatencyP95MS: c.LatencyP95MS, TTFTP50MS: c.TTFTP50MS,
			}
			if c.CI95 != nil {
				cell := row[level]
				cell.CI95 = []float64{c.CI95.Low, c.CI95.High}
				row[level] = cell
			}
			if r := c.Retrieval; r != nil {
				cell := row[level]
				cell.Retrieval = &apiCellRetrieval{RecallAtK: r.RecallAtK, HitRate: r.HitRate, Tests: r.Tests}
				row[level] = cell
			}
		}
		out[domain] = row
	}
	return out
}

// apiLogPage is the answer of poll-log.
type apiLogPage struct {
	Messages  []string `json:"messages" doc:"Log lines, at most 100: \"[<domain>][L<level>] <text>\", and EVAL_COMPLETE at the end of a run."`
	IsRunning bool     `json:"is_running"`
	Cursor    *uint64  `json:"cursor,omitempty" doc:"With since: the since of the next poll. Absent without since."`
}

type startInput struct {
	// Body is optional: a POST without one starts a run of every enabled
	// domain labelled "default".
	Body *apiRunStart `required:"false"`
}

type runStartedOutput struct {
	Body apiRunStarted
}

type engineResultOutput struct {
	Body apiEngineResult
}

type statusOutput struct {
	Body apiEngineStatus
}

type matrixOutput struct {
	Body apiMatrix
}

type logPollInput struct {
	Since int64 `query:"since" default:"-1" minimum:"-1" doc:"Follow the log without draining it: the cursor of the previous answer (0 the first time). Absent: drain the pending lines."`
	Tail  int   `query:"tail" default:"0" minimum:"0" maximum:"1000" doc:"With since: skip to the newest tail lines when more follow the cursor, the first line saying how many were left out (so at most tail+1 lines). A page opening a long log catches up in one request. 0: off, at most 100 lines from the cursor on. Not without since (422)."`
}

type logPollOutput struct {
	Body apiLogPage
}

// registerRuns registers the evaluation control operations.
func registerRuns(api huma.API, eng runEngine, log *slog.Logger) {
	h := &runHandler{problems{log}, eng}
	tags := []string{tagEvaluation}
	register(api, huma.Operation{
		OperationID: "start-run", Method: http.MethodPost, Path: "/api/start",
		Summary: "Start an evaluation", Tags: tags,
		Description: "One run at a time: starting while a run is active is a 409. Unknown domains, or a selection without tests, are a 422. " +
			"The body is optional: without one, every enabled domain runs, labelled default. " +
			"With agent_id the run evaluates that agent (an unknown agent, or agent_id with model, is a 422).",
		Errors: []int{http.StatusConflict},
	}, h.start)
	register(api, huma.Operation{
		OperationID: "resume-run", Method: http.MethodPost, Path: "/api/run/{run_id}/resume",
		Summary: "Resume a run", Tags: tags,
		Description: "Runs again, into the same run and with the definitions it stored when it started, every test that has no result " +
			"or ended in error (a stopped, interrupted or aborted run, or one whose endpoint failed). Passed and failed results are kept. " +
			"The run is running again and ends as any run does. 409 while a run is active, 404 for an unknown run, " +
			"422 when nothing is left to run or the run stored no definitions.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
	}, h.resume)
	register(api, huma.Operation{
		OperationID: "rescore-run", Method: http.MethodPost, Path: "/api/run/{run_id}/rescore",
		Summary: "Rescore a run", Tags: tags, DefaultStatus: http.StatusCreated,
		Description: "Scores the stored responses of a finished run again, with today's evaluators and expected answers, into a new run " +
			"(its run_info.rescored_from names the source), and answers at once with the new run's id; the new run goes on as any run does " +
			"(live matrix, log, EVAL_COMPLETE). No model is asked except a judge. Tests deleted since are scored with the definitions the source stored; " +
			"a result that ended in error with no response stays an error. No body. 404 for an unknown run; 409 while a run is active " +
			"(one run at a time) or while the source is still running; 422 when the source has no results.",
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
	}, h.rescore)
	register(api, huma.Operation{
		OperationID: "stop-run", Method: http.MethodPost, Path: "/api/stop",
		Summary: "Stop the running evaluation", Tags: tags,
		Description: "Requests in flight are cancelled; finished results are kept; cells not reached are skipped. With no run active, success is false.",
	}, h.stop)
	register(api, huma.Operation{
		OperationID: "reset-engine", Method: http.MethodPost, Path: "/api/reset",
		Summary: "Reset the engine to idle", Tags: tags,
		Description: "For a stuck engine: an active run is cancelled at once and recorded as aborted; its finished results are kept.",
	}, h.reset)
	register(api, huma.Operation{
		OperationID: "get-status", Method: http.MethodGet, Path: "/api/status",
		Summary: "Engine status", Tags: tags,
		Description: "Whether a run is active, which, and how far it is. The run fields are null when idle.",
	}, h.status)
	register(api, huma.Operation{
		OperationID: "get-test-matrix", Method: http.MethodGet, Path: "/api/test_matrix",
		Summary: "Live matrix", Tags: tags,
		Description: "The domain × level matrix of the current run (of the last run when idle). A cell not finished has score null.",
	}, h.matrix)
	register(api, huma.Operation{
		OperationID: "poll-log", Method: http.MethodGet, Path: "/api/log_poll",
		Summary: "Drain pending log lines", Tags: tags,
		Description: "Without since, each line is handed out once, to whichever poll comes first. " +
			"With since (0, then the cursor of each answer), a client follows the log on its own and sees every line; " +
			"any number of clients can, and none takes lines from another. " +
			"With since and tail, a client that only shows the recent end of a long log skips to its newest lines in one request.",
	}, h.logPoll)
}

// startRequest converts a start body (nil: none) to the engine's request.
// start-run and start-sweep both use it, so a field of the body applies
// to a sweep's runs as it does to a run.
func (b *apiRunStart) startRequest() engine.StartRequest {
	var req engine.StartRequest
	if b == nil {
		return req
	}
	req.Domains, req.ModelName, req.Model, req.Retries = b.Domains, b.ModelName, b.Model, b.Retries
	req.AgentID, req.TargetID, req.Cache, req.Stream = b.AgentID, b.TargetID, b.Cache, b.Stream
	req.SimulatorModel = b.SimulatorModel
	if b.Params != nil {
		req.Params = harness.Params(*b.Params)
	}
	if b.Repeats != nil {
		req.Repeats = *b.Repeats
	}
	if b.TimeoutS != nil {
		req.Timeout = time.Duration(*b.TimeoutS * float64(time.Second))
	}
	if b.MaxCostUSD != nil {
		req.MaxCostUSD = *b.MaxCostUSD
	}
	return req
}

func (h *runHandler) start(ctx context.Context, in *startInput) (*runStartedOutput, error) {
	id, err := h.engine.Start(context.WithoutCancel(ctx), in.Body.startRequest()) // the run outlives the request
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &runStartedOutput{Body: apiRunStarted{Success: true, RunID: id, Message: "evaluation started"}}, nil
}

// apiRunResume is the optional body of resume-run.
type apiRunResume struct {
	MaxCostUSD *float64 `json:"max_cost_usd,omitempty" minimum:"0" doc:"The resumed run's budget in US dollars, as start-run's: it bounds the run's whole cost, its earlier sessions' included, so a run stopped at its budget goes on only with a higher one. Absent or 0: no budget (the run's earlier budget is not kept)."`
}

// resumeInput is the input of resume-run: the run, and an optional body.
type resumeInput struct {
	RunID string        `path:"run_id" doc:"The run to resume."`
	Body  *apiRunResume `required:"false"`
}

func (h *runHandler) resume(ctx context.Context, in *resumeInput) (*runStartedOutput, error) {
	var opts engine.ResumeOptions
	if in.Body != nil && in.Body.MaxCostUSD != nil {
		opts.MaxCostUSD = *in.Body.MaxCostUSD
	}
	if err := h.engine.ResumeWith(context.WithoutCancel(ctx), in.RunID, opts); err != nil {
		return nil, h.problem(ctx, err)
	}
	return &runStartedOutput{Body: apiRunStarted{Success: true, RunID: in.RunID, Message: "run resumed"}}, nil
}

func (h *runHandler) rescore(ctx context.Context, in *runPath) (*runRescoredOutput, error) {
	id, err := h.engine.Rescore(context.WithoutCancel(ctx), in.RunID) // the run outlives the request
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &runRescoredOutput{Body: apiRunRescored{RunID: id}}, nil
}

func (h *runHandler) stop(ctx context.Context, _ *struct{}) (*engineResultOutput, error) {
	id, err := h.engine.Stop(StopWait)
	if errors.Is(err, engine.ErrNotRunning) {
		return &engineResultOutput{Body: apiEngineResult{Message: err.Error()}}, nil
	}
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &engineResultOutput{Body: apiEngineResult{
		Success: true, RunID: id, Message: "evaluation stopped; finished results are kept",
	}}, nil
}

func (h *runHandler) reset(context.Context, *struct{}) (*engineResultOutput, error) {
	out := &engineResultOutput{Body: apiEngineResult{Success: true}}
	if id := h.engine.Reset(); id != "" {
		out.Body.RunID, out.Body.Message = id, "engine reset; run "+id+" aborted"
	} else {
		out.Body.Message = "engine reset; it was idle"
	}
	return out, nil
}

func (h *runHandler) status(context.Context, *struct{}) (*statusOutput, error) {
	return &statusOutput{Body: toAPIEngineStatus(h.engine.Status())}, nil
}

func (h *runHandler) matrix(ctx context.Context, _ *struct{}) (*matrixOutput, error) {
	m, err := h.engine.Matrix(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &matrixOutput{Body: toAPIMatrix(m)}, nil
}

func (h *runHandler) logPoll(_ context.Context, in *logPollInput) (*logPollOutput, error) {
	out := &logPollOutput{}
	var cursor uint64
	switch {
	case in.Since < 0 && in.Tail > 0:
		return nil, huma.Error422UnprocessableEntity("validation failed: tail: needs since",
			&huma.ErrorDetail{Location: "query.tail", Message: "needs since: a tail is read from a cursor (0 the first time)", Value: in.Tail})
	case in.Since < 0:
		out.Body.Messages, out.Body.IsRunning = h.engine.PollLogs()
	case in.Tail > 0:
		out.Body.Messages, cursor, out.Body.IsRunning = h.engine.ReadLogTail(uint64(in.Since), in.Tail)
		out.Body.Cursor = &cursor
	default:
		out.Body.Messages, cursor, out.Body.IsRunning = h.engine.ReadLogs(uint64(in.Since))
		out.Body.Cursor = &cursor
	}
	out.Body.Messages = nonNil(out.Body.Messages)
	return out, nil
}
