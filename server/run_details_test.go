package server_test

import (
	"net/http"
	"testing"
)

// TestRunDetailsWithoutResults reads a run's details with results=false:
// the summary and the counts per status, without the results and their
// aggregates, which the default answer still carries.
func TestRunDetailsWithoutResults(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	seedScaleRun(t, e, "big", 40)
	type details struct {
		RunInfo struct {
			RunID      string `json:"run_id"`
			TotalTests int    `json:"total_tests"`
		} `json:"run_info"`
		TestResults []map[string]any `json:"test_results"`
		Aggregates  []map[string]any `json:"aggregates"`
		Stats       struct {
			StatusCounts map[string]int `json:"status_counts"`
		} `json:"stats"`
	}
	counts := map[string]int{"error": 4, "failed": 8, "passed": 28}
	for _, tc := range []struct {
		query   string
		results int
	}{{"", 40}, {"?results=true", 40}, {"?results=false", 0}} {
		t.Run("get-run"+tc.query, func(t *testing.T) {
			r := must(t, e.get("/api/run/big"+tc.query), http.StatusOK)
			var d details
			r.decode(t, &d)
			if d.RunInfo.RunID != "big" || d.RunInfo.TotalTests != 40 {
				t.Errorf("run_info %+v", d.RunInfo)
			}
			if len(d.TestResults) != tc.results || len(d.Aggregates) != tc.results {
				t.Errorf("%d results and %d aggregates, want %d of each", len(d.TestResults), len(d.Aggregates), tc.results)
			}
			if d.TestResults == nil || d.Aggregates == nil {
				t.Errorf("test_results or aggregates is not an array: %.200s", r.body)
			}
			for s, n := range counts {
				if d.Stats.StatusCounts[s] != n {
					t.Errorf("status_counts %v, want %v", d.Stats.StatusCounts, counts)
					break
				}
			}
		})
	}
	mustProblem(t, e.get("/api/run/big?results=maybe"), http.StatusUnprocessableEntity)
	mustProblem(t, e.get("/api/run/nothing?results=false"), http.StatusNotFound)
}
