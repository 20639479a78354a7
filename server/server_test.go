package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
	"github.com/gauntlet-eval/gauntlet/internal/testbin"
	"github.com/gauntlet-eval/gauntlet/server"
)

// testEnv is a real server on loopback over a temp data directory: a
// database opened with store.Open (a SQLite file in the data directory,
// or a PostgreSQL database with GAUNTLET_TEST_DATABASE=postgres, see
// dbtest) and a definitions directory opened with catalog.Open.
type testEnv struct {
	t       *testing.T
	url     string
	defsDir string
	dataDir string
	token   string
	logs    *syncBuffer

	// Set by newEngineEnv: the fake model endpoint, the engine and its
	// run store, and the directory of run log files.
	mock   *llmtest.Server
	engine *engine.Engine
	runs   *runs.Store
	logDir string

	// Set on every server: the agent service, wired as
	// cmd/gauntlet/app.go wires it, and its own fake model endpoint,
	// whose chat requests are recorded (see llmRequests).
	agents   *agent.Service
	agentLLM *llmtest.Server

	llmMu   sync.Mutex
	llmReqs []*llmtest.Request
	respond func(*llmtest.Request) *llmtest.Reply
}

// TestMain stops the PostgreSQL server the tests may have started.
func TestMain(m *testing.M) {
	code := dbtest.Main(m)
	stopChromium()
	testbin.Cleanup()
	os.Exit(code)
}

// pgDatabases maps a data directory to its PostgreSQL database, so that a
// server started again over the same directory finds its data.
var pgDatabases sync.Map

// databaseURL is the database of a data directory: the SQLite file in it,
// or the PostgreSQL database made for it on first use.
func databaseURL(t testing.TB, dataDir string) string {
	t.Helper()
	if !dbtest.Postgres() {
		return "sqlite://" + filepath.Join(dataDir, "gauntlet.db")
	}
	if u, ok := pgDatabases.Load(dataDir); ok {
		return u.(string)
	}
	u, _ := pgDatabases.LoadOrStore(dataDir, dbtest.URL(t))
	return u.(string)
}

// syncBuffer is a bytes.Buffer safe for the server's concurrent logging.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// envOption adjusts the server's options before it is built.
type envOption func(*server.Options)

func withToken(tok string) envOption { return func(o *server.Options) { o.APIToken = tok } }

func withModels(m harness.ModelLister) envOption { return func(o *server.Options) { o.Models = m } }

func withLLM(baseURL, model string) envOption {
	return func(o *server.Options) { o.LLM = server.LLMConfig{BaseURL: baseURL, Model: model} }
}

func withDebug() envOption { return func(o *server.Options) { o.Debug = true } }

// newEnv starts a server with an empty definitions directory.
func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	return newEnvIn(t, t.TempDir(), opts...)
}

// newEnvIn starts a server whose data and definitions live under root
// (root/data and root/definitions); files already there are loaded.
func newEnvIn(t *testing.T, root string, opts ...envOption) *testEnv {
	t.Helper()
	return startEnv(t, root, nil, opts...)
}

// startEnv starts a server under root; with an engine config, the server
// also runs evaluations (see newEngineEnv). Its agent service has the
// default agentConfig.
func startEnv(t *testing.T, root string, ec *engineConfig, opts ...envOption) *testEnv {
	t.Helper()
	return startEnvWith(t, root, ec, nil, opts...)
}

