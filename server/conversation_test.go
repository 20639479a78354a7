package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestConversationTestsAPI: a test with turns or a simulated user is
// created, read and updated through the tests API; a bad one is a 422
// problem naming the field, and nothing is stored.
func TestConversationTestsAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	turns := []map[string]any{
		{"user": "My name is Ada."},
		{"user": "What is my name?", "expected": map[string]any{"answer": "Ada", "type": "contains"}},
	}
	sim := map[string]any{"persona": "A pupil.", "goal": "Learn what 2 + 2 is.", "max_turns": 3}
	body := func(kv ...any) map[string]any {
		b := map[string]any{"domain_id": "math", "level": 1}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	t.Run("create and get with turns", func(t *testing.T) {
		got := must(t, e.post("/api/settings/tests", body("id", "chat1", "turns", turns)), http.StatusCreated).object(t)
		if got["prompt"] != "" || len(got["turns"].([]any)) != 2 {
			t.Fatalf("created %v", got)
		}
		read := must(t, e.get("/api/settings/tests/chat1"), http.StatusOK).object(t)
		b, _ := json.Marshal(read["turns"])
		if string(b) != `[{"user":"My name is Ada."},{"expected":{"answer":"Ada","type":"contains"},"user":"What is my name?"}]` {
			t.Errorf("turns read back: %s", b)
		}
		if b, err := os.ReadFile(filepath.Join(e.defsDir, "domains", "math", "level-1.yaml")); err != nil || !strings.Contains(string(b), "turns:") {
			t.Errorf("the level file has no turns: %v\n%s", err, b)
		}
	})
	t.Run("create with a simulated user, update it", func(t *testing.T) {
		must(t, e.post("/api/settings/tests", body("id", "sim1", "simulated_user", sim)), http.StatusCreated)
		upd := map[string]any{"simulated_user": map[string]any{"persona": "A pupil.", "goal": "Learn 3 + 3.", "max_turns": 5, "model": "sim-model"}}
		got := must(t, e.put("/api/settings/tests/sim1", upd), http.StatusOK).object(t)
		su, _ := got["simulated_user"].(map[string]any)
		if su["goal"] != "Learn 3 + 3." || su["max_turns"] != 5.0 || su["model"] != "sim-model" {
			t.Errorf("updated %v", got)
		}
		// From a simulated user to a prompt: the one cleared, the other set.
		got = must(t, e.put("/api/settings/tests/sim1", map[string]any{"simulated_user": nil, "prompt": "What is 3 + 3?",
			"expected": map[string]any{"answer": "6"}}), http.StatusOK).object(t)
		if got["simulated_user"] != nil || got["prompt"] != "What is 3 + 3?" {
			t.Errorf("switched to a prompt: %v", got)
		}
	})
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"turns and prompt", body("turns", turns, "prompt", "Hi"), "turns"},
		{"empty turns", body("turns", []any{}), "turns"},
		{"a turn without user", body("turns", []any{map[string]any{"expected": map[string]any{"answer": "x"}}}), "turns[0].user"},
		{"turns and simulated_user", body("turns", turns, "simulated_user", sim), "turns"},
		{"no scored turn", body("turns", []any{map[string]any{"user": "Hi"}}), "turns"},
		{"simulated user and prompt", body("simulated_user", sim, "prompt", "Hi"), "simulated_user"},
		{"simulated user without a goal", body("simulated_user", map[string]any{"persona": "p", "max_turns": 2}), "simulated_user.goal"},
		{"max_turns out of range", body("simulated_user", map[string]any{"persona": "p", "goal": "g", "max_turns": 51}), "simulated_user.max_turns"},
		{"nothing to ask", body(), "prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.state()
			mustProblem(t, e.post("/api/settings/tests", tc.body), http.StatusUnprocessableEntity, "body."+tc.field)
			e.assertUnchanged(t, before)
		})
	}
	t.Run("update: turns on a test with a prompt", func(t *testing.T) {
		mustProblem(t, e.put("/api/settings/tests/m1", map[string]any{"turns": turns}), http.StatusUnprocessableEntity, "body.turns")
		got := must(t, e.put("/api/settings/tests/m1", map[string]any{"turns": turns, "prompt": "", "expected": map[string]any{"answer": ""}}), http.StatusOK).object(t)
		if got["prompt"] != "" || len(got["turns"].([]any)) != 2 {
			t.Errorf("m1 as a multi-turn test: %v", got)
		}
	})
}

var askedName = regexp.MustCompile(`My name is (\w+)`)

