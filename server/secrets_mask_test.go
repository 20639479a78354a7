package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestEvaluatorURLCredentialsNeverShown stores an evaluator whose config
// holds URLs with credentials (user:password@ and a token alone, nested
// in an object and a list) and reads it back through every endpoint that
// shows evaluator configs: list, get, the answers of create and update,
// the export and a run's definitions. No password appears in a response
// body or in the server log. The record read back and sent back (update,
// import) keeps the stored credentials; a masked URL with another
// address, or where nothing is stored, is a 422 naming the field; a URL
// in clear replaces the stored one.
func TestEvaluatorURLCredentialsNeverShown(t *testing.T) {
	t.Parallel()
	const (
		password  = "Judge-Pa55-in-url"
		token     = "Hook-T0ken-in-url"
		password2 = "N3w-Judge-Pa55"
	)
	secrets := []string{password, token, password2}
	e := newEngineEnv(t, engineConfig{})
	check := func(r *response) *response {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(string(r.body), s) || strings.Contains(string(r.body), url.QueryEscape(s)) {
				t.Fatalf("a credential is shown: %s", r.body)
			}
		}
		return r
	}
	stored := func() string { t.Helper(); return e.readFile("evaluators/judge.yaml") }
	cfg := map[string]any{
		"base_url": "https://alice:" + password + "@judge.example/v1",
		"hooks":    map[string]any{"urls": []any{"https://" + token + "@hooks.example/x", "https://hooks.example/plain"}},
		"rubric":   "Is the answer right?",
	}
	created := check(must(t, e.post("/api/settings/evaluators", map[string]any{"id": "judge", "name": "Judge", "config": cfg}),
		http.StatusCreated)).object(t)
	shown := created["config"].(map[string]any)
	if shown["base_url"] != "https://alice:********@judge.example/v1" || shown["rubric"] != "Is the answer right?" {
		t.Errorf("config shown as %v", shown)
	}
	if urls := shown["hooks"].(map[string]any)["urls"].([]any); urls[0] != "https://********@hooks.example/x" || urls[1] != "https://hooks.example/plain" {
		t.Errorf("hooks shown as %v", urls)
	}
	if !strings.Contains(stored(), password) || !strings.Contains(stored(), token) {
		t.Fatalf("the credentials are not stored: %s", stored())
	}
	for _, p := range []string{"/api/settings/evaluators", "/api/settings/evaluators/judge", "/api/settings/export"} {
		check(must(t, e.get(p), http.StatusOK))
	}

	// The record as read back, sent back whole: the credentials stay.
	got := check(must(t, e.get("/api/settings/evaluators/judge"), http.StatusOK))
	etag := got.header.Get("ETag")
	back := got.object(t)
	check(must(t, e.request(http.MethodPut, "/api/settings/evaluators/judge", map[string]any{"name": "Renamed", "config": back["config"]},
		"If-Match", etag), http.StatusOK))
	if s := stored(); !strings.Contains(s, password) || !strings.Contains(s, token) || !strings.Contains(s, "Renamed") {
		t.Fatalf("the update lost the credentials: %s", s)
	}
	// The export imported again: the same definitions, credentials
	// included.
	exported := check(must(t, e.get("/api/settings/export"), http.StatusOK)).object(t)
	exported["merge"] = false
	check(must(t, e.post("/api/settings/import", exported), http.StatusOK))
	if s := stored(); !strings.Contains(s, password) || !strings.Contains(s, token) {
		t.Fatalf("the import lost the credentials: %s", s)
	}

	// The mask with another address would send the password elsewhere;
	// the mask where nothing is stored is not a password.
	other := map[string]any{"base_url": "https://alice:********@evil.example/v1"}
	mustProblem(t, check(e.put("/api/settings/evaluators/judge", map[string]any{"config": other})),
		http.StatusUnprocessableEntity, "body.config.base_url")
	mustProblem(t, check(e.post("/api/settings/evaluators", map[string]any{"id": "copy", "name": "Copy", "config": shown})),
		http.StatusUnprocessableEntity, "body.config.base_url", "body.config.hooks.urls[0]")
	mustProblem(t, check(e.post("/api/settings/import", map[string]any{"evaluators": []any{
		map[string]any{"id": "copy", "name": "Copy", "config": shown}}})),
		http.StatusUnprocessableEntity, "body.evaluators[0].config.base_url", "body.evaluators[0].config.hooks.urls[0]")
	if s := stored(); !strings.Contains(s, password) {
		t.Fatalf("a refused write changed the record: %s", s)
	}

	// A URL in clear replaces the stored one.
	check(must(t, e.put("/api/settings/evaluators/judge", map[string]any{"config": map[string]any{
		"base_url": "https://bob:" + password2 + "@judge.example/v2"}}), http.StatusOK))
	if s := stored(); !strings.Contains(s, "bob:"+password2) || strings.Contains(s, password) {
		t.Fatalf("the new URL did not replace the old: %s", s)
	}

	// A run records its definitions; they are shown masked as well.
	id := e.runToEnd(map[string]any{"model_name": "masked"})
	defs := check(must(t, e.get("/api/run/"+id+"/definitions"), http.StatusOK))
	if !strings.Contains(string(defs.body), "bob:********@judge.example") {
		t.Errorf("the run's definitions lack the evaluator: %s", defs.body)
	}
	for _, s := range secrets {
		if strings.Contains(e.logs.String(), s) {
			t.Errorf("%q is in the server log", s)
		}
	}
}

