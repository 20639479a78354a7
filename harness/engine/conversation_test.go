package engine_test

import (
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// conversationDefs: a domain "chat" scored by the whole answer (expected
// type contains), holding multi-turn tests and tests with a simulated
// user.
func conversationDefs(tests ...harness.Test) *defs {
	d := newDefs()
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "whole", Name: "Whole answer", Type: harness.EvaluatorTypeRegex})
	d.s.Domains = append(d.s.Domains, harness.Domain{ID: "chat", Name: "Chat", EvaluatorID: "whole", Enabled: true})
	d.level("chat", 1, "", harness.PromptAppend, 0.5)
	for _, t := range tests {
		t.DomainID, t.Level = "chat", 1
		d.test(t)
	}
	return d
}

func contains(answer string) *harness.Expected {
	return &harness.Expected{Answer: answer, Type: "contains"}
}

var nameRE = regexp.MustCompile(`My name is (\w+)`)

// remembers answers "What is my name?" from the conversation sent: the
// name an earlier user message gave, so that a turn passes only when the
// conversation so far came with it.
func remembers(req *llmtest.Request) *llmtest.Reply {
	if !strings.Contains(req.LastUser(), "What is my name?") {
		return nil
	}
	for _, m := range req.Messages {
		if m.Role == harness.RoleUser {
			if g := nameRE.FindStringSubmatch(m.Content); g != nil {
				return &llmtest.Reply{Content: "Your name is " + g[1] + "."}
			}
		}
	}
	return &llmtest.Reply{Content: "I do not know your name."}
}

// turnsOf decodes details.turns as stored.
func turnsOf(t *testing.T, r runs.Result) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(r.Details["turns"])
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("%s: details.turns %s: %v", r.TestID, b, err)
	}
	return rows
}

// rowsOf is details.turns as {turn, status, score} triples.
func rowsOf(t *testing.T, r runs.Result) [][3]any {
	var out [][3]any
	for _, row := range turnsOf(t, r) {
		out = append(out, [3]any{row["turn"], row["status"], row["score"]})
	}
	return out
}

