package harness

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The modes of a Trajectory: how the tool calls a model made are compared
// with the calls it lists.
const (
	// TrajectoryExact: the calls made are the expected ones, in the same
	// order, and no others: as many calls as entries, call i matching
	// entry i.
	TrajectoryExact = "exact"
	// TrajectoryInOrder: the expected calls appear among the calls made in
	// their order, as a subsequence; other calls may come before, between
	// and after them.
	TrajectoryInOrder = "in_order"
	// TrajectoryAnyOrder: each expected entry is matched by a call of its
	// own, in any order; other calls are allowed. An entry listed twice
	// needs two calls.
	TrajectoryAnyOrder = "any_order"
	// TrajectorySubset: each call made is matched by an expected entry of
	// its own, so that the model called nothing the list does not allow;
	// entries may go unused, and no call at all passes. A tool listed
	// twice may be called twice.
	TrajectorySubset = "subset"
)

// TrajectoryModes lists the modes of a Trajectory.
var TrajectoryModes = []string{TrajectoryExact, TrajectoryInOrder, TrajectoryAnyOrder, TrajectorySubset}

// Bounds of a Trajectory.
const (
	// MaxTrajectoryTools is the number of calls a trajectory may list.
	MaxTrajectoryTools = 100
	// MaxTrajectorySteps is the largest max_steps.
	MaxTrajectorySteps = 1000
	// MaxTrajectoryCalls is the number of calls MatchTrajectory compares;
	// a response with more fails.
	MaxTrajectoryCalls = 1000
)

// Trajectory is the tool calls a test expects the model to make, for the
// trajectory evaluator (and any evaluator that reads it). Tools are
// function names, as the model calls them (a tool record's
// function.name), not tool ids.
type Trajectory struct {
	// Tools are the function names of the calls expected, in order.
	// Required: 1 to MaxTrajectoryTools names.
	Tools []string `json:"tools" yaml:"tools"`
	// Mode says how the calls made are compared with Tools: exact,
	// in_order, any_order or subset (see the Trajectory… constants).
	// Required.
	Mode string `json:"mode" yaml:"mode"`
	// Arguments line up with Tools by position: Arguments[i], when it is
	// a non-empty object, must be a subset of the arguments of the call
	// that matches Tools[i] (JSONSubset); an empty or null entry, or no
	// entry (Arguments may be shorter than Tools), checks the name only.
	Arguments []map[string]any `json:"arguments,omitempty" yaml:"arguments,omitempty"`
	// MaxSteps, when set, is the most tool calls the model may make: with
	// more, the test fails (score 0), whatever the mode.
	MaxSteps *int `json:"max_steps,omitempty" yaml:"max_steps,omitempty"`
}

// Validate checks a trajectory: a known mode, 1 to MaxTrajectoryTools
// valid function names, no more arguments than tools, a max_steps from 1
// to MaxTrajectorySteps that leaves room for the calls the mode requires.
// Field names are relative to the trajectory ("mode", "tools[1]").
func (tr *Trajectory) Validate() error {
	ve := &ValidationError{}
	modes := strings.Join(TrajectoryModes, ", ")
	switch {
	case tr.Mode == "":
		ve.Add("mode", "is required: one of %s", modes)
	case !validMode(tr.Mode):
		ve.Add("mode", "unknown mode %q (one of %s)", tr.Mode, modes)
	}
	switch {
	case len(tr.Tools) == 0:
		ve.Add("tools", "is required: the function names of the calls expected, in order")
	case len(tr.Tools) > MaxTrajectoryTools:
		ve.Add("tools", "lists %d calls; at most %d", len(tr.Tools), MaxTrajectoryTools)
	default:
		for i, name := range tr.Tools {
			if !ValidFunctionName(name) {
				ve.Add("tools["+itoa(i)+"]", "must be a function name matching ^[a-zA-Z0-9_-]{1,64}$")
			}
		}
	}
	if len(tr.Arguments) > len(tr.Tools) {
		ve.Add("arguments", "has %d entries but tools has %d: arguments[i] applies to tools[i]",
			len(tr.Arguments), len(tr.Tools))
	}
	if tr.MaxSteps != nil {
		n := *tr.MaxSteps
		switch {
		case n < 1:
			ve.Add("max_steps", "must be at least 1")
		case n > MaxTrajectorySteps:
			ve.Add("max_steps", "must be at most %d", MaxTrajectorySteps)
		case n < len(tr.Tools) && tr.Mode != TrajectorySubset && validMode(tr.Mode):
			ve.Add("max_steps", "is %d, fewer than the %d calls tools expects: the test could never pass", n, len(tr.Tools))
		}
	}
	return ve.Err()
}

