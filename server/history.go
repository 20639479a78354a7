package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// runStore is what the results and history operations read: the run
// store, or a fake in tests.
type runStore interface {
	Run(ctx context.Context, id string) (runs.Info, error)
	Last(ctx context.Context) (runs.Info, error)
	List(ctx context.Context, limit, offset int) ([]runs.Info, int, error)
	Matrix(ctx context.Context, id string) (runs.Matrix, error)
	CellResults(ctx context.Context, id, domain string, level int) ([]runs.Result, error)
	Results(ctx context.Context, id string) ([]runs.Result, error)
	EachResultByCell(ctx context.Context, runID string, fn func(runs.Result) error) error
	EachSampleByCell(ctx context.Context, runID string, fn func(runs.Result) error) error
	Stats(ctx context.Context, id string) (runs.Stats, error)
	Definitions(ctx context.Context, runID string) (*harness.Snapshot, error)
}

// runKeeper is what they need of the engine: the live matrix of the active
// run, and deleting a run (never the active one).
type runKeeper interface {
	Matrix(ctx context.Context) (engine.LiveMatrix, error)
	DeleteRun(ctx context.Context, id string) error
}

var (
	_ runStore  = (*runs.Store)(nil)
	_ runKeeper = (*engine.Engine)(nil)
)

type historyHandler struct {
	problems
	runs   runStore
	engine runKeeper
}

// apiRunConfig is what a run ran with.
type apiRunConfig struct {
	Model           string              `json:"model" doc:"The model reference, [provider/]model."`
	BaseURL         string              `json:"base_url" doc:"The model endpoint, without credentials: the provider's when model names one."`
	Provider        string              `json:"provider,omitempty" doc:"The provider the model reference named; absent for the default endpoint (--llm-base-url)."`
	ProviderKind    string              `json:"provider_kind,omitempty" enum:"openai,anthropic,gemini" doc:"The kind of API the provider speaks; absent with provider."`
	Concurrency     int                 `json:"concurrency" doc:"Tests in flight at once."`
	TimeoutS        float64             `json:"timeout_s" doc:"Bound of each model request, in seconds."`
	Retries         int                 `json:"retries" doc:"Retries of a failed model request."`
	Repeats         int                 `json:"repeats" doc:"Times each test was asked."`
	Params          map[string]any      `json:"params" doc:"Sampling parameters sent to the endpoint."`
	DefinitionsHash string              `json:"definitions_hash" doc:"SHA-256 of the definitions the run used; get-run-definitions returns them."`
	GauntletVersion string              `json:"gauntlet_version"`
	Cache           bool                `json:"cache" doc:"Identical model requests were answered from the response cache."`
	Stream          bool                `json:"stream,omitempty" doc:"Answers were streamed; each call records ttft_ms. Absent when false."`
	Pricing         map[string]apiPrice `json:"pricing,omitempty" doc:"The prices the run's costs were computed with, by model reference: those of pricing.yaml for the models the run used (its model, its judges'), when it started. Absent when none of them had a price."`
	MaxCostUSD      float64             `json:"max_cost_usd,omitempty" minimum:"0" doc:"The run's budget in US dollars, as its latest start or resume gave it (a resume without one leaves none). Absent for a run without a budget."`
	SimulatorModel  string              `json:"simulator_model,omitempty" doc:"The model reference that plays simulated users whose test names no model of its own (--simulator-model). Absent when the run's model plays them."`
	AgentID         string              `json:"agent_id,omitempty" doc:"The agent the run evaluated; absent for a run of the bare model."`
	// Agent is described by its schema, RunAgent: a reference takes no
	// description of its own.
	Agent    *apiRunAgent `json:"agent,omitempty"`
	TargetID string       `json:"target_id,omitempty" doc:"The black-box target the run evaluated; absent for a run of a model or an agent."`
	// Target is described by its schema, Target.
	Target *apiTarget `json:"target,omitempty"`
}

// apiRunAgent is the definition of the agent a run evaluated, when it
// started.
type apiRunAgent struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	SystemPrompt  string          `json:"system_prompt"`
	Model         *string         `json:"model" doc:"The agent's own model; null: the configured one."`
	Tools         []string        `json:"tools" doc:"The ids of the agent's tools, in order."`
	KnowledgeBase []apiKBDocument `json:"knowledge_base" doc:"The knowledge-base files, by name, with a hash of each: two runs over different versions of the knowledge base differ here."`
}

// apiKBDocument identifies one knowledge-base file's content.
type apiKBDocument struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256" doc:"Hex SHA-256 of the file's text."`
	Bytes  int64  `json:"bytes" doc:"Length of the text."`
}

