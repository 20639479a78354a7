package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/humatest"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
)

// Handler tests: each resource's operations, registered on their own with
// humatest against an in-memory fake of the service they hold. The
// end-to-end tests (server_test.go and the others) run the real services.

// newTestAPI returns an API with the server's conventions, for register
// functions to add operations to; call finishAPI before the first request.
func newTestAPI(t *testing.T) humatest.TestAPI {
	return humatest.Wrap(t, newAPI(http.NewServeMux()))
}

// fakeDomains is a domainStore in memory, validating as the catalog does
// what the handlers rely on: an id and a name, unique ids.
type fakeDomains struct {
	mu      sync.Mutex
	domains map[string]harness.Domain
	fail    error // returned by every call when set
}

func (f *fakeDomains) Domains(context.Context) ([]harness.Domain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var out []harness.Domain
	for _, d := range f.domains {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b harness.Domain) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (f *fakeDomains) Domain(_ context.Context, id string) (harness.Domain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.domains[id]
	if !ok {
		return d, fmt.Errorf("domain %q: %w", id, harness.ErrNotFound)
	}
	return d, nil
}

func checkFakeDomain(d harness.Domain) error {
	ve := &harness.ValidationError{}
	if d.ID == "" {
		ve.Add("id", "is required")
	}
	if strings.TrimSpace(d.Name) == "" {
		ve.Add("name", "is required")
	}
	return ve.Err()
}

func (f *fakeDomains) CreateDomain(_ context.Context, d harness.Domain) (harness.Domain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := checkFakeDomain(d); err != nil {
		return d, err
	}
	if _, dup := f.domains[d.ID]; dup {
		return d, fmt.Errorf("domain %q exists: %w", d.ID, harness.ErrConflict)
	}
	f.domains[d.ID] = d
	return d, nil
}

func (f *fakeDomains) UpdateDomain(_ context.Context, id string, apply func(*harness.Domain) error) (harness.Domain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.domains[id]
	if !ok {
		return d, fmt.Errorf("domain %q: %w", id, harness.ErrNotFound)
	}
	if err := apply(&d); err != nil {
		return d, err
	}
	if err := checkFakeDomain(d); err != nil {
		return d, err
	}
	f.domains[id] = d
	return d, nil
}

func (f *fakeDomains) DeleteDomainIf(_ context.Context, id string, check func(harness.Domain) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.domains[id]
	if !ok {
		return fmt.Errorf("domain %q: %w", id, harness.ErrNotFound)
	}
	if check != nil {
		if err := check(d); err != nil {
			return err
		}
	}
	delete(f.domains, id)
	return nil
}

// decodeProblem checks that a response is the API's problem+json with the
// status, and returns it.
func decodeProblem(t *testing.T, r *httptest.ResponseRecorder, status int) apiProblem {
	t.Helper()
	if r.Code != status {
		t.Fatalf("status %d, want %d: %s", r.Code, status, r.Body)
	}
	if ct := r.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q", ct)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.Body.Bytes(), &raw); err != nil {
		t.Fatalf("body: %v: %s", err, r.Body)
	}
	if raw["success"] != false || raw["status"] != float64(status) || raw["title"] != http.StatusText(status) || raw["detail"] == "" {
		t.Errorf("problem %s", r.Body)
	}
	var p apiProblem
	json.Unmarshal(r.Body.Bytes(), &p)
	return p
}

