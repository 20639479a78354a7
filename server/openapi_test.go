package server_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// specEndpoints are the endpoints of the service specification: Domains, Levels, Tests,
// Evaluators, Tools, Import/export/sync, Agents, Agent tools, Agent
// knowledge base, Agent channels, Agent chat, Evaluation control (with the
// two config endpoints), Results and history, GET /api/history, and the
// webhook channel's endpoint, and the run definitions and resume
// endpoints, as "METHOD path" in OpenAPI path syntax.
var specEndpoints = []string{
	"GET /api/settings/domains",
	"GET /api/settings/domains/{domain_id}",
	"POST /api/settings/domains",
	"PUT /api/settings/domains/{domain_id}",
	"DELETE /api/settings/domains/{domain_id}",

	"GET /api/settings/levels/{domain_id}/{level}",
	"PUT /api/settings/levels/{domain_id}/{level}",

	"GET /api/settings/tests",
	"GET /api/settings/tests/{test_id}",
	"POST /api/settings/tests",
	"PUT /api/settings/tests/{test_id}",
	"DELETE /api/settings/tests/{test_id}",
	"POST /api/settings/tests/{test_id}/move",

	"GET /api/settings/evaluators",
	"GET /api/settings/evaluators/{evaluator_id}",
	"POST /api/settings/evaluators",
	"PUT /api/settings/evaluators/{evaluator_id}",
	"DELETE /api/settings/evaluators/{evaluator_id}",

	"GET /api/settings/tools",
	"GET /api/settings/tools/{tool_id}",
	"POST /api/settings/tools",
	"PUT /api/settings/tools/{tool_id}",
	"DELETE /api/settings/tools/{tool_id}",
	"GET /api/settings/targets",
	"GET /api/settings/targets/{target_id}",

	"GET /api/settings/export",
	"POST /api/settings/import",
	"POST /api/settings/sync",
	"GET /api/settings/sync",

	"GET /api/agents",
	"GET /api/agents/{agent_id}",
	"POST /api/agents",
	"PUT /api/agents/{agent_id}",
	"DELETE /api/agents/{agent_id}",

	"GET /api/agents/{agent_id}/tools",
	"PUT /api/agents/{agent_id}/tools",

	"GET /api/agents/{agent_id}/kb",
	"GET /api/agents/{agent_id}/kb/{filename}",
	"GET /api/agents/{agent_id}/kb/search",
	"POST /api/agents/{agent_id}/kb",
	"PUT /api/agents/{agent_id}/kb/{filename}",
	"DELETE /api/agents/{agent_id}/kb/{filename}",

	"GET /api/agents/{agent_id}/channels",
	"POST /api/agents/{agent_id}/channels",
	"PUT /api/agents/{agent_id}/channels/{channel_id}",
	"DELETE /api/agents/{agent_id}/channels/{channel_id}",
	"POST /api/agents/{agent_id}/channels/{channel_id}/start",
	"POST /api/agents/{agent_id}/channels/{channel_id}/stop",
	"POST /api/channels/{channel_id}/webhook",

	"POST /api/agents/{agent_id}/chat",
	"POST /api/agents/{agent_id}/chat/clear",
	"GET /api/agents/{agent_id}/conversations",
	"GET /api/agents/{agent_id}/conversations/{user_id}",
	"DELETE /api/agents/{agent_id}/conversations/{user_id}",

	"POST /api/start",
	"POST /api/stop",
	"POST /api/reset",
	"GET /api/status",
	"GET /api/test_matrix",
	"GET /api/log_poll",
	"GET /api/config",
	"GET /api/config/model",

	"GET /api/run/{run_id}/matrix",
	"GET /api/run/{run_id}/tests/{domain}/{level}",
	"GET /api/run/{run_id}",
	"DELETE /api/history/{run_id}",
	"GET /api/v1/history/last/id",
	"GET /api/v1/history/last/{domain}/{level}",
	"GET /api/v1/history/{run_id}/{domain}/{level}",
	"GET /api/history",

	// Results you can trust: the definitions a run used, and its resume.
	"GET /api/run/{run_id}/definitions",
	"POST /api/run/{run_id}/resume",

	// The server's plugin manager.
	"GET /api/plugins",

	// Datasets: tests from the rows of a JSONL or CSV file.
	"POST /api/settings/tests/import",

	// Is a change real? Two runs compared test by test.
	"GET /api/compare",

	// Sweeps: the same evaluation for several models, one run each.
	"POST /api/sweep",
	"GET /api/sweep",
	// A run's stored responses scored again into a new run.
	"POST /api/run/{run_id}/rescore",

	// Reading results at scale: a run's results searched, filtered, sorted
	// and paged, and exported.
	"GET /api/run/{run_id}/results",
	"GET /api/run/{run_id}/export",
}

