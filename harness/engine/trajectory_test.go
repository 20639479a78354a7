package engine_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/evaluators/trajectory"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// trajectoryCase is one test of a trajectory run: the calls the fake
// model makes, round by round, and what the trajectory evaluator says.
type trajectoryCase struct {
	id     string
	tr     harness.Trajectory
	rounds [][]harness.ToolCall
	passed bool
	score  float64
	reason string
}

func call(name, args string) harness.ToolCall { return harness.ToolCall{Name: name, Arguments: args} }

func trajectoryCases() []trajectoryCase {
	trip := []string{"search_flights", "get_weather", "book_flight"}
	paris := []map[string]any{{"destination": "Paris"}, {"city": "Paris"}, {"seats": 2}}
	search, weather, book := call("search_flights", `{"destination":"Paris","when":"may"}`),
		call("get_weather", `{"city":"Paris"}`), call("book_flight", `{"seats":2,"flight":"AF1"}`)
	two := 2
	return []trajectoryCase{
		{id: "exact-pass", tr: harness.Trajectory{Tools: trip, Mode: "exact", Arguments: paris},
			rounds: [][]harness.ToolCall{{search}, {weather, book}}, passed: true, score: 1},
		{id: "exact-fail", tr: harness.Trajectory{Tools: trip, Mode: "exact"},
			rounds: [][]harness.ToolCall{{weather}, {search}, {book}}, score: 2.0 / 3, reason: "actual[0] get_weather where expected[0] search_flights was expected"},
		{id: "in-order-pass", tr: harness.Trajectory{Tools: []string{"search_flights", "book_flight"}, Mode: "in_order"},
			rounds: [][]harness.ToolCall{{search}, {weather}, {book}}, passed: true, score: 1},
		{id: "in-order-fail", tr: harness.Trajectory{Tools: []string{"search_flights", "book_flight"}, Mode: "in_order"},
			rounds: [][]harness.ToolCall{{book}, {search}}, score: 0.5, reason: "expected[1] book_flight was not called in order"},
		{id: "any-order-pass", tr: harness.Trajectory{Tools: trip, Mode: "any_order"},
			rounds: [][]harness.ToolCall{{book, weather}, {search}}, passed: true, score: 1},
		{id: "any-order-fail", tr: harness.Trajectory{Tools: trip, Mode: "any_order"},
			rounds: [][]harness.ToolCall{{book}}, score: 1.0 / 3, reason: "expected[0] search_flights was not called"},
		{id: "subset-pass", tr: harness.Trajectory{Tools: trip, Mode: "subset"},
			rounds: [][]harness.ToolCall{{weather}}, passed: true, score: 1},
		{id: "subset-fail", tr: harness.Trajectory{Tools: trip, Mode: "subset"},
			rounds: [][]harness.ToolCall{{weather, call("cancel_all", "{}")}}, score: 0.5, reason: "actual[1] cancel_all is not among the expected calls"},
		{id: "wrong-arguments", tr: harness.Trajectory{Tools: trip, Mode: "exact", Arguments: paris},
			rounds: [][]harness.ToolCall{{call("search_flights", `{"destination":"Rome"}`)}, {weather}, {book}}, score: 2.0 / 3,
			reason: `actual[0] search_flights: its arguments do not include those of expected[0] search_flights {"destination":"Paris"}`},
		{id: "too-many-steps", tr: harness.Trajectory{Tools: []string{"get_weather"}, Mode: "any_order", MaxSteps: &two},
			rounds: [][]harness.ToolCall{{weather}, {weather}, {weather}}, score: 0, reason: "made 3 tool calls; max_steps is 2"},
		{id: "no-calls", tr: harness.Trajectory{Tools: trip, Mode: "in_order"},
			score: 0, reason: "no tool was called; expected search_flights, get_weather, book_flight"},
		{id: "malformed-arguments", tr: harness.Trajectory{Tools: []string{"get_weather"}, Mode: "exact", Arguments: paris[1:2]},
			rounds: [][]harness.ToolCall{{call("get_weather", `{"city": "Par`)}}, score: 0, reason: "actual[0] get_weather: arguments are not JSON"},
	}
}

// trajectoryDefs is a domain scored by the trajectory evaluator, whose
// level offers three tools, with one test per case.
func trajectoryDefs(cases []trajectoryCase) *defs {
	d := newDefs()
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "path", Name: "Tool path", Type: trajectory.Type})
	object := map[string]any{"type": "object"}
	d.s.Tools = []harness.ToolDefinition{
		{ID: "search", Name: "Search", Function: harness.FunctionDef{Name: "search_flights", Description: "Find flights.", Parameters: object},
			MockResponse: map[string]any{"flights": []any{"AF1"}}},
		{ID: "weather", Name: "Weather", Function: harness.FunctionDef{Name: "get_weather", Description: "Weather of a city.", Parameters: object},
			MockResponse: map[string]any{"sky": "clear"}},
		{ID: "book", Name: "Book", Function: harness.FunctionDef{Name: "book_flight", Description: "Book a flight.", Parameters: object},
			MockResponse: map[string]any{"booked": true}},
	}
	d.domain("travel", "Use the tools.", true).level("travel", 1, "", harness.PromptAppend, 0.5, "search", "weather", "book")
	d.s.Domains[len(d.s.Domains)-1].EvaluatorID = "path"
	for _, c := range cases {
		tr := c.tr
		d.test(harness.Test{ID: c.id, DomainID: "travel", Level: 1, Prompt: "[" + c.id + "] Plan my trip to Paris.",
			Expected: harness.Expected{Type: trajectory.ExpectedType, Trajectory: &tr}})
	}
	return d
}

