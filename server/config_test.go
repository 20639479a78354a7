package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/internal/deadport"
)

// fakeKey is an API key no response may contain.
const fakeKey = "sk-test-SECRET-0123456789abcdef"

// fakeModels is an OpenAI-compatible endpoint on loopback that answers
// GET /models and records the Authorization headers it gets.
func fakeModels(t *testing.T, models ...string) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var b strings.Builder
		b.WriteString(`{"object":"list","data":[`)
		for i, m := range models {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"id":"` + m + `","object":"model","created":0,"owned_by":"test"}`)
		}
		b.WriteString(`]}`)
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(auths)
	}
}

// newLLM builds the model client the server uses, with fakeKey.
func newLLM(t *testing.T, baseURL, model string) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Options{BaseURL: baseURL, APIKey: fakeKey, Model: model, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// unreachableURL returns a loopback URL that refuses connections for the
// whole test (see deadport).
func unreachableURL(t *testing.T) string { return "http://" + deadport.Addr(t) + "/v1" }

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		debug bool
	}{{"debug off", false}, {"debug on", true}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []envOption{withLLM("http://127.0.0.1:9999/v1", "qwen2.5:7b"), withModels(newLLM(t, "http://127.0.0.1:9999/v1", "qwen2.5:7b"))}
			if tc.debug {
				opts = append(opts, withDebug())
			}
			e := newEnv(t, opts...)
			r := must(t, e.get("/api/config"), http.StatusOK)
			got := r.object(t)
			want := map[string]any{"llm_base_url": "http://127.0.0.1:9999/v1", "llm_model": "qwen2.5:7b", "debug": tc.debug}
			if len(got) != len(want) {
				t.Errorf("keys %v, want exactly %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if strings.Contains(string(r.body), fakeKey) {
				t.Fatalf("the API key is in the response: %s", r.body)
			}
		})
	}
}

func TestConfigModel(t *testing.T) {
	// Mostly waiting on the hanging endpoint: run beside the others.
	t.Parallel()
	t.Run("the endpoint serves the configured model", func(t *testing.T) {
		fake, auths := fakeModels(t, "m0", "m1")
		e := newEnv(t, withLLM(fake.URL+"/v1", "m1"), withModels(newLLM(t, fake.URL+"/v1", "m1")))
		got := must(t, e.get("/api/config/model"), http.StatusOK).object(t)
		if got["model"] != "m1" || got["config_model"] != "m1" {
			t.Fatalf("body %v, want model m1, config_model m1", got)
		}
		if a := auths(); len(a) == 0 || a[len(a)-1] != "Bearer "+fakeKey {
			t.Errorf("the endpoint got Authorization %q, want the key", a)
		}
	})

	t.Run("the endpoint serves one model", func(t *testing.T) {
		fake, _ := fakeModels(t, "m1")
		e := newEnv(t, withLLM(fake.URL+"/v1", "llama3.2"), withModels(newLLM(t, fake.URL+"/v1", "llama3.2")))
		got := must(t, e.get("/api/config/model"), http.StatusOK).object(t)
		if got["model"] != "m1" || got["config_model"] != "llama3.2" {
			t.Fatalf("body %v, want model m1, config_model llama3.2", got)
		}
	})

	t.Run("the endpoint lists no model", func(t *testing.T) {
		fake, _ := fakeModels(t)
		e := newEnv(t, withLLM(fake.URL+"/v1", "m1"), withModels(newLLM(t, fake.URL+"/v1", "m1")))
		got := must(t, e.get("/api/config/model"), http.StatusOK).object(t)
		if got["model"] != nil || got["config_model"] != "m1" || got["detail"] == "" || got["detail"] == nil {
			t.Fatalf("body %v", got)
		}
	})

	t.Run("unreachable endpoint", func(t *testing.T) {
		url := unreachableURL(t)
		e := newEnv(t, withLLM(url, "m1"), withModels(newLLM(t, url, "m1")))
		start := time.Now()
		r := must(t, e.get("/api/config/model"), http.StatusOK)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("answered after %v, want within 5 s", d)
		}
		got := r.object(t)
		if v, ok := got["model"]; !ok || v != nil {
			t.Errorf("model = %v (present %v), want null", v, ok)
		}
		if got["config_model"] != "m1" {
			t.Errorf("config_model = %v", got["config_model"])
		}
		if d, _ := got["detail"].(string); d == "" {
			t.Errorf("no detail: %s", r.body)
		}
		if strings.Contains(string(r.body), fakeKey) {
			t.Fatalf("the API key is in the response: %s", r.body)
		}
	})

	t.Run("hanging endpoint", func(t *testing.T) {
		release := make(chan struct{})
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer hang.Close()
		defer close(release)
		e := newEnv(t, withLLM(hang.URL+"/v1", "m1"), withModels(newLLM(t, hang.URL+"/v1", "m1")))
		start := time.Now()
		r := must(t, e.get("/api/config/model"), http.StatusOK)
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("answered after %v, want about 5 s", d)
		}
		got := r.object(t)
		if v, ok := got["model"]; !ok || v != nil {
			t.Errorf("model = %v (present %v), want null", v, ok)
		}
		if d, _ := got["detail"].(string); d == "" {
			t.Errorf("no detail: %s", r.body)
		}
	})

	t.Run("an endpoint that echoes the key in its error", func(t *testing.T) {
		echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`,
				r.Header.Get("Authorization"))
		}))
		defer echo.Close()
		e := newEnv(t, withModels(newLLM(t, echo.URL+"/v1", "m1")))
		r := must(t, e.get("/api/config/model"), http.StatusOK)
		if got := r.object(t); got["model"] != nil || got["detail"] == nil {
			t.Errorf("body %s", r.body)
		}
		if strings.Contains(string(r.body), fakeKey) {
			t.Fatalf("the API key is in the response: %s", r.body)
		}
	})

	t.Run("an endpoint that does not answer JSON", func(t *testing.T) {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html>not an API</html>"))
		}))
		defer bad.Close()
		e := newEnv(t, withModels(newLLM(t, bad.URL+"/v1", "m1")))
		if got := must(t, e.get("/api/config/model"), http.StatusOK).object(t); got["model"] != nil || got["detail"] == nil {
			t.Errorf("body %v", got)
		}
	})

	t.Run("no endpoint configured", func(t *testing.T) {
		e := newEnv(t)
		got := must(t, e.get("/api/config/model"), http.StatusOK).object(t)
		if got["model"] != nil || got["config_model"] != "llama3.2" || got["detail"] == nil {
			t.Fatalf("body %v", got)
		}
	})
}

