package harness

import "strings"

// A test is asked in one of three ways, each excluding the others:
//
//   - Prompt: one user message, one answer, scored by the test's
//     evaluator against Expected.
//   - Turns: scripted user turns. Each turn's user message is sent with
//     the conversation so far; each turn that has an expected answer is
//     scored by the test's evaluator against it. The test's score is the
//     mean of its scored turns and it passes when every scored turn
//     passes; details.turns lists {turn, status, score} per turn (from 1;
//     status null for a turn that is not scored). A multi-turn test must
//     score at least one turn.
//   - SimulatedUser: a model plays the user, with a persona and a goal,
//     until it writes DoneMarker or MaxTurns user turns were answered; the
//     test's evaluator scores the whole conversation (a judge gets the
//     goal as its criteria). Expected, when given, is the evaluator's
//     reference.

// Turn is one user turn of a multi-turn test.
type Turn struct {
	// User is what the user says. Required.
	User string `json:"user" yaml:"user"`
	// Expected, when set, has the test's evaluator score the answer to
	// this turn; a turn without it is not scored.
	Expected *Expected `json:"expected,omitempty" yaml:"expected,omitempty"`
}

// SimulatedUser is a user a model plays (Test.SimulatedUser).
type SimulatedUser struct {
	// Persona is who the user is; Goal what they want from the
	// conversation. Both required.
	Persona string `json:"persona" yaml:"persona"`
	Goal    string `json:"goal" yaml:"goal"`
	// MaxTurns bounds the user turns (1 to MaxSimulatedTurns).
	MaxTurns int `json:"max_turns" yaml:"max_turns"`
	// Model is the model reference that plays the user; empty: the
	// run's simulator model, else the run's model.
	Model string `json:"model,omitempty" yaml:"model,omitempty"`
}

// DoneMarker is what a simulated user writes to end the conversation.
const DoneMarker = "[DONE]"

// Bounds of a conversation test.
const (
	// MaxTurns is how many turns a multi-turn test may give.
	MaxTurns = 100
	// MaxSimulatedTurns bounds a simulated user's max_turns.
	MaxSimulatedTurns = 50
)

// checkConversation checks how a test is asked: a prompt, turns or a
// simulated user, exactly one of them, each well formed. An empty
// expected type of a turn becomes "exact".
func (v Validator) checkConversation(ve *ValidationError, t *Test) {
	hasPrompt := strings.TrimSpace(t.Prompt) != ""
	hasTurns := t.Turns != nil
	hasSim := t.SimulatedUser != nil
	switch {
	case hasTurns && hasPrompt:
		ve.Add("turns", "cannot be given with prompt: a test has a prompt, turns or a simulated_user")
	case hasTurns && hasSim:
		ve.Add("turns", "cannot be given with simulated_user: a test has a prompt, turns or a simulated_user")
	case hasSim && hasPrompt:
		ve.Add("simulated_user", "cannot be given with prompt: a test has a prompt, turns or a simulated_user")
	case !hasPrompt && !hasTurns && !hasSim:
		ve.Add("prompt", "is required (or turns, or simulated_user)")
	}
	if hasTurns {
		v.checkTurns(ve, t)
	}
	if hasSim {
		checkSimulated(ve, t.SimulatedUser)
	}
}

// checkTurns checks the turns of a multi-turn test.
func (v Validator) checkTurns(ve *ValidationError, t *Test) {
	switch {
	case len(t.Turns) == 0:
		ve.Add("turns", "is empty: give at least one turn {user, expected?}")
		return
	case len(t.Turns) > MaxTurns:
		ve.Add("turns", "has %d turns; at most %d", len(t.Turns), MaxTurns)
		return
	}
	if t.Expected.Answer != "" || len(t.Expected.Arguments) > 0 {
		ve.Add("expected", "a multi-turn test gives its expected answers on its turns (turns[i].expected)")
	}
	scored := 0
	for i := range t.Turns {
		turn := &t.Turns[i]
		f := "turns[" + itoa(i) + "]"
		if strings.TrimSpace(turn.User) == "" {
			ve.Add(f+".user", "is required")
		}
		if turn.Expected == nil {
			continue
		}
		scored++
		if turn.Expected.Type == "" {
			turn.Expected.Type = "exact"
		}
		ve.Merge(f+".expected", v.Expected(*turn.Expected))
		if len(turn.Expected.Sources) > 0 {
			ve.Add(f+".expected.sources", "is measured on the test's first message: give it as the test's expected.sources")
		}
	}
	if scored == 0 {
		ve.Add("turns", "no turn has an expected answer: a multi-turn test scores at least one turn")
	}
}

// checkSimulated checks a simulated user.
func checkSimulated(ve *ValidationError, s *SimulatedUser) {
	if strings.TrimSpace(s.Persona) == "" {
		ve.Add("simulated_user.persona", "is required: say who the user is")
	}
	if strings.TrimSpace(s.Goal) == "" {
		ve.Add("simulated_user.goal", "is required: say what the user wants")
	}
	if s.MaxTurns < 1 || s.MaxTurns > MaxSimulatedTurns {
		ve.Add("simulated_user.max_turns", "must be between 1 and %d", MaxSimulatedTurns)
	}
	if s.Model != strings.TrimSpace(s.Model) {
		ve.Add("simulated_user.model", "must not start or end with a space")
	}
}

// Kind says how a test is asked: "prompt", "turns" or "simulated_user".
func (t *Test) Kind() string {
	switch {
	case t.Turns != nil:
		return "turns"
	case t.SimulatedUser != nil:
		return "simulated_user"
	}
	return "prompt"
}
