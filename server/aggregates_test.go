package server_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// diceFiles is a suite of one domain, dice, whose level 1 holds three
// tests that diceModel answers differently at each asking.
var diceFiles = map[string]string{
	"evaluators/number.yaml": "id: number\nname: Number\ntype: regex\nextraction_regex: (?<answer>-?\\d+)\nuses_pass2: false\n",
	"domains/dice/domain.yaml": "id: dice\nname: Dice\ndescription: Answers that change from one asking to the next.\n" +
		"evaluator_id: number\nenabled: true\n",
	"domains/dice/level-1.yaml": `tests:
  - id: once
    name: Right the first time only
    prompt: What is 1 + 1?
    expected: {answer: '2', type: numeric}
  - id: always
    name: Always right
    prompt: What is 2 + 2?
    expected: {answer: '4', type: numeric}
  - id: mixed
    name: An error, a pass and a failure
    prompt: What is 3 + 3?
    expected: {answer: '6', type: numeric}
`,
}

// diceModel answers the dice suite: "once" right at its first asking and
// wrong after, "always" right, and "mixed" with a refusal (400, not
// retried: the result is an error), then right, then wrong. Each asking
// of mixed first waits for hold to be closed (nil: no wait), so that a
// test can look at a run in flight.
func diceModel(hold <-chan struct{}) func(*llmtest.Request) *llmtest.Reply {
	var mu sync.Mutex
	asked := map[string]int{}
	return func(req *llmtest.Request) *llmtest.Reply {
		last := ""
		if n := len(req.Messages); n > 0 {
			last = req.Messages[n-1].Content
		}
		var key string
		for _, k := range []string{"1 + 1", "2 + 2", "3 + 3"} {
			if strings.Contains(last, k) {
				key = k
			}
		}
		if key == "3 + 3" && hold != nil {
			<-hold
		}
		mu.Lock()
		asked[key]++
		n := asked[key]
		mu.Unlock()
		switch {
		case key == "1 + 1" && n == 1:
			return &llmtest.Reply{Content: "2"}
		case key == "1 + 1":
			return &llmtest.Reply{Content: "3"}
		case key == "2 + 2":
			return &llmtest.Reply{Content: "4"}
		case key == "3 + 3" && n == 1:
			return &llmtest.Reply{Status: http.StatusBadRequest, Content: "refused"}
		case key == "3 + 3" && n == 2:
			return &llmtest.Reply{Content: "6"}
		case key == "3 + 3":
			return &llmtest.Reply{Content: "7"}
		}
		return nil
	}
}

