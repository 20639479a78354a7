package server

import "github.com/gauntlet-eval/gauntlet/harness"

// apiTurn is a turn of a multi-turn test as the API returns it. The
// answer to a turn with an expected answer is scored against it by the
// test's evaluator; a turn without one is not scored.
type apiTurn struct {
	User     string       `json:"user" doc:"What the user says in this turn."`
	Expected *apiExpected `json:"expected,omitempty"`
}

// apiSimulatedUser is a test's simulated user, in the API as in YAML.
type apiSimulatedUser struct {
	Persona  string `json:"persona" doc:"Who the user is. Required."`
	Goal     string `json:"goal" doc:"What the user wants; a judge grades the conversation against it. Required."`
	MaxTurns int    `json:"max_turns" doc:"Most user turns, 1 to 50; the user may end sooner by writing [DONE]."`
	Model    string `json:"model,omitempty" doc:"Model reference that plays the user; absent: the run's simulator model (--simulator-model), else the run's model."`
}

// apiSimulatedUserInput is a simulated user in a request.
type apiSimulatedUserInput struct {
	Persona  string `json:"persona,omitempty" api:"required" doc:"Who the user is; not blank."`
	Goal     string `json:"goal,omitempty" api:"required" doc:"What the user wants; a judge grades the conversation against it. Not blank."`
	MaxTurns int    `json:"max_turns,omitempty" api:"required" doc:"Most user turns, 1 to 50; the user may end sooner by writing [DONE]."`
	Model    string `json:"model,omitempty" doc:"Model reference that plays the user; absent: the run's simulator model (--simulator-model), else the run's model."`
}

// apiTurnInput is a turn in a request.
type apiTurnInput struct {
	User     string            `json:"user,omitempty" api:"required" doc:"What the user says in this turn; not blank."`
	Expected *apiExpectedInput `json:"expected,omitempty"`
}

func toAPITurns(ts []harness.Turn) []apiTurn {
	if ts == nil {
		return nil
	}
	out := make([]apiTurn, len(ts))
	for i, t := range ts {
		out[i] = apiTurn{User: t.User}
		if t.Expected != nil {
			e := toAPIExpected(*t.Expected)
			out[i].Expected = &e
		}
	}
	return out
}

func toAPISimulatedUser(s *harness.SimulatedUser) *apiSimulatedUser {
	if s == nil {
		return nil
	}
	return &apiSimulatedUser{Persona: s.Persona, Goal: s.Goal, MaxTurns: s.MaxTurns, Model: s.Model}
}

// harnessTurns is the turns of a request; an empty list stays empty (and
// is refused by validation), absent stays nil.
func harnessTurns(in []apiTurnInput) []harness.Turn {
	if in == nil {
		return nil
	}
	out := make([]harness.Turn, len(in))
	for i, t := range in {
		out[i] = harness.Turn{User: t.User}
		if t.Expected != nil {
			var e harness.Expected
			t.Expected.apply(&e)
			out[i].Expected = &e
		}
	}
	return out
}

func harnessSimulatedUser(s *apiSimulatedUserInput) *harness.SimulatedUser {
	if s == nil {
		return nil
	}
	return &harness.SimulatedUser{Persona: s.Persona, Goal: s.Goal, MaxTurns: s.MaxTurns, Model: s.Model}
}