// scriptedCalls answers each request of a test with its next round of
// calls, and with a final answer once they are made.
func scriptedCalls(cases []trajectoryCase) func(*llmtest.Request) *llmtest.Reply {
	byID := map[string][][]harness.ToolCall{}
	for _, c := range cases {
		byID[c.id] = c.rounds
	}
	return func(req *llmtest.Request) *llmtest.Reply {
		id, done := "", 0
		for _, m := range req.Messages {
			switch {
			case m.Role == harness.RoleUser && id == "":
				id = promptID(m.Content)
			case m.Role == harness.RoleAssistant && len(m.ToolCalls) > 0:
				done++
			}
		}
		rounds := byID[id]
		if done < len(rounds) && len(req.Tools) > 0 {
			return &llmtest.Reply{ToolCalls: rounds[done]}
		}
		return &llmtest.Reply{Content: "Your trip is planned."}
	}
}

// TestTrajectoryRun: a run whose tests are scored by the trajectory
// evaluator, against the fake endpoint making scripted tool calls
// answered by the tools' mock responses: each mode passes and fails,
// wrong arguments, too many steps, no calls and arguments that are not
// JSON fail with their reason in details.trajectory, and nothing is an
// error. On SQLite, and on PostgreSQL when the tests run against it.
func TestTrajectoryRun(t *testing.T) {
	t.Parallel()
	cases := trajectoryCases()
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(trajectory.Type, trajectory.New()); err != nil {
		t.Fatal(err)
	}
	if err := trajectory.RegisterExpectedType(reg); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOpts{snap: trajectoryDefs(cases).snap(), registry: reg, anyDB: true,
		llm: llmtest.Options{Respond: scriptedCalls(cases)}})
	id := f.start(t, engine.StartRequest{})
	if info, _ := f.wait(t, id); info.Status != runs.StatusCompleted {
		t.Fatalf("info = %+v", info)
	}
	res := resultByID(t, f, id)
	checkTrajectoryResults(t, cases, res)

	// A rescore rebuilds the calls from the stored results, malformed
	// arguments included, and gives the same verdicts.
	rid := f.start(t, engine.StartRequest{RescoreFrom: id})
	if info, _ := f.wait(t, rid); info.Status != runs.StatusCompleted {
		t.Fatalf("rescore: info = %+v", info)
	}
	t.Run("rescored", func(t *testing.T) { checkTrajectoryResults(t, cases, resultByID(t, f, rid)) })
}

func checkTrajectoryResults(t *testing.T, cases []trajectoryCase, res map[string]runs.Result) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			r, ok := res[c.id]
			if !ok {
				t.Fatal("no result")
			}
			want := runs.TestFailed
			if c.passed {
				want = runs.TestPassed
			}
			if r.Status != want || math.Abs(r.Score-c.score) > 1e-9 {
				t.Fatalf("status %s score %v, want %s %v; details %v", r.Status, r.Score, want, c.score, r.Details)
			}
			var made int
			for _, round := range c.rounds {
				made += len(round)
			}
			if calls := toolCallsOf(t, r); len(calls) != made {
				t.Errorf("details.tool_calls has %d calls, want %d", len(calls), made)
			}
			b, _ := json.Marshal(r.Details["trajectory"])
			var tr harness.TrajectoryResult
			if err := json.Unmarshal(b, &tr); err != nil {
				t.Fatalf("details.trajectory %s: %v", b, err)
			}
			if tr.Mode != c.tr.Mode || tr.Passed != c.passed || len(tr.Actual) != made || len(tr.Expected) != len(c.tr.Tools) {
				t.Errorf("details.trajectory %s", b)
			}
			if !strings.Contains(tr.Reason, c.reason) || c.passed != (tr.Reason == "") {
				t.Errorf("reason %q, want it to contain %q", tr.Reason, c.reason)
			}
			if ordered := c.tr.Mode != "any_order" || c.tr.MaxSteps != nil; c.passed != (tr.DivergedAt == nil) && (c.passed || ordered) {
				t.Errorf("diverged_at %v", tr.DivergedAt)
			}
			if !c.passed && r.Details["reason"] != tr.Reason {
				t.Errorf("details.reason %v, want the trajectory's", r.Details["reason"])
			}
		})
	}
}
