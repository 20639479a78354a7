package runs_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestAggregates: each test over its repeats. A test passing 1 of 3 has
// pass@k true, pass^k false and pass rate 1/3; an error is not one of
// the k (it says nothing about the model), so 1 pass of 2 scored with an
// error beside them is a pass rate of 1/2; a test whose every result
// ended in error has no figures (null), not zeros. Tests keep the order
// in which they first appear, and the same id in two cells is two tests.
func TestAggregates(t *testing.T) {
	t.Parallel()
	res := func(id, domain string, level, repeat int, status string, score float64) runs.Result {
		return runs.Result{TestID: id, Name: "name of " + id, Domain: domain, Level: level, Repeat: repeat, Status: status, Score: score}
	}
	results := []runs.Result{
		res("flaky", "d", 1, 0, runs.TestFailed, 0),
		res("steady", "d", 1, 0, runs.TestPassed, 1),
		res("flaky", "d", 1, 1, runs.TestPassed, 1),
		res("mixed", "d", 1, 0, runs.TestError, 0),
		res("steady", "d", 1, 1, runs.TestPassed, 1),
		res("flaky", "d", 1, 2, runs.TestFailed, 0.25),
		res("mixed", "d", 1, 1, runs.TestPassed, 0.8),
		res("steady", "d", 1, 2, runs.TestPassed, 1),
		res("mixed", "d", 1, 2, runs.TestFailed, 0.2),
		res("broken", "d", 1, 0, runs.TestError, 0),
		res("broken", "d", 1, 1, runs.TestError, 0),
		res("flaky", "d", 2, 0, runs.TestPassed, 1),
	}
	got := runs.Aggregates(results)
	type want struct {
		id                             string
		level                          int
		samples, k, passed, failed, er int
		score, rate                    float64 // NaN: null
		atK, allK                      bool
	}
	nan := math.NaN()
	wants := []want{
		{"flaky", 1, 3, 3, 1, 2, 0, 1.25 / 3, 1.0 / 3, true, false},
		{"steady", 1, 3, 3, 3, 0, 0, 1, 1, true, true},
		{"mixed", 1, 3, 2, 1, 1, 1, 0.5, 0.5, true, false},
		{"broken", 1, 2, 0, 0, 0, 2, nan, nan, false, false},
		{"flaky", 2, 1, 1, 1, 0, 0, 1, 1, true, true},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d aggregates, want %d: %+v", len(got), len(wants), got)
	}
	near := func(p *float64, w float64) bool {
		if math.IsNaN(w) {
			return p == nil
		}
		return p != nil && math.Abs(*p-w) < 1e-12
	}
	is := func(p *bool, w bool, null bool) bool {
		if null {
			return p == nil
		}
		return p != nil && *p == w
	}
	for i, w := range wants {
		a := got[i]
		null := w.k == 0
		if a.TestID != w.id || a.Domain != "d" || a.Level != w.level || a.Name != "name of "+w.id ||
			a.Samples != w.samples || a.K != w.k || a.Passed != w.passed || a.Failed != w.failed || a.Errors != w.er ||
			!near(a.Score, w.score) || !near(a.PassRate, w.rate) || !is(a.PassAtK, w.atK, null) || !is(a.PassAllK, w.allK, null) {
			b, _ := json.Marshal(a)
			t.Errorf("aggregate %d = %s, want %+v", i, b, w)
		}
	}

	// No results, no tests: an empty list (JSON []), never null.
	if b, _ := json.Marshal(runs.Aggregates(nil)); string(b) != "[]" {
		t.Errorf("Aggregates(nil) = %s, want []", b)
	}
	b, _ := json.Marshal(got[3])
	if want := `{"test_id":"broken","domain":"d","level":1,"name":"name of broken","samples":2,"k":0,"passed":0,"failed":0,"errors":2,"score":null,"pass_rate":null,"pass_at_k":null,"pass_all_k":null}`; string(b) != want {
		t.Errorf("all-error aggregate = %s, want %s", b, want)
	}
}