// aggregateBody is a test aggregate as the API returns it.
type aggregateBody struct {
	TestID   string   `json:"test_id"`
	Domain   string   `json:"domain"`
	Level    int      `json:"level"`
	Name     string   `json:"name"`
	Samples  int      `json:"samples"`
	K        int      `json:"k"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Errors   int      `json:"errors"`
	Score    *float64 `json:"score"`
	PassRate *float64 `json:"pass_rate"`
	PassAtK  *bool    `json:"pass_at_k"`
	PassAllK *bool    `json:"pass_all_k"`
}

func (a aggregateBody) String() string {
	f := func(p *float64) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprintf("%.4f", *p)
	}
	b := func(p *bool) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("%s %s/L%d samples %d k %d passed %d failed %d errors %d score %s pass_rate %s pass@k %s pass^k %s",
		a.TestID, a.Domain, a.Level, a.Samples, a.K, a.Passed, a.Failed, a.Errors, f(a.Score), f(a.PassRate), b(a.PassAtK), b(a.PassAllK))
}

// TestAggregatesRepeats runs the dice suite with repeats 3 against the
// fake endpoint and reads each test's aggregate where a user reads a cell
// and a run. "once" passed 1 of 3: pass@k true, pass^k false, pass rate
// 1/3. "mixed" had an error, a pass and a failure: the error is not one
// of the k, so its pass rate is 1/2 over k = 2. Read while the run is in
// flight, the cell has the aggregates of what finished so far.
func TestAggregatesRepeats(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hold) }) }
	e := newEngineEnv(t, engineConfig{noExamples: true, files: diceFiles, llm: llmtest.Options{Respond: diceModel(hold)}})
	// Registered after the environment, so run before its cleanups: the
	// fake endpoint's Close waits for the answers held here.
	t.Cleanup(release)
	id := e.start(map[string]any{"domains": []string{"dice"}, "repeats": 3, "retries": 0})
	cellPath := "/api/run/" + id + "/tests/dice/1"

	type cell struct {
		Tests      []map[string]any `json:"tests"`
		Aggregates []aggregateBody  `json:"aggregates"`
	}
	// In flight: "once" and "always" are done, "mixed" is held.
	var live cell
	harnesstest.Eventually(t, runWait, "the six answers that are not held", func() bool {
		live = cell{}
		// A run is accepted at once; its cells exist once it is prepared.
		r := e.get(cellPath)
		if r.status != http.StatusOK {
			return false
		}
		r.decode(t, &live)
		return len(live.Tests) == 6
	})
	inFlight := byTest(live.Aggregates)
	if len(live.Aggregates) != 2 || inFlight["once"].Samples != 3 || inFlight["always"].Samples != 3 {
		t.Errorf("aggregates in flight = %v, want once and always with 3 samples each", live.Aggregates)
	}
	if e.status().Status != "running" {
		t.Errorf("the run is not running while mixed is held")
	}
	release()
	e.waitIdle()

	third, half, one := 1.0/3, 0.5, 1.0
	yes, no := true, false
	want := []aggregateBody{
		{TestID: "once", Name: "Right the first time only", Samples: 3, K: 3, Passed: 1, Failed: 2, Score: &third, PassRate: &third, PassAtK: &yes, PassAllK: &no},
		{TestID: "always", Name: "Always right", Samples: 3, K: 3, Passed: 3, Score: &one, PassRate: &one, PassAtK: &yes, PassAllK: &yes},
		{TestID: "mixed", Name: "An error, a pass and a failure", Samples: 3, K: 2, Passed: 1, Failed: 1, Errors: 1, Score: &half, PassRate: &half, PassAtK: &yes, PassAllK: &no},
	}
	for i := range want {
		want[i].Domain, want[i].Level = "dice", 1
	}
	check := func(where string, got []aggregateBody) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d aggregates %v, want %d", where, len(got), got, len(want))
		}
		by := byTest(got)
		for _, w := range want {
			if !sameAggregate(by[w.TestID], w) {
				t.Errorf("%s: aggregate of %s =\n  %v, want\n  %v", where, w.TestID, by[w.TestID], w)
			}
		}
	}

	var c cell
	must(t, e.get(cellPath), http.StatusOK).decode(t, &c)
	if len(c.Tests) != 9 {
		t.Errorf("cell has %d results, want 9 (3 tests × 3 repeats)", len(c.Tests))
	}
	check("get-run-cell", c.Aggregates)
	var v1 cell
	must(t, e.get("/api/v1/history/"+id+"/dice/1"), http.StatusOK).decode(t, &v1)
	check("get-history-cell", v1.Aggregates)
	var last cell
	must(t, e.get("/api/v1/history/last/dice/1"), http.StatusOK).decode(t, &last)
	check("get-last-run-cell", last.Aggregates)

	var run struct {
		RunInfo     map[string]any   `json:"run_info"`
		TestResults []map[string]any `json:"test_results"`
		Stats       map[string]any   `json:"stats"`
		Aggregates  []aggregateBody  `json:"aggregates"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &run)
	if run.RunInfo == nil || len(run.TestResults) != 9 || run.Stats == nil {
		t.Errorf("get-run lost a field of the spec: run_info %v, %d test_results, stats %v", run.RunInfo, len(run.TestResults), run.Stats)
	}
	check("get-run", run.Aggregates)

	// The cell's interval is over tests: 3 per-test scores, 1/3, 1 and 1/2.
	var m struct {
		Domains map[string]map[string]struct {
			Score  *float64   `json:"score"`
			StdErr *float64   `json:"stderr"`
			CI95   *[]float64 `json:"ci95"`
		} `json:"domains"`
	}
	must(t, e.get("/api/run/"+id+"/matrix"), http.StatusOK).decode(t, &m)
	mc := m.Domains["dice"]["1"]
	if mc.Score == nil || mc.StdErr == nil || mc.CI95 == nil || len(*mc.CI95) != 2 || (*mc.CI95)[0] > *mc.Score || *mc.Score > (*mc.CI95)[1] {
		t.Errorf("matrix cell score %v stderr %v ci95 %v", mc.Score, mc.StdErr, mc.CI95)
	}
}

// TestAggregatesUnknownRun: the operations that carry aggregates answer
// 404 for a run that does not exist, and an empty list for a cell the run
// covered but never reached.
func TestAggregatesUnknownRun(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true, files: diceFiles, llm: llmtest.Options{Respond: diceModel(nil)}})
	mustProblem(t, e.get("/api/run/nope/tests/dice/1"), http.StatusNotFound)
	mustProblem(t, e.get("/api/run/nope"), http.StatusNotFound)
	mustProblem(t, e.get("/api/v1/history/nope/dice/1"), http.StatusNotFound)
	id := e.runToEnd(map[string]any{"domains": []string{"dice"}, "repeats": 1, "retries": 0})
	mustProblem(t, e.get("/api/run/"+id+"/tests/other/1"), http.StatusNotFound)
	r := must(t, e.get("/api/run/"+id+"/tests/dice/1"), http.StatusOK)
	var c struct {
		Aggregates []aggregateBody `json:"aggregates"`
	}
	r.decode(t, &c)
	// Without repeats every test is its own aggregate, k = 1 (mixed's
	// only asking was refused: k = 0, figures null).
	by := byTest(c.Aggregates)
	if len(c.Aggregates) != 3 || by["mixed"].K != 0 || by["mixed"].Errors != 1 || by["mixed"].PassRate != nil || by["mixed"].PassAtK != nil ||
		by["once"].K != 1 || by["once"].PassAllK == nil || !*by["once"].PassAllK {
		t.Errorf("aggregates without repeats = %v", c.Aggregates)
	}
}

// byTest indexes aggregates by test id.
func byTest(aggs []aggregateBody) map[string]aggregateBody {
	out := map[string]aggregateBody{}
	for _, a := range aggs {
		out[a.TestID] = a
	}
	return out
}

func sameAggregate(a, b aggregateBody) bool {
	f := func(x, y *float64) bool {
		return (x == nil) == (y == nil) && (x == nil || math.Abs(*x-*y) < 1e-9)
	}
	bb := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.TestID == b.TestID && a.Domain == b.Domain && a.Level == b.Level && a.Name == b.Name &&
		a.Samples == b.Samples && a.K == b.K && a.Passed == b.Passed && a.Failed == b.Failed && a.Errors == b.Errors &&
		f(a.Score, b.Score) && f(a.PassRate, b.PassRate) && bb(a.PassAtK, b.PassAtK) && bb(a.PassAllK, b.PassAllK)
}