// TestMultiTurn: each user turn is sent with the conversation so far;
// each turn with an expected answer is scored; the test's score is the
// mean of its scored turns and it passes when every one passes;
// details.turns lists every turn (unscored ones with status null); the
// transcript holds every turn. On PostgreSQL too.
func TestMultiTurn(t *testing.T) {
	t.Parallel()
	d := conversationDefs(
		harness.Test{ID: "ada", Turns: []harness.Turn{
			{User: "[ada] My name is Ada."},
			{User: "[ada] What is my name?", Expected: contains("Ada")},
			{User: "[ada] What is 2 + 3?", Expected: contains("5")},
		}},
		harness.Test{ID: "bob", Turns: []harness.Turn{
			{User: "[bob] My name is Bob."},
			{User: "[bob] What is my name?", Expected: contains("Ada")},
			{User: "[bob] What is 1 + 1?", Expected: contains("2")},
		}},
		harness.Test{ID: "single", Prompt: "[single] What is 4 + 4?", Expected: harness.Expected{Answer: "8", Type: "contains"}},
	)
	var seen requestLog
	f := newFixture(t, fixtureOpts{snap: d.snap(), anyDB: true, llm: llmtest.Options{Respond: recorder(&seen, remembers)}})
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.DoneTests != 3 || info.Passed != 2 || info.Failed != 1 {
		t.Fatalf("info = %+v", info)
	}
	res := resultByID(t, f, id)

	ada := res["ada"]
	if ada.Status != runs.TestPassed || ada.Score != 1 {
		t.Errorf("ada: %s %v %v", ada.Status, ada.Score, ada.Details)
	}
	if got, want := rowsOf(t, ada), [][3]any{{1.0, nil, nil}, {2.0, "passed", 1.0}, {3.0, "passed", 1.0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ada details.turns = %v, want %v", got, want)
	}
	if ada.Prompt != "[ada] My name is Ada." || ada.Response != "The answer is 5." {
		t.Errorf("ada prompt %q, response %q", ada.Prompt, ada.Response)
	}
	var roles []string
	for _, m := range ada.Transcript {
		roles = append(roles, m.Role+":"+m.Content)
	}
	want := []string{"user:[ada] My name is Ada.", "assistant:[ada] My name is Ada.", "user:[ada] What is my name?",
		"assistant:Your name is Ada.", "user:[ada] What is 2 + 3?", "assistant:The answer is 5."}
	if !reflect.DeepEqual(roles, want) {
		t.Errorf("ada transcript = %q\nwant %q", roles, want)
	}
	if len(ada.Calls) != 3 {
		t.Errorf("ada calls = %+v, want one a turn", ada.Calls)
	}
	// Each turn's request carries the conversation so far.
	reqs := seen.get("ada")
	if len(reqs) != 3 || len(reqs[0].Messages) != 1 || len(reqs[1].Messages) != 3 || len(reqs[2].Messages) != 5 {
		t.Errorf("ada requests: %d", len(reqs))
		for _, r := range reqs {
			t.Logf("  %d messages", len(r.Messages))
		}
	}

	bob := res["bob"]
	if bob.Status != runs.TestFailed || bob.Score != 0.5 {
		t.Errorf("bob: %s %v %v", bob.Status, bob.Score, bob.Details)
	}
	if got, want := rowsOf(t, bob), [][3]any{{1.0, nil, nil}, {2.0, "failed", 0.0}, {3.0, "passed", 1.0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("bob details.turns = %v, want %v", got, want)
	}
	if s := res["single"]; s.Status != runs.TestPassed || s.Details["turns"] != nil {
		t.Errorf("single: %s %v", s.Status, s.Details)
	}

	// A rescore scores each turn's stored answer again, asking no model.
	before := f.mock.Stats().ChatCompletions
	again, err := f.eng.Rescore(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := f.wait(t, again); info.Passed != 2 || info.Failed != 1 {
		t.Fatalf("rescore: %+v", info)
	}
	if n := f.mock.Stats().ChatCompletions; n != before {
		t.Errorf("the rescore asked the model %d times", n-before)
	}
	res = resultByID(t, f, again)
	if got, want := rowsOf(t, res["bob"]), [][3]any{{1.0, nil, nil}, {2.0, "failed", 0.0}, {3.0, "passed", 1.0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("rescored bob details.turns = %v, want %v", got, want)
	}
	if r := res["ada"]; r.Status != runs.TestPassed || len(r.Transcript) != 6 {
		t.Errorf("rescored ada: %s, %d messages", r.Status, len(r.Transcript))
	}
}

// TestMultiTurnResume: a multi-turn test whose second turn failed ends in
// error naming the turn; resumed, the run asks it again from the
// definitions it stored, turns included, and it passes.
func TestMultiTurnResume(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	broken.Store(true)
	d := conversationDefs(harness.Test{ID: "ada", Turns: []harness.Turn{
		{User: "[ada] My name is Ada."},
		{User: "[ada] What is my name?", Expected: contains("Ada")},
	}})
	f := newFixture(t, fixtureOpts{snap: d.snap(), anyDB: true, llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		if strings.Contains(req.LastUser(), "What is my name?") && broken.Load() {
			return &llmtest.Reply{Status: 400, Content: "no names today"}
		}
		return remembers(req)
	}}})
	id := f.start(t, engine.StartRequest{})
	if info, _ := f.wait(t, id); info.Errors != 1 {
		t.Fatalf("info = %+v", info)
	}
	r := resultByID(t, f, id)["ada"]
	if why, _ := r.Details["error"].(string); r.Status != runs.TestError || !strings.HasPrefix(why, "turn 2: ") {
		t.Errorf("first run: %s %q", r.Status, why)
	}
	if len(r.Transcript) < 2 {
		t.Errorf("the error's transcript = %+v; want the first turn", r.Transcript)
	}
	defs, err := f.runs.Definitions(context.Background(), id)
	if err != nil || len(defs.Tests) != 1 || len(defs.Tests[0].Turns) != 2 || defs.Tests[0].Turns[1].Expected == nil {
		t.Fatalf("the run's stored definitions = %+v, %v", defs, err)
	}
	broken.Store(false)
	if err := f.eng.Resume(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if info, _ := f.wait(t, id); info.Status != runs.StatusCompleted || info.Passed != 1 || !info.Complete {
		t.Fatalf("resumed: %+v", info)
	}
	if r := resultByID(t, f, id)["ada"]; r.Status != runs.TestPassed || len(turnsOf(t, r)) != 2 {
		t.Errorf("resumed: %s %v", r.Status, r.Details)
	}
}

// simulator answers the requests of a simulated user (model sim-*): the
// user asks "What is 2 + 2?" until it saw `after` answers, then writes
// [DONE] (never, when after is 0).
func simulator(after int) func(*llmtest.Request) *llmtest.Reply {
	return func(req *llmtest.Request) *llmtest.Reply {
		if !strings.HasPrefix(req.Model, "sim-") {
			return nil
		}
		answers := 0
		for _, m := range req.Messages[1:] {
			if m.Role == harness.RoleUser && m.Content != engine.SimulatorOpening {
				answers++
			}
		}
		if after > 0 && answers >= after {
			return &llmtest.Reply{Content: "Thanks, that is all. " + harness.DoneMarker}
		}
		return &llmtest.Reply{Content: "What is 2 + 2?"}
	}
}

// TestSimulatedUser: a model plays the user until it writes [DONE], or
// until max_turns when it never does; the evaluator scores the whole
// conversation; the simulator's calls are recorded (purpose simulator,
// the model the test, the run or neither names) and their tokens count
// in the result's.
func TestSimulatedUser(t *testing.T) {
	t.Parallel()
	sim := func(id, model string, maxTurns int) harness.Test {
		return harness.Test{ID: id, Expected: harness.Expected{Answer: "4", Type: "contains"},
			SimulatedUser: &harness.SimulatedUser{Persona: "[" + id + "] A pupil.", Goal: "Learn what 2 + 2 is.", MaxTurns: maxTurns, Model: model}}
	}
	d := conversationDefs(sim("done", "sim-done", 5), sim("never", "sim-never", 3), sim("run", "", 4))
	var (
		mu   sync.Mutex
		last *llmtest.Request // sim-never's last request
	)
	f := newFixture(t, fixtureOpts{snap: d.snap(), anyDB: true, llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		switch req.Model {
		case "sim-done", "sim-run":
			return simulator(2)(req)
		case "sim-never":
			mu.Lock()
			last = req
			mu.Unlock()
			return simulator(0)(req)
		}
		return nil
	}}})
	id := f.start(t, engine.StartRequest{SimulatorModel: "sim-run"})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.Passed != 3 {
		t.Fatalf("info = %+v", info)
	}
	if got, _ := f.runs.Run(context.Background(), id); got.Config == nil || got.Config.SimulatorModel != "sim-run" {
		t.Errorf("config = %+v", got.Config)
	}
	res := resultByID(t, f, id)
	for _, tc := range []struct {
		id, model, ended string
		turns            int
	}{{"done", "sim-done", "done", 2}, {"never", "sim-never", "max_turns", 3}, {"run", "sim-run", "done", 2}} {
		t.Run(tc.id, func(t *testing.T) {
			r := res[tc.id]
			su, _ := r.Details["simulated_user"].(map[string]any)
			if r.Status != runs.TestPassed || su == nil || su["turns"] != float64(tc.turns) || su["ended"] != tc.ended || su["model"] != tc.model {
				t.Fatalf("%s %v", r.Status, r.Details)
			}
			users, assistants := 0, 0
			for _, m := range r.Transcript {
				switch m.Role {
				case harness.RoleUser:
					users++
					if m.Content != "What is 2 + 2?" {
						t.Errorf("user message %q", m.Content)
					}
				case harness.RoleAssistant:
					assistants++
				}
			}
			if users != tc.turns || assistants != tc.turns {
				t.Errorf("transcript: %d user and %d assistant messages, want %d each", users, assistants, tc.turns)
			}
			var simCalls, simTokens, testTokens int
			for _, c := range r.Calls {
				switch c.Purpose {
				case runs.CallSimulator:
					simCalls++
					simTokens += c.PromptTokens + c.CompletionTokens
					if c.Model != tc.model {
						t.Errorf("simulator call to %q", c.Model)
					}
				case runs.CallTest:
					testTokens += c.PromptTokens + c.CompletionTokens
				}
			}
			wantSim := tc.turns + 1 // the last says [DONE]
			if tc.ended == "max_turns" {
				wantSim = tc.turns
			}
			if simCalls != wantSim || simTokens == 0 || r.PromptTokens+r.CompletionTokens != simTokens+testTokens {
				t.Errorf("%d simulator calls (%d tokens), result tokens %d+%d, test calls' %d", simCalls, simTokens,
					r.PromptTokens, r.CompletionTokens, testTokens)
			}
		})
	}
	// The simulated user sees the conversation from its side: the
	// target's answers as the other party's.
	rescored, err := f.eng.Rescore(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := f.wait(t, rescored); info.Passed != 3 {
		t.Errorf("rescore: %+v", info)
	}
	if r := resultByID(t, f, rescored)["never"]; r.Details["simulated_user"] == nil {
		t.Errorf("rescored: %v", r.Details)
	}
	mu.Lock()
	defer mu.Unlock()
	if last == nil || !strings.Contains(last.Messages[0].Content, "[never] A pupil.") || last.Messages[len(last.Messages)-1].Role != harness.RoleUser ||
		last.Messages[len(last.Messages)-1].Content != "The answer is 4." {
		t.Errorf("the simulator's last request = %+v", last)
	}
}