// echoingEvaluator is an evaluator type whose config check refuses every
// config, repeating its base_url in the message and the value, as a
// careless plugin might.
type echoingEvaluator struct{}

func (echoingEvaluator) Evaluate(context.Context, *harness.EvalRequest) (*harness.EvalResult, error) {
	return &harness.EvalResult{}, nil
}

func (echoingEvaluator) ValidateConfig(cfg harness.EvaluatorConfig) error {
	u, _ := cfg.Config["base_url"].(string)
	return &harness.ValidationError{Fields: []harness.FieldError{
		{Field: "config.base_url", Message: "cannot reach " + u, Value: u},
	}}
}

// TestEvaluatorErrorsHideURLCredentials: an evaluator type's refusal that
// repeats a URL of the config (in its message or its value) reaches the
// client and the log without the URL's credentials, on create, update
// and import.
func TestEvaluatorErrorsHideURLCredentials(t *testing.T) {
	t.Parallel()
	const password = "Echoed-Pa55-in-url"
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator("echo", echoingEvaluator{}); err != nil {
		t.Fatal(err)
	}
	e := newEngineEnv(t, engineConfig{registry: reg, noExamples: true})
	bad := map[string]any{"id": "echo", "name": "Echo", "type": "echo", "config": map[string]any{"base_url": "https://u:" + password + "@h.example/"}}
	for _, r := range []*response{
		e.post("/api/settings/evaluators", bad),
		e.post("/api/settings/import", map[string]any{"evaluators": []any{bad}}),
	} {
		p := mustProblem(t, r, http.StatusUnprocessableEntity)
		if strings.Contains(string(r.body), password) {
			t.Errorf("the password is in the answer: %s", r.body)
		}
		if !strings.Contains(p.Detail, "cannot reach https://u:********@h.example/") {
			t.Errorf("detail %q", p.Detail)
		}
	}
	if strings.Contains(e.logs.String(), password) {
		t.Errorf("the password is in the server log")
	}
}

// TestSyncErrorsHideURLCredentials: a definitions file refused by its
// evaluator type with a message that repeats a URL of the file is listed
// by the sync without the URL's credentials.
func TestSyncErrorsHideURLCredentials(t *testing.T) {
	t.Parallel()
	const password = "Synced-Pa55-in-url"
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator("echo", echoingEvaluator{}); err != nil {
		t.Fatal(err)
	}
	e := newEngineEnv(t, engineConfig{registry: reg, noExamples: true, files: map[string]string{
		"evaluators/echo.yaml": "id: echo\nname: Echo\ntype: echo\nconfig:\n  base_url: https://u:" + password + "@h.example/\n",
	}})
	for _, r := range []*response{e.get("/api/settings/sync"), e.post("/api/settings/sync", nil)} {
		body := string(must(t, r, http.StatusOK).body)
		if !strings.Contains(body, "cannot reach https://h.example/") || strings.Contains(body, password) {
			t.Errorf("sync errors: %s", body)
		}
	}
}