func toAPIRunAgent(a *harness.AgentDefinition) *apiRunAgent {
	if a == nil {
		return nil
	}
	out := &apiRunAgent{ID: a.ID, Name: a.Name, SystemPrompt: a.SystemPrompt, Model: a.Model, Tools: nonNil(a.Tools),
		KnowledgeBase: make([]apiKBDocument, len(a.KnowledgeBase))}
	for i, d := range a.KnowledgeBase {
		out.KnowledgeBase[i] = apiKBDocument{File: d.File, SHA256: d.SHA256, Bytes: d.Bytes}
	}
	return out
}

// apiRunInfo is a run's summary.
type apiRunInfo struct {
	RunID           string               `json:"run_id"`
	StartedAt       string               `json:"started_at" doc:"YYYY-MM-DD HH:MM:SS, UTC."`
	CompletedAt     *string              `json:"completed_at" doc:"YYYY-MM-DD HH:MM:SS, UTC; null while the run is running."`
	ModelName       string               `json:"model_name" doc:"The run's label."`
	Model           string               `json:"model" doc:"The endpoint model the run used."`
	Status          apiRunStatus         `json:"status"`
	OverallScore    *float64             `json:"overall_score" doc:"Mean score over the scored tests (passed and failed); null when none was scored."`
	TotalTokens     int                  `json:"total_tokens"`
	TotalDurationMS int64                `json:"total_duration_ms"`
	TotalTests      int                  `json:"total_tests" doc:"Samples to run: the tests × the run's repeats."`
	DoneTests       int                  `json:"done_tests" doc:"Samples finished: passed + failed + errors."`
	Passed          int                  `json:"passed"`
	Failed          int                  `json:"failed"`
	Errors          int                  `json:"errors" doc:"Tests that ended in error: not scored, never counted as failed."`
	Complete        bool                 `json:"complete" doc:"True only when the run completed, every test finished and none ended in error."`
	Error           string               `json:"error,omitempty" doc:"Why the run stopped, when something other than a user stopped it."`
	Domains         []string             `json:"domains" doc:"The domains the run covered."`
	Config          orNull[apiRunConfig] `json:"config" doc:"What the run ran with; null for runs made before it was recorded."`
	CacheHits       int                  `json:"cache_hits" doc:"Model requests answered from the response cache instead of the endpoint; counted when the run ends."`
	CostUSD         *float64             `json:"cost_usd" doc:"What the run's model calls cost in US dollars, its judges' included, at the prices of config.pricing; null when no result had a price. A call answered from the response cache costs nothing."`
	JudgeCostUSD    *float64             `json:"judge_cost_usd" doc:"The part of cost_usd the judges' calls cost; null when no result had a price."`
	// Tokens is described by its schema, Tokens.
	Tokens       apiTokens `json:"tokens"`
	LatencyP50MS *int64    `json:"latency_p50_ms" doc:"Median of the duration_ms of the run's answered (passed and failed) results, nearest-rank; measured when the run ends: null while it runs and when nothing was answered."`
	LatencyP95MS *int64    `json:"latency_p95_ms" doc:"95th percentile of the duration_ms of the run's answered results, nearest-rank; null as latency_p50_ms."`
	TTFTP50MS    *int64    `json:"ttft_p50_ms" doc:"Median of the ttft_ms of the run's answered results: null unless the run streamed, and as latency_p50_ms."`
	RescoredFrom string    `json:"rescored_from" doc:"The run whose stored responses this run scored again (rescore-run); empty for a run that asked the model."`
	// Resumed is described by its schema, RunResumed: a reference takes
	// no description of its own.
	Resumed apiRunResumed `json:"resumed"`
}

// apiRunResumed is a run's resumes.
type apiRunResumed struct {
	Count int      `json:"count" minimum:"0" doc:"How many times the run was resumed."`
	At    []string `json:"at" doc:"When each resume started, oldest first: YYYY-MM-DD HH:MM:SS, UTC."`
}