func validMode(m string) bool {
	for _, x := range TrajectoryModes {
		if m == x {
			return true
		}
	}
	return false
}

// TrajectoryResult is how the tool calls a model made compare with a
// Trajectory: the score, the verdict and where the calls diverged. An
// evaluator stores it as details.trajectory (see Details).
type TrajectoryResult struct {
	Mode string `json:"mode"`
	// Score is Matched / Total, from 0 to 1; 0 when the calls exceed
	// max_steps.
	Score float64 `json:"score"`
	// Passed is true when every call the mode requires matched (Matched
	// = Total) and the calls are within max_steps.
	Passed bool `json:"passed"`
	// Expected are the trajectory's entries, each with the call that
	// matched it.
	Expected []TrajectoryStep `json:"expected"`
	// Actual are the calls made, in order, each with the entry it matched.
	Actual []TrajectoryCall `json:"actual"`
	// Matched counts the entries (exact, in_order, any_order) or calls
	// (subset) that matched; Total is what they are counted against: the
	// entries (in_order, any_order), the calls made (subset), the larger
	// of the two (exact).
	Matched int `json:"matched"`
	Total   int `json:"total"`
	// MaxSteps is the trajectory's max_steps, when set.
	MaxSteps *int `json:"max_steps,omitempty"`
	// DivergedAt is the index in Actual where the calls left the
	// trajectory: the first call that does not fit (exact, subset), or
	// where a missing call should have been (exact, in_order: the
	// position after the last call matched before it), or max_steps when
	// the calls exceed it. nil when the calls pass, and in any_order,
	// where order does not count and only the missing entries say what
	// is wrong.
	DivergedAt *int `json:"diverged_at"`
	// Reason says what is wrong; empty when the calls pass.
	Reason string `json:"reason,omitempty"`
}

// TrajectoryStep is one entry of a trajectory in a TrajectoryResult.
type TrajectoryStep struct {
	Name string `json:"name"`
	// Arguments are the arguments expected; nil when only the name counts.
	Arguments map[string]any `json:"arguments,omitempty"`
	// Call is the index in Actual of the call that matched the entry; nil
	// when none did.
	Call *int `json:"call"`
}

// TrajectoryCall is one call made, in a TrajectoryResult.
type TrajectoryCall struct {
	Name string `json:"name"`
	// Arguments are the call's arguments: decoded JSON, or the text the
	// model sent when it is not JSON.
	Arguments any `json:"arguments"`
	// Step is the index in Expected of the entry the call matched; nil
	// when it matched none.
	Step *int `json:"step"`
	// Error says why the arguments could not be compared (they are not
	// JSON); such a call matches an entry that expects no arguments only.
	Error string `json:"error,omitempty"`
}