func TestDomainHandlers(t *testing.T) {
	t.Parallel()
	store := &fakeDomains{domains: map[string]harness.Domain{
		"math": {ID: "math", Name: "Math", Enabled: true, Color: "#112233"},
	}}
	api := newTestAPI(t)
	var logs bytes.Buffer
	registerDomains(api, store, slog.New(slog.NewTextHandler(&logs, nil)))
	finishAPI(api)

	t.Run("list maps every field", func(t *testing.T) {
		r := api.Get("/api/settings/domains")
		want := `{"domains":[{"id":"math","name":"Math","description":"","evaluator_id":"","enabled":true,"system_prompt":"","icon":"","color":"#112233"}],"total":1}`
		if r.Code != http.StatusOK || strings.TrimSpace(r.Body.String()) != want {
			t.Fatalf("%d %s\nwant %s", r.Code, r.Body, want)
		}
	})
	t.Run("get unknown is a 404 problem", func(t *testing.T) {
		p := decodeProblem(t, api.Get("/api/settings/domains/nope"), http.StatusNotFound)
		if !strings.Contains(p.Detail, "nope") {
			t.Errorf("detail %q", p.Detail)
		}
	})
	t.Run("create defaults enabled and ignores unknown fields", func(t *testing.T) {
		r := api.Post("/api/settings/domains", map[string]any{"id": "geo", "name": "Geo", "nmae": "typo", "future": []int{1}})
		if r.Code != http.StatusCreated {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if d := store.domains["geo"]; !d.Enabled || d.Name != "Geo" {
			t.Errorf("stored %+v", d)
		}
		if strings.Contains(r.Body.String(), "nmae") {
			t.Errorf("unknown field echoed: %s", r.Body)
		}
	})
	t.Run("create without id nor name lists both", func(t *testing.T) {
		p := decodeProblem(t, api.Post("/api/settings/domains", map[string]any{"color": "#000000"}), http.StatusUnprocessableEntity)
		var locs []string
		for _, d := range p.Errors {
			locs = append(locs, d.Location)
		}
		if !slices.Contains(locs, "body.id") || !slices.Contains(locs, "body.name") {
			t.Errorf("locations %v", locs)
		}
	})
	t.Run("create duplicate is a 409", func(t *testing.T) {
		decodeProblem(t, api.Post("/api/settings/domains", map[string]any{"id": "math", "name": "Again"}), http.StatusConflict)
	})
	t.Run("update changes only the fields present", func(t *testing.T) {
		r := api.Put("/api/settings/domains/math", map[string]any{"description": "Sums"})
		if r.Code != http.StatusOK {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if d := store.domains["math"]; d.Description != "Sums" || d.Name != "Math" || d.Color != "#112233" || !d.Enabled {
			t.Errorf("stored %+v", d)
		}
	})
	t.Run("a wrong type is a 422 naming the field, and never echoes the body", func(t *testing.T) {
		secret := strings.Repeat("s", 300)
		r := api.Put("/api/settings/domains/math", map[string]any{"name": 5, "description": secret})
		p := decodeProblem(t, r, http.StatusUnprocessableEntity)
		if len(p.Errors) != 1 || p.Errors[0].Location != "body.name" {
			t.Errorf("errors %+v", p.Errors)
		}
		if strings.Contains(r.Body.String(), secret) {
			t.Errorf("the body is echoed: %s", r.Body)
		}
	})
	t.Run("malformed JSON is a 400 that does not echo the body", func(t *testing.T) {
		r := api.Put("/api/settings/domains/math", strings.NewReader(`{"name": "secret-value`), "Content-Type: application/json")
		decodeProblem(t, r, http.StatusBadRequest)
		if strings.Contains(r.Body.String(), "secret-value") {
			t.Errorf("the body is echoed: %s", r.Body)
		}
	})
	t.Run("a body that is not JSON is a 415 that does not echo it", func(t *testing.T) {
		r := api.Post("/api/settings/domains", strings.NewReader(`<domain id="secret-xml"/>`), "Content-Type: application/xml")
		decodeProblem(t, r, http.StatusUnsupportedMediaType)
		if strings.Contains(r.Body.String(), "secret-xml") {
			t.Errorf("the body is echoed: %s", r.Body)
		}
	})
	t.Run("delete answers success", func(t *testing.T) {
		r := api.Delete("/api/settings/domains/geo")
		if r.Code != http.StatusOK || strings.TrimSpace(r.Body.String()) != `{"success":true}` {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		decodeProblem(t, api.Delete("/api/settings/domains/geo"), http.StatusNotFound)
	})
	t.Run("an unexpected failure is a 500 that hides it and logs it", func(t *testing.T) {
		store.fail = errors.New("disk on fire at /var/secret/path")
		defer func() { store.fail = nil }()
		r := api.Get("/api/settings/domains")
		decodeProblem(t, r, http.StatusInternalServerError)
		if strings.Contains(r.Body.String(), "secret") {
			t.Errorf("the failure is shown: %s", r.Body)
		}
		if !strings.Contains(logs.String(), "disk on fire") {
			t.Errorf("the failure is not logged: %q", logs.String())
		}
	})
}

// fakeEngine is a runEngine that runs nothing: Start makes the run active
// until Stop or Reset.
type fakeEngine struct {
	mu      sync.Mutex
	active  string
	started []engine.StartRequest
	n       int
}

func (f *fakeEngine) Start(_ context.Context, req engine.StartRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active != "" {
		return "", fmt.Errorf("run %s is active: %w", f.active, harness.ErrConflict)
	}
	for _, d := range req.Domains {
		if d != "math" {
			return "", harness.Invalid("domains", "unknown domain %q", d)
		}
	}
	f.n++
	f.active = fmt.Sprintf("run-%d", f.n)
	f.started = append(f.started, req)
	return f.active, nil
}

func (f *fakeEngine) ResumeWith(context.Context, string, engine.ResumeOptions) error {
	return harness.ErrNotFound
}
func (f *fakeEngine) Rescore(context.Context, string) (string, error) {
	return "", harness.ErrNotFound
}

func (f *fakeEngine) Stop(time.Duration) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == "" {
		return "", engine.ErrNotRunning
	}
	id := f.active
	f.active = ""
	return id, nil
}

func (f *fakeEngine) Reset() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.active
	f.active = ""
	return id
}

func (f *fakeEngine) Status() engine.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == "" {
		return engine.Status{Status: "idle"}
	}
	id := f.active
	return engine.Status{Status: "running", RunID: &id, TotalTests: 3}
}

func (f *fakeEngine) Matrix(context.Context) (engine.LiveMatrix, error) {
	return engine.LiveMatrix{Status: "idle"}, nil
}

func (f *fakeEngine) PollLogs() ([]string, bool) { return nil, false }

