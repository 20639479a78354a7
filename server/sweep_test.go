package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// sweepFiles are definitions for sweeps: domain math, one level of n sums
// scored by their final number.
func sweepFiles(n int) map[string]string {
	var level strings.Builder
	level.WriteString("tests:\n")
	for i := range n {
		fmt.Fprintf(&level, "  - id: sum-%02d\n    name: Sum %d\n    prompt: What is %d + %d?\n    expected:\n      answer: '%d'\n      type: numeric\n",
			i, i, i, i+1, 2*i+1)
	}
	return map[string]string{
		"evaluators/number.yaml": "id: number\nname: Final number\ntype: regex\n" +
			"extraction_regex: (?<answer>-?\\d[\\d,]*(?:\\.\\d+)?)\nuses_pass2: true\n",
		"domains/math/domain.yaml":  "id: math\nname: Math\nevaluator_id: number\nenabled: true\ncolor: '#2F6FDE'\n",
		"domains/math/level-1.yaml": level.String(),
	}
}

// sweepBody is GET /api/sweep.
type sweepBody struct {
	SweepID string   `json:"sweep_id"`
	Status  string   `json:"status"`
	Models  []string `json:"models"`
	RunIDs  []string `json:"run_ids"`
	Current *string  `json:"current"`
	Error   string   `json:"error"`
}

func (e *testEnv) sweep() sweepBody {
	e.t.Helper()
	var s sweepBody
	must(e.t, e.get("/api/sweep"), http.StatusOK).decode(e.t, &s)
	return s
}

// waitSweep polls GET /api/sweep until cond holds, and returns the last answer.
func (e *testEnv) waitSweep(what string, cond func(sweepBody) bool) sweepBody {
	e.t.Helper()
	var s sweepBody
	harnesstest.Eventually(e.t, runWait, what, func() bool { s = e.sweep(); return cond(s) })
	return s
}

// modelAnswers is a fake endpoint that answers by model: "bad" never
// knows (in words with HTML in them), "verbose" answers right after a
// preamble (at length for the last test), "slow" waits for its gate to
// open, any other model answers as llmtest does ("The answer is 7."). It
// records the models asked.
type modelAnswers struct {
	mu    sync.Mutex
	asked map[string]int
	gate  chan struct{}
}

func newModelAnswers() *modelAnswers {
	return &modelAnswers{asked: map[string]int{}, gate: make(chan struct{})}
}

func (m *modelAnswers) respond(req *llmtest.Request) *llmtest.Reply {
	m.mu.Lock()
	m.asked[req.Model]++
	m.mu.Unlock()
	switch req.Model {
	case "bad":
		return &llmtest.Reply{Content: "I do <b>not</b> know."}
	case "verbose":
		if v, ok := llmtest.Arithmetic(req.LastUser()); ok {
			text := "Let me think step by step. The answer is " + v + "."
			if strings.Contains(req.LastUser(), "7 + 8") {
				text = strings.Repeat("This sum needs a long explanation. ", 40) + text
			}
			return &llmtest.Reply{Content: text}
		}
	case "slow":
		<-m.gate
	}
	return nil
}

func (m *modelAnswers) count(model string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.asked[model]
}

func newSweepEnv(t *testing.T, tests int) (*testEnv, *modelAnswers) {
	m := newModelAnswers()
	e := newEngineEnv(t, engineConfig{noExamples: true, files: sweepFiles(tests), llm: llmtest.Options{Respond: m.respond}})
	// Registered after the endpoint's cleanup, so it runs first: requests
	// held at the gate return before the endpoint closes.
	t.Cleanup(func() { close(m.gate) })
	return e, m
}