// TestConversationRun: a run through the server with a multi-turn test
// and a simulated user (played by the --simulator-model of the server's
// engine): the results carry details.turns and details.simulated_user,
// the transcript every turn, and the run's definitions keep the turns.
func TestConversationRun(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true, simulatorModel: "sim-model", files: map[string]string{
		"evaluators/whole.yaml":    "id: whole\nname: Whole answer\ntype: regex\n",
		"domains/chat/domain.yaml": "id: chat\nname: Chat\nenabled: true\nevaluator_id: whole\n",
		"domains/chat/level-1.yaml": `tests:
  - id: ada
    turns:
      - user: My name is Ada.
      - user: What is my name?
        expected: {answer: Ada, type: contains}
  - id: pupil
    expected: {answer: "4", type: contains}
    simulated_user:
      persona: A pupil.
      goal: Learn what 2 + 2 is.
      max_turns: 2
`}, llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		if req.Model == "sim-model" {
			return &llmtest.Reply{Content: "What is 2 + 2?"}
		}
		if strings.Contains(req.LastUser(), "What is my name?") {
			for _, m := range req.Messages {
				if g := askedName.FindStringSubmatch(m.Content); m.Role == harness.RoleUser && g != nil {
					return &llmtest.Reply{Content: "You are " + g[1] + "."}
				}
			}
		}
		return nil
	}}})
	id := e.runToEnd(map[string]any{"model_name": "chat"})
	info := e.runInfo(id)
	if info.Status != "completed" || info.Passed != 2 {
		t.Fatalf("run %+v", info)
	}
	var page struct {
		Results []struct {
			TestID  string         `json:"test_id"`
			Status  string         `json:"status"`
			Details map[string]any `json:"details"`
		} `json:"results"`
	}
	must(t, e.get("/api/run/"+id+"/results"), http.StatusOK).decode(t, &page)
	byID := map[string]map[string]any{}
	for _, r := range page.Results {
		byID[r.TestID] = r.Details
	}
	b, _ := json.Marshal(byID["ada"]["turns"])
	if !strings.HasPrefix(string(b), `[{"score":null,"status":null,"turn":1},{"details":`) || !strings.HasSuffix(string(b), `"score":1,"status":"passed","turn":2}]`) {
		t.Errorf("ada details.turns = %s", b)
	}
	su, _ := byID["pupil"]["simulated_user"].(map[string]any)
	if su["turns"] != 2.0 || su["ended"] != "max_turns" || su["model"] != "sim-model" {
		t.Errorf("pupil details.simulated_user = %v", byID["pupil"])
	}
	export := string(must(t, e.get("/api/run/"+id+"/export"), http.StatusOK).body)
	if !strings.Contains(export, `"turns"`) || !strings.Contains(export, `"simulated_user"`) {
		t.Errorf("the export lacks details.turns or details.simulated_user:\n%.2000s", export)
	}
	defs := string(must(t, e.get("/api/run/"+id+"/definitions"), http.StatusOK).body)
	if !strings.Contains(defs, `"turns"`) || !strings.Contains(defs, `"What is my name?"`) {
		t.Errorf("the run's definitions lack the turns:\n%.2000s", defs)
	}
}

// TestStartSimulatorModel: the start body's simulator_model plays the
// simulated users of that run, over the server's --simulator-model, and
// the run's config records it.
func TestStartSimulatorModel(t *testing.T) {
	t.Parallel()
	var byBody atomic.Int64
	e := newEngineEnv(t, engineConfig{noExamples: true, simulatorModel: "sim-model", files: map[string]string{
		"evaluators/whole.yaml":    "id: whole\nname: Whole answer\ntype: regex\n",
		"domains/chat/domain.yaml": "id: chat\nname: Chat\nenabled: true\nevaluator_id: whole\n",
		"domains/chat/level-1.yaml": "tests:\n  - id: pupil\n    expected: {answer: \"4\", type: contains}\n" +
			"    simulated_user:\n      persona: A pupil.\n      goal: Learn what 2 + 2 is.\n      max_turns: 1\n",
	}, llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		switch req.Model {
		case "sim-from-body":
			byBody.Add(1)
			return &llmtest.Reply{Content: "What is 2 + 2?"}
		case "sim-model":
			return &llmtest.Reply{Content: "What is 2 + 2?"}
		}
		return nil
	}}})
	id := e.runToEnd(map[string]any{"simulator_model": "sim-from-body"})
	var out struct {
		RunInfo struct {
			Config struct {
				SimulatorModel string `json:"simulator_model"`
			} `json:"config"`
		} `json:"run_info"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &out)
	if got := out.RunInfo.Config.SimulatorModel; got != "sim-from-body" || byBody.Load() != 1 {
		t.Errorf("config simulator_model %q, the body's model asked %d times; want it recorded and asked once", got, byBody.Load())
	}
}