func toAPIRunInfo(i runs.Info) apiRunInfo {
	out := apiRunInfo{
		RunID: i.RunID, StartedAt: i.StartedAt, CompletedAt: i.CompletedAt, ModelName: i.ModelName, Model: i.Model,
		Status: apiRunStatus(i.Status), OverallScore: i.OverallScore, TotalTokens: i.TotalTokens, TotalDurationMS: i.TotalDurationMS,
		TotalTests: i.TotalTests, DoneTests: i.DoneTests, Passed: i.Passed, Failed: i.Failed, Errors: i.Errors,
		Complete: i.Complete, Error: i.Error, Domains: nonNil(i.Domains), CacheHits: i.CacheHits, RescoredFrom: i.RescoredFrom,
		Resumed: apiRunResumed{Count: i.Resumed.Count, At: nonNil(i.Resumed.At)},
		CostUSD: i.CostUSD, JudgeCostUSD: i.JudgeCostUSD, Tokens: apiTokens(i.Tokens),
		LatencyP50MS: i.LatencyP50MS, LatencyP95MS: i.LatencyP95MS, TTFTP50MS: i.TTFTP50MS,
	}
	if c := i.Config; c != nil {
		params := c.Params
		if params == nil {
			params = map[string]any{}
		}
		out.Config.V = &apiRunConfig{
			Model: c.Model, BaseURL: c.BaseURL, Provider: c.Provider, ProviderKind: c.ProviderKind, Concurrency: c.Concurrency, TimeoutS: c.TimeoutS,
			Retries: c.Retries, Repeats: c.Repeats, Params: params,
			DefinitionsHash: c.DefinitionsHash, GauntletVersion: c.GauntletVersion, Cache: c.Cache, Stream: c.Stream,
			AgentID: c.AgentID, Agent: toAPIRunAgent(c.Agent), MaxCostUSD: c.MaxCostUSD, SimulatorModel: c.SimulatorModel,
			TargetID: c.TargetID, Target: toAPIRunTarget(c.Target),
		}
		if len(c.Pricing) > 0 {
			out.Config.V.Pricing = make(map[string]apiPrice, len(c.Pricing))
			for ref, p := range c.Pricing {
				out.Config.V.Pricing[ref] = apiPrice(p)
			}
		}
	}
	return out
}

// apiTestResult is one test's result in a run.
type apiTestResult struct {
	RunID            string         `json:"run_id"`
	TestID           string         `json:"test_id"`
	Repeat           int            `json:"repeat" minimum:"0" doc:"Which asking of the test this is, from 0: a run with repeats N asks each test N times, and (test_id, repeat) is unique in a run."`
	Domain           string         `json:"domain"`
	Level            int            `json:"level"`
	Name             string         `json:"name"`
	Prompt           string         `json:"prompt"`
	Response         string         `json:"response" doc:"The model's answer. Stored byte for byte; when it is not valid UTF-8, response_base64 holds the exact bytes."`
	ResponseBase64   string         `json:"response_base64,omitempty" doc:"The exact bytes of response, base64, present only when they are not valid UTF-8 (JSON cannot carry them)."`
	Expected         apiExpected    `json:"expected"`
	Score            float64        `json:"score" doc:"0 to 1."`
	Status           string         `json:"status" enum:"passed,failed,error" doc:"error: the model call, a plugin or the evaluator failed (details.error says why); it says nothing about the model."`
	Details          map[string]any `json:"details" doc:"What the evaluator found: extracted_answer, pass2_used, and error, tool_calls or an evaluator's own keys when they apply."`
	DurationMS       int64          `json:"duration_ms"`
	ModelName        string         `json:"model_name"`
	SystemPrompt     string         `json:"system_prompt" doc:"The system prompt in effect."`
	PromptTokens     int            `json:"prompt_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	CachedTokens     int            `json:"cached_tokens" doc:"The part of prompt_tokens read from the provider's prompt cache."`
	ReasoningTokens  int            `json:"reasoning_tokens" doc:"The part of completion_tokens the model spent thinking."`
	CostUSD          *float64       `json:"cost_usd" doc:"What the result's model calls cost in US dollars, its judge's included; null when the model under test has no price in the run's config.pricing."`
	JudgeCostUSD     *float64       `json:"judge_cost_usd" doc:"The part of the cost the judge's calls made, priced by the judge's model reference; null when none had a price."`
	TTFTMS           *int64         `json:"ttft_ms" doc:"Time to the first token of the test's answer, in milliseconds: that of the successful attempt of the test's first request (its call of purpose test). Null when the run did not stream, when that request was answered from the response cache or never succeeded, and for results stored before it was recorded."`
	OutputTokensPerS *float64       `json:"output_tokens_per_s" doc:"Completion tokens of the successful attempts of the test's requests (purposes test and tool_round) per second of their generation: a streamed attempt's duration less its time to first token (its whole duration when the answer came with its first token), another's whole duration. Null when no token was generated or no time measured, and for results stored before it was recorded."`
	CreatedAt        string         `json:"created_at" doc:"YYYY-MM-DD HH:MM:SS, UTC."`

	// The conversation of the test and its model calls.
	Transcript []apiTranscriptMessage `json:"transcript" doc:"Every message exchanged for the test, in order: the system prompt and prompt, each assistant message with its tool calls and the tool messages answering them, the final answer, then the second pass (pass2). A result stored before transcripts were recorded has the system prompt, the prompt and the response only. Texts beyond 256 KiB in all are cut (truncated)."`
	Calls      []apiModelCall         `json:"calls" doc:"Each attempt of each model request made for the result, in the order they started: the test's, its tool rounds', the second pass's and a judge's (through the run's client). Empty for results stored before calls were recorded, and for a rescore's results but their judge calls."`
}

// apiTranscriptMessage is one message of a result's transcript.
type apiTranscriptMessage struct {
	Role          string                  `json:"role" enum:"system,user,assistant,tool"`
	Content       string                  `json:"content" doc:"The text; when it is not valid UTF-8, content_base64 holds the exact bytes."`
	ContentBase64 string                  `json:"content_base64,omitempty" doc:"The exact bytes of content, base64, present only when they are not valid UTF-8."`
	ToolCalls     []apiTranscriptToolCall `json:"tool_calls,omitempty" doc:"The tool calls of an assistant message."`
	ToolCallID    string                  `json:"tool_call_id,omitempty" doc:"The call a tool message answers."`
	Pass2         bool                    `json:"pass2" doc:"Part of the evaluator's second pass: the request asking the model to restate its final answer, and the model's reply."`
	Truncated     bool                    `json:"truncated" doc:"The content or a tool call's arguments were cut to fit the stored transcript's cap."`
	Omitted       int                     `json:"omitted,omitempty" doc:"Messages left out just before this one (a transcript of more than 1000 messages keeps the first and the last ones)."`
	Parts         []apiTranscriptPart     `json:"parts,omitempty" doc:"What an assistant message carried besides its content: the model's reasoning (kind reasoning). Kept for reading, never scored."`
}

// apiTranscriptPart is a part of a transcript message: a model's
// reasoning.
type apiTranscriptPart struct {
	Kind       string `json:"kind" enum:"reasoning"`
	Text       string `json:"text,omitempty" doc:"The reasoning text; when it is not valid UTF-8, text_base64 holds the exact bytes. Empty for a block the provider keeps hidden (redacted)."`
	TextBase64 string `json:"text_base64,omitempty" doc:"The exact bytes of text, base64, present only when they are not valid UTF-8."`
	Signature  string `json:"signature,omitempty" doc:"The provider's opaque token for the part."`
	Redacted   bool   `json:"redacted,omitempty" doc:"The provider encrypted the reasoning into signature."`
}

// apiTranscriptToolCall is a function call in a transcript.
type apiTranscriptToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments" doc:"The JSON arguments as the model sent them."`
}