// TestSecretsNeverReturned calls every endpoint, successes and failures,
// and checks that neither the API key nor the API token appears in a
// response or in the log.
func TestSecretsNeverReturned(t *testing.T) {
	t.Parallel()
	const token = "tok-SECRET-fedcba9876543210"
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"reachable endpoint", func(t *testing.T) string { f, _ := fakeModels(t, "m1"); return f.URL + "/v1" }},
		{"unreachable endpoint", unreachableURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url(t)
			e := newEnv(t, withLLM(url, "m1"), withModels(newLLM(t, url, "m1")), withToken(token), withDebug())
			e.richFixture()
			var bodies []*response
			call := func(method, path string, body any, header ...string) {
				bodies = append(bodies, e.request(method, path, body, header...))
			}
			for _, p := range []string{
				"/api/config", "/api/config/model",
				"/api/settings/domains", "/api/settings/domains/math", "/api/settings/domains/nope",
				"/api/settings/levels/math/1", "/api/settings/levels/nope/1",
				"/api/settings/tests", "/api/settings/tests?domain=math&level=1", "/api/settings/tests/m1", "/api/settings/tests/nope",
				"/api/settings/evaluators", "/api/settings/evaluators/num", "/api/settings/tools", "/api/settings/tools/calc",
				"/api/settings/export", "/openapi.json", "/openapi.yaml", "/openapi-3.0.json", "/docs", "/",
			} {
				call("GET", p, nil)
			}
			call("GET", "/api/config", nil, "Authorization", "Bearer wrong")
			call("GET", "/api/config", nil, "Authorization", "")
			call("POST", "/api/settings/domains", map[string]any{"id": "s", "name": "S", "description": fakeKey[:5]})
			call("POST", "/api/settings/domains", rawBody(`{"id":`))
			call("PUT", "/api/settings/domains/s", map[string]any{"color": "bad"})
			call("PUT", "/api/settings/levels/s/1", map[string]any{"system_prompt": "x"})
			call("POST", "/api/settings/tests", map[string]any{"domain_id": "s", "level": 1, "prompt": "p", "expected": map[string]any{"answer": "a"}})
			call("POST", "/api/settings/tests/m1/move", map[string]any{"domain_id": "s", "level": 2})
			call("PUT", "/api/settings/tests/m1", map[string]any{"name": "n"})
			call("POST", "/api/settings/evaluators", map[string]any{"id": "e2", "name": "E"})
			call("PUT", "/api/settings/evaluators/e2", map[string]any{"extraction_regex": "("})
			call("POST", "/api/settings/tools", map[string]any{"id": "t2", "function": map[string]any{"name": "t2"}})
			call("PUT", "/api/settings/tools/t2", map[string]any{"description": "d"})
			call("POST", "/api/settings/import", map[string]any{"tests": []any{map[string]any{"expected": map[string]any{"type": "x"}}}})
			call("POST", "/api/settings/import", map[string]any{"merge": true})
			call("POST", "/api/settings/sync", nil)
			call("DELETE", "/api/settings/tools/t2", nil)
			call("DELETE", "/api/settings/evaluators/num", nil)
			call("DELETE", "/api/settings/tests/m1", nil)
			call("DELETE", "/api/settings/domains/s", nil)
			succeeded := 0
			for _, r := range bodies {
				if r.status < 300 {
					succeeded++
				}
			}
			if succeeded < 30 {
				t.Errorf("only %d of %d requests succeeded: the check proves little", succeeded, len(bodies))
			}
			for _, r := range bodies {
				for _, secret := range []string{fakeKey, token} {
					if strings.Contains(string(r.body), secret) || strings.Contains(strings.Join(headerValues(r.header), "\n"), secret) {
						t.Errorf("a secret is in a response: %s", r.body)
					}
				}
			}
			if logs := e.logs.String(); strings.Contains(logs, fakeKey) || strings.Contains(logs, token) {
				t.Errorf("a secret is in the log:\n%s", logs)
			}
		})
	}
}

