package harness_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func madeCalls(spec ...string) []harness.ToolCall {
	out := make([]harness.ToolCall, len(spec))
	for i, s := range spec {
		name, args, _ := strings.Cut(s, " ")
		out[i] = harness.ToolCall{ID: "c" + string(rune('a'+i)), Name: name, Arguments: args}
	}
	return out
}

func maxSteps(n int) *int { return &n }

// TestMatchTrajectory: each mode passes and fails as documented, with the
// score, the divergence and a reason naming what is wrong.
func TestMatchTrajectory(t *testing.T) {
	t.Parallel()
	trip := []string{"search", "weather", "book"}
	paris := []map[string]any{{"q": "Paris"}, nil, {"city": "Paris", "n": 2}}
	cases := []struct {
		name     string
		tr       harness.Trajectory
		calls    []harness.ToolCall
		passed   bool
		score    float64
		diverged int // -1: none
		reason   string
	}{
		// exact
		{"exact: same calls", harness.Trajectory{Tools: trip, Mode: "exact"},
			madeCalls("search", "weather", "book"), true, 1, -1, ""},
		{"exact: arguments are a subset", harness.Trajectory{Tools: trip, Mode: "exact", Arguments: paris},
			madeCalls(`search {"q":"Paris","lang":"fr"}`, `weather {"x":1}`, `book {"city":"Paris","n":2.0}`), true, 1, -1, ""},
		{"exact: one call too many", harness.Trajectory{Tools: trip, Mode: "exact"},
			madeCalls("search", "weather", "book", "book"), false, 0.75, 3, "actual[3] book is one call too many"},
		{"exact: one call missing", harness.Trajectory{Tools: trip, Mode: "exact"},
			madeCalls("search", "weather"), false, 2.0 / 3, 2, "expected[2] book was not called"},
		{"exact: swapped", harness.Trajectory{Tools: trip, Mode: "exact"},
			madeCalls("search", "book", "weather"), false, 2.0 / 3, 1, "actual[1] book where expected[1] weather was expected"},
		{"exact: wrong arguments", harness.Trajectory{Tools: trip, Mode: "exact", Arguments: paris},
			madeCalls(`search {"q":"Paris"}`, `weather`, `book {"city":"Rome","n":2}`), false, 2.0 / 3, 2,
			`actual[2] book: its arguments do not include those of expected[2] book {"city":"Paris","n":2}`},
		// in_order
		{"in_order: other calls between", harness.Trajectory{Tools: trip, Mode: "in_order"},
			madeCalls("log", "search", "log", "weather", "book", "log"), true, 1, -1, ""},
		{"in_order: wrong order", harness.Trajectory{Tools: trip, Mode: "in_order"},
			madeCalls("weather", "search", "book"), false, 2.0 / 3, 2, "expected[1] weather was not called in order"},
		{"in_order: first missing", harness.Trajectory{Tools: trip, Mode: "in_order"},
			madeCalls("weather", "book"), false, 2.0 / 3, 0, "expected[0] search was not called"},
		{"in_order: right name, wrong arguments", harness.Trajectory{Tools: trip, Mode: "in_order", Arguments: paris},
			madeCalls(`search {"q":"Rome"}`, "weather", `book {"city":"Paris","n":2}`), false, 2.0 / 3, 0,
			"search was called but no call's arguments include the expected ones"},
		{"in_order: a later call with the arguments", harness.Trajectory{Tools: []string{"search", "book"}, Mode: "in_order",
			Arguments: []map[string]any{{"q": "Paris"}}},
			madeCalls(`search {"q":"Rome"}`, `search {"q":"Paris"}`, "book"), true, 1, -1, ""},
		// any_order
		{"any_order: any order, extras allowed", harness.Trajectory{Tools: trip, Mode: "any_order"},
			madeCalls("book", "log", "weather", "search"), true, 1, -1, ""},
		{"any_order: missing one", harness.Trajectory{Tools: trip, Mode: "any_order"},
			madeCalls("book", "search"), false, 2.0 / 3, -1, "expected[1] weather was not called"},
		{"any_order: an entry listed twice needs two calls", harness.Trajectory{Tools: []string{"search", "search"}, Mode: "any_order"},
			madeCalls("search"), false, 0.5, -1, "expected[1] search needs a call of its own"},
		{"any_order: the constrained entry keeps the call only it fits", harness.Trajectory{Tools: []string{"search", "search"}, Mode: "any_order",
			Arguments: []map[string]any{nil, {"q": "Paris"}}},
			madeCalls(`search {"q":"Paris"}`, `search {"q":"Rome"}`), true, 1, -1, ""},
		// subset
		{"subset: only listed calls", harness.Trajectory{Tools: trip, Mode: "subset"},
			madeCalls("weather"), true, 1, -1, ""},
		{"subset: no call at all", harness.Trajectory{Tools: trip, Mode: "subset"},
			nil, true, 1, -1, ""},
		{"subset: a call not listed", harness.Trajectory{Tools: trip, Mode: "subset"},
			madeCalls("weather", "delete_all", "book"), false, 2.0 / 3, 1, "actual[1] delete_all is not among the expected calls"},
		{"subset: called more often than listed", harness.Trajectory{Tools: trip, Mode: "subset"},
			madeCalls("book", "book"), false, 0.5, 1, "actual[1] book matches no expected entry left"},
		// no calls
		{"exact: no call", harness.Trajectory{Tools: trip, Mode: "exact"}, nil, false, 0, 0, "no tool was called; expected search, weather, book"},
		{"in_order: no call", harness.Trajectory{Tools: trip, Mode: "in_order"}, nil, false, 0, 0, "no tool was called"},
		{"any_order: no call", harness.Trajectory{Tools: trip, Mode: "any_order"}, nil, false, 0, -1, "no tool was called"},
		// max_steps
		{"max_steps: within", harness.Trajectory{Tools: trip, Mode: "in_order", MaxSteps: maxSteps(4)},
			madeCalls("search", "log", "weather", "book"), true, 1, -1, ""},
		{"max_steps: too many calls", harness.Trajectory{Tools: trip, Mode: "in_order", MaxSteps: maxSteps(4)},
			madeCalls("search", "log", "log", "weather", "book"), false, 0, 4, "made 5 tool calls; max_steps is 4"},
		{"max_steps: subset", harness.Trajectory{Tools: []string{"search", "search", "search"}, Mode: "subset", MaxSteps: maxSteps(1)},
			madeCalls("search", "search"), false, 0, 1, "made 2 tool calls; max_steps is 1"},
		// untrusted arguments
		{"malformed arguments: name-only entry matches", harness.Trajectory{Tools: []string{"search"}, Mode: "exact"},
			madeCalls(`search {"q": `), true, 1, -1, ""},
		{"malformed arguments: entry with arguments does not", harness.Trajectory{Tools: []string{"search"}, Mode: "exact",
			Arguments: []map[string]any{{"q": "Paris"}}},
			madeCalls(`search {"q": `), false, 0, 0, "actual[0] search: arguments are not JSON"},
		{"arguments not an object", harness.Trajectory{Tools: []string{"search"}, Mode: "any_order",
			Arguments: []map[string]any{{"q": "Paris"}}},
			madeCalls(`search ["Paris"]`), false, 0, -1, "no call's arguments include the expected ones"},
		{"blank arguments are {}", harness.Trajectory{Tools: []string{"now"}, Mode: "exact", Arguments: []map[string]any{{}}},
			madeCalls("now"), true, 1, -1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := harness.MatchTrajectory(tc.tr, tc.calls)
			if err != nil {
				t.Fatal(err)
			}
			if res.Passed != tc.passed || math.Abs(res.Score-tc.score) > 1e-9 {
				t.Errorf("passed %v score %v, want %v %v; %+v", res.Passed, res.Score, tc.passed, tc.score, res)
			}
			switch {
			case tc.diverged < 0 && res.DivergedAt != nil:
				t.Errorf("diverged_at %d, want none", *res.DivergedAt)
			case tc.diverged >= 0 && (res.DivergedAt == nil || *res.DivergedAt != tc.diverged):
				t.Errorf("diverged_at %v, want %d", res.DivergedAt, tc.diverged)
			}
			if !strings.Contains(res.Reason, tc.reason) || (tc.passed && res.Reason != "") {
				t.Errorf("reason %q, want it to contain %q", res.Reason, tc.reason)
			}
			if len(res.Actual) != len(tc.calls) || len(res.Expected) != len(tc.tr.Tools) {
				t.Errorf("actual %d, expected %d entries", len(res.Actual), len(res.Expected))
			}
			// Each pairing is recorded both ways.
			for i, s := range res.Expected {
				if s.Call != nil && (res.Actual[*s.Call].Step == nil || *res.Actual[*s.Call].Step != i) {
					t.Errorf("expected[%d].call = %d, but that call's step is %v", i, *s.Call, res.Actual[*s.Call].Step)
				}
			}
		})
	}
}

