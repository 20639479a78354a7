package server

import (
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// apiTrajectory is a test's expected trajectory as the API returns it.
type apiTrajectory struct {
	Tools     []string         `json:"tools" doc:"Function names of the tool calls expected, in order (a tool record's function.name)."`
	Mode      string           `json:"mode" doc:"exact (the same calls, in order, no others), in_order (the calls appear in order, others allowed), any_order (each has a call of its own, any order, others allowed) or subset (every call made is one listed)."`
	Arguments []map[string]any `json:"arguments,omitempty" doc:"Lined up with tools by position: a non-empty object must be a subset of the arguments of the call matching that entry; empty, or no entry, checks the name only."`
	MaxSteps  *int             `json:"max_steps,omitempty" doc:"The most tool calls allowed; with more the test fails with score 0."`
}

func toAPITrajectory(tr *harness.Trajectory) *apiTrajectory {
	if tr == nil {
		return nil
	}
	out := &apiTrajectory{Tools: nonNil(tr.Tools), Mode: tr.Mode, MaxSteps: tr.MaxSteps}
	if len(tr.Arguments) > 0 {
		out.Arguments = make([]map[string]any, len(tr.Arguments))
		for i, a := range tr.Arguments {
			out.Arguments[i] = a
			if a == nil {
				out.Arguments[i] = map[string]any{} // an object, as the schema says: name only
			}
		}
	}
	return out
}

// apiTrajectoryInput is an expected trajectory in a request: it replaces
// the stored one whole.
type apiTrajectoryInput struct {
	Tools     []string         `json:"tools,omitempty" api:"required" doc:"Function names of the tool calls expected, in order: 1 to 100 names matching ^[a-zA-Z0-9_-]{1,64}$."`
	Mode      string           `json:"mode,omitempty" api:"required" doc:"exact, in_order, any_order or subset."`
	Arguments []map[string]any `json:"arguments,omitempty" doc:"Lined up with tools by position, no longer than tools: a non-empty object must be a subset of the matching call's arguments; an empty object checks the name only."`
	MaxSteps  *int             `json:"max_steps,omitempty" doc:"The most tool calls allowed (1 to 1000; not fewer than tools, except in subset mode)."`
}

func (in *apiTrajectoryInput) trajectory() *harness.Trajectory {
	if in == nil {
		return nil
	}
	return &harness.Trajectory{Tools: in.Tools, Mode: in.Mode, Arguments: in.Arguments, MaxSteps: in.MaxSteps}
}

// optionalTrajectory is expected.trajectory in an update: absent, null
// (clear it) or a trajectory. Its schema is the trajectory's own, inline
// and nullable, so that the server checks a value of the wrong type
// before decoding it and names its field (a reference inside anyOf is not
// checked).
type optionalTrajectory struct {
	optional[apiTrajectoryInput]
}

// Schema is apiTrajectoryInput's schema, nullable.
func (optionalTrajectory) Schema(r huma.Registry) *huma.Schema {
	s := *r.Schema(reflect.TypeFor[apiTrajectoryInput](), false, "")
	s.Nullable = true
	return &s
}