// Details returns the result as a decoded JSON object, the form
// EvalResult.Details holds: what an evaluator puts under
// details["trajectory"].
func (r *TrajectoryResult) Details() map[string]any {
	b, err := json.Marshal(r)
	if err != nil { // cannot happen: the values come from JSON
		return map[string]any{"mode": r.Mode, "score": r.Score, "passed": r.Passed, "reason": r.Reason}
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// MatchTrajectory compares the tool calls a model made, in order, with a
// trajectory, by the rules of its mode (see the Trajectory… constants). A
// call matches an entry when it has the entry's function name (case
// matters) and, when the entry has arguments, its arguments include them
// (JSONSubset, numbers compared as JSON numbers). One call matches one
// entry at most. The calls are the model's, untrusted: arguments that are
// not JSON, or any number of calls, give a result, never a panic. An
// invalid trajectory (see Validate) is an error wrapping ErrInvalid.
//
// It is what the trajectory evaluator runs; an evaluator plugin can call
// it on EvalRequest.Test.Expected.Trajectory and EvalRequest.ToolCalls to
// score trajectories the same way.
func MatchTrajectory(tr Trajectory, calls []ToolCall) (*TrajectoryResult, error) {
	if err := tr.Validate(); err != nil {
		return nil, fmt.Errorf("expected.trajectory: %w", err)
	}
	n, m := len(tr.Tools), len(calls)
	res := &TrajectoryResult{Mode: tr.Mode, MaxSteps: tr.MaxSteps, Expected: make([]TrajectoryStep, n), Actual: []TrajectoryCall{}}
	want := make([]any, n) // normalized expected arguments; nil: name only
	for i, name := range tr.Tools {
		res.Expected[i].Name = name
		if i < len(tr.Arguments) && len(tr.Arguments[i]) > 0 {
			w, err := NormalizeJSON(tr.Arguments[i])
			if err != nil {
				return nil, fmt.Errorf("expected.trajectory.arguments[%d]: %v: %w", i, err, ErrInvalid)
			}
			want[i] = w
			res.Expected[i].Arguments, _ = w.(map[string]any)
		}
	}
	if m > MaxTrajectoryCalls {
		res.Total = m
		res.Reason = fmt.Sprintf("made %d tool calls; at most %d are compared", m, MaxTrajectoryCalls)
		if tr.MaxSteps != nil {
			res.DivergedAt = intRef(*tr.MaxSteps)
			res.Reason = fmt.Sprintf("made %d tool calls; max_steps is %d", m, *tr.MaxSteps)
		}
		return res, nil
	}

	got := make([]any, m)
	parsed := make([]bool, m)
	res.Actual = make([]TrajectoryCall, m)
	for j, c := range calls {
		res.Actual[j].Name = c.Name
		v, err := ParseArguments(c.Arguments)
		if err != nil {
			res.Actual[j].Arguments = c.Arguments
			res.Actual[j].Error = "arguments are not JSON"
			continue
		}
		got[j], parsed[j] = v, true
		res.Actual[j].Arguments = v
	}
	match := func(i, j int) bool {
		if calls[j].Name != tr.Tools[i] {
			return false
		}
		return want[i] == nil || parsed[j] && JSONSubset(want[i], got[j])
	}
	ok := make([][]bool, n)
	for i := range ok {
		ok[i] = make([]bool, m)
		for j := range ok[i] {
			ok[i][j] = match(i, j)
		}
	}

	var pairs []int // pairs[i]: the call of entry i, -1 for none
	switch tr.Mode {
	case TrajectoryExact, TrajectoryInOrder:
		pairs = alignInOrder(ok, n, m)
	default:
		pairs = matchAnyOrder(ok, n, m)
	}
	for i, j := range pairs {
		if j >= 0 {
			res.Matched++
			res.Expected[i].Call = intRef(j)
			res.Actual[j].Step = intRef(i)
		}
	}
	d := describer{tr: tr, ok: ok, res: res}
	switch tr.Mode {
	case TrajectoryExact:
		res.Total = max(n, m)
		res.Passed = res.Matched == n && n == m
		if !res.Passed {
			at := min(n, m)
			for k := range at {
				if !ok[k][k] {
					at = k
					break
				}
			}
			res.DivergedAt = intRef(at)
			res.Reason = d.exact(at)
		}
	case TrajectoryInOrder:
		res.Total = n
		res.Passed = res.Matched == n
		if !res.Passed {
			i, at := d.firstMissing()
			res.DivergedAt = intRef(at)
			res.Reason = d.missing(i, "in order")
		}
	case TrajectoryAnyOrder:
		res.Total = n
		res.Passed = res.Matched == n
		if !res.Passed {
			var why []string
			for i, s := range res.Expected {
				if s.Call == nil {
					why = append(why, d.missing(i, ""))
				}
			}
			res.Reason = strings.Join(why, "; ")
		}
	case TrajectorySubset:
		res.Total = m
		res.Passed = res.Matched == m
		if !res.Passed {
			for j, c := range res.Actual {
				if c.Step == nil {
					res.DivergedAt = intRef(j)
					res.Reason = d.unexpected(j)
					break
				}
			}
		}
	}
	res.Score = 1
	if res.Total > 0 {
		res.Score = float64(res.Matched) / float64(res.Total)
	}
	if m == 0 && tr.Mode != TrajectorySubset {
		res.Reason = "no tool was called; expected " + strings.Join(tr.Tools, ", ")
	}
	if tr.MaxSteps != nil && m > *tr.MaxSteps {
		res.Passed, res.Score = false, 0
		if res.DivergedAt == nil || *res.DivergedAt > *tr.MaxSteps {
			res.DivergedAt = intRef(*tr.MaxSteps)
		}
		why := fmt.Sprintf("made %d tool calls; max_steps is %d", m, *tr.MaxSteps)
		if res.Reason != "" {
			why += "; " + res.Reason
		}
		res.Reason = why
	}
	return res, nil
}

func intRef(i int) *int { return &i }

// alignInOrder pairs entries with calls along a longest common
// subsequence of the two (entry i and call j in common when ok[i][j]),
// choosing the earliest calls. It returns each entry's call, -1 for none.
func alignInOrder(ok [][]bool, n, m int) []int {
	// lcs[i*(m+1)+j] is the length of a longest common subsequence of
	// entries i… and calls j….
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			v := max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			if ok[i][j] {
				v = max(v, lcs[(i+1)*w+j+1]+1)
			}
			lcs[i*w+j] = v
		}
	}
	pairs := make([]int, n)
	for i := range pairs {
		pairs[i] = -1
	}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case ok[i][j] && lcs[i*w+j] == lcs[(i+1)*w+j+1]+1:
			pairs[i] = j
			i, j = i+1, j+1
		case lcs[i*w+j+1] == lcs[i*w+j]:
			j++ // call j is not needed
		default:
			i++ // entry i cannot be matched here
		}
	}
	return pairs
}