func TestSweepValidation(t *testing.T) {
	t.Parallel()
	e, m := newSweepEnv(t, 2)
	mustProblem(t, e.get("/api/sweep"), http.StatusNotFound)
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf("m%d", i)
	}
	for _, tc := range []struct {
		name     string
		body     map[string]any
		location string
	}{
		{"no models", map[string]any{}, "body.models"},
		{"one model", map[string]any{"models": []string{"a"}}, "body.models"},
		{"too many models", map[string]any{"models": many}, "body.models"},
		{"an empty model", map[string]any{"models": []string{"a", " "}}, "body.models[1]"},
		{"a duplicate", map[string]any{"models": []string{"a", "b", "a"}}, "body.models[2]"},
		{"a duplicate once trimmed", map[string]any{"models": []string{"a", " a"}}, "body.models[1]"},
		{"a control character", map[string]any{"models": []string{"a", "b\u0000"}}, "body.models[1]"},
		{"a model besides models", map[string]any{"models": []string{"a", "b"}, "model": "c"}, "body.model"},
		{"a label besides models", map[string]any{"models": []string{"a", "b"}, "model_name": "x"}, "body.model_name"},
		{"an agent besides models", map[string]any{"models": []string{"a", "b"}, "agent_id": "support"}, "body.agent_id"},
		{"retries out of range", map[string]any{"models": []string{"a", "b"}, "retries": 11}, "body.retries"},
		{"bad params", map[string]any{"models": []string{"a", "b"}, "params": map[string]any{"temperature": 3}}, "body.params.temperature"},
		{"an unknown domain", map[string]any{"models": []string{"a", "b"}, "domains": []string{"nope"}}, "body.domains[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustProblem(t, e.post("/api/sweep", tc.body), http.StatusUnprocessableEntity, tc.location)
		})
	}
	// Nothing ran: no run stored, no model asked, no sweep.
	var hist struct {
		Total int `json:"total"`
	}
	must(t, e.get("/api/history"), http.StatusOK).decode(t, &hist)
	if hist.Total != 0 || m.count("a") != 0 {
		t.Errorf("after refused sweeps: %d runs stored, model a asked %d times", hist.Total, m.count("a"))
	}
	mustProblem(t, e.get("/api/sweep"), http.StatusNotFound)
	if st := e.status(); st.Status != "idle" {
		t.Errorf("engine %s after refused sweeps", st.Status)
	}
}

func TestSweepCompletes(t *testing.T) {
	t.Parallel()
	e, m := newSweepEnv(t, 3)
	var started struct {
		SweepID string   `json:"sweep_id"`
		Models  []string `json:"models"`
	}
	models := []string{"good", "bad", "other"}
	must(t, e.post("/api/sweep", map[string]any{"models": []string{"good", " bad ", "other"}, "repeats": 2, "retries": 0}),
		http.StatusAccepted).decode(t, &started)
	if !strings.HasPrefix(started.SweepID, "sweep-") || !slices.Equal(started.Models, models) {
		t.Fatalf("started %+v", started)
	}
	s := e.waitSweep("the sweep to complete", func(s sweepBody) bool { return s.Status != "running" })
	if s.Status != "completed" || s.SweepID != started.SweepID || !slices.Equal(s.Models, models) || len(s.RunIDs) != 3 ||
		s.Current != nil || s.Error != "" {
		t.Fatalf("sweep %+v", s)
	}
	wantScore := map[string]float64{"good": 1, "bad": 0, "other": 1}
	for i, id := range s.RunIDs {
		var run struct {
			RunInfo struct {
				ModelName    string   `json:"model_name"`
				Model        string   `json:"model"`
				Status       string   `json:"status"`
				TotalTests   int      `json:"total_tests"`
				OverallScore *float64 `json:"overall_score"`
				Config       struct {
					Model   string `json:"model"`
					Repeats int    `json:"repeats"`
					Retries int    `json:"retries"`
				} `json:"config"`
			} `json:"run_info"`
		}
		must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &run)
		ri := run.RunInfo
		if ri.ModelName != models[i] || ri.Model != models[i] || ri.Config.Model != models[i] || ri.Status != "completed" ||
			ri.TotalTests != 6 || ri.Config.Repeats != 2 || ri.Config.Retries != 0 {
			t.Errorf("run %d (%s): %+v", i, id, ri)
		}
		if ri.OverallScore == nil || *ri.OverallScore != wantScore[models[i]] {
			t.Errorf("run of %s scored %v, want %v", models[i], ri.OverallScore, wantScore[models[i]])
		}
		if m.count(models[i]) == 0 {
			t.Errorf("model %s was never asked", models[i])
		}
	}
	// The runs were one after another: the history lists them newest first.
	var hist struct {
		Runs []struct {
			RunID string `json:"run_id"`
		} `json:"runs"`
	}
	must(t, e.get("/api/history"), http.StatusOK).decode(t, &hist)
	if len(hist.Runs) != 3 || hist.Runs[0].RunID != s.RunIDs[2] || hist.Runs[2].RunID != s.RunIDs[0] {
		t.Errorf("history %+v, runs %v", hist.Runs, s.RunIDs)
	}
	// Once it is over, a run or another sweep may start.
	e.runToEnd(map[string]any{})
	must(t, e.post("/api/sweep", map[string]any{"models": []string{"x", "y"}}), http.StatusAccepted)
	e.waitSweep("the second sweep to complete", func(s sweepBody) bool { return s.Status == "completed" })
}

