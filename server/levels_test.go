package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func TestLevels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()

	t.Run("a level without a file has the default configuration", func(t *testing.T) {
		got := must(t, e.get("/api/settings/levels/math/7"), http.StatusOK).object(t)
		want := map[string]any{"domain_id": "math", "level": 7.0, "system_prompt": "", "system_prompt_mode": "append", "pass_threshold": 0.5}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if tools, ok := got["tools"].([]any); !ok || len(tools) != 0 {
			t.Errorf("tools = %v, want []", got["tools"])
		}
		if e.exists("domains/math/level-7.yaml") {
			t.Errorf("a GET wrote level-7.yaml")
		}
	})

	t.Run("a level made by creating tests", func(t *testing.T) {
		got := must(t, e.get("/api/settings/levels/math/1"), http.StatusOK).object(t)
		if got["system_prompt_mode"] != "append" || got["level"] != 1.0 || got["domain_id"] != "math" {
			t.Fatalf("level %v", got)
		}
	})

	t.Run("put returns the record and keeps the level's tests", func(t *testing.T) {
		r := must(t, e.put("/api/settings/levels/math/1", map[string]any{
			"system_prompt": "Show your work.", "system_prompt_mode": "prepend",
		}), http.StatusOK)
		got := r.object(t)
		want := map[string]any{"domain_id": "math", "level": 1.0, "system_prompt": "Show your work.", "system_prompt_mode": "prepend", "pass_threshold": 0.5}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		again := must(t, e.get("/api/settings/levels/math/1"), http.StatusOK).object(t)
		for k, v := range want {
			if again[k] != v {
				t.Errorf("after GET: %s = %v, want %v", k, again[k], v)
			}
		}
		file := e.readFile("domains/math/level-1.yaml")
		for _, s := range []string{"Show your work.", "prepend", "m1", "m2"} {
			if !strings.Contains(file, s) {
				t.Errorf("level-1.yaml lacks %q:\n%s", s, file)
			}
		}
		var tests struct {
			Tests []map[string]any `json:"tests"`
		}
		must(t, e.get("/api/settings/tests?domain=math&level=1"), http.StatusOK).decode(t, &tests)
		if got := ids(tests.Tests); !slices.Equal(got, []string{"m1", "m2"}) {
			t.Errorf("tests of math/1 after PUT: %v", got)
		}
	})

	t.Run("put changes only the fields present", func(t *testing.T) {
		got := must(t, e.put("/api/settings/levels/math/1", map[string]any{
			"pass_threshold": 0.75, "tools": []string{"calc"}, "unknown_field": 1,
		}), http.StatusOK).object(t)
		if got["system_prompt"] != "Show your work." || got["system_prompt_mode"] != "prepend" || got["pass_threshold"] != 0.75 {
			t.Fatalf("level %v", got)
		}
		if tools, _ := got["tools"].([]any); len(tools) != 1 || tools[0] != "calc" {
			t.Fatalf("tools %v, want [calc]", got["tools"])
		}
	})

	t.Run("put creates a level file", func(t *testing.T) {
		got := must(t, e.put("/api/settings/levels/logic/0", map[string]any{"system_prompt": "Only this.", "system_prompt_mode": "replace"}), http.StatusOK).object(t)
		if got["system_prompt_mode"] != "replace" || got["level"] != 0.0 {
			t.Fatalf("level %v", got)
		}
		if !e.exists("domains/logic/level-0.yaml") {
			t.Fatalf("level-0.yaml not written")
		}
	})

	t.Run("every mode is accepted", func(t *testing.T) {
		for _, mode := range []string{"append", "prepend", "replace"} {
			got := must(t, e.put("/api/settings/levels/logic/4", map[string]any{"system_prompt_mode": mode}), http.StatusOK).object(t)
			if got["system_prompt_mode"] != mode {
				t.Errorf("mode %v, want %s", got["system_prompt_mode"], mode)
			}
		}
	})
}

func TestLevelFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	const base = "/api/settings/levels"
	runFailures(t, e, []failCase{
		{"get unknown domain", "GET", base + "/nope/1", nil, 404, nil},
		{"get level not a number", "GET", base + "/math/abc", nil, 422, []string{"path.level"}},
		{"get negative level", "GET", base + "/math/-1", nil, 422, []string{"path.level"}},
		{"get level over the maximum", "GET", base + "/math/1001", nil, 422, []string{"path.level"}},
		{"put unknown domain", "PUT", base + "/nope/1", map[string]any{"system_prompt": "x"}, 404, nil},
		{"put level not a number", "PUT", base + "/math/one", map[string]any{"system_prompt": "x"}, 422, []string{"path.level"}},
		{"put negative level", "PUT", base + "/math/-1", map[string]any{"system_prompt": "x"}, 422, []string{"path.level"}},
		{"put level over the maximum", "PUT", base + "/math/5000", map[string]any{"system_prompt": "x"}, 422, []string{"path.level"}},
		{"put malformed JSON", "PUT", base + "/math/1", rawBody(`{"system_prompt": "x"`), 400, nil},
		{"put bad mode", "PUT", base + "/math/1", map[string]any{"system_prompt_mode": "sideways"}, 422, []string{"body.system_prompt_mode"}},
		{"put mode of wrong type", "PUT", base + "/math/1", map[string]any{"system_prompt_mode": 3}, 422, []string{"body.system_prompt_mode"}},
		{"put pass threshold over 1", "PUT", base + "/math/1", map[string]any{"pass_threshold": 1.5}, 422, []string{"body.pass_threshold"}},
		{"put unknown tool", "PUT", base + "/math/1", map[string]any{"tools": []string{"nope"}}, 422, []string{"body.tools[0]"}},
		{"put tool listed twice", "PUT", base + "/math/1", map[string]any{"tools": []string{"calc", "calc"}}, 422, []string{"body.tools[1]"}},
		{"put body over 1 MiB", "PUT", base + "/math/1", rawBody(`{"system_prompt":"` + strings.Repeat("x", 1<<20) + `"}`), 413, nil},
	})
}

// TestLevelBoundsMatchHarness keeps the path parameter's bounds (struct
// tags in levels.go) in step with harness.MaxLevel.
func TestLevelBoundsMatchHarness(t *testing.T) {
	t.Parallel()
	if harness.MaxLevel != 1000 {
		t.Fatalf("harness.MaxLevel is %d: update the maximum of the level path parameter in levels.go", harness.MaxLevel)
	}
	e := newEnv(t)
	must(t, e.post("/api/settings/domains", map[string]any{"id": "d", "name": "D"}), http.StatusCreated)
	must(t, e.put("/api/settings/levels/d/1000", map[string]any{"system_prompt": "top"}), http.StatusOK)
	must(t, e.get("/api/settings/levels/d/1000"), http.StatusOK)
	must(t, e.get("/api/settings/levels/d/0"), http.StatusOK)
}