// TestMatchTrajectoryDetails: the result as details holds decoded JSON,
// with the calls' arguments as JSON or, when they are not JSON, as text.
func TestMatchTrajectoryDetails(t *testing.T) {
	t.Parallel()
	res, err := harness.MatchTrajectory(harness.Trajectory{Tools: []string{"a", "b"}, Mode: "exact",
		Arguments: []map[string]any{{"n": 1}}}, madeCalls(`a {"n":1}`, `b {oops`))
	if err != nil {
		t.Fatal(err)
	}
	d := res.Details()
	actual, _ := d["actual"].([]any)
	if d["mode"] != "exact" || d["passed"] != true || d["matched"] != 2.0 || d["diverged_at"] != nil || len(actual) != 2 {
		t.Fatalf("details %v", d)
	}
	first, _ := actual[0].(map[string]any)
	second, _ := actual[1].(map[string]any)
	if args, _ := first["arguments"].(map[string]any); args["n"] != 1.0 || first["step"] != 0.0 {
		t.Errorf("actual[0] = %v", first)
	}
	if second["arguments"] != "{oops" || second["error"] != "arguments are not JSON" {
		t.Errorf("actual[1] = %v", second)
	}
	expected, _ := d["expected"].([]any)
	if e0, _ := expected[0].(map[string]any); e0["call"] != 0.0 || e0["arguments"] == nil {
		t.Errorf("expected[0] = %v", e0)
	}
}

