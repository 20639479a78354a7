package harness

import (
	"strings"
	"testing"
)

// TestValidatorConversation: a test gives a prompt, turns or a simulated
// user, exactly one, each well formed; every bad case names its field.
func TestValidatorConversation(t *testing.T) {
	exp := func(answer string) *Expected { return &Expected{Answer: answer, Type: "contains"} }
	turns := func(ts ...Turn) func(*Test) {
		return func(x *Test) { x.Prompt, x.Expected, x.Turns = "", Expected{}, ts }
	}
	sim := func(s SimulatedUser) func(*Test) {
		return func(x *Test) { x.Prompt, x.Expected, x.SimulatedUser = "", Expected{}, &s }
	}
	base := func(mods ...func(*Test)) Test {
		x := Test{ID: "t1", DomainID: "math", Level: 1, Prompt: "2 + 2?", Expected: Expected{Answer: "4", Type: "numeric"}}
		for _, m := range mods {
			m(&x)
		}
		return x
	}
	good := SimulatedUser{Persona: "A customer.", Goal: "A refund.", MaxTurns: 3}
	cases := []struct {
		name, field, msg string
		t                Test
	}{
		{"turns", "", "", base(turns(Turn{User: "Hi, I am Ada."}, Turn{User: "My name?", Expected: exp("Ada")}))},
		{"simulated user", "", "", base(sim(good))},
		{"simulated user with a reference answer", "", "", base(sim(good), func(x *Test) { x.Expected = Expected{Answer: "refund", Type: "contains"} })},
		{"turns and prompt", "turns", "cannot be given with prompt", base(turns(Turn{User: "a", Expected: exp("b")}), func(x *Test) { x.Prompt = "p" })},
		{"empty turns", "turns", "is empty", base(turns([]Turn{}...))},
		{"a turn without user", "turns[1].user", "is required", base(turns(Turn{User: "a"}, Turn{Expected: exp("b")}))},
		{"a blank user", "turns[0].user", "is required", base(turns(Turn{User: "  ", Expected: exp("b")}))},
		{"turns and simulated_user", "turns", "cannot be given with simulated_user", base(turns(Turn{User: "a", Expected: exp("b")}), func(x *Test) { x.SimulatedUser = &good })},
		{"simulated_user and prompt", "simulated_user", "cannot be given with prompt", base(func(x *Test) { s := good; x.SimulatedUser = &s })},
		{"no scored turn", "turns", "no turn has an expected answer", base(turns(Turn{User: "a"}, Turn{User: "b"}))},
		{"a turn's bad expected type", "turns[0].expected.type", "", base(turns(Turn{User: "a", Expected: &Expected{Answer: "b", Type: "nope"}}))},
		{"expected on the test of turns", "expected", "on its turns", base(turns(Turn{User: "a", Expected: exp("b")}), func(x *Test) { x.Expected.Answer = "c" })},
		{"too many turns", "turns", "at most", base(turns(make([]Turn, MaxTurns+1)...))},
		{"no prompt at all", "prompt", "is required", base(func(x *Test) { x.Prompt = "" })},
		{"simulated user without goal", "simulated_user.goal", "is required", base(sim(SimulatedUser{Persona: "p", MaxTurns: 2}))},
		{"simulated user without persona", "simulated_user.persona", "is required", base(sim(SimulatedUser{Goal: "g", MaxTurns: 2}))},
		{"max_turns 0", "simulated_user.max_turns", "between 1 and", base(sim(SimulatedUser{Persona: "p", Goal: "g"}))},
		{"max_turns too many", "simulated_user.max_turns", "between 1 and", base(sim(SimulatedUser{Persona: "p", Goal: "g", MaxTurns: MaxSimulatedTurns + 1}))},
		{"NUL in a turn", "turns[0].user", "", base(turns(Turn{User: "a\x00b", Expected: exp("b")}))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validator{}.Test(&tc.t)
			checkFieldError(t, err, tc.field)
			if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
				t.Errorf("error %v; want it to say %q", err, tc.msg)
			}
		})
	}
	t.Run("a turn's expected type defaults to exact", func(t *testing.T) {
		x := base(turns(Turn{User: "a", Expected: &Expected{Answer: "b"}}))
		if err := (Validator{}).Test(&x); err != nil || x.Turns[0].Expected.Type != "exact" {
			t.Errorf("type %q, err %v", x.Turns[0].Expected.Type, err)
		}
	})
}