// startEnvWith is startEnv with the agent service configured by ac (nil
// for the defaults).
func startEnvWith(t *testing.T, root string, ec *engineConfig, ac *agentConfig, opts ...envOption) *testEnv {
	t.Helper()
	ctx := context.Background()
	e := &testEnv{
		t:       t,
		defsDir: filepath.Join(root, "definitions"),
		dataDir: filepath.Join(root, "data"),
		logs:    &syncBuffer{},
	}
	seedDatabase(t, e.dataDir)
	db, err := store.Open(ctx, databaseURL(t, e.dataDir))
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	var reg *harness.Registry
	if ec != nil {
		reg = ec.registry
	}
	cat, _, err := catalog.Open(ctx, catalog.Options{Dir: e.defsDir, DB: db, Registry: reg})
	if err != nil {
		t.Fatalf("catalog.Open: %v", err)
	}
	o := server.Options{
		Catalog: cat,
		LLM:     server.LLMConfig{BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.2"},
		Logger:  slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if ac == nil {
		ac = &agentConfig{}
	}
	e.wireAgents(ctx, ac, db, cat, &o)
	if ec != nil {
		e.wireEngine(ctx, ec, db, cat, &o)
	}
	for _, opt := range opts {
		opt(&o)
	}
	e.token = o.APIToken
	srv, err := server.New(o)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	check := newResponseChecker(srv.Handler(), srv.API())
	// Registered first, so run after the server closed: every answer is in.
	t.Cleanup(func() {
		for _, p := range check.problems() {
			t.Errorf("the OpenAPI document does not describe this answer: %s", p)
		}
	})
	hs := httptest.NewServer(check)
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

// response is an HTTP response with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) String() string {
	return fmt.Sprintf("%d %s", r.status, r.body)
}

// contentType is the media type of the response, without parameters.
func (r *response) contentType() string {
	ct, _, _ := strings.Cut(r.header.Get("Content-Type"), ";")
	return strings.TrimSpace(ct)
}

// object decodes the body as a JSON object.
func (r *response) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// decode decodes the body into v.
func (r *response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode body into %T: %v\n%s", v, err, r.body)
	}
}

// rawBody is a request body sent as is.
type rawBody string

// request sends a request with the env's token, if any. body is nil (no
// body), a rawBody, a []byte, or a value encoded as JSON.
func (e *testEnv) request(method, path string, body any, header ...string) *response {
	e.t.Helper()
	r, err := e.try(method, path, body, header...)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// try is request for goroutines other than the test's: it returns errors
// instead of failing the test.
func (e *testEnv) try(method, path string, body any, header ...string) (*response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case rawBody:
		rd = strings.NewReader(string(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode request body: %w", err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return trySend(req)
}

func (e *testEnv) send(req *http.Request) *response {
	e.t.Helper()
	r, err := trySend(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func trySend(req *http.Request) (*response, error) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", req.Method, req.URL.Path, err)
	}
	return &response{status: res.StatusCode, header: res.Header, body: data}, nil
}

func (e *testEnv) get(path string) *response { return e.request(http.MethodGet, path, nil) }

func (e *testEnv) post(path string, body any) *response {
	return e.request(http.MethodPost, path, body)
}

func (e *testEnv) put(path string, body any) *response { return e.request(http.MethodPut, path, body) }

func (e *testEnv) del(path string) *response { return e.request(http.MethodDelete, path, nil) }

// must checks the status of a response and returns it.
func must(t *testing.T, r *response, status int) *response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	return r
}

// problem is an RFC 9457 body as the server writes it.
type problem struct {
	Status  int    `json:"status"`
	Title   string `json:"title"`
	Detail  string `json:"detail"`
	Success *bool  `json:"success"`
	Errors  []struct {
		Location string `json:"location"`
		Message  string `json:"message"`
		Value    any    `json:"value"`
	} `json:"errors"`
}

func (p *problem) locations() []string {
	out := make([]string, len(p.Errors))
	for i, e := range p.Errors {
		out[i] = e.Location
	}
	return out
}

// mustProblem checks that r is a problem+json error with the given status
// and "success": false, whose errors name every given location.
func mustProblem(t *testing.T, r *response, status int, locations ...string) *problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body: %s", r.status, status, r.body)
	}
	if ct := r.contentType(); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	r.decode(t, &p)
	if p.Success == nil || *p.Success {
		t.Errorf("success is %v, want false; body: %s", p.Success, r.body)
	}
	if p.Status != status {
		t.Errorf("status field %d, want %d", p.Status, status)
	}
	if p.Title != http.StatusText(status) {
		t.Errorf("title %q, want %q", p.Title, http.StatusText(status))
	}
	if p.Detail == "" {
		t.Errorf("empty detail; body: %s", r.body)
	}
	for _, loc := range locations {
		if !slices.Contains(p.locations(), loc) {
			t.Errorf("errors do not name %q; locations %q; body: %s", loc, p.locations(), r.body)
		}
	}
	return &p
}

// state is what a failed write must not change: the export and the bytes
// of every file under the definitions directory.
type state struct {
	export string
	files  map[string]string
}

func (e *testEnv) state() state {
	e.t.Helper()
	r := must(e.t, e.get("/api/settings/export"), http.StatusOK)
	return state{export: string(r.body), files: e.files()}
}

// files hashes every file under the definitions directory, by relative
// path.
func (e *testEnv) files() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(e.defsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.defsDir, p)
		sum := sha256.Sum256(data)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		e.t.Fatalf("walk definitions: %v", err)
	}
	return out
}