// apiModelCall is one attempt of one model request.
type apiModelCall struct {
	Purpose          string `json:"purpose" enum:"test,tool_round,pass2,judge,simulator" doc:"test: the first request of the test (of each turn, in a multi-turn test); tool_round: a later request of its tool loop (round); pass2: the evaluator's second pass; judge: a judge's request; simulator: a request to the model playing a simulated user (counted as a judge's)."`
	Round            int    `json:"round" doc:"The tool-loop request, from 0 (the test's first); 0 for pass2 and judge."`
	Attempt          int    `json:"attempt" minimum:"1" doc:"1 for a request's first attempt, then one more for each retry."`
	StartMS          int64  `json:"start_ms" doc:"When the attempt began, in milliseconds from the start of the test."`
	DurationMS       int64  `json:"duration_ms"`
	TTFTMS           int64  `json:"ttft_ms,omitempty" doc:"Milliseconds from the attempt's start to the first token of its answer, when the run streamed answers (stream: true); absent otherwise."`
	Model            string `json:"model,omitempty" doc:"The model reference the request named: the run's model, or a judge's own. Absent from calls stored before it was recorded."`
	PromptTokens     int    `json:"prompt_tokens" doc:"Prompt tokens the provider reported, the cached ones included."`
	CompletionTokens int    `json:"completion_tokens" doc:"Completion tokens the provider reported, the reasoning ones included."`
	CachedTokens     int    `json:"cached_tokens" doc:"Prompt tokens read from the provider's prompt cache; 0 when it reported none."`
	ReasoningTokens  int    `json:"reasoning_tokens" doc:"Completion tokens the model spent thinking; 0 when it reported none."`
	Status           string `json:"status" enum:"ok,cached,http_error,timeout,unreachable,too_large,malformed,cancelled,error" doc:"ok; cached (answered from the response cache); or why the attempt failed."`
	HTTPStatus       int    `json:"http_status,omitempty" doc:"The endpoint's HTTP status, when it answered with an error status (or a body too large or malformed)."`
	Error            string `json:"error,omitempty" doc:"What went wrong, at most 500 bytes."`
}

