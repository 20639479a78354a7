package server_test

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// timestamp is the resource timestamp format, YYYY-MM-DD HH:MM:SS.
var timestamp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$`)

// cell reads a cell endpoint.
func (e *testEnv) cell(path string) cellBody {
	e.t.Helper()
	var c cellBody
	r := must(e.t, e.get(path), http.StatusOK)
	r.decode(e.t, &c)
	// Every test carries the fields of the spec's test result.
	var raw struct {
		Tests []map[string]any `json:"tests"`
	}
	r.decode(e.t, &raw)
	if raw.Tests == nil {
		e.t.Errorf("%s: tests is %s, want an array", path, r.body)
	}
	for _, tr := range raw.Tests {
		for _, k := range []string{"test_id", "prompt", "response", "expected", "score", "status", "details", "duration_ms", "model_name", "system_prompt"} {
			if _, ok := tr[k]; !ok {
				e.t.Errorf("%s: a test has no %q: %v", path, k, tr)
			}
		}
	}
	return c
}

// TestRunResults checks the result endpoints of a finished run: its
// matrix, a cell's tests, its details and stats, and the v1 history.
func TestRunResults(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Answers: knowledgeAnswers}})
	id := e.runToEnd(map[string]any{"model_name": "results"})

	t.Run("matrix", func(t *testing.T) {
		m := e.matrix("/api/run/" + id + "/matrix")
		checkMatrix(t, m, id, "results", "completed")
		if live := e.matrix("/api/test_matrix"); !slices.Equal(live.cells(), m.cells()) || live.Status != m.Status {
			t.Errorf("live matrix of the last run %v %s, stored %v %s", live.cells(), live.Status, m.cells(), m.Status)
		}
		for d, levels := range m.Domains {
			for l, c := range levels {
				if c.Score == nil || c.DurationMS == nil || (c.Status != "passed" && c.Status != "failed") {
					t.Errorf("%s/%s: %+v", d, l, c)
				}
			}
		}
	})

	t.Run("cell tests", func(t *testing.T) {
		c := e.cell("/api/run/" + id + "/tests/arithmetic/1")
		if c.RunID != id || c.Domain != "arithmetic" || c.Level != 1 {
			t.Errorf("envelope run_id %q domain %q level %d", c.RunID, c.Domain, c.Level)
		}
		want := map[string]string{"add-small": "5", "add-carry": "42"}
		if len(c.Tests) != len(want) {
			t.Fatalf("%d tests, want %d", len(c.Tests), len(want))
		}
		for _, tr := range c.Tests {
			answer, ok := want[tr.TestID]
			if !ok {
				t.Errorf("unexpected test %q", tr.TestID)
				continue
			}
			if tr.Expected.Answer != answer || tr.Expected.Type != "numeric" {
				t.Errorf("%s: expected %+v", tr.TestID, tr.Expected)
			}
			if tr.Prompt == "" || tr.Response != "The answer is "+answer+"." {
				t.Errorf("%s: prompt %q response %q", tr.TestID, tr.Prompt, tr.Response)
			}
			if tr.Score != 1 || tr.Status != "passed" {
				t.Errorf("%s: score %v status %q", tr.TestID, tr.Score, tr.Status)
			}
			if tr.Details["extracted_answer"] != answer || tr.Details["pass2_used"] != false {
				t.Errorf("%s: details %v", tr.TestID, tr.Details)
			}
			if tr.DurationMS < 0 || tr.ModelName != "results" {
				t.Errorf("%s: duration_ms %d model_name %q", tr.TestID, tr.DurationMS, tr.ModelName)
			}
			if tr.SystemPrompt != "You are a careful calculator.\n\nAnswer with the number only." {
				t.Errorf("%s: system_prompt %q", tr.TestID, tr.SystemPrompt)
			}
		}
		// system_prompt_mode replace: the level's prompt alone.
		k := e.cell("/api/run/" + id + "/tests/knowledge/2")
		if len(k.Tests) != 1 || k.Tests[0].SystemPrompt != "Reply with yes or no only." || k.Tests[0].Status != "passed" {
			t.Errorf("knowledge/2: %+v", k.Tests)
		}
		// Every cell: details carry extracted_answer and pass2_used.
		for _, key := range exampleCells {
			for _, tr := range e.cell("/api/run/" + id + "/tests/" + key).Tests {
				if _, ok := tr.Details["extracted_answer"].(string); !ok {
					t.Errorf("%s %s: extracted_answer %v", key, tr.TestID, tr.Details["extracted_answer"])
				}
				if _, ok := tr.Details["pass2_used"].(bool); !ok {
					t.Errorf("%s %s: pass2_used %v", key, tr.TestID, tr.Details["pass2_used"])
				}
			}
		}
		// A cell the run does not have is not found.
		mustProblem(t, e.get("/api/run/"+id+"/tests/arithmetic/9"), http.StatusNotFound)
		mustProblem(t, e.get("/api/v1/history/"+id+"/nope/1"), http.StatusNotFound)
		mustProblem(t, e.get("/api/v1/history/last/nope/1"), http.StatusNotFound)
	})

	t.Run("details", func(t *testing.T) {
		d := e.run(id)
		ri := d.RunInfo
		if ri.RunID != id || ri.ModelName != "results" || ri.Status != "completed" {
			t.Errorf("run_info %+v", ri)
		}
		if !timestamp.MatchString(ri.StartedAt) || ri.CompletedAt == nil || !timestamp.MatchString(*ri.CompletedAt) {
			t.Errorf("started_at %q completed_at %v, want YYYY-MM-DD HH:MM:SS", ri.StartedAt, ri.CompletedAt)
		}
		if ri.CompletedAt != nil && *ri.CompletedAt < ri.StartedAt {
			t.Errorf("completed_at %s before started_at %s", *ri.CompletedAt, ri.StartedAt)
		}
		if ri.TotalTokens <= 0 || ri.TotalDurationMS < 0 {
			t.Errorf("total_tokens %d total_duration_ms %d", ri.TotalTokens, ri.TotalDurationMS)
		}
		if len(d.TestResults) != exampleTests {
			t.Fatalf("%d test_results, want %d", len(d.TestResults), exampleTests)
		}
		counts := map[string]int{}
		var sum float64
		for _, tr := range d.TestResults {
			counts[tr.Status]++
			sum += tr.Score
		}
		if len(counts) != len(d.Stats.StatusCounts) {
			t.Errorf("status_counts %v, results %v", d.Stats.StatusCounts, counts)
		}
		for k, v := range counts {
			if d.Stats.StatusCounts[k] != v {
				t.Errorf("status_counts %v, results %v", d.Stats.StatusCounts, counts)
			}
		}
		if d.Stats.TotalTests != exampleTests {
			t.Errorf("stats.total_tests %d", d.Stats.TotalTests)
		}
		mean := sum / float64(exampleTests)
		if math.Abs(d.Stats.AvgScore-mean) > 1e-9 || ri.OverallScore == nil || math.Abs(*ri.OverallScore-mean) > 1e-9 {
			t.Errorf("avg_score %v overall_score %v, mean of the results %v", d.Stats.AvgScore, ri.OverallScore, mean)
		}
		if counts["passed"] == 0 {
			t.Errorf("no test passed: %v", counts)
		}
	})

	t.Run("v1 history", func(t *testing.T) {
		var last struct {
			RunID       string  `json:"run_id"`
			ModelName   string  `json:"model_name"`
			StartedAt   string  `json:"started_at"`
			CompletedAt *string `json:"completed_at"`
			Status      string  `json:"status"`
		}
		must(t, e.get("/api/v1/history/last/id"), http.StatusOK).decode(t, &last)
		if last.RunID != id || last.ModelName != "results" || last.Status != "completed" ||
			!timestamp.MatchString(last.StartedAt) || last.CompletedAt == nil {
			t.Errorf("last run %+v", last)
		}
		byID := e.cell("/api/v1/history/" + id + "/arithmetic/2")
		byLast := e.cell("/api/v1/history/last/arithmetic/2")
		byRun := e.cell("/api/run/" + id + "/tests/arithmetic/2")
		if len(byID.Tests) != 2 || !jsonSame(t, byID, byRun) || !jsonSame(t, byLast, byRun) {
			t.Errorf("v1 cell by id %+v\nby last %+v\nrun cell %+v", byID, byLast, byRun)
		}
		for _, tr := range byID.Tests {
			if tr.Prompt == "" || tr.Response == "" || tr.Expected.Answer == "" || tr.Details == nil {
				t.Errorf("v1 test without its full prompt, response, expected or details: %+v", tr)
			}
		}
	})

	t.Run("unknown run", func(t *testing.T) {
		for _, p := range []string{
			"/api/run/nope/matrix", "/api/run/nope/tests/arithmetic/1", "/api/run/nope",
			"/api/v1/history/nope/arithmetic/1",
		} {
			mustProblem(t, e.get(p), http.StatusNotFound)
		}
		mustProblem(t, e.del("/api/history/nope"), http.StatusNotFound)
	})
}

// jsonSame compares two values by their JSON encoding.
func jsonSame(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}

// TestNoRunYet checks the history endpoints before any run.
func TestNoRunYet(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	mustProblem(t, e.get("/api/v1/history/last/id"), http.StatusNotFound)
	mustProblem(t, e.get("/api/v1/history/last/arithmetic/1"), http.StatusNotFound)
	r := must(t, e.get("/api/history"), http.StatusOK).object(t)
	if list, ok := r["runs"].([]any); !ok || len(list) != 0 || r["total"] != float64(0) {
		t.Errorf("history before any run: %v", r)
	}
}

// TestDeleteRun checks DELETE /api/history/{id}.
func TestDeleteRun(t *testing.T) {
	t.Parallel()
	t.Run("finished runs", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{})
		old := e.runToEnd(map[string]any{"model_name": "old", "domains": []string{"arithmetic"}})
		recent := e.runToEnd(map[string]any{"model_name": "recent", "domains": []string{"arithmetic"}})
		logOf := func(id string) string { return filepath.Join(e.logDir, id+".log") }
		for _, id := range []string{old, recent} {
			if _, err := os.Stat(logOf(id)); err != nil {
				t.Fatalf("log file of %s: %v", id, err)
			}
		}

		r := must(t, e.del("/api/history/"+old), http.StatusOK).object(t)
		if len(r) != 1 || r["success"] != true {
			t.Fatalf("delete: %v", r)
		}
		for _, p := range []string{
			"/api/run/" + old + "/matrix", "/api/run/" + old + "/tests/arithmetic/1", "/api/run/" + old,
			"/api/v1/history/" + old + "/arithmetic/1",
		} {
			mustProblem(t, e.get(p), http.StatusNotFound)
		}
		if _, err := os.Stat(logOf(old)); !os.IsNotExist(err) {
			t.Errorf("the log file of the deleted run is still there: %v", err)
		}
		mustProblem(t, e.del("/api/history/"+old), http.StatusNotFound)
		// The other run is intact.
		if d := e.run(recent); len(d.TestResults) != 6 {
			t.Errorf("the other run has %d results, want 6", len(d.TestResults))
		}
		if _, err := os.Stat(logOf(recent)); err != nil {
			t.Errorf("the other run's log file: %v", err)
		}

		// Deleting the most recent run makes the previous one the last.
		third := e.runToEnd(map[string]any{"model_name": "third", "domains": []string{"tool_use"}})
		must(t, e.del("/api/history/"+third), http.StatusOK)
		if last := must(t, e.get("/api/v1/history/last/id"), http.StatusOK).object(t); last["run_id"] != recent {
			t.Errorf("last run after deleting the newest: %v, want %s", last["run_id"], recent)
		}
		if st := e.status(); st.LastRunID == nil || *st.LastRunID != recent {
			t.Errorf("last_run_id %v, want %s", st.LastRunID, recent)
		}
		if m := e.matrix("/api/test_matrix"); m.RunID == nil || *m.RunID != recent {
			t.Errorf("live matrix of run %v, want %s", m.RunID, recent)
		}
		must(t, e.del("/api/history/"+recent), http.StatusOK)
		mustProblem(t, e.get("/api/v1/history/last/id"), http.StatusNotFound)
		if st := e.status(); st.LastRunID != nil {
			t.Errorf("last_run_id %v with no run left", *st.LastRunID)
		}
		if r := must(t, e.get("/api/history"), http.StatusOK).object(t); r["total"] != float64(0) {
			t.Errorf("history after deleting every run: %v", r)
		}
	})
	t.Run("the running run", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Timeouts: hangForever}})
		id := e.start(map[string]any{"model_name": "busy"})
		mustProblem(t, e.del("/api/history/"+id), http.StatusConflict)
		if st := e.status(); st.Status != "running" || st.RunID == nil || *st.RunID != id {
			t.Errorf("status after the refused delete: %+v", st)
		}
		must(t, e.get("/api/run/"+id), http.StatusOK)
		must(t, e.post("/api/stop", nil), http.StatusOK)
		e.waitIdle()
		must(t, e.del("/api/history/"+id), http.StatusOK)
	})
}

// TestHistoryList checks GET /api/history: newest first, paged, with the
// total.
func TestHistoryList(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	var ids []string
	for _, label := range []string{"a", "b", "c"} {
		ids = append(ids, e.runToEnd(map[string]any{"model_name": label, "domains": []string{"tool_use"}}))
	}
	type page struct {
		Runs []struct {
			RunID       string   `json:"run_id"`
			ModelName   string   `json:"model_name"`
			StartedAt   string   `json:"started_at"`
			CompletedAt *string  `json:"completed_at"`
			Status      string   `json:"status"`
			Score       *float64 `json:"overall_score"`
		} `json:"runs"`
		Total  int `json:"total"`
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
	}
	list := func(query string) (page, []string) {
		t.Helper()
		var p page
		must(t, e.get("/api/history"+query), http.StatusOK).decode(t, &p)
		var labels []string
		for _, r := range p.Runs {
			labels = append(labels, r.ModelName)
		}
		return p, labels
	}

	p, labels := list("")
	if !slices.Equal(labels, []string{"c", "b", "a"}) || p.Total != 3 || p.Offset != 0 || p.Limit < 3 {
		t.Errorf("default page: labels %v total %d limit %d offset %d", labels, p.Total, p.Limit, p.Offset)
	}
	for i, r := range p.Runs {
		if r.RunID != ids[2-i] || r.Status != "completed" || !timestamp.MatchString(r.StartedAt) || r.CompletedAt == nil {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	if p, labels := list("?limit=1&offset=1"); !slices.Equal(labels, []string{"b"}) || p.Total != 3 || p.Limit != 1 || p.Offset != 1 {
		t.Errorf("limit=1&offset=1: labels %v total %d limit %d offset %d", labels, p.Total, p.Limit, p.Offset)
	}
	if p, labels := list("?limit=2"); !slices.Equal(labels, []string{"c", "b"}) || p.Total != 3 {
		t.Errorf("limit=2: labels %v total %d", labels, p.Total)
	}
	if p, _ := list("?offset=10"); len(p.Runs) != 0 || p.Runs == nil || p.Total != 3 {
		t.Errorf("offset=10: %+v", p)
	}
	for _, q := range []string{"?limit=0", "?limit=-1", "?limit=abc", "?limit=1000000", "?offset=-1", "?offset=x"} {
		t.Run(q, func(t *testing.T) {
			mustProblem(t, e.get("/api/history"+q), http.StatusUnprocessableEntity)
		})
	}
}

// TestRunEndpointsNeedToken checks that with an API token every
// evaluation and history endpoint needs it.
func TestRunEndpointsNeedToken(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{}, withToken("s3cret"))
	id := e.runToEnd(map[string]any{"model_name": "auth", "domains": []string{"tool_use"}})
	endpoints := []struct{ method, path string }{
		{http.MethodPost, "/api/start"},
		{http.MethodPost, "/api/stop"},
		{http.MethodPost, "/api/reset"},
		{http.MethodGet, "/api/status"},
		{http.MethodGet, "/api/test_matrix"},
		{http.MethodGet, "/api/log_poll"},
		{http.MethodGet, "/api/run/" + id + "/matrix"},
		{http.MethodGet, "/api/run/" + id + "/tests/tool_use/1"},
		{http.MethodGet, "/api/run/" + id},
		{http.MethodDelete, "/api/history/" + id},
		{http.MethodGet, "/api/history"},
		{http.MethodGet, "/api/v1/history/last/id"},
		{http.MethodGet, "/api/v1/history/last/tool_use/1"},
		{http.MethodGet, "/api/v1/history/" + id + "/tool_use/1"},
	}
	for _, ep := range endpoints {
		for _, auth := range []string{"", "Bearer wrong", "s3cret"} {
			r := e.request(ep.method, ep.path, nil, "Authorization", auth)
			mustProblem(t, r, http.StatusUnauthorized)
		}
	}
	// The run is untouched, and readable with the token.
	if d := e.run(id); d.RunInfo.RunID != id || len(d.TestResults) != 2 {
		t.Errorf("run after refused requests: %+v", d.RunInfo)
	}
	if st := e.status(); st.Status != "idle" {
		t.Errorf("status %+v", st)
	}
}