// matchAnyOrder pairs entries with calls, each at most once, as many as
// can be (a maximum bipartite matching, found by augmenting paths): an
// entry that only some call fits does not lose it to an entry any call
// fits. Entries and calls are tried in order, so the earliest calls are
// used. It returns each entry's call, -1 for none.
func matchAnyOrder(ok [][]bool, n, m int) []int {
	pairs := make([]int, n)
	owner := make([]int, m) // owner[j]: the entry call j is paired with
	for j := range owner {
		owner[j] = -1
	}
	var seen []bool
	var augment func(i int) bool
	augment = func(i int) bool {
		for j := range m {
			if !ok[i][j] || seen[j] {
				continue
			}
			seen[j] = true
			if owner[j] < 0 || augment(owner[j]) {
				owner[j] = i
				return true
			}
		}
		return false
	}
	for i := range n {
		seen = make([]bool, m)
		augment(i)
	}
	for i := range pairs {
		pairs[i] = -1
	}
	for j, i := range owner {
		if i >= 0 {
			pairs[i] = j
		}
	}
	return pairs
}

// describer writes the reasons of a failed trajectory.
type describer struct {
	tr  Trajectory
	ok  [][]bool
	res *TrajectoryResult
}

// step names entry i: "expected[1] get_weather {"city":"Paris"}".
func (d describer) step(i int) string {
	s := fmt.Sprintf("expected[%d] %s", i, d.tr.Tools[i])
	if a := d.res.Expected[i].Arguments; a != nil {
		b, _ := json.Marshal(a)
		s += " " + string(b)
	}
	return s
}

// call names call j: "actual[2] lookup_word".
func (d describer) call(j int) string { return fmt.Sprintf("actual[%d] %s", j, d.res.Actual[j].Name) }

// firstMissing returns the first entry no call matched, and the index of
// the calls where it should have been: after the call of the last entry
// before it that matched.
func (d describer) firstMissing() (i, at int) {
	for k, s := range d.res.Expected {
		if s.Call != nil {
			at = *s.Call + 1
			continue
		}
		return k, at
	}
	return -1, at
}

// missing says why entry i has no call: no call of its name, none with
// its arguments, or (how, for in_order) none where the order needs it.
func (d describer) missing(i int, how string) string {
	named, fits := 0, false
	for j, c := range d.res.Actual {
		if c.Name == d.tr.Tools[i] {
			named++
			fits = fits || d.ok[i][j]
		}
	}
	switch {
	case named == 0:
		return d.step(i) + " was not called"
	case !fits:
		return d.step(i) + ": " + d.tr.Tools[i] + " was called but no call's arguments include the expected ones"
	case how != "":
		return d.step(i) + " was not called " + how + " (its calls come too early, or serve another entry)"
	}
	return d.step(i) + " needs a call of its own: each call matches one entry"
}

// unexpected says why call j matches no entry.
func (d describer) unexpected(j int) string {
	listed := false
	for _, name := range d.tr.Tools {
		listed = listed || name == d.res.Actual[j].Name
	}
	switch {
	case !listed:
		return d.call(j) + " is not among the expected calls"
	case d.res.Actual[j].Error != "":
		return d.call(j) + ": " + d.res.Actual[j].Error
	}
	return d.call(j) + " matches no expected entry left: its arguments differ, or it is called more often than listed"
}

// exact says what differs at index at of an exact trajectory.
func (d describer) exact(at int) string {
	n, m := len(d.tr.Tools), len(d.res.Actual)
	switch {
	case at >= m:
		return fmt.Sprintf("%s was not called: %d calls made, %d expected", d.step(at), m, n)
	case at >= n:
		return fmt.Sprintf("%s is one call too many: %d calls made, %d expected", d.call(at), m, n)
	case d.res.Actual[at].Name != d.tr.Tools[at]:
		return fmt.Sprintf("%s where %s was expected", d.call(at), d.step(at))
	case d.res.Actual[at].Error != "":
		return fmt.Sprintf("%s: %s", d.call(at), d.res.Actual[at].Error)
	}
	return fmt.Sprintf("%s: its arguments do not include those of %s", d.call(at), d.step(at))
}