func toAPITranscript(msgs []runs.Message) []apiTranscriptMessage {
	out := make([]apiTranscriptMessage, len(msgs))
	for i, m := range msgs {
		a := apiTranscriptMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Pass2: m.Pass2,
			Truncated: m.Truncated, Omitted: m.Omitted}
		if !utf8.ValidString(m.Content) {
			a.ContentBase64 = base64.StdEncoding.EncodeToString([]byte(m.Content))
		}
		for _, c := range m.ToolCalls {
			a.ToolCalls = append(a.ToolCalls, apiTranscriptToolCall(c))
		}
		for _, p := range m.Parts {
			ap := apiTranscriptPart{Kind: p.Kind, Text: p.Text, Signature: p.Signature, Redacted: p.Redacted}
			if !utf8.ValidString(p.Text) {
				ap.TextBase64 = base64.StdEncoding.EncodeToString([]byte(p.Text))
			}
			a.Parts = append(a.Parts, ap)
		}
		out[i] = a
	}
	return out
}

func toAPICalls(calls []runs.Call) []apiModelCall {
	out := make([]apiModelCall, len(calls))
	for i, c := range calls {
		out[i] = apiModelCall(c)
	}
	return out
}

func toAPIResults(rs []runs.Result) []apiTestResult {
	out := make([]apiTestResult, len(rs))
	for i, r := range rs {
		details := r.Details
		if details == nil {
			details = map[string]any{}
		}
		out[i] = apiTestResult{
			RunID: r.RunID, TestID: r.TestID, Repeat: r.Repeat, Domain: r.Domain, Level: r.Level, Name: r.Name, Prompt: r.Prompt,
			Response: r.Response, ResponseBase64: r.ResponseBase64, Expected: toAPIExpected(r.Expected),
			Score: r.Score, Status: r.Status, Details: details, DurationMS: r.DurationMS, ModelName: r.ModelName,
			SystemPrompt: r.SystemPrompt, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
			CachedTokens: r.CachedTokens, ReasoningTokens: r.ReasoningTokens, CostUSD: r.CostUSD, JudgeCostUSD: r.JudgeCostUSD,
			TTFTMS: r.TTFTMS, OutputTokensPerS: r.OutputTokensPerS, CreatedAt: r.CreatedAt, Transcript: toAPITranscript(r.Transcript), Calls: toAPICalls(r.Calls),
		}
	}
	return out
}

// apiRunStats summarises a run's results.
type apiRunStats struct {
	StatusCounts map[string]int `json:"status_counts" doc:"Results per status (passed, failed, error)."`
	AvgScore     float64        `json:"avg_score" doc:"Mean score over the scored tests (passed and failed)."`
	TotalTests   int            `json:"total_tests"`
}

func toAPIStats(s runs.Stats) apiRunStats {
	counts := s.StatusCounts
	if counts == nil {
		counts = map[string]int{}
	}
	return apiRunStats{StatusCounts: counts, AvgScore: s.AvgScore, TotalTests: s.TotalTests}
}

// apiTestAggregate is one test of a run over its repeats.
type apiTestAggregate struct {
	TestID   string   `json:"test_id"`
	Domain   string   `json:"domain"`
	Level    int      `json:"level"`
	Name     string   `json:"name"`
	Samples  int      `json:"samples" doc:"The test's finished results: passed + failed + errors. At most the run's repeats."`
	K        int      `json:"k" doc:"Its scored results, passed + failed: the k of pass_at_k and pass_all_k. A result in error is not one of them: it says nothing about the model."`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Errors   int      `json:"errors" doc:"Results that ended in error: left out of every figure."`
	Score    *float64 `json:"score" doc:"Mean score of the scored results; null when none was scored."`
	PassRate *float64 `json:"pass_rate" doc:"passed / k; null when k is 0."`
	PassAtK  *bool    `json:"pass_at_k" doc:"Passed at least once in its k scored results; null when k is 0."`
	PassAllK *bool    `json:"pass_all_k" doc:"Passed every one of its k scored results (pass^k); null when k is 0."`
}

func toAPIAggregates(rs []runs.Result) []apiTestAggregate {
	aggs := runs.Aggregates(rs)
	out := make([]apiTestAggregate, len(aggs))
	for i, a := range aggs {
		out[i] = apiTestAggregate(a)
	}
	return out
}

