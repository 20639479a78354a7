package server_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func weatherTool() map[string]any {
	return map[string]any{
		"id": "weather", "name": "Weather", "description": "Current weather",
		"function": map[string]any{
			"name": "get_weather", "description": "Weather in a city",
			"parameters": map[string]any{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required":   []any{"city"},
			},
		},
		"mock_response": map[string]any{"temp_c": 21.5, "sky": "clear", "alerts": []any{}},
	}
}

// jsonEqual compares two values by their JSON encodings.
func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		json.Unmarshal(b, &out)
		return out
	}
	return reflect.DeepEqual(norm(got), norm(want))
}

func TestTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("list empty", func(t *testing.T) {
		r := must(t, e.get("/api/settings/tools"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"tools":[],"total":0}` {
			t.Fatalf("body %s", got)
		}
	})

	t.Run("create returns 201 with the record", func(t *testing.T) {
		body := weatherTool()
		got := must(t, e.post("/api/settings/tools", body), http.StatusCreated).object(t)
		if !jsonEqual(t, got, body) {
			t.Fatalf("record %v\nwant   %v", got, body)
		}
		if !strings.Contains(e.readFile("tools/weather.yaml"), "get_weather") {
			t.Errorf("tools/weather.yaml: %s", e.readFile("tools/weather.yaml"))
		}
	})

	t.Run("name defaults to the function's", func(t *testing.T) {
		got := must(t, e.post("/api/settings/tools", map[string]any{
			"id": "ping", "function": map[string]any{"name": "ping"}, "unknown": true,
		}), http.StatusCreated).object(t)
		if got["name"] != "ping" {
			t.Fatalf("name %v, want ping", got["name"])
		}
	})

	t.Run("mock responses of any JSON type", func(t *testing.T) {
		for i, mock := range []any{"plain text", []any{1.0, "two", map[string]any{"three": 3.0}}, 42.0, true, map[string]any{"nested": map[string]any{"deep": []any{}}}} {
			id := "mock" + string(rune('a'+i))
			must(t, e.post("/api/settings/tools", map[string]any{
				"id": id, "function": map[string]any{"name": id}, "mock_response": mock,
			}), http.StatusCreated)
			got := must(t, e.get("/api/settings/tools/"+id), http.StatusOK).object(t)
			if !jsonEqual(t, got["mock_response"], mock) {
				t.Errorf("%s: mock_response %#v, want %#v", id, got["mock_response"], mock)
			}
		}
	})

	t.Run("get one", func(t *testing.T) {
		got := must(t, e.get("/api/settings/tools/weather"), http.StatusOK).object(t)
		if !jsonEqual(t, got, weatherTool()) {
			t.Fatalf("record %v", got)
		}
	})

	t.Run("list", func(t *testing.T) {
		var list struct {
			Tools []map[string]any `json:"tools"`
		}
		must(t, e.get("/api/settings/tools"), http.StatusOK).decode(t, &list)
		if got := ids(list.Tools); !slices.Equal(got, []string{"mocka", "mockb", "mockc", "mockd", "mocke", "ping", "weather"}) {
			t.Fatalf("ids %v", got)
		}
		for _, tool := range list.Tools {
			for _, k := range []string{"id", "name", "description", "function"} {
				if _, ok := tool[k]; !ok {
					t.Errorf("tool %v has no %q", tool["id"], k)
				}
			}
		}
	})

	t.Run("put changes only the fields present", func(t *testing.T) {
		got := must(t, e.put("/api/settings/tools/weather", map[string]any{"description": "Now"}), http.StatusOK).object(t)
		want := weatherTool()
		want["description"] = "Now"
		if !jsonEqual(t, got, want) {
			t.Fatalf("record %v\nwant   %v", got, want)
		}
		got = must(t, e.put("/api/settings/tools/weather", map[string]any{"id": "weather", "mock_response": map[string]any{"temp_c": 3}}), http.StatusOK).object(t)
		want["mock_response"] = map[string]any{"temp_c": 3}
		if !jsonEqual(t, got, want) {
			t.Fatalf("record %v\nwant   %v", got, want)
		}
		if again := must(t, e.get("/api/settings/tools/weather"), http.StatusOK).object(t); !jsonEqual(t, again, want) {
			t.Fatalf("after GET: %v", again)
		}
		// null clears the mock response.
		got = must(t, e.put("/api/settings/tools/weather", rawBody(`{"mock_response": null}`)), http.StatusOK).object(t)
		delete(want, "mock_response")
		if !jsonEqual(t, got, want) {
			t.Fatalf("after null: %v\nwant        %v", got, want)
		}
	})

	t.Run("delete", func(t *testing.T) {
		r := must(t, e.del("/api/settings/tools/ping"), http.StatusOK)
		if got := strings.TrimSpace(string(r.body)); got != `{"success":true}` {
			t.Fatalf("body %s", got)
		}
		mustProblem(t, e.get("/api/settings/tools/ping"), http.StatusNotFound)
		if e.exists("tools/ping.yaml") {
			t.Fatalf("tools/ping.yaml still on disk")
		}
	})
}

func TestToolFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fixture()
	// "calc" is listed by test m1; "lvl" by the level logic/1.
	must(t, e.put("/api/settings/tests/m1", map[string]any{"tools": []string{"calc"}}), http.StatusOK)
	must(t, e.post("/api/settings/tools", map[string]any{"id": "lvl", "function": map[string]any{"name": "lvl"}}), http.StatusCreated)
	must(t, e.put("/api/settings/levels/logic/1", map[string]any{"tools": []string{"lvl"}}), http.StatusOK)

	const list = "/api/settings/tools"
	fn := func(name string, params any) map[string]any {
		f := map[string]any{"name": name}
		if params != nil {
			f["parameters"] = params
		}
		return f
	}
	runFailures(t, e, []failCase{
		{"create malformed JSON", "POST", list, rawBody(`{"id": "x", "function": {"name": "x"}`), 400, nil},
		{"create wrong field type", "POST", list, map[string]any{"id": "x", "function": "x"}, 422, []string{"body.function"}},
		{"create without id", "POST", list, map[string]any{"function": fn("x", nil)}, 422, []string{"body.id"}},
		{"create bad id", "POST", list, map[string]any{"id": "x y", "function": fn("x", nil)}, 422, []string{"body.id"}},
		{"create without function", "POST", list, map[string]any{"id": "x", "name": "X"}, 422, []string{"body.function.name"}},
		{"create bad function name", "POST", list, map[string]any{"id": "x", "function": fn("get weather", nil)}, 422, []string{"body.function.name"}},
		{"create parameters not an object schema", "POST", list, map[string]any{"id": "x", "function": fn("x", map[string]any{"type": "array"})}, 422, []string{"body.function.parameters.type"}},
		{"create required names no property", "POST", list, map[string]any{"id": "x", "function": fn("x", map[string]any{
			"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "required": []string{"b"},
		})}, 422, []string{"body.function.parameters.required[0]"}},
		{"create property not a schema", "POST", list, map[string]any{"id": "x", "function": fn("x", map[string]any{
			"type": "object", "properties": map[string]any{"a": "string"},
		})}, 422, []string{"body.function.parameters.properties.a"}},
		{"create duplicate", "POST", list, map[string]any{"id": "calc", "function": fn("x", nil)}, 409, nil},
		{"create body over 1 MiB", "POST", list, map[string]any{"id": "x", "function": fn("x", nil), "mock_response": strings.Repeat("m", 1<<20)}, 413, nil},
		{"get unknown", "GET", list + "/nope", nil, 404, nil},
		{"put unknown", "PUT", list + "/nope", map[string]any{"name": "X"}, 404, nil},
		{"put malformed JSON", "PUT", list + "/calc", rawBody(`{"name": "X"]`), 400, nil},
		{"put id differs from path", "PUT", list + "/calc", map[string]any{"id": "other"}, 422, []string{"body.id"}},
		{"put bad function name", "PUT", list + "/calc", map[string]any{"function": fn("", nil)}, 422, []string{"body.function.name"}},
		{"delete unknown", "DELETE", list + "/nope", nil, 404, nil},
		{"delete in use by a test", "DELETE", list + "/calc", nil, 409, nil},
		{"delete in use by a level", "DELETE", list + "/lvl", nil, 409, nil},
	})
	t.Run("a 409 names the users", func(t *testing.T) {
		if p := mustProblem(t, e.del(list+"/calc"), http.StatusConflict); !strings.Contains(p.Detail, "test m1") {
			t.Errorf("detail %q does not name test m1", p.Detail)
		}
		if p := mustProblem(t, e.del(list+"/lvl"), http.StatusConflict); !strings.Contains(p.Detail, "level logic/1") {
			t.Errorf("detail %q does not name level logic/1", p.Detail)
		}
	})
	t.Run("delete after its users are gone", func(t *testing.T) {
		must(t, e.put("/api/settings/tests/m1", map[string]any{"tools": []string{}}), http.StatusOK)
		must(t, e.del(list+"/calc"), http.StatusOK)
	})
}