// agentCreates are the agent paths whose POST creates a record (201).
var agentCreates = []string{"/api/agents", "/api/agents/{agent_id}/kb", "/api/agents/{agent_id}/channels"}

// operations lists "METHOD path" for every operation of an OpenAPI
// document decoded as JSON.
func operations(t *testing.T, doc map[string]any) []string {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatalf("no paths in the document")
	}
	var out []string
	for p, item := range paths {
		for method := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				out = append(out, strings.ToUpper(method)+" "+p)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestOpenAPI31(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	r := must(t, e.get("/openapi.json"), http.StatusOK)
	if ct := r.contentType(); !strings.Contains(ct, "json") {
		t.Errorf("Content-Type %q", ct)
	}
	doc := r.object(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("openapi %q, want 3.1.x", v)
	}
	t.Run("lists every endpoint of the spec and no other", func(t *testing.T) {
		got := operations(t, doc)
		want := slices.Sorted(slices.Values(specEndpoints))
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("missing: %s", w)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("not in the spec: %s", g)
			}
		}
	})
	t.Run("every operation has an id, a summary and a success response", func(t *testing.T) {
		for p, item := range doc["paths"].(map[string]any) {
			for method, op := range item.(map[string]any) {
				o, ok := op.(map[string]any)
				if !ok {
					continue
				}
				if o["operationId"] == nil || o["summary"] == nil {
					t.Errorf("%s %s: no operationId or summary", method, p)
				}
				responses, _ := o["responses"].(map[string]any)
				want := "200"
				if method == "post" && strings.HasPrefix(p, "/api/settings/") &&
					!strings.Contains(p, "move") && !strings.Contains(p, "import") && !strings.Contains(p, "sync") {
					want = "201"
				}
				if method == "post" && (slices.Contains(agentCreates, p) || strings.HasSuffix(p, "/rescore")) {
					want = "201"
				}
				if method == "post" && p == "/api/sweep" {
					want = "202" // accepted: the runs go on in the background
				}
				if _, ok := responses[want]; !ok {
					t.Errorf("%s %s: no %s response; has %v", method, p, want, slices.Sorted(mapKeys(responses)))
				}
			}
		}
	})
	t.Run("error statuses are documented as problem+json", func(t *testing.T) {
		paths := doc["paths"].(map[string]any)
		for _, tc := range []struct {
			method, path string
			want         []string
		}{
			{"put", "/api/settings/domains/{domain_id}", []string{"400", "404", "409", "413", "422"}},
			{"post", "/api/settings/domains", []string{"400", "409", "413", "422"}},
			{"get", "/api/settings/tests", []string{"422"}},
			{"post", "/api/start", []string{"400", "409", "422"}},
			{"delete", "/api/history/{run_id}", []string{"404", "409"}},
			{"post", "/api/agents/{agent_id}/kb", []string{"404", "409", "413", "415", "422"}},
			{"post", "/api/agents/{agent_id}/chat", []string{"404", "422", "502"}},
			{"post", "/api/channels/{channel_id}/webhook", []string{"401", "404", "408", "409", "413", "422", "429", "502"}},
			{"get", "/api/v1/history/last/id", []string{"401", "404", "500"}},
			{"put", "/api/settings/tests/{test_id}", []string{"400", "401", "404", "409", "413", "415", "422", "500"}},
		} {
			op, _ := paths[tc.path].(map[string]any)[tc.method].(map[string]any)
			responses, _ := op["responses"].(map[string]any)
			for _, code := range tc.want {
				r, _ := responses[code].(map[string]any)
				content, _ := r["content"].(map[string]any)
				if content["application/problem+json"] == nil {
					t.Errorf("%s %s: %s not documented as problem+json; responses %v", tc.method, tc.path, code, slices.Sorted(mapKeys(responses)))
				}
			}
		}
	})
	t.Run("the document is the same every time", func(t *testing.T) {
		again := must(t, e.get("/openapi.json"), http.StatusOK)
		if string(again.body) != string(r.body) {
			t.Fatalf("two GETs gave different documents")
		}
	})
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestOpenAPIYAML(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	r := must(t, e.get("/openapi.yaml"), http.StatusOK)
	if ct := r.contentType(); !strings.Contains(ct, "yaml") {
		t.Errorf("Content-Type %q, want a YAML type", ct)
	}
	body := string(r.body)
	if !strings.HasPrefix(body, "openapi: 3.1") && !strings.Contains(body, "\nopenapi: 3.1") {
		t.Fatalf("not an OpenAPI 3.1 YAML document:\n%.300s", body)
	}
	for _, ep := range specEndpoints {
		_, p, _ := strings.Cut(ep, " ")
		if !strings.Contains(body, p+":") {
			t.Errorf("%s not in the YAML document", p)
		}
	}
}