// assertUnchanged checks that the export and the files are as in before.
func (e *testEnv) assertUnchanged(t *testing.T, before state) {
	t.Helper()
	after := e.state()
	if after.export != before.export {
		t.Errorf("export changed:\nbefore %s\nafter  %s", before.export, after.export)
	}
	if !maps.Equal(after.files, before.files) {
		t.Errorf("definition files changed:\nbefore %v\nafter  %v", before.files, after.files)
	}
}

// writeFile writes a definitions file by hand.
func (e *testEnv) writeFile(rel, content string) {
	e.t.Helper()
	p := filepath.Join(e.defsDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// readFile reads a definitions file.
func (e *testEnv) readFile(rel string) string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.defsDir, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

func (e *testEnv) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(e.defsDir, filepath.FromSlash(rel)))
	return err == nil
}

// fixture creates an evaluator "num", a tool "calc", domains "math"
// (evaluator num) and "logic", and tests m1, m2 (math level 1), m3 (math
// level 2) and l1 (logic level 1).
func (e *testEnv) fixture() {
	e.t.Helper()
	must(e.t, e.post("/api/settings/evaluators", map[string]any{
		"id": "num", "name": "Numbers", "type": "regex",
		"extraction_regex": `(?<answer>-?\d+(\.\d+)?)`, "uses_pass2": true,
	}), http.StatusCreated)
	must(e.t, e.post("/api/settings/tools", map[string]any{
		"id": "calc", "name": "Calculator", "description": "Adds numbers",
		"function": map[string]any{
			"name": "add", "description": "Add two numbers",
			"parameters": map[string]any{
				"type":       "object",
				"properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "number"}},
				"required":   []string{"a", "b"},
			},
		},
		"mock_response": map[string]any{"result": 4},
	}), http.StatusCreated)
	must(e.t, e.post("/api/settings/domains", map[string]any{
		"id": "math", "name": "Math", "description": "Arithmetic", "evaluator_id": "num",
		"system_prompt": "Answer with a number.", "icon": "calc", "color": "#112233",
	}), http.StatusCreated)
	must(e.t, e.post("/api/settings/domains", map[string]any{"id": "logic", "name": "Logic"}), http.StatusCreated)
	for _, tc := range []struct {
		id, domain string
		level      int
		answer     string
	}{{"m1", "math", 1, "4"}, {"m2", "math", 1, "6"}, {"m3", "math", 2, "10"}, {"l1", "logic", 1, "yes"}} {
		typ := "numeric"
		if tc.domain == "logic" {
			typ = "boolean"
		}
		must(e.t, e.post("/api/settings/tests", map[string]any{
			"id": tc.id, "domain_id": tc.domain, "level": tc.level, "name": "Test " + tc.id,
			"prompt": "Question " + tc.id, "expected": map[string]any{"answer": tc.answer, "type": typ},
		}), http.StatusCreated)
	}
}

