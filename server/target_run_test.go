package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
)

// TestStartTargetRun: a run with target_id sends every test to the
// black-box target, records it in the run's config (its ${VAR}
// references as written), and a bad target_id is a 422 naming it.
func TestStartTargetRun(t *testing.T) {
	// Not parallel: it sets an environment variable the target names.
	sum := regexp.MustCompile(`(\d+) \+ (\d+)`)
	box := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Q string `json:"q"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		answer := "no idea"
		if m := sum.FindStringSubmatch(in.Q); m != nil {
			a, _ := strconv.Atoi(m[1])
			b, _ := strconv.Atoi(m[2])
			answer = fmt.Sprintf("The answer is %d", a+b)
		}
		json.NewEncoder(w).Encode(map[string]any{"answer": answer})
	}))
	t.Cleanup(box.Close)
	t.Setenv("GAUNTLET_TEST_BOX_PATH", "ask")
	e := newEngineEnv(t, engineConfig{})
	e.writeFile("targets/box.yaml", "id: box\nurl: "+box.URL+"/${GAUNTLET_TEST_BOX_PATH}\nbody:\n  q: '{{prompt}}'\nresponse: /answer\n")
	e.writeFile("targets/unset.yaml", "id: unset\nurl: "+box.URL+"/${GAUNTLET_TEST_NEVER_SET}\nbody:\n  q: '{{prompt}}'\nresponse: /answer\n")
	must(t, e.post("/api/settings/sync", nil), http.StatusOK)

	for _, tc := range []struct {
		name  string
		body  map[string]any
		where string
	}{
		{"unknown target", map[string]any{"target_id": "nobody"}, "body.target_id"},
		{"target and model", map[string]any{"target_id": "box", "model": "other"}, "body.model"},
		{"target and cache", map[string]any{"target_id": "box", "cache": true}, "body.cache"},
		{"a variable not set", map[string]any{"target_id": "unset"}, "body.target_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustProblem(t, e.post("/api/start", tc.body), http.StatusUnprocessableEntity, tc.where)
		})
	}

	id := e.runToEnd(map[string]any{"target_id": "box", "domains": []string{"arithmetic"}})
	var out struct {
		RunInfo struct {
			ModelName string `json:"model_name"`
			Passed    int    `json:"passed"`
			Failed    int    `json:"failed"`
			Errors    int    `json:"errors"`
			Config    struct {
				TargetID string `json:"target_id"`
				Target   struct {
					URL string `json:"url"`
				} `json:"target"`
			} `json:"config"`
		} `json:"run_info"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &out)
	ri := out.RunInfo
	if ri.ModelName != "box" || ri.Config.TargetID != "box" || ri.Config.Target.URL != box.URL+"/${GAUNTLET_TEST_BOX_PATH}" {
		t.Errorf("run info %+v; want the target recorded with its ${VAR} as written", ri)
	}
	if ri.Passed == 0 || ri.Errors != 0 {
		t.Errorf("run %+v; want the arithmetic tests answered by the target", ri)
	}
	if n := e.mock.Stats().ChatCompletions; n != 0 {
		t.Errorf("the model endpoint got %d requests; the target answers", n)
	}
}