func TestOpenAPI30Validates(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true}, withToken("tok"))
	r := must(t, e.get("/openapi-3.0.json"), http.StatusOK)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(r.body)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.0") {
		t.Fatalf("openapi %q, want 3.0.x", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate: %v", err)
	}
	var got []string
	for p, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			got = append(got, method+" "+p)
		}
	}
	sort.Strings(got)
	if want := slices.Sorted(slices.Values(specEndpoints)); !slices.Equal(got, want) {
		t.Errorf("operations of the 3.0 document:\n%v\nwant\n%v", got, want)
	}
	// The knowledge-base upload documents its file part as a binary
	// string, so that clients offer a file picker.
	upload := doc.Paths.Find("/api/agents/{agent_id}/kb").Post.RequestBody.Value.Content.Get("multipart/form-data")
	if upload == nil || upload.Schema.Value.Properties["file"] == nil || upload.Schema.Value.Properties["file"].Value.Format != "binary" {
		t.Errorf("the knowledge-base upload has no binary file part")
	}
	// The webhook needs no API token.
	if sec := doc.Paths.Find("/api/channels/{channel_id}/webhook").Post.Security; sec == nil || len(*sec) != 0 {
		t.Errorf("the webhook operation does not lift the API token requirement: %v", sec)
	}
	// The level path parameter carries its bounds.
	op := doc.Paths.Find("/api/settings/levels/{domain_id}/{level}").Get
	if p := op.Parameters.GetByInAndName("path", "level"); p == nil || p.Schema.Value.Min == nil || p.Schema.Value.Max == nil {
		t.Errorf("the level parameter has no bounds")
	}
}

func TestDocs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := must(t, e.get("/docs"), http.StatusOK)
	if ct := r.contentType(); ct != "text/html" {
		t.Errorf("Content-Type %q, want text/html", ct)
	}
	if !strings.Contains(strings.ToLower(string(r.body)), "<html") || !strings.Contains(string(r.body), `href="/openapi.yaml"`) {
		t.Errorf("docs page does not link the document:\n%.500s", r.body)
	}
	// Every operation of the document has its place, its operationId
	// the anchor.
	doc := must(t, e.get("/openapi.json"), http.StatusOK).object(t)
	n := 0
	for _, item := range doc["paths"].(map[string]any) {
		for _, op := range item.(map[string]any) {
			id, _ := op.(map[string]any)["operationId"].(string)
			n++
			if id == "" || !strings.Contains(string(r.body), `<article class="op" id="`+id+`">`) {
				t.Errorf("the page lacks the operation %q", id)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d operations", n)
	}
}