// ids returns the "id" of each object of a JSON array.
func ids(list []map[string]any) []string {
	out := make([]string, len(list))
	for i, m := range list {
		out[i], _ = m["id"].(string)
	}
	return out
}

// TestUnknownRoute checks that an unknown path is a 404 and the root
// redirects to the docs.
func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	t.Run("unknown path", func(t *testing.T) {
		mustProblem(t, e.get("/api/settings/nope"), http.StatusNotFound)
		mustProblem(t, e.post("/api/nope/deeper", map[string]any{}), http.StatusNotFound)
	})
	t.Run("known path, other method", func(t *testing.T) {
		r := e.request(http.MethodPatch, "/api/config", nil)
		mustProblem(t, r, http.StatusMethodNotAllowed)
		if got := r.header.Get("Allow"); got != "GET" {
			t.Errorf("Allow %q, want GET", got)
		}
		r = e.del("/api/settings/domains")
		mustProblem(t, r, http.StatusMethodNotAllowed)
		if got := r.header.Get("Allow"); got != "GET, POST" {
			t.Errorf("Allow %q, want GET, POST", got)
		}
	})
	t.Run("root serves the dashboard", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/", nil)
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("got %d %q, want 200 text/html", res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
}

// TestBodyWithoutContentType checks that a JSON body sent without a
// content type (or as curl -d sends it) is read as JSON.
func TestBodyWithoutContentType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, ct := range []string{"", "application/x-www-form-urlencoded", "text/plain; charset=utf-8"} {
		t.Run(fmt.Sprintf("content type %q", ct), func(t *testing.T) {
			id := fmt.Sprintf("d%d", i)
			req, _ := http.NewRequest(http.MethodPost, e.url+"/api/settings/domains",
				strings.NewReader(`{"id":"`+id+`","name":"D"}`))
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			r := must(t, e.send(req), http.StatusCreated)
			if got := r.object(t)["id"]; got != id {
				t.Fatalf("id %v, want %s", got, id)
			}
		})
	}
}

// engineConfig configures the evaluation engine of a test server started
// by newEngineEnv: the fake model endpoint it asks, and the definitions
// it starts with.
type engineConfig struct {
	// llm configures the llmtest endpoint that answers the tests.
	llm llmtest.Options
	// concurrency bounds the tests in flight within a run (default 4).
	concurrency int
	// simulatorModel is the engine's simulator model (--simulator-model).
	simulatorModel string
	// timeout bounds each model request (default 10 s).
	timeout time.Duration
	// noExamples leaves out examples/definitions, which are otherwise
	// copied into the definitions directory: 3 enabled domains
	// (arithmetic, knowledge, tool_use), 8 cells, 12 tests.
	noExamples bool
	// files are more definition files, by path relative to the
	// definitions directory, written before start-up.
	files map[string]string
	// registry, when set, is the catalog's and the engine's (evaluator types).
	registry *harness.Registry
	// providers are --provider entries; their base_url may hold {mock},
	// the llmtest endpoint's address without its /v1 (which serves every
	// provider kind's wire format). The built-in anthropic and gemini
	// providers are there too, without keys: every key variable but
	// ANTHROPIC_API_KEY and GEMINI_API_KEY reads "mock-key".
	providers []string
	// client, when set, completes the llm client's options.
	client func(*llm.Options)
}

// newEngineEnv starts a server that runs evaluations, wired as
// cmd/gauntlet/app.go wires it: runs.Open on the same database, an
// llm client of an llmtest endpoint on loopback, and an engine over the
// catalog with its log files under the data directory.
func newEngineEnv(t *testing.T, ec engineConfig, opts ...envOption) *testEnv {
	t.Helper()
	return newEngineEnvIn(t, t.TempDir(), ec, opts...)
}

