package server_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestExpectedTrajectoryWritten: expected.trajectory is written and read
// back through the tests API, changed and cleared by an update; each bad
// trajectory is a 422 naming its field.
func TestExpectedTrajectoryWritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	test := func(id string, trajectory any) map[string]any {
		return map[string]any{"id": id, "domain_id": "math", "level": 1, "prompt": "Plan the trip.",
			"expected": map[string]any{"answer": "get_weather", "type": "tool_call", "trajectory": trajectory}}
	}
	for _, tc := range []struct {
		name       string
		trajectory any
		where      string
	}{
		{"unknown mode", map[string]any{"tools": []string{"a"}, "mode": "strict"}, "body.expected.trajectory.mode"},
		{"no mode", map[string]any{"tools": []string{"a"}}, "body.expected.trajectory.mode"},
		{"no tools", map[string]any{"mode": "exact"}, "body.expected.trajectory.tools"},
		{"empty tools", map[string]any{"tools": []string{}, "mode": "exact"}, "body.expected.trajectory.tools"},
		{"bad function name", map[string]any{"tools": []string{"ok", "get weather"}, "mode": "in_order"}, "body.expected.trajectory.tools[1]"},
		{"more arguments than tools", map[string]any{"tools": []string{"a"}, "mode": "exact",
			"arguments": []any{map[string]any{"x": 1}, map[string]any{"y": 2}}}, "body.expected.trajectory.arguments"},
		{"arguments not objects", map[string]any{"tools": []string{"a"}, "mode": "exact", "arguments": []any{"x"}}, "body.expected.trajectory.arguments[0]"},
		{"max_steps zero", map[string]any{"tools": []string{"a"}, "mode": "subset", "max_steps": 0}, "body.expected.trajectory.max_steps"},
		{"max_steps negative", map[string]any{"tools": []string{"a"}, "mode": "subset", "max_steps": -3}, "body.expected.trajectory.max_steps"},
		{"max_steps below the calls required", map[string]any{"tools": []string{"a", "b", "c"}, "mode": "in_order", "max_steps": 2}, "body.expected.trajectory.max_steps"},
		{"not an object", "exact", "body.expected.trajectory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustProblem(t, e.post("/api/settings/tests", test("tr-"+strings.ReplaceAll(tc.name, " ", "-"), tc.trajectory)),
				http.StatusUnprocessableEntity, tc.where)
		})
	}

	want := map[string]any{"tools": []any{"search", "book"}, "mode": "in_order",
		"arguments": []any{map[string]any{"q": "Paris"}}, "max_steps": 4.0}
	got := must(t, e.post("/api/settings/tests", test("tr1", want)), http.StatusCreated).object(t)
	if exp, _ := got["expected"].(map[string]any); !reflect.DeepEqual(exp["trajectory"], want) {
		t.Errorf("created: trajectory %v, want %v", exp["trajectory"], want)
	}
	got = must(t, e.get("/api/settings/tests/tr1"), http.StatusOK).object(t)
	if exp, _ := got["expected"].(map[string]any); !reflect.DeepEqual(exp["trajectory"], want) {
		t.Errorf("read back: trajectory %v, want %v", exp["trajectory"], want)
	}
	// The export carries it, and an import into another server gives the
	// same export and the same definition files.
	export := must(t, e.get("/api/settings/export"), http.StatusOK)
	if !strings.Contains(string(export.body), `"trajectory":{"tools":["search","book"],"mode":"in_order"`) {
		t.Errorf("export without the trajectory: %s", export.body)
	}
	var body map[string]any
	export.decode(t, &body)
	body["merge"] = false
	dst := newEnv(t)
	must(t, dst.post("/api/settings/import", body), http.StatusOK)
	if got := must(t, dst.get("/api/settings/export"), http.StatusOK); string(got.body) != string(export.body) {
		t.Errorf("export after import differs:\nsource %s\nimport %s", export.body, got.body)
	}
	for f := range e.files() {
		if e.readFile(f) != dst.readFile(f) {
			t.Errorf("%s:\nsource:\n%s\nimport:\n%s", f, e.readFile(f), dst.readFile(f))
		}
	}

	mustProblem(t, e.put("/api/settings/tests/tr1", map[string]any{"expected": map[string]any{
		"trajectory": map[string]any{"tools": []string{"x"}, "mode": "sometimes"}}}),
		http.StatusUnprocessableEntity, "body.expected.trajectory.mode")
	// An update replaces the trajectory whole.
	got = must(t, e.put("/api/settings/tests/tr1", map[string]any{"expected": map[string]any{
		"trajectory": map[string]any{"tools": []string{"search"}, "mode": "subset"}}}), http.StatusOK).object(t)
	if exp, _ := got["expected"].(map[string]any); fmt.Sprint(exp["trajectory"]) != "map[mode:subset tools:[search]]" {
		t.Errorf("replaced: trajectory %v", exp["trajectory"])
	}
	// null clears it: the key is then absent.
	got = must(t, e.put("/api/settings/tests/tr1", map[string]any{"expected": map[string]any{"trajectory": nil}}), http.StatusOK).object(t)
	if exp, _ := got["expected"].(map[string]any); exp["trajectory"] != nil || exp["answer"] != "get_weather" {
		t.Errorf("cleared: expected %v", got["expected"])
	}
}
