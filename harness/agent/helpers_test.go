package agent_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMain stops the PostgreSQL server the tests may have started.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// env is a service on a fresh database and data directory, with a fake
// model endpoint that records the requests it gets.
type env struct {
	t     testing.TB
	ctx   context.Context
	db    *store.DB
	dir   string
	srv   *llmtest.Server
	model *llm.Client
	reg   *harness.Registry
	tools *toolSource
	opts  agent.Options
	svc   *agent.Service
	logs  *syncBuffer

	llmOpts []func(*llmtest.Options)

	mu      sync.Mutex
	reqs    []*llmtest.Request
	respond func(*llmtest.Request) *llmtest.Reply
}

type envOption func(*env)

func withOptions(f func(*agent.Options)) envOption { return func(e *env) { f(&e.opts) } }

func withLLM(f func(*llmtest.Options)) envOption {
	return func(e *env) { e.llmOpts = append(e.llmOpts, f) }
}

func newEnv(t testing.TB, options ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db := dbtest.Open(t)
	e := &env{t: t, ctx: ctx, db: db, dir: dir, reg: harness.NewRegistry(), tools: &toolSource{}, logs: &syncBuffer{}}
	e.opts = agent.Options{
		DB: db, DataDir: filepath.Join(dir, "data"), Tools: e.tools, Registry: e.reg, Model: "test-model",
		RetryBaseDelay: 20 * time.Millisecond, RetryMaxDelay: 160 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range options {
		o(e)
	}
	lo := llmtest.Options{Respond: e.record}
	for _, f := range e.llmOpts {
		f(&lo)
	}
	e.srv = llmtest.NewServer(lo)
	t.Cleanup(e.srv.Close)
	var err error
	e.model, err = llm.New(llm.Options{BaseURL: e.srv.URL, Model: "default-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if e.opts.Client == nil {
		e.opts.Client = e.model
	}
	if e.opts.EmbeddingModel != "" && e.opts.Embedder == nil {
		e.opts.Embedder = e.model
	}
	e.open()
	return e
}

func (e *env) open() {
	e.t.Helper()
	svc, err := agent.Open(e.ctx, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = svc
	e.t.Cleanup(svc.Close)
}

// reopen closes the service and opens a new one on the same database, as
// a restart of the process would.
func (e *env) reopen() {
	e.t.Helper()
	e.svc.Close()
	e.open()
}

func (e *env) record(req *llmtest.Request) *llmtest.Reply {
	e.mu.Lock()
	e.reqs = append(e.reqs, req)
	respond := e.respond
	e.mu.Unlock()
	if respond != nil {
		return respond(req)
	}
	return nil
}

func (e *env) setRespond(f func(*llmtest.Request) *llmtest.Reply) {
	e.mu.Lock()
	e.respond = f
	e.mu.Unlock()
}

func (e *env) requests() []*llmtest.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.reqs)
}

func (e *env) lastRequest() *llmtest.Request {
	e.t.Helper()
	reqs := e.requests()
	if len(reqs) == 0 {
		e.t.Fatal("the model got no request")
	}
	return reqs[len(reqs)-1]
}

func (e *env) createAgent(id, prompt string) harness.Agent {
	e.t.Helper()
	a, err := e.svc.Create(e.ctx, harness.Agent{ID: id, Name: "Agent " + id, SystemPrompt: prompt})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) chat(agentID, userID, msg string) *agent.ChatResult {
	e.t.Helper()
	res, err := e.svc.Chat(e.ctx, agentID, userID, msg)
	if err != nil {
		e.t.Fatalf("chat %q: %v", msg, err)
	}
	return res
}

func (e *env) writeKB(agentID, name, content string) {
	e.t.Helper()
	_, err := e.svc.KB().Write(e.ctx, agentID, name, strings.NewReader(content), true)
	if errors.Is(err, harness.ErrConflict) {
		_, err = e.svc.KB().Write(e.ctx, agentID, name, strings.NewReader(content), false)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// contents returns the contents of a request's messages with the given
// role.
func contents(req *llmtest.Request, role string) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role == role {
			out = append(out, m.Content)
		}
	}
	return out
}

func systemOf(req *llmtest.Request) string {
	if len(req.Messages) > 0 && req.Messages[0].Role == harness.RoleSystem {
		return req.Messages[0].Content
	}
	return ""
}

// toolSource is a ToolSource whose tools a test may change.
type toolSource struct {
	mu    sync.Mutex
	tools map[string]harness.ToolDefinition
}

func (s *toolSource) Tool(_ context.Context, id string) (harness.ToolDefinition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tools[id]
	if !ok {
		return harness.ToolDefinition{}, harness.ErrNotFound
	}
	return t, nil
}

func (s *toolSource) put(t harness.ToolDefinition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tools == nil {
		s.tools = map[string]harness.ToolDefinition{}
	}
	s.tools[t.ID] = t
}

func (s *toolSource) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tools, id)
}

var weatherTool = harness.ToolDefinition{
	ID: "weather", Name: "Weather",
	Function: harness.FunctionDef{Name: "get_weather", Description: "Current weather of a city.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required": []any{"city"}}},
	MockResponse: map[string]any{"temperature": 21, "unit": "celsius"},
}

var lookupTool = harness.ToolDefinition{
	ID: "lookup", Name: "Lookup",
	Function:     harness.FunctionDef{Name: "lookup_order", Description: "Find an order."},
	MockResponse: map[string]any{"status": "shipped"},
}

// fieldsOf returns the fields named by a validation error.
func fieldsOf(err error) []string {
	var ve *harness.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.Field)
	}
	return out
}

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	if !errors.Is(err, harness.ErrInvalid) {
		t.Fatalf("error = %v, want one wrapping ErrInvalid", err)
	}
	if !slices.Contains(fieldsOf(err), field) {
		t.Fatalf("error %v names %v, want %q", err, fieldsOf(err), field)
	}
}

// downURL is the URL of an endpoint that is not listening.
func downURL(t testing.TB) string {
	ts := httptest.NewServer(nil)
	url := ts.URL + "/v1"
	ts.Close()
	return url
}

// syncBuffer is a bytes.Buffer safe for concurrent writes, for logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