// apiRunDetails is the answer of get-run.
type apiRunDetails struct {
	RunInfo     apiRunInfo         `json:"run_info"`
	TestResults []apiTestResult    `json:"test_results"`
	Stats       apiRunStats        `json:"stats"`
	Aggregates  []apiTestAggregate `json:"aggregates" doc:"Each test of the run over its repeats, in the order of test_results: pass rate, pass@k and pass^k. One per test, whatever the repeats."`
}

// apiCellResults is the answer of the per-cell result operations.
type apiCellResults struct {
	RunID      string             `json:"run_id"`
	Domain     string             `json:"domain"`
	Level      int                `json:"level"`
	Tests      []apiTestResult    `json:"tests" doc:"Every result of the cell: with repeats, one per test and repeat."`
	Aggregates []apiTestAggregate `json:"aggregates" doc:"Each test of the cell over its repeats, in the order of tests: pass rate, pass@k and pass^k."`
}

// apiLastRun is the answer of get-last-run-id.
type apiLastRun struct {
	RunID       string       `json:"run_id"`
	ModelName   string       `json:"model_name"`
	StartedAt   string       `json:"started_at"`
	CompletedAt *string      `json:"completed_at" doc:"Null while the run is running."`
	Status      apiRunStatus `json:"status"`
}

// apiRunList is the answer of list-runs.
type apiRunList struct {
	Runs   []apiRunInfo `json:"runs" doc:"Newest first."`
	Total  int          `json:"total" doc:"Runs in all."`
	Limit  int          `json:"limit"`
	Offset int          `json:"offset"`
}

type runPath struct {
	RunID string `path:"run_id" doc:"Run id."`
}

type runDetailsInput struct {
	RunID   string `path:"run_id" doc:"Run id."`
	Results bool   `query:"results" default:"true" doc:"false leaves test_results and aggregates empty: the run's summary and stats alone, as quick for a run of 100,000 results as for one of ten (read its results a page at a time with list-run-results)."`
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
	Body apiCellResults
}

type lastRunOutput struct {
	Body apiLastRun
}

type historyInput struct {
	Limit  int `query:"limit" default:"50" minimum:"1" maximum:"1000" doc:"Runs per page."`
	Offset int `query:"offset" default:"0" minimum:"0" doc:"Runs to skip."`
}

type historyOutput struct {
	Body apiRunList
}

// registerHistory registers the results and history operations.
func registerHistory(api huma.API, store runStore, eng runKeeper, log *slog.Logger) {
	h := &historyHandler{problems{log}, store, eng}
	tags := []string{tagResults}
	notFound := []int{http.StatusNotFound}
	register(api, huma.Operation{
		OperationID: "get-run-matrix", Method: http.MethodGet, Path: "/api/run/{run_id}/matrix",
		Summary: "A run's matrix", Tags: tags, Errors: notFound,
		Description: "Same format as the live matrix; the live one while the run is running. 404 for an unknown run.",
	}, h.matrix)
	register(api, huma.Operation{
		OperationID: "get-run-cell", Method: http.MethodGet, Path: "/api/run/{run_id}/tests/{domain}/{level}",
		Summary: "A run's results for one domain and level", Tags: tags, Errors: notFound,
		Description: "Every result of the cell, in the order they were stored, and each test's aggregate over its repeats " +
			"(pass rate, pass@k, pass^k; results in error left out). Read while the run is running, it covers what finished so far. 404 for an unknown run.",
	}, h.cell)
	register(api, huma.Operation{
		OperationID: "get-run", Method: http.MethodGet, Path: "/api/run/{run_id}",
		Summary: "A run's details, results and stats", Tags: tags, Errors: notFound,
		Description: "The run's summary, every result, the counts per status and each test's aggregate over its repeats. " +
			"With results=false, the summary and counts alone (test_results and aggregates empty). 404 for an unknown run. " +
			"The body is streamed as the results are read, so a run of any size is answered in little memory; " +
			"if reading fails half way the connection is cut, so that a client never takes a partial document for a whole one. " +
			"Read while the run is running, stats is counted just before test_results is read and aggregates just after, " +
			"so they may differ from test_results by the results that finished meanwhile.",
		Responses: map[string]*huma.Response{"200": {
			Description: "OK",
			Content: map[string]*huma.MediaType{"application/json": {
				Schema: api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[apiRunDetails](), true, "")}},
		}},
	}, h.run)
	register(api, huma.Operation{
		OperationID: "get-run-definitions", Method: http.MethodGet, Path: "/api/run/{run_id}/definitions",
		Summary: "The definitions a run used", Tags: tags, Errors: notFound,
		Description: "The domains, levels, tests, evaluators and tools as they were when the run started, in the export's shape. " +
			"404 for an unknown run, or a run made before definitions were recorded.",
	}, h.definitions)
	register(api, huma.Operation{
		OperationID: "delete-run", Method: http.MethodDelete, Path: "/api/history/{run_id}",
		Summary: "Delete a run", Tags: tags, Errors: []int{http.StatusNotFound, http.StatusConflict},
		Description: "Deletes the run, its results, level scores and log file. The active run cannot be deleted (409).",
	}, h.delete)
	register(api, huma.Operation{
		OperationID: "list-runs", Method: http.MethodGet, Path: "/api/history",
		Summary: "List runs, newest first", Tags: tags,
		Description: "A page of run summaries, newest first, and the total.",
	}, h.list)
	register(api, huma.Operation{
		OperationID: "get-last-run-id", Method: http.MethodGet, Path: "/api/v1/history/last/id",
		Summary: "The most recent run", Tags: tags, Errors: notFound,
		Description: "Its id, label, times and status. 404 when there has been no run.",
	}, h.lastID)
	register(api, huma.Operation{
		OperationID: "get-last-run-cell", Method: http.MethodGet, Path: "/api/v1/history/last/{domain}/{level}",
		Summary: "The most recent run's results for one domain and level", Tags: tags, Errors: notFound,
		Description: "As get-history-cell, for the most recent run. 404 when there has been no run.",
	}, h.lastCell)
	register(api, huma.Operation{
		OperationID: "get-history-cell", Method: http.MethodGet, Path: "/api/v1/history/{run_id}/{domain}/{level}",
		Summary: "A run's results for one domain and level", Tags: tags, Errors: notFound,
		Description: "Each result with its full prompt, response, expected answer, score and details. 404 for an unknown run.",
	}, h.cell)
}