// newEngineEnvIn is newEngineEnv under root.
func newEngineEnvIn(t *testing.T, root string, ec engineConfig, opts ...envOption) *testEnv {
	t.Helper()
	defs := filepath.Join(root, "definitions")
	if !ec.noExamples {
		if err := os.CopyFS(defs, os.DirFS(filepath.Join("..", "examples", "definitions"))); err != nil {
			t.Fatalf("copy the example definitions: %v", err)
		}
	}
	for rel, content := range ec.files {
		p := filepath.Join(defs, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return startEnv(t, root, &ec, opts...)
}

// wireEngine opens the run store on db, starts the llmtest endpoint and
// builds the engine, and puts both in o. Its cleanup leaves no run
// behind before the endpoint and the database close.
func (e *testEnv) wireEngine(ctx context.Context, ec *engineConfig, db *store.DB, cat *catalog.Catalog, o *server.Options) {
	t := e.t
	t.Helper()
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs.Open: %v", err)
	}
	e.mock = llmtest.NewServer(ec.llm)
	t.Cleanup(e.mock.Close)
	timeout := ec.timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	lo := llm.Options{BaseURL: e.mock.URL, Model: llmtest.DefaultModel, Timeout: timeout,
		RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 2 * time.Second}
	if ec.client != nil {
		ec.client(&lo)
	}
	model, err := llm.New(lo)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	var specs []string
	for _, p := range ec.providers {
		specs = append(specs, strings.ReplaceAll(p, "{mock}", strings.TrimSuffix(e.mock.URL, "/v1")))
	}
	providers, err := llm.ParseProviders(specs)
	if err != nil {
		t.Fatalf("providers: %v", err)
	}
	po := lo // the providers' clients as the default one, at their own addresses
	po.BaseURL, po.Model = "", ""
	router, err := llm.NewRouter(llm.RouterOptions{Default: model, Providers: providers, Client: po,
		Getenv: func(k string) string {
			if k == "ANTHROPIC_API_KEY" || k == "GEMINI_API_KEY" {
				return ""
			}
			return "mock-key"
		}})
	if err != nil {
		t.Fatalf("llm.NewRouter: %v", err)
	}
	concurrency := ec.concurrency
	if concurrency <= 0 {
		concurrency = 4
	}
	e.logDir = filepath.Join(e.dataDir, "logs")
	eo := engine.Options{
		Definitions: cat, Runs: rs, Client: router, Model: llmtest.DefaultModel, BaseURL: e.mock.URL,
		Concurrency: concurrency, LogDir: e.logDir, Logger: o.Logger, Timeout: timeout, Version: server.Version,
		Agents:   e.agents,
		Registry: ec.registry, SimulatorModel: ec.simulatorModel,
	}
	work := e.queueRuns(db, &eo) // on PostgreSQL, River's queue as cmd/gauntlet wires it
	eng, err := engine.New(ctx, eo)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	work(eng)
	e.engine, e.runs = eng, rs
	o.Engine, o.Runs, o.Models = eng, rs, router
	o.LLM = server.LLMConfig{BaseURL: e.mock.URL, Model: llmtest.DefaultModel}
	t.Cleanup(func() {
		if eng.Running() {
			eng.Stop(10 * time.Second)
		}
		// A reset run records its end from its own goroutine: wait for it,
		// for 10 s at most.
		harnesstest.Within(10*time.Second, func() bool {
			list, _, err := rs.List(context.Background(), 1000, 0)
			return err != nil || !slices.ContainsFunc(list, func(i runs.Info) bool { return i.Status == runs.StatusRunning })
		})
	})
}

// runWait bounds how long a test waits for a run to change state.
const runWait = 30 * time.Second

// statusBody is GET /api/status.
type statusBody struct {
	Status        string  `json:"status"`
	RunID         *string `json:"run_id"`
	CurrentDomain *string `json:"current_domain"`
	CurrentLevel  *int    `json:"current_level"`
	Progress      int     `json:"progress"`
	TotalTests    int     `json:"total_tests"`
	Preparing     bool    `json:"preparing"`
	LastRunID     *string `json:"last_run_id"`
}

// status reads GET /api/status.
func (e *testEnv) status() statusBody {
	e.t.Helper()
	var st statusBody
	must(e.t, e.get("/api/status"), http.StatusOK).decode(e.t, &st)
	return st
}

// start posts /api/start, expects success, and returns the run id.
func (e *testEnv) start(body any) string {
	e.t.Helper()
	var out struct {
		Success bool   `json:"success"`
		RunID   string `json:"run_id"`
		Message string `json:"message"`
	}
	must(e.t, e.post("/api/start", body), http.StatusOK).decode(e.t, &out)
	if !out.Success || out.RunID == "" || out.Message == "" {
		e.t.Fatalf("start: success %v, run_id %q, message %q", out.Success, out.RunID, out.Message)
	}
	return out.RunID
}

// waitIdle polls GET /api/status until the engine is idle. A run takes
// as long as the machine lets it (a run of 150 tests takes 30 s on a
// loaded machine under the race detector): the wait fails when the status
// has not changed for runWait, a run that is stuck, not when one that
// keeps going takes longer than that.
func (e *testEnv) waitIdle() {
	e.t.Helper()
	var last statusBody
	changed := time.Now()
	for pause := time.Millisecond; ; pause = min(2*pause, 25*time.Millisecond) {
		st := e.status()
		if st.Status == "idle" {
			return
		}
		if st.Status != last.Status || st.Progress != last.Progress || st.Preparing != last.Preparing || st.TotalTests != last.TotalTests {
			last, changed = st, time.Now()
		} else if time.Since(changed) > runWait {
			e.t.Fatalf("the engine to be idle: the run stands at %q, %d of %d tests (preparing %v), for %v",
				st.Status, st.Progress, st.TotalTests, st.Preparing, runWait)
		}
		time.Sleep(pause)
	}
}

// runToEnd starts a run, waits for it to end, and returns its id.
func (e *testEnv) runToEnd(body any) string {
	e.t.Helper()
	id := e.start(body)
	e.waitIdle()
	return id
}

// matrixCell is a cell of a matrix.
type matrixCell struct {
	Status     string   `json:"status"`
	Score      *float64 `json:"score"`
	DurationMS *int64   `json:"duration_ms"`
}

// matrixBody is GET /api/test_matrix and GET /api/run/{id}/matrix.
type matrixBody struct {
	Domains   map[string]map[string]matrixCell `json:"domains"`
	RunID     *string                          `json:"run_id"`
	ModelName *string                          `json:"model_name"`
	Status    string                           `json:"status"`
}

// cells lists "domain/level status" for every cell, sorted.
func (m matrixBody) cells() []string {
	var out []string
	for d, levels := range m.Domains {
		for l, c := range levels {
			out = append(out, d+"/"+l+" "+c.Status)
		}
	}
	sort.Strings(out)
	return out
}

// matrix reads a matrix endpoint.
func (e *testEnv) matrix(path string) matrixBody {
	e.t.Helper()
	var m matrixBody
	must(e.t, e.get(path), http.StatusOK).decode(e.t, &m)
	return m
}

// testResult is one entry of a cell's tests.
type testResult struct {
	TestID   string `json:"test_id"`
	Prompt   string `json:"prompt"`
	Response string `json:"response"`
	Expected struct {
		Answer string `json:"answer"`
		Type   string `json:"type"`
	} `json:"expected"`
	Score        float64        `json:"score"`
	Status       string         `json:"status"`
	Details      map[string]any `json:"details"`
	DurationMS   int64          `json:"duration_ms"`
	ModelName    string         `json:"model_name"`
	SystemPrompt string         `json:"system_prompt"`
}

// cellBody is the body of the cell endpoints.
type cellBody struct {
	RunID  string       `json:"run_id"`
	Domain string       `json:"domain"`
	Level  int          `json:"level"`
	Tests  []testResult `json:"tests"`
}

// exampleCells are the cells of a run over every example domain.
var exampleCells = []string{
	"arithmetic/1", "arithmetic/2", "arithmetic/3",
	"knowledge/1", "knowledge/2", "knowledge/3",
	"tool_use/1", "tool_use/2",
}

// exampleTests is the number of tests of the example definitions.
const exampleTests = 12

// agentConfig configures the agent service of a test server.
type agentConfig struct {
	// llm configures the fake model endpoint of the agents (Respond is
	// wrapped: every request is recorded first).
	llm llmtest.Options
	// modelURL, when set, replaces that endpoint's URL in the client (a
	// closed port, say).
	modelURL string
	// apiKey is the API key the model client sends.
	apiKey string
	// retries is the model client's MaxRetries (default none).
	retries int
	// embeddingModel, when set, makes retrieval hybrid, embedding with the
	// same fake endpoint.
	embeddingModel string
}

// agentModel is the model name configured for the agents: what a chat
// asks for when the agent names none.
const agentModel = "configured-model"

// wireAgents opens an agent service as cmd/gauntlet/app.go does (the
// same database, the knowledge bases under the data directory, the
// catalog's tools, a registry with the telegram and webhook channel
// types, a model client) and puts it in o.
func (e *testEnv) wireAgents(ctx context.Context, ac *agentConfig, db *store.DB, cat *catalog.Catalog, o *server.Options) {
	t := e.t
	t.Helper()
	lo := ac.llm
	user := lo.Respond
	lo.Respond = func(req *llmtest.Request) *llmtest.Reply {
		e.llmMu.Lock()
		e.llmReqs = append(e.llmReqs, req)
		respond := e.respond
		e.llmMu.Unlock()
		if respond != nil {
			if rep := respond(req); rep != nil {
				return rep
			}
		}
		if user != nil {
			return user(req)
		}
		return nil
	}
	e.agentLLM = llmtest.NewServer(lo)
	t.Cleanup(e.agentLLM.Close)
	baseURL := e.agentLLM.URL
	if ac.modelURL != "" {
		baseURL = ac.modelURL
	}
	retries := ac.retries
	if retries == 0 {
		retries = -1
	}
	model, err := llm.New(llm.Options{BaseURL: baseURL, APIKey: ac.apiKey, Model: agentModel, Timeout: 10 * time.Second,
		MaxRetries: retries, RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	reg := harness.NewRegistry()
	// Telegram's default long poll, a minute: a poll held with no update
	// pending stays held until the channel stops, so a test that sees one
	// held knows no other getUpdates call is on its way.
	if err := reg.RegisterChannel("telegram", telegram.New(telegram.Options{Logger: o.Logger})); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterChannel("webhook", webhook.New(webhook.Options{Logger: o.Logger})); err != nil {
		t.Fatal(err)
	}
	// Types whose config takes keys of its own, as a plugin's may, for the
	// masking tests: the built-in types refuse unknown keys.
	hook := webhook.New(webhook.Options{Logger: o.Logger})
	if err := reg.RegisterChannel("webhook_extra", extraKeysReceiver{extraKeys{hook, []string{"secret", "callback_url"}}, hook}); err != nil {
		t.Fatal(err)
	}
	tgx := telegram.New(telegram.Options{Logger: o.Logger})
	if err := reg.RegisterChannel("telegram_extra", extraKeys{tgx, []string{"bot_token", "api_url"}}); err != nil {
		t.Fatal(err)
	}
	svc, err := agent.Open(ctx, agent.Options{
		DB: db, DataDir: e.dataDir, Tools: cat, Registry: reg, Client: model, Model: agentModel,
		RetryBaseDelay: 50 * time.Millisecond, RetryMaxDelay: 500 * time.Millisecond, Logger: o.Logger,
		EmbeddingModel: ac.embeddingModel, Embedder: model,
	})
	if err != nil {
		t.Fatalf("agent.Open: %v", err)
	}
	t.Cleanup(svc.Close)
	cat.AddToolUsers(func(ctx context.Context, toolID string) ([]string, error) {
		ids, err := svc.ToolUsers(ctx, toolID)
		for i := range ids {
			ids[i] = "agent " + ids[i]
		}
		return ids, err
	})
	e.agents = svc
	o.Agents = svc
}

// newAgentEnv starts a server with an empty definitions directory and the
// agent service configured by ac.
func newAgentEnv(t *testing.T, ac agentConfig, opts ...envOption) *testEnv {
	t.Helper()
	return startEnvWith(t, t.TempDir(), nil, &ac, opts...)
}

// llmRequests returns the chat requests the agents' model endpoint got so
// far, oldest first.
func (e *testEnv) llmRequests() []*llmtest.Request {
	e.llmMu.Lock()
	defer e.llmMu.Unlock()
	return slices.Clone(e.llmReqs)
}

// lastLLMRequest returns the latest chat request of the agents' model
// endpoint; it fails the test when there is none.
func (e *testEnv) lastLLMRequest() *llmtest.Request {
	e.t.Helper()
	reqs := e.llmRequests()
	if len(reqs) == 0 {
		e.t.Fatal("the model endpoint got no request")
	}
	return reqs[len(reqs)-1]
}

// setRespond makes the agents' model endpoint answer with f (nil: the
// default rules; f may return nil for them too).
func (e *testEnv) setRespond(f func(*llmtest.Request) *llmtest.Reply) {
	e.llmMu.Lock()
	e.respond = f
	e.llmMu.Unlock()
}

// createAgent creates an agent with the given id and system prompt.
func (e *testEnv) createAgent(id, systemPrompt string) map[string]any {
	e.t.Helper()
	return must(e.t, e.post("/api/agents", map[string]any{
		"id": id, "name": "Agent " + id, "description": "Test agent " + id, "system_prompt": systemPrompt,
	}), http.StatusCreated).object(e.t)
}

// chatBody is the body of a chat answer.
type chatBody struct {
	Success   bool             `json:"success"`
	Response  string           `json:"response"`
	SessionID string           `json:"session_id"`
	ToolCalls []map[string]any `json:"tool_calls"`
	Usage     map[string]any   `json:"usage"`
	Detail    string           `json:"detail"`
}

// chat sends a chat message and expects success.
func (e *testEnv) chat(agentID, userID, message string) chatBody {
	e.t.Helper()
	var out chatBody
	must(e.t, e.post("/api/agents/"+agentID+"/chat", map[string]any{"user_id": userID, "message": message}),
		http.StatusOK).decode(e.t, &out)
	if !out.Success {
		e.t.Fatalf("chat: success false: %+v", out)
	}
	return out
}

// messagesText renders a model request's messages one per line as
// "role: content", for searching and for failure messages.
func messagesText(req *llmtest.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
	}
	return b.String()
}

// extraKeys is a built-in channel type whose config may hold keys the
// type does not know, as a plugin's channel type may: its own keys are
// checked as the type checks them, the others are taken as they are. It
// runs as the type it wraps, which ignores unknown keys when it runs.
type extraKeys struct {
	harness.Channel
	own []string
}

func (c extraKeys) ValidateChannelConfig(cfg map[string]any) error {
	own := map[string]any{}
	for _, k := range c.own {
		if v, ok := cfg[k]; ok {
			own[k] = v
		}
	}
	return c.Channel.(harness.ChannelConfigValidator).ValidateChannelConfig(own)
}

// SecretFields declares the wrapped type's secret keys, as the type does.
func (c extraKeys) SecretFields() []string {
	if d, ok := c.Channel.(harness.ConfigSecrets); ok {
		return d.SecretFields()
	}
	return nil
}

// extraKeysReceiver is extraKeys for a type that receives webhooks.
type extraKeysReceiver struct {
	extraKeys
	harness.Receiver
}