func headerValues(h http.Header) []string {
	var out []string
	for k, vs := range h {
		out = append(out, k+": "+strings.Join(vs, ", "))
	}
	return out
}

func TestAuth(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	e := newEnv(t, withToken(token))
	e.fixture()

	for _, tc := range []struct {
		name   string
		auth   string
		status int
	}{
		{"no header", "", 401},
		{"wrong token", "Bearer nope", 401},
		{"token without scheme", token, 401},
		{"wrong scheme", "Basic " + token, 401},
		{"token with a suffix", "Bearer " + token + "x", 401},
		{"right token", "Bearer " + token, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, req := range []struct{ method, path string }{
				{"GET", "/api/settings/domains"}, {"GET", "/api/config"}, {"GET", "/api/settings/export"},
				{"POST", "/api/settings/sync"}, {"GET", "/api/settings/tests?domain=math"},
			} {
				r := e.request(req.method, req.path, nil, "Authorization", tc.auth)
				if tc.status == 401 {
					mustProblem(t, r, http.StatusUnauthorized)
					if r.header.Get("WWW-Authenticate") == "" {
						t.Errorf("%s %s: no WWW-Authenticate header", req.method, req.path)
					}
				} else {
					must(t, r, tc.status)
				}
			}
		})
	}

	t.Run("a refused write changes nothing", func(t *testing.T) {
		before := e.state()
		mustProblem(t, e.request("POST", "/api/settings/domains", map[string]any{"id": "z", "name": "Z"}, "Authorization", ""), http.StatusUnauthorized)
		mustProblem(t, e.request("DELETE", "/api/settings/domains/math", nil, "Authorization", "Bearer nope"), http.StatusUnauthorized)
		e.assertUnchanged(t, before)
	})

	t.Run("no path trick gets past the token", func(t *testing.T) {
		for _, p := range []string{
			"//api/settings/domains", "/%61pi/settings/domains", "/api/../api/settings/domains",
			"/./api/settings/domains", "/api/settings/../settings/domains", "/api%2Fsettings/domains",
		} {
			req, _ := http.NewRequest(http.MethodGet, e.url+"/", nil)
			req.URL.Opaque = p // sent as is, not cleaned by the client
			res, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode < 300 {
				t.Errorf("GET %s without a token: %d", p, res.StatusCode)
			}
		}
	})

	t.Run("documents need no token", func(t *testing.T) {
		for _, p := range []string{"/openapi.json", "/openapi.yaml", "/openapi-3.0.json", "/docs"} {
			must(t, e.request("GET", p, nil, "Authorization", ""), http.StatusOK)
		}
	})

	t.Run("the documents declare the bearer scheme", func(t *testing.T) {
		doc := must(t, e.request("GET", "/openapi.json", nil, "Authorization", ""), http.StatusOK).object(t)
		comps, _ := doc["components"].(map[string]any)
		schemes, _ := comps["securitySchemes"].(map[string]any)
		if bearer, _ := schemes["bearer"].(map[string]any); bearer["scheme"] != "bearer" {
			t.Errorf("securitySchemes %v", schemes)
		}
		if _, ok := doc["security"]; !ok {
			t.Errorf("no top-level security requirement")
		}
		paths, _ := doc["paths"].(map[string]any)
		get, _ := paths["/api/settings/domains"].(map[string]any)["get"].(map[string]any)
		if _, ok := get["responses"].(map[string]any)["401"]; !ok {
			t.Errorf("GET /api/settings/domains does not document 401")
		}
	})
}

func TestNoAuthWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	must(t, e.request("GET", "/api/settings/domains", nil, "Authorization", "Bearer anything"), http.StatusOK)
	must(t, e.request("GET", "/api/settings/domains", nil, "Authorization", ""), http.StatusOK)
	t.Run("the document is the one of a server with a token", func(t *testing.T) {
		// Clients generated from either can always send the token: the
		// document lists bearer or nothing, and describes the scheme.
		withToken := newEnv(t, withToken("tok"))
		for _, p := range []string{"/openapi.json", "/openapi.yaml", "/openapi-3.0.json"} {
			open := must(t, e.get(p), http.StatusOK)
			closed := must(t, withToken.request("GET", p, nil, "Authorization", ""), http.StatusOK)
			if string(open.body) != string(closed.body) {
				t.Errorf("%s differs with a token", p)
			}
		}
		doc := must(t, e.get("/openapi.json"), http.StatusOK).object(t)
		if !jsonEqual(t, doc["security"], []any{map[string]any{"bearer": []any{}}, map[string]any{}}) {
			t.Errorf("security %v, want [{bearer: []}, {}]", doc["security"])
		}
	})
}

// TestModelQueryHonoursCancel checks that a client that goes away does not
// leave the model query running for the full timeout.
func TestModelQueryHonoursCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	done := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
		close(done)
	}))
	defer hang.Close()
	e := newEnv(t, withModels(newLLM(t, hang.URL+"/v1", "m1")))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/api/config/model", nil)
	errc := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client error %v, want context.Canceled", err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the model query went on after the client left")
	}
}

// TestConfigHidesCredentials: GET /api/config shows llm_base_url without
// the user, password or API key it may embed, and the model query's error
// detail does not quote them either.
func TestConfigHidesCredentials(t *testing.T) {
	t.Parallel()
	url := unreachableURL(t)
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/v1"), "http://")
	base := "http://alice:hunter2@" + host + "/v1?api_key=sk-SECRET&deployment=prod"
	e := newEnv(t, withLLM(base, "m1"), withModels(newLLM(t, base, "m1")))
	r := must(t, e.get("/api/config"), http.StatusOK)
	want := "http://" + host + "/v1?api_key=********&deployment=prod"
	if got := r.object(t)["llm_base_url"]; got != want {
		t.Errorf("llm_base_url = %v, want %q", got, want)
	}
	m := must(t, e.get("/api/config/model"), http.StatusOK)
	for _, body := range [][]byte{r.body, m.body} {
		for _, secret := range []string{"alice", "hunter2", "sk-SECRET"} {
			if strings.Contains(string(body), secret) {
				t.Errorf("%q shown in %s", secret, body)
			}
		}
	}
	if d, _ := m.object(t)["detail"].(string); d == "" {
		t.Errorf("no detail: %s", m.body)
	}
}
