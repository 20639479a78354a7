package server_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// storeRun writes a run and its results through the run store, as the
// engine does. status(domain, level, i) is the status of test i of a cell;
// cells maps "domain/level" to its number of tests.
func (e *testEnv) storeRun(id, runStatus string, cells map[string]int, status func(domain string, level, i int) string) {
	t := e.t
	t.Helper()
	ctx := context.Background()
	var keys []runs.CellKey
	var results []runs.Result
	for dl, n := range cells {
		var domain string
		var level int
		if _, err := fmt.Sscanf(strings.Replace(dl, "/", " ", 1), "%s %d", &domain, &level); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, runs.CellKey{Domain: domain, Level: level, Tests: n})
		for i := range n {
			st := status(domain, level, i)
			score := 0.0
			if st == runs.TestPassed {
				score = 1
			}
			results = append(results, runs.Result{RunID: id, TestID: fmt.Sprintf("%s-l%d-%02d", domain, level, i),
				Domain: domain, Level: level, Score: score, Status: st, CreatedAt: runs.Now()})
		}
	}
	if err := e.runs.CreateRun(ctx, runs.Info{RunID: id, StartedAt: runs.Now(), ModelName: id, Status: runStatus, TotalTests: len(results)}, keys); err != nil {
		t.Fatal(err)
	}
	if err := e.runs.SaveResults(ctx, results); err != nil {
		t.Fatal(err)
	}
}

type comparison struct {
	Base  string `json:"base"`
	Head  string `json:"head"`
	Cells map[string]map[string]struct {
		BaseScore   float64    `json:"base_score"`
		HeadScore   float64    `json:"head_score"`
		Delta       float64    `json:"delta"`
		CI95        [2]float64 `json:"ci95"`
		PValue      float64    `json:"p_value"`
		Significant bool       `json:"significant"`
		Tests       int        `json:"tests"`
	} `json:"cells"`
	Flipped []struct {
		TestID     string `json:"test_id"`
		Domain     string `json:"domain"`
		Level      int    `json:"level"`
		BaseStatus string `json:"base_status"`
		HeadStatus string `json:"head_status"`
	} `json:"flipped"`
	Summary map[string]int `json:"summary"`
}

func TestCompareRuns(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	cells := map[string]int{"math/1": 30, "code/2": 12}
	e.storeRun("base", runs.StatusCompleted, cells, func(d string, l, i int) string {
		if d == "code" && i == 11 {
			return runs.TestFailed
		}
		return runs.TestPassed
	})
	// Head: 20 of math's 30 tests now fail; code is as it was but one
	// test flipped each way and one ended in error (left out).
	e.storeRun("head", runs.StatusCompleted, cells, func(d string, l, i int) string {
		switch {
		case d == "math" && i < 20, d == "code" && i == 0:
			return runs.TestFailed
		case d == "code" && i == 5:
			return runs.TestError
		}
		return runs.TestPassed
	})

	r := must(t, e.get("/api/compare?base=base&head=head"), http.StatusOK)
	var c comparison
	r.decode(t, &c)
	if c.Base != "base" || c.Head != "head" {
		t.Errorf("base, head = %q, %q", c.Base, c.Head)
	}
	m := c.Cells["math"]["1"]
	if m.Tests != 30 || m.BaseScore != 1 || m.HeadScore > 0.34 || !m.Significant || m.PValue > 1e-5 || m.Delta >= 0 {
		t.Errorf("math/1 = %+v, want a significant regression", m)
	}
	if m.CI95[0] > m.Delta || m.Delta > m.CI95[1] || m.CI95[1] >= 0 {
		t.Errorf("math/1 ci95 = %v, delta %v", m.CI95, m.Delta)
	}
	k := c.Cells["code"]["2"]
	if k.Tests != 11 || math.Abs(k.Delta) > 1e-12 || k.Significant || k.PValue != 1 {
		t.Errorf("code/2 = %+v, want 11 paired tests, unchanged", k)
	}
	if len(c.Flipped) != 22 {
		t.Fatalf("flipped %d tests, want 22: %+v", len(c.Flipped), c.Flipped)
	}
	f0, f1 := c.Flipped[0], c.Flipped[1]
	if f0.TestID != "code-l2-00" || f0.Domain != "code" || f0.Level != 2 || f0.BaseStatus != "passed" || f0.HeadStatus != "failed" ||
		f1.TestID != "code-l2-11" || f1.BaseStatus != "failed" || f1.HeadStatus != "passed" || c.Flipped[2].Domain != "math" {
		t.Errorf("flipped starts %+v, %+v", f0, f1)
	}
	want := map[string]int{"improved": 1, "regressed": 21, "unchanged": 19, "significant_regressions": 1, "significant_improvements": 0}
	for k, v := range want {
		if c.Summary[k] != v {
			t.Errorf("summary.%s = %d, want %d (%v)", k, c.Summary[k], v, c.Summary)
		}
	}
	// The same comparison gives the same answer.
	if again := must(t, e.get("/api/compare?base=base&head=head"), http.StatusOK); string(again.body) != string(r.body) {
		t.Errorf("a second comparison differs:\n%s\n%s", r.body, again.body)
	}
	// The other way round, the regression is an improvement.
	var back comparison
	must(t, e.get("/api/compare?head=base&base=head"), http.StatusOK).decode(t, &back)
	if b := back.Cells["math"]["1"]; b.Delta <= 0 || !b.Significant || back.Summary["significant_improvements"] != 1 {
		t.Errorf("reversed math/1 = %+v, summary %v", b, back.Summary)
	}
}

func TestCompareRunningRun(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	pass := func(string, int, int) string { return runs.TestPassed }
	e.storeRun("done", runs.StatusCompleted, map[string]int{"math/1": 5}, pass)
	e.storeRun("going", runs.StatusRunning, map[string]int{"math/1": 2}, pass)
	var c comparison
	must(t, e.get("/api/compare?base=done&head=going"), http.StatusOK).decode(t, &c)
	if c.Cells["math"]["1"].Tests != 2 {
		t.Errorf("partial comparison = %+v", c.Cells)
	}
}

func TestCompareErrors(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	pass := func(string, int, int) string { return runs.TestPassed }
	e.storeRun("a", runs.StatusCompleted, map[string]int{"math/1": 3}, pass)
	e.storeRun("b", runs.StatusCompleted, map[string]int{"math/2": 3}, pass)
	e.storeRun("c", runs.StatusCompleted, map[string]int{"math/1": 3}, func(string, int, int) string { return runs.TestError })

	mustProblem(t, e.get("/api/compare?base=a&head=nope"), http.StatusNotFound)
	mustProblem(t, e.get("/api/compare?base=nope&head=a"), http.StatusNotFound)
	mustProblem(t, e.get("/api/compare?head=a"), http.StatusUnprocessableEntity, "query.base")
	mustProblem(t, e.get("/api/compare?base=a"), http.StatusUnprocessableEntity, "query.head")
	mustProblem(t, e.get("/api/compare"), http.StatusUnprocessableEntity, "query.base", "query.head")
	mustProblem(t, e.get("/api/compare?base=&head=a"), http.StatusUnprocessableEntity, "query.base")
	for _, other := range []string{"b", "c"} {
		p := mustProblem(t, e.get("/api/compare?base=a&head="+other), http.StatusUnprocessableEntity)
		if want := "runs a and " + other + " share no test: nothing to compare"; p.Detail != want {
			t.Errorf("detail %q, want %q", p.Detail, want)
		}
	}
}