func (f *fakeEngine) ReadLogs(after uint64) ([]string, uint64, bool) {
	return []string{"[math][L1] started"}, after + 1, true
}

func (f *fakeEngine) ReadLogTail(after uint64, n int) ([]string, uint64, bool) {
	return []string{fmt.Sprintf("[math][L1] tail of %d", n)}, after + 2, true
}

func TestRunHandlers(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	api := newTestAPI(t)
	registerRuns(api, eng, slog.New(slog.DiscardHandler))
	finishAPI(api)

	t.Run("start without a body runs everything", func(t *testing.T) {
		r := api.Post("/api/start")
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"run_id":"run-1"`) {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if got := eng.started[0]; got.Domains != nil || got.ModelName != "" || got.Timeout != 0 {
			t.Errorf("request %+v", got)
		}
	})
	t.Run("start while running is a 409", func(t *testing.T) {
		decodeProblem(t, api.Post("/api/start", map[string]any{}), http.StatusConflict)
	})
	t.Run("status shows the active run, nulls when idle", func(t *testing.T) {
		want := `{"status":"running","run_id":"run-1","current_domain":null,"current_level":null,"progress":0,"total_tests":3,"model_name":null,"last_run_id":null,"preparing":false,"rate_limit":{}}`
		if r := api.Get("/api/status"); strings.TrimSpace(r.Body.String()) != want {
			t.Errorf("%s\nwant %s", r.Body, want)
		}
	})
	t.Run("stop, then stop again answers success false", func(t *testing.T) {
		if r := api.Post("/api/stop"); !strings.Contains(r.Body.String(), `"success":true`) {
			t.Errorf("%d %s", r.Code, r.Body)
		}
		r := api.Post("/api/stop")
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"success":false`) || strings.Contains(r.Body.String(), "run_id") {
			t.Errorf("%d %s", r.Code, r.Body)
		}
	})
	t.Run("the start body is passed on", func(t *testing.T) {
		r := api.Post("/api/start", map[string]any{"model_name": "nightly", "domains": []string{"math"}, "timeout_s": 1.5, "retries": 0})
		if r.Code != http.StatusOK {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		got := eng.started[len(eng.started)-1]
		if got.ModelName != "nightly" || !slices.Equal(got.Domains, []string{"math"}) || got.Timeout != 1500*time.Millisecond ||
			got.Retries == nil || *got.Retries != 0 {
			t.Errorf("request %+v", got)
		}
		eng.Reset()
	})
	t.Run("an unknown domain is a 422 naming the field", func(t *testing.T) {
		p := decodeProblem(t, api.Post("/api/start", map[string]any{"domains": []string{"nope"}}), http.StatusUnprocessableEntity)
		if !strings.Contains(p.Detail, "nope") {
			t.Errorf("detail %q", p.Detail)
		}
	})
	t.Run("bounds of the start body are checked", func(t *testing.T) {
		p := decodeProblem(t, api.Post("/api/start", map[string]any{"retries": 11}), http.StatusUnprocessableEntity)
		if len(p.Errors) != 1 || p.Errors[0].Location != "body.retries" {
			t.Errorf("errors %+v", p.Errors)
		}
	})
	t.Run("the log cursor", func(t *testing.T) {
		r := api.Get("/api/log_poll?since=4")
		want := `{"messages":["[math][L1] started"],"is_running":true,"cursor":5}`
		if strings.TrimSpace(r.Body.String()) != want {
			t.Errorf("%s\nwant %s", r.Body, want)
		}
		if r := api.Get("/api/log_poll"); strings.TrimSpace(r.Body.String()) != `{"messages":[],"is_running":false}` {
			t.Errorf("drain: %s", r.Body)
		}
		r = api.Get("/api/log_poll?since=4&tail=300")
		if want := `{"messages":["[math][L1] tail of 300"],"is_running":true,"cursor":6}`; strings.TrimSpace(r.Body.String()) != want {
			t.Errorf("tail: %s\nwant %s", r.Body, want)
		}
	})
}

// TestNoGlobalErrorHook checks that the API's problem shape is its own:
// huma's constructor, and any other huma API in the process, are as huma
// made them.
func TestNoGlobalErrorHook(t *testing.T) {
	t.Parallel()
	api := newTestAPI(t)
	registerDomains(api, &fakeDomains{domains: map[string]harness.Domain{}}, slog.New(slog.DiscardHandler))
	finishAPI(api)
	if _, ok := huma.NewError(http.StatusNotFound, "x").(*huma.ErrorModel); !ok {
		t.Errorf("huma.NewError returns %T, not huma's own model", huma.NewError(http.StatusNotFound, "x"))
	}
	_, other := humatest.New(t)
	huma.Get(other, "/thing", func(context.Context, *struct{}) (*struct{}, error) {
		return nil, huma.Error404NotFound("no thing")
	})
	r := other.Get("/thing")
	if r.Code != http.StatusNotFound || strings.Contains(r.Body.String(), "success") {
		t.Errorf("another huma API answers %d %s", r.Code, r.Body)
	}
	decodeProblem(t, api.Get("/api/settings/domains/x"), http.StatusNotFound)
}