func (h *historyHandler) matrix(ctx context.Context, in *runPath) (*matrixOutput, error) {
	info, err := h.runs.Run(ctx, in.RunID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	if live, _ := h.engine.Matrix(ctx); live.RunID != nil && *live.RunID == in.RunID && live.Status == runs.StatusRunning {
		return &matrixOutput{Body: toAPIMatrix(live)}, nil
	}
	m, err := h.runs.Matrix(ctx, in.RunID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &matrixOutput{Body: apiMatrix{Domains: toAPICells(m), RunID: &info.RunID, ModelName: &info.ModelName, Status: info.Status}}, nil
}

func (h *historyHandler) cell(ctx context.Context, in *cellInput) (*cellOutput, error) {
	results, err := h.runs.CellResults(ctx, in.RunID, in.Domain, in.Level)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &cellOutput{Body: apiCellResults{RunID: in.RunID, Domain: in.Domain, Level: in.Level,
		Tests: toAPIResults(results), Aggregates: toAPIAggregates(results)}}, nil
}

func (h *historyHandler) lastCell(ctx context.Context, in *lastCellInput) (*cellOutput, error) {
	last, err := h.runs.Last(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return h.cell(ctx, &cellInput{RunID: last.RunID, Domain: in.Domain, Level: in.Level})
}

// run answers get-run. The body is apiRunDetails, written as it is read
// (writeRunDetails): the run's results a page at a time, then its
// aggregates a cell at a time, so that its memory does not grow with the
// run. Errors found before the first byte are problems; a failure later
// cuts the connection.
func (h *historyHandler) run(ctx context.Context, in *runDetailsInput) (*huma.StreamResponse, error) {
	info, err := h.runs.Run(ctx, in.RunID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	stats, err := h.runs.Stats(ctx, in.RunID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &huma.StreamResponse{Body: func(hc huma.Context) {
		hc.SetHeader("Content-Type", "application/json")
		hc.SetStatus(http.StatusOK)
		w := bufio.NewWriterSize(hc.BodyWriter(), 64<<10)
		err := writeRunDetails(ctx, w, h.runs, info, stats, in.Results)
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			if ctx.Err() == nil {
				h.logger().ErrorContext(ctx, "get-run failed", slog.String("run_id", in.RunID), slog.Any("error", err))
			}
			// The status is sent: only a cut connection tells the client
			// that the document is not whole.
			panic(http.ErrAbortHandler)
		}
	}}, nil
}

// writeRunDetails writes the JSON of apiRunDetails for a run: the same
// bytes, field for field, as encoding the whole value with the API's JSON
// format (HTML characters not escaped, a newline at the end), without
// holding more than one result, or one cell's samples, at a time.
func writeRunDetails(ctx context.Context, w io.Writer, store runStore, info runs.Info, stats runs.Stats, results bool) error {
	jw := &jsonStreamer{w: w}
	jw.enc = json.NewEncoder(&jw.buf)
	jw.enc.SetEscapeHTML(false)
	jw.raw(`{"run_info":`)
	jw.value(toAPIRunInfo(info))
	jw.raw(`,"test_results":[`)
	if results && jw.err == nil {
		one := make([]runs.Result, 1)
		first := true
		err := store.EachResultByCell(ctx, info.RunID, func(r runs.Result) error {
			if !first {
				jw.raw(",")
			}
			first = false
			one[0] = r
			jw.value(toAPIResults(one)[0])
			return jw.err
		})
		if err != nil {
			return err
		}
	}
	jw.raw(`],"stats":`)
	jw.value(toAPIStats(stats))
	jw.raw(`,"aggregates":[`)
	if results && jw.err == nil {
		// A test's repeats are all in its cell: aggregating one cell at a
		// time gives the aggregates of the whole run, in the same order.
		var cell []runs.Result
		first := true
		flush := func() {
			for _, a := range runs.Aggregates(cell) {
				if !first {
					jw.raw(",")
				}
				first = false
				jw.value(apiTestAggregate(a))
			}
			cell = cell[:0]
		}
		err := store.EachSampleByCell(ctx, info.RunID, func(r runs.Result) error {
			if len(cell) > 0 && (cell[0].Domain != r.Domain || cell[0].Level != r.Level) {
				flush()
			}
			cell = append(cell, r)
			return jw.err
		})
		if err != nil {
			return err
		}
		flush()
	}
	jw.raw("]}\n")
	return jw.err
}

// jsonStreamer writes a JSON document piece by piece, keeping the first
// error.
type jsonStreamer struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

// raw writes s as it is.
func (j *jsonStreamer) raw(s string) {
	if j.err == nil {
		_, j.err = io.WriteString(j.w, s)
	}
}

// value writes v's JSON, as the API's format encodes it, without the
// encoder's newline.
func (j *jsonStreamer) value(v any) {
	if j.err != nil {
		return
	}
	j.buf.Reset()
	if j.err = j.enc.Encode(v); j.err != nil {
		return
	}
	_, j.err = j.w.Write(bytes.TrimSuffix(j.buf.Bytes(), []byte("\n")))
}

func (h *historyHandler) definitions(ctx context.Context, in *runPath) (*definitionsOutput, error) {
	snap, err := h.runs.Definitions(ctx, in.RunID)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &definitionsOutput{Body: toAPIDefinitions(snap)}, nil
}

func (h *historyHandler) delete(ctx context.Context, in *runPath) (*successOutput, error) {
	if err := h.engine.DeleteRun(ctx, in.RunID); err != nil {
		return nil, h.problem(ctx, err)
	}
	return success(), nil
}

func (h *historyHandler) list(ctx context.Context, in *historyInput) (*historyOutput, error) {
	list, total, err := h.runs.List(ctx, in.Limit, in.Offset)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	out := &historyOutput{Body: apiRunList{Runs: make([]apiRunInfo, len(list)), Total: total, Limit: in.Limit, Offset: in.Offset}}
	for i, info := range list {
		out.Body.Runs[i] = toAPIRunInfo(info)
	}
	return out, nil
}

func (h *historyHandler) lastID(ctx context.Context, _ *struct{}) (*lastRunOutput, error) {
	last, err := h.runs.Last(ctx)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &lastRunOutput{Body: apiLastRun{
		RunID: last.RunID, ModelName: last.ModelName, StartedAt: last.StartedAt,
		CompletedAt: last.CompletedAt, Status: apiRunStatus(last.Status),
	}}, nil
}

// orNull is a *T field documented as "T or null". huma documents a
// pointer to a struct as the struct alone; generated clients would then
// not expect the null a response carries.
type orNull[T any] struct {
	V *T
}

// MarshalJSON encodes the value, or null.
func (n orNull[T]) MarshalJSON() ([]byte, error) { return json.Marshal(n.V) }

// UnmarshalJSON decodes the value, or null.
func (n *orNull[T]) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &n.V) }

// Schema is T's schema or null.
func (orNull[T]) Schema(r huma.Registry) *huma.Schema {
	return nullable(r.Schema(reflect.TypeFor[T](), true, ""))
}

// apiTokens are the four token counts of a cell or a run.
type apiTokens struct {
	Prompt     int64 `json:"prompt" doc:"Prompt tokens of every call, judges' included; the cached ones too."`
	Completion int64 `json:"completion" doc:"Completion tokens of every call, judges' included; the reasoning ones too."`
	Cached     int64 `json:"cached" doc:"Prompt tokens read from the provider's prompt cache."`
	Reasoning  int64 `json:"reasoning" doc:"Completion tokens the models spent thinking."`
}