// TestMatchTrajectoryBounds: an invalid trajectory is an ErrInvalid error;
// more calls than are compared fail with a reason; a long run of calls
// against the longest trajectory is matched.
func TestMatchTrajectoryBounds(t *testing.T) {
	t.Parallel()
	if _, err := harness.MatchTrajectory(harness.Trajectory{Tools: []string{"a"}, Mode: "sometimes"}, nil); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("unknown mode: %v", err)
	}
	if _, err := harness.MatchTrajectory(harness.Trajectory{Mode: "exact"}, nil); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("no tools: %v", err)
	}
	many := make([]harness.ToolCall, harness.MaxTrajectoryCalls+1)
	for i := range many {
		many[i] = harness.ToolCall{Name: "a", Arguments: "{}"}
	}
	res, err := harness.MatchTrajectory(harness.Trajectory{Tools: []string{"a"}, Mode: "in_order"}, many)
	if err != nil || res.Passed || res.Score != 0 || !strings.Contains(res.Reason, "at most 1000 are compared") {
		t.Errorf("too many calls: %+v, %v", res, err)
	}
	res, err = harness.MatchTrajectory(harness.Trajectory{Tools: []string{"a"}, Mode: "in_order", MaxSteps: maxSteps(5)}, many)
	if err != nil || res.Passed || res.DivergedAt == nil || *res.DivergedAt != 5 || !strings.Contains(res.Reason, "max_steps is 5") {
		t.Errorf("too many calls, with max_steps: %+v, %v", res, err)
	}
	tools := make([]string, harness.MaxTrajectoryTools)
	for i := range tools {
		tools[i] = "a"
	}
	for _, mode := range harness.TrajectoryModes {
		res, err := harness.MatchTrajectory(harness.Trajectory{Tools: tools, Mode: mode}, many[:harness.MaxTrajectoryCalls])
		if err != nil || res.Matched != harness.MaxTrajectoryTools {
			t.Errorf("%s: %d matched, %v", mode, res.Matched, err)
		}
	}
}

// TestTrajectoryValidate: every bad trajectory is refused with the field
// that is wrong.
func TestTrajectoryValidate(t *testing.T) {
	t.Parallel()
	long := make([]string, harness.MaxTrajectoryTools+1)
	for i := range long {
		long[i] = "a"
	}
	for _, tc := range []struct {
		name  string
		tr    harness.Trajectory
		field string
	}{
		{"no mode", harness.Trajectory{Tools: []string{"a"}}, "mode"},
		{"unknown mode", harness.Trajectory{Tools: []string{"a"}, Mode: "strict"}, "mode"},
		{"no tools", harness.Trajectory{Mode: "exact"}, "tools"},
		{"too many tools", harness.Trajectory{Tools: long, Mode: "exact"}, "tools"},
		{"bad name", harness.Trajectory{Tools: []string{"a", "no spaces"}, Mode: "exact"}, "tools[1]"},
		{"too long a name", harness.Trajectory{Tools: []string{strings.Repeat("x", 65)}, Mode: "exact"}, "tools[0]"},
		{"more arguments than tools", harness.Trajectory{Tools: []string{"a"}, Mode: "exact", Arguments: []map[string]any{nil, nil}}, "arguments"},
		{"max_steps 0", harness.Trajectory{Tools: []string{"a"}, Mode: "subset", MaxSteps: maxSteps(0)}, "max_steps"},
		{"max_steps too large", harness.Trajectory{Tools: []string{"a"}, Mode: "subset", MaxSteps: maxSteps(1001)}, "max_steps"},
		{"max_steps below the calls needed", harness.Trajectory{Tools: []string{"a", "b"}, Mode: "exact", MaxSteps: maxSteps(1)}, "max_steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.tr.Validate()
			var ve *harness.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tc.field {
				t.Errorf("Validate() = %v, want one error on %s", err, tc.field)
			}
		})
	}
	ok := harness.Trajectory{Tools: []string{"a", "b"}, Mode: "subset", MaxSteps: maxSteps(1), Arguments: []map[string]any{{"x": 1}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("subset with max_steps below the list: %v", err)
	}
	// The Validator checks it under expected.trajectory, whatever the type.
	test := harness.Test{ID: "t", DomainID: "d", Prompt: "p",
		Expected: harness.Expected{Answer: "x", Trajectory: &harness.Trajectory{Tools: []string{"a"}, Mode: "nope"}}}
	err := harness.Validator{}.Test(&test)
	if err == nil || !strings.Contains(err.Error(), "expected.trajectory.mode: unknown mode") {
		t.Errorf("Validator.Test = %v", err)
	}
}
