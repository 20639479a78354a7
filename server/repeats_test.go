package server_test

import (
	"fmt"
	"net/http"
	"testing"
)

// TestStartRepeats: the start body's repeats asks each test that many
// times; the run records it, its counts are samples, and every result of
// the API carries its repeat, each (test, repeat) once.
func TestStartRepeats(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	id := e.runToEnd(map[string]any{"domains": []string{"arithmetic"}, "repeats": 3})
	var run struct {
		RunInfo struct {
			TotalTests int `json:"total_tests"`
			DoneTests  int `json:"done_tests"`
			Config     struct {
				Repeats int `json:"repeats"`
			} `json:"config"`
		} `json:"run_info"`
		TestResults []struct {
			TestID string `json:"test_id"`
			Repeat *int   `json:"repeat"`
			Domain string `json:"domain"`
			Level  int    `json:"level"`
		} `json:"test_results"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &run)
	n := len(run.TestResults)
	if n == 0 || n%3 != 0 || run.RunInfo.TotalTests != n || run.RunInfo.DoneTests != n || run.RunInfo.Config.Repeats != 3 {
		t.Fatalf("run_info = %+v with %d results", run.RunInfo, n)
	}
	seen := map[string]int{}
	for _, r := range run.TestResults {
		if r.Repeat == nil || *r.Repeat < 0 || *r.Repeat > 2 {
			t.Fatalf("result without a repeat in 0..2: %+v", r)
		}
		seen[fmt.Sprintf("%s#%d", r.TestID, *r.Repeat)]++
	}
	if len(seen) != n {
		t.Errorf("samples = %v; want %d distinct (test, repeat)", seen, n)
	}

	var cell struct {
		Tests []struct {
			Repeat *int `json:"repeat"`
		} `json:"tests"`
	}
	r0 := run.TestResults[0]
	must(t, e.get(fmt.Sprintf("/api/run/%s/tests/%s/%d", id, r0.Domain, r0.Level)), http.StatusOK).decode(t, &cell)
	if len(cell.Tests) == 0 || len(cell.Tests)%3 != 0 || cell.Tests[0].Repeat == nil {
		t.Errorf("cell results = %+v", cell.Tests)
	}
	var m struct {
		Domains map[string]map[string]struct {
			Tests int `json:"tests"`
			Done  int `json:"done"`
		} `json:"domains"`
	}
	must(t, e.get("/api/run/"+id+"/matrix"), http.StatusOK).decode(t, &m)
	if c := m.Domains[r0.Domain][fmt.Sprint(r0.Level)]; c.Tests != len(cell.Tests) || c.Done != c.Tests {
		t.Errorf("matrix cell = %+v, %d results", c, len(cell.Tests))
	}
}

// TestStartRepeatsInvalid: repeats outside 1..100, or not an integer, is
// a 422 naming it, and starts nothing. 0 is refused too: a body that
// gives repeats must ask at least once.
func TestStartRepeatsInvalid(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	for _, v := range []any{0, 101, -1, 2.5, "3"} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			mustProblem(t, e.post("/api/start", map[string]any{"repeats": v}), http.StatusUnprocessableEntity, "body.repeats")
		})
	}
	if st := e.status(); st.Status != "idle" || st.LastRunID != nil {
		t.Fatalf("a refused start started something: %+v", st)
	}
}
