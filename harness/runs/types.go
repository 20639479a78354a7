package runs

import "github.com/gauntlet-eval/gauntlet/harness"

// Run statuses (CONTRACT §4).
const (
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusStopped     = "stopped"
	StatusInterrupted = "interrupted"
	StatusAborted     = "aborted"
)

// Test and cell statuses.
const (
	TestPassed  = "passed"
	TestFailed  = "failed"
	TestError   = "error"
	CellPending = "pending"
	CellRunning = "running"
	CellPassed  = "passed"
	CellFailed  = "failed"
	CellSkipped = "skipped"
)

// Info is a run's summary: the spec's run_info plus its status.
type Info struct {
	RunID           string   `json:"run_id"`
	StartedAt       string   `json:"started_at"`
	CompletedAt     *string  `json:"completed_at"`
	ModelName       string   `json:"model_name" doc:"The run's label."`
	Model           string   `json:"model" doc:"The endpoint model the run used."`
	Status          string   `json:"status" enum:"running,completed,stopped,interrupted,aborted"`
	OverallScore    *float64 `json:"overall_score" doc:"Mean score of the run's tests."`
	TotalTokens     int      `json:"total_tokens"`
	TotalDurationMS int64    `json:"total_duration_ms"`
	TotalTests      int      `json:"total_tests"`
	Domains         []string `json:"domains"`
}

// Result is one test's result: the spec's per-cell result entry.
type Result struct {
	RunID            string           `json:"run_id"`
	TestID           string           `json:"test_id"`
	Domain           string           `json:"domain"`
	Level            int              `json:"level"`
	Name             string           `json:"name"`
	Prompt           string           `json:"prompt"`
	Response         string           `json:"response"`
	Expected         harness.Expected `json:"expected"`
	Score            float64          `json:"score"`
	Status           string           `json:"status" enum:"passed,failed,error"`
	Details          map[string]any   `json:"details"`
	DurationMS       int64            `json:"duration_ms"`
	ModelName        string           `json:"model_name"`
	SystemPrompt     string           `json:"system_prompt"`
	PromptTokens     int              `json:"prompt_tokens"`
	CompletionTokens int              `json:"completion_tokens"`
	CreatedAt        string           `json:"created_at"`
}

// Cell is one domain × level entry of a matrix.
type Cell struct {
	Status     string   `json:"status" enum:"pending,running,passed,failed,skipped"`
	Score      *float64 `json:"score"`
	DurationMS *int64   `json:"duration_ms,omitempty"`
	Tests      int      `json:"tests" doc:"Tests in the cell."`
	Done       int      `json:"done" doc:"Tests finished."`
	Passed     int      `json:"passed" doc:"Tests passed."`
}

// Stats summarises a run's results.
type Stats struct {
	StatusCounts map[string]int `json:"status_counts"`
	AvgScore     float64        `json:"avg_score"`
	TotalTests   int            `json:"total_tests"`
}