func TestSweepConflictsAndStop(t *testing.T) {
	t.Parallel()
	e, m := newSweepEnv(t, 2)

	t.Run("409 while a run is active", func(t *testing.T) {
		e.start(map[string]any{"model": "slow"})
		mustProblem(t, e.post("/api/sweep", map[string]any{"models": []string{"a", "b"}}), http.StatusConflict)
		must(t, e.post("/api/stop", nil), http.StatusOK)
		e.waitIdle()
		mustProblem(t, e.get("/api/sweep"), http.StatusNotFound)
	})

	var s sweepBody
	t.Run("stop in the middle ends the current run and the rest", func(t *testing.T) {
		must(t, e.post("/api/sweep", map[string]any{"models": []string{"first", "slow", "never"}}), http.StatusAccepted)
		s = e.waitSweep("the second model's run", func(s sweepBody) bool { return len(s.RunIDs) == 2 })
		if s.Status != "running" || s.Current == nil || *s.Current != "slow" {
			t.Fatalf("sweep %+v", s)
		}
		harnesstest.Eventually(t, runWait, "the slow model to be asked", func() bool { return m.count("slow") > 0 })

		// While it runs, nothing else starts.
		p := mustProblem(t, e.post("/api/sweep", map[string]any{"models": []string{"a", "b"}}), http.StatusConflict)
		if !strings.Contains(p.Detail, s.SweepID) {
			t.Errorf("409 detail %q does not name the sweep", p.Detail)
		}
		mustProblem(t, e.post("/api/start", map[string]any{}), http.StatusConflict)
		mustProblem(t, e.post("/api/run/"+s.RunIDs[0]+"/resume", nil), http.StatusConflict)
		// The sweep refuses a rescore itself, not only the engine busy
		// with one of its runs: between two runs the engine is idle.
		if p := mustProblem(t, e.post("/api/run/"+s.RunIDs[0]+"/rescore", nil), http.StatusConflict); !strings.Contains(p.Detail, s.SweepID) {
			t.Errorf("rescore during a sweep: 409 detail %q does not name the sweep", p.Detail)
		}

		var stopped struct {
			Success bool   `json:"success"`
			RunID   string `json:"run_id"`
		}
		must(t, e.post("/api/stop", nil), http.StatusOK).decode(t, &stopped)
		if !stopped.Success || stopped.RunID != s.RunIDs[1] {
			t.Errorf("stop answered %+v, want the run of slow %s", stopped, s.RunIDs[1])
		}
		s = e.waitSweep("the sweep to stop", func(s sweepBody) bool { return s.Status != "running" })
		if s.Status != "stopped" || len(s.RunIDs) != 2 || s.Current != nil {
			t.Fatalf("sweep %+v", s)
		}
		e.waitIdle()
		if n := m.count("never"); n != 0 {
			t.Errorf("the model after the stop was asked %d times", n)
		}
		var second struct {
			RunInfo struct {
				Status string `json:"status"`
			} `json:"run_info"`
		}
		must(t, e.get("/api/run/"+s.RunIDs[1]), http.StatusOK).decode(t, &second)
		if second.RunInfo.Status != "stopped" {
			t.Errorf("the stopped run is %s", second.RunInfo.Status)
		}
		var hist struct {
			Total int `json:"total"`
		}
		must(t, e.get("/api/history"), http.StatusOK).decode(t, &hist)
		if hist.Total != 3 { // the run of the first subtest, and two of the sweep
			t.Errorf("%d runs stored, want 3", hist.Total)
		}
	})

	t.Run("reset ends a sweep too", func(t *testing.T) {
		must(t, e.post("/api/sweep", map[string]any{"models": []string{"slow", "never"}}), http.StatusAccepted)
		e.waitSweep("the first run", func(s sweepBody) bool { return len(s.RunIDs) == 1 })
		must(t, e.post("/api/reset", nil), http.StatusOK)
		s := e.waitSweep("the sweep to stop", func(s sweepBody) bool { return s.Status != "running" })
		if s.Status != "stopped" || len(s.RunIDs) != 1 {
			t.Fatalf("sweep %+v", s)
		}
		if n := m.count("never"); n != 0 {
			t.Errorf("the model after the reset was asked %d times", n)
		}
		// Start works again once the sweep is over.
		e.waitIdle()
		e.runToEnd(map[string]any{})
	})
}
