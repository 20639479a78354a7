package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
)

// listPage is a paged list answer: the records under key, and total.
type listPage struct {
	ids   []string
	total int
}

func (e *testEnv) listPage(t *testing.T, path, key string) listPage {
	t.Helper()
	r := must(t, e.get(path), http.StatusOK)
	var body map[string]any
	r.decode(t, &body)
	total, ok := body["total"].(float64)
	if !ok {
		t.Fatalf("%s: no total in %s", path, r.body)
	}
	list, ok := body[key].([]any)
	if !ok {
		t.Fatalf("%s: no %s list in %s", path, key, r.body)
	}
	out := listPage{ids: []string{}, total: int(total)}
	for _, x := range list {
		out.ids = append(out.ids, x.(map[string]any)["id"].(string))
	}
	return out
}

// TestListPaging pages every list of definitions (and the agents): limit
// and offset select a window of the list's order, total counts every
// record, and a request without them gets the whole list, as before.
func TestListPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var domains, evaluators, tools, agents []string
	for i := range 5 {
		id := fmt.Sprintf("r%d", i)
		must(t, e.post("/api/settings/evaluators", map[string]any{"id": id, "name": "E " + id}), http.StatusCreated)
		must(t, e.post("/api/settings/tools", map[string]any{"id": id,
			"function": map[string]any{"name": "f_" + id}}), http.StatusCreated)
		must(t, e.post("/api/settings/domains", map[string]any{"id": id, "name": "D " + id}), http.StatusCreated)
		must(t, e.post("/api/agents", map[string]any{"id": "a_" + id, "name": "A " + id}), http.StatusCreated)
		domains, evaluators, tools = append(domains, id), append(evaluators, id), append(tools, id)
		agents = append(agents, "a_"+id)
	}
	lists := []struct {
		path, key string
		all       []string
	}{
		{"/api/settings/domains", "domains", domains},
		{"/api/settings/evaluators", "evaluators", evaluators},
		{"/api/settings/tools", "tools", tools},
		{"/api/agents", "agents", agents},
	}
	for _, l := range lists {
		t.Run(l.key, func(t *testing.T) {
			for _, tc := range []struct {
				query string
				want  []string
			}{
				{"", l.all},
				{"?limit=2", l.all[:2]},
				{"?limit=2&offset=1", l.all[1:3]},
				{"?offset=3", l.all[3:]},
				{"?limit=1000&offset=4", l.all[4:]},
				{"?offset=5", nil},
				{"?offset=99&limit=3", nil},
			} {
				got := e.listPage(t, l.path+tc.query, l.key)
				if !slices.Equal(got.ids, append([]string{}, tc.want...)) || got.total != len(l.all) {
					t.Errorf("%s: %v total %d, want %v total %d", tc.query, got.ids, got.total, tc.want, len(l.all))
				}
			}
		})
	}

	t.Run("tests: paging within the filters", func(t *testing.T) {
		var level1 []string
		for i := range 6 {
			id, level := fmt.Sprintf("t%d", i), 1+i%2
			must(t, e.post("/api/settings/tests", map[string]any{"id": id, "domain_id": "r0", "level": level,
				"prompt": "Q " + id, "expected": map[string]any{"answer": "x"}}), http.StatusCreated)
			if level == 1 {
				level1 = append(level1, id)
			}
		}
		must(t, e.post("/api/settings/tests", map[string]any{"id": "other", "domain_id": "r1", "level": 1,
			"prompt": "Q", "expected": map[string]any{"answer": "x"}}), http.StatusCreated)
		for _, tc := range []struct {
			query string
			want  []string
			total int
		}{
			{"", []string{"t0", "t2", "t4", "t1", "t3", "t5", "other"}, 7},
			{"?limit=3&offset=5", []string{"t5", "other"}, 7},
			{"?domain=r0&level=1", level1, 3},
			{"?domain=r0&level=1&limit=1&offset=1", level1[1:2], 3},
			{"?level=1&offset=2", []string{"t4", "other"}, 4},
			{"?domain=nope&limit=10", nil, 0},
		} {
			got := e.listPage(t, "/api/settings/tests"+tc.query, "tests")
			if !slices.Equal(got.ids, append([]string{}, tc.want...)) || got.total != tc.total {
				t.Errorf("%s: %v total %d, want %v total %d", tc.query, got.ids, got.total, tc.want, tc.total)
			}
		}
	})

	t.Run("bad values are 422 naming the parameter", func(t *testing.T) {
		for _, path := range []string{"/api/settings/domains", "/api/settings/tests", "/api/settings/evaluators",
			"/api/settings/tools", "/api/agents"} {
			for _, tc := range []struct{ query, location string }{
				{"limit=0", "query.limit"},
				{"limit=1001", "query.limit"},
				{"limit=-3", "query.limit"},
				{"limit=ten", "query.limit"},
				{"offset=-1", "query.offset"},
				{"offset=x", "query.offset"},
			} {
				mustProblem(t, e.get(path+"?"+tc.query), http.StatusUnprocessableEntity, tc.location)
			}
		}
	})
}
