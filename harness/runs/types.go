package runs

import (
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// Run statuses.
const (
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusStopped     = "stopped"
	StatusInterrupted = "interrupted"
	StatusAborted     = "aborted"
)

// Test and cell statuses. A test ends passed, failed or error; an error
// (the model call, a plugin or the evaluator failed) says nothing about
// the model and is never counted as a failure.
const (
	TestPassed = "passed"
	TestFailed = "failed"
	TestError  = "error"

	CellPending = "pending"
	CellRunning = "running"
	// CellPassed and CellFailed: every test finished; the cell's score
	// (over its scored tests) reached, or not, the level's pass threshold.
	CellPassed = "passed"
	CellFailed = "failed"
	// CellError: every test finished and every one ended in error.
	CellError = "error"
	// CellPartial: the run ended with some, not all, of the cell's tests
	// finished; the score is over what finished.
	CellPartial = "partial"
	// CellSkipped: the run ended before any of the cell's tests finished.
	CellSkipped = "skipped"
)

// Info is a run's summary: the spec's run_info plus its status, counts
// and provenance. With repeats, every count is of samples (one asking of
// one test): TotalTests is the tests × Config.Repeats, and done = passed +
// failed + errors still holds.
type Info struct {
	RunID           string   `json:"run_id"`
	StartedAt       string   `json:"started_at"`
	CompletedAt     *string  `json:"completed_at"`
	ModelName       string   `json:"model_name"`    // The run's label.
	Model           string   `json:"model"`         // The endpoint model the run used.
	Status          string   `json:"status"`        // running, completed, stopped, interrupted, aborted
	OverallScore    *float64 `json:"overall_score"` // Mean score over the scored tests (passed and failed); null when none was scored.
	TotalTokens     int      `json:"total_tokens"`
	TotalDurationMS int64    `json:"total_duration_ms"`
	TotalTests      int      `json:"total_tests"` // Samples to run: tests × repeats.
	DoneTests       int      `json:"done_tests"`  // Tests finished: passed + failed + errors.
	Passed          int      `json:"passed"`
	Failed          int      `json:"failed"`
	Errors          int      `json:"errors"`          // Tests that ended in error: not scored, never counted as failed.
	Complete        bool     `json:"complete"`        // True only when the run completed, every test finished and none ended in error.
	Error           string   `json:"error,omitempty"` // Why the run stopped, when something other than a user stopped it.
	Domains         []string `json:"domains"`
	Config          *Config  `json:"config"` // What the run ran with; null for runs made before it was recorded.
	// CacheHits counts the model requests of the run answered from the
	// response cache (Config.Cache) rather than by the endpoint.
	CacheHits int `json:"cache_hits"`
	// RescoredFrom is the run whose stored responses this run scored
	// again; "" for a run that asked the model itself.
	RescoredFrom string `json:"rescored_from"`
	// CostUSD is what the run's model calls cost, its judges' included,
	// in US dollars, at the prices of Config.Pricing; null when no result
	// had a price. JudgeCostUSD is the judges' part of it. Tokens counts
	// every call's tokens, the judges' included.
	CostUSD      *float64 `json:"cost_usd"`
	JudgeCostUSD *float64 `json:"judge_cost_usd"`
	Tokens       Tokens   `json:"tokens"`
	// LatencyP50MS, LatencyP95MS and TTFTP50MS are the run's latency over
	// all its answered results, as a cell's (Cell.LatencyP50MS), measured
	// when the run ends: null while it runs (and again once resumed,
	// until it ends).
	LatencyP50MS *int64 `json:"latency_p50_ms"`
	LatencyP95MS *int64 `json:"latency_p95_ms"`
	TTFTP50MS    *int64 `json:"ttft_p50_ms"`
	// Resumed says how often and when the run was resumed (Engine.Resume,
	// gauntlet run --resume): the zero Resumed (Count 0, At nil) for a run
	// never resumed.
	Resumed Resumed `json:"resumed"`
}

// Resumed is a run's resumes: how many, and when (YYYY-MM-DD HH:MM:SS,
// UTC), oldest first.
type Resumed struct {
	Count int      `json:"count"`
	At    []string `json:"at"`
}

// Config is what a run ran with: enough to understand, reproduce and
// resume it after the definition files or the server's settings changed.
type Config struct {
	Model   string `json:"model"`    // The model reference, [provider/]model.
	BaseURL string `json:"base_url"` // The model endpoint, without credentials: the provider's when Model names one.
	// Provider names the provider Model's reference went to, and Kind its
	// kind (openai, anthropic, gemini); both absent for the default
	// endpoint and for runs made before providers existed.
	Provider        string         `json:"provider,omitempty"`
	ProviderKind    string         `json:"provider_kind,omitempty"`
	Concurrency     int            `json:"concurrency"`
	TimeoutS        float64        `json:"timeout_s"`        // Bound of each model request, in seconds.
	Retries         int            `json:"retries"`          // Retries of a failed model request.
	Repeats         int            `json:"repeats"`          // Times each test was asked; 1 for runs made before repeats existed.
	Params          map[string]any `json:"params"`           // Sampling parameters sent to the endpoint.
	DefinitionsHash string         `json:"definitions_hash"` // SHA-256 of the definitions the run used; GET /api/run/{run_id}/definitions returns them.
	GauntletVersion string         `json:"gauntlet_version"`
	// AgentID names the agent the run evaluated, "" for a run of the bare
	// model; Agent is that agent's definition when the run started (its
	// system prompt, model, tools and a hash of each knowledge-base file).
	// Both are absent from runs of the bare model and from runs made before
	// agents could be evaluated.
	AgentID string                   `json:"agent_id,omitempty"`
	Agent   *harness.AgentDefinition `json:"agent,omitempty"`
	// TargetID names the black-box target the run evaluated, "" for a
	// run of a model or an agent; Target is its definition when the run
	// started, with its ${VAR} references as written (never their
	// values), which a resume sends to again.
	TargetID string                    `json:"target_id,omitempty"`
	Target   *harness.TargetDefinition `json:"target,omitempty"`
	// Cache: identical model requests were answered from the response
	// cache, and new answers stored in it.
	Cache bool `json:"cache"`
	// Stream: the model's answers were asked for as streams, and each
	// result records the time to its first token.
	Stream bool `json:"stream,omitempty"`
	// Pricing holds the prices the run's costs were computed with: those
	// of pricing.yaml for the models it used (its model, its judges'),
	// when it started. Absent when none of them had a price.
	Pricing map[string]harness.Price `json:"pricing,omitempty"`
	// MaxCostUSD is the run's budget in US dollars, the one its latest
	// start or resume gave (a resume without one leaves none); absent
	// for a run without a budget. The workers that execute a queued
	// run's tests read it here (Store.Budget).
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// SimulatorModel is the model reference that plays the simulated
	// users of tests that name none; absent: the run's model.
	SimulatorModel string `json:"simulator_model,omitempty"`
}

// Result is one answer to one test: a run's per-cell result entry. A run
// asks each test Config.Repeats times; (RunID, TestID, Repeat) is unique.
type Result struct {
	RunID            string           `json:"run_id"`
	TestID           string           `json:"test_id"`
	Repeat           int              `json:"repeat"` // Which asking of the test this is, from 0: a run with repeats N asks each test N times.
	Domain           string           `json:"domain"`
	Level            int              `json:"level"`
	Name             string           `json:"name"`
	Prompt           string           `json:"prompt"`
	Response         string           `json:"response"`                  // The model's answer. Stored byte for byte; when it is not valid UTF-8, response_base64 holds the exact bytes.
	ResponseBase64   string           `json:"response_base64,omitempty"` // The exact bytes of response, base64, present only when they are not valid UTF-8 (JSON cannot carry them).
	Expected         harness.Expected `json:"expected"`
	Score            float64          `json:"score"`
	Status           string           `json:"status"` // passed, failed, error
	Details          map[string]any   `json:"details"`
	DurationMS       int64            `json:"duration_ms"`
	ModelName        string           `json:"model_name"`
	SystemPrompt     string           `json:"system_prompt"`
	PromptTokens     int              `json:"prompt_tokens"`
	CompletionTokens int              `json:"completion_tokens"`
	CachedTokens     int              `json:"cached_tokens"`    // Part of PromptTokens read from the provider's cache.
	ReasoningTokens  int              `json:"reasoning_tokens"` // Part of CompletionTokens the model spent thinking.
	// CostUSD is what the result's model calls cost, its judge's
	// included, in US dollars; null when the model under test has no
	// price. JudgeCostUSD is the judge's calls' part (priced by the
	// judge's model reference), null when none had a price.
	CostUSD      *float64 `json:"cost_usd"`
	JudgeCostUSD *float64 `json:"judge_cost_usd"`
	// TTFTMS is the time to the first token of the test's answer, and
	// OutputTokensPerS the speed of its generation (see SetSpeed): null
	// when not streamed, and when nothing was generated or measured, and
	// for results stored before they were recorded.
	TTFTMS           *int64   `json:"ttft_ms"`
	OutputTokensPerS *float64 `json:"output_tokens_per_s"`
	CreatedAt        string   `json:"created_at"`
	// Transcript is every message exchanged for the test, in order: the
	// system prompt and prompt, each assistant message with its tool
	// calls and the tool messages answering them, the final answer, and
	// the evaluator's second pass (Pass2). A result stored before
	// transcripts were recorded has the system prompt, the prompt and the
	// response. Stored compactly and capped: see TranscriptMaxBytes.
	Transcript []Message `json:"transcript"`
	// Calls are the attempts of every model request made for the result,
	// in order: the test's, its tool rounds', the second pass's, and a
	// judge's made through the run's client. Empty for results stored
	// before calls were recorded.
	Calls []Call `json:"calls"`
}

// Cell is one domain × level entry of a matrix. done = passed + failed +
// errors; score is the mean over the scored tests (passed + failed) and
// is null when none was scored.
type Cell struct {
	Status     string   `json:"status"` // pending, running, passed, failed, error, partial, skipped
	Score      *float64 `json:"score"`
	DurationMS *int64   `json:"duration_ms,omitempty"`
	Tests      int      `json:"tests"`  // Samples in the cell: its tests × the run's repeats.
	Done       int      `json:"done"`   // Tests finished: passed + failed + errors.
	Passed     int      `json:"passed"` // Tests passed.
	Failed     int      `json:"failed"` // Tests failed.
	Errors     int      `json:"errors"` // Tests that ended in error.
	// StdErr and CI95 are the uncertainty of the cell's score, set when
	// the cell settles (or is left partial) with at least one scored
	// sample, null otherwise and for runs stored before they existed. The
	// unit is the test: a test's repeats are averaged first, so repeats
	// never narrow the interval as new tests would (see package stats).
	StdErr *float64        `json:"stderr"`
	CI95   *stats.Interval `json:"ci95"` // [low, high], 95 %
	// Retrieval is the cell's recall@k and hit rate, over its scored
	// results that measured retrieval (see CellRetrieval); nil (absent)
	// when none did: a run that does not target an agent, or tests that
	// list no expected sources.
	Retrieval *CellRetrieval `json:"retrieval,omitempty"`
	// CostUSD, JudgeCostUSD and Tokens are the sums of the cell's
	// results' (Spend): costs null when none had a price.
	CostUSD      *float64 `json:"cost_usd"`
	JudgeCostUSD *float64 `json:"judge_cost_usd"`
	Tokens       Tokens   `json:"tokens"`
	// LatencyP50MS and LatencyP95MS are the percentiles of the cell's
	// answered results' duration_ms, TTFTP50MS the median of their
	// ttft_ms (see Latency). Measured once, when the cell settles or the
	// run leaves it partial: null while it runs, when nothing was
	// answered, and (TTFTP50MS) when the run did not stream.
	LatencyP50MS *int64 `json:"latency_p50_ms"`
	LatencyP95MS *int64 `json:"latency_p95_ms"`
	TTFTP50MS    *int64 `json:"ttft_p50_ms"`
}

// Stats summarises a run's results.
type Stats struct {
	StatusCounts map[string]int `json:"status_counts"`
	AvgScore     float64        `json:"avg_score"` // Mean score over the scored tests (passed and failed).
	TotalTests   int            `json:"total_tests"`
}
