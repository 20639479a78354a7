package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/mcptool"
)

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is the environment the tests' servers see through LookupEnv.
var env = map[string]string{"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "TEST_SECRET_SOURCE": "s3cr3t", "LLM_API_KEY": "sk-never-passed"}

func newManager(t *testing.T, opts mcptool.Options) (*mcptool.Manager, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if opts.StopGrace == 0 {
		opts.StopGrace = 500 * time.Millisecond
	}
	m := mcptool.New(opts)
	t.Cleanup(func() { m.Close() })
	return m, logs
}

// helperDef is a tool record whose server is this test binary in mode.
func helperDef(id, mode, tool string, extraEnv map[string]string) *harness.ToolDefinition {
	e := map[string]string{"MCP_TEST_SERVER": mode}
	for k, v := range extraEnv {
		e[k] = v
	}
	return &harness.ToolDefinition{ID: id, Name: id, Function: harness.FunctionDef{Name: id},
		MCP: &harness.ToolMCP{Command: []string{os.Args[0]}, Env: e, Tool: tool}}
}

func call(t *testing.T, m *mcptool.Manager, def *harness.ToolDefinition, args string) (map[string]any, error) {
	t.Helper()
	tool, err := m.ToolFor(def)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Call(context.Background(), &harness.ToolCallRequest{CallID: "call_1", Arguments: json.RawMessage(args)})
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	return out, nil
}

func pidOf(t *testing.T, out map[string]any) int {
	t.Helper()
	pid, ok := out["pid"].(float64)
	if !ok {
		t.Fatalf("no pid in %v", out)
	}
	return int(pid)
}

// gone reports whether no process has pid any more.
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestStdioCall(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{})
	def := helperDef("echo", "serve", "", map[string]string{"MCP_TEST_SECRET": "${TEST_SECRET_SOURCE}"})
	out, err := call(t, m, def, `{"city": "Paris"}`)
	if err != nil {
		t.Fatal(err)
	}
	if echo, _ := out["echo"].(map[string]any); echo["city"] != "Paris" {
		t.Errorf("echo = %v", out)
	}
	if out["secret"] != "s3cr3t" {
		t.Errorf("the ${VAR} reference gave %v, want the variable's value", out["secret"])
	}
	if out["api_key_seen"] != false {
		t.Error("the server saw Gauntlet's LLM_API_KEY: only PATH, HOME, TMPDIR, LANG, LC_ALL and env go to it")
	}
	if def.MCP.Env["MCP_TEST_SECRET"] != "${TEST_SECRET_SOURCE}" {
		t.Error("the record was changed: references are never stored resolved")
	}
	// The same server answers the next call.
	again, err := call(t, m, def, `{}`)
	if err != nil || pidOf(t, again) != pidOf(t, out) {
		t.Errorf("second call: %v, %v; want the same process", again, err)
	}

	// mcp.tool names the server's tool; structured content is the output.
	add := helperDef("sum", "serve", "add", nil)
	sum, err := call(t, m, add, `{"a": 2, "b": 3}`)
	if err != nil || sum["sum"] != 5.0 {
		t.Errorf("add = %v, %v; want sum 5", sum, err)
	}
	// A result marked as an error is the call's error.
	if _, err := call(t, m, def, `{"fail": true}`); err == nil || !strings.Contains(err.Error(), "no such city") || errors.Is(err, harness.ErrToolUnavailable) {
		t.Errorf("fail: %v; want the tool's own error, for the model to read", err)
	}
	// An unknown server tool is the server's error answer.
	missing := helperDef("nope", "serve", "no_such_tool", nil)
	if _, err := call(t, m, missing, `{}`); err == nil {
		t.Error("a tool the server lacks answered")
	}
}

func TestMissingEnvReference(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{})
	def := helperDef("echo", "serve", "", map[string]string{"MCP_TEST_SECRET": "${NOT_SET_ANYWHERE}"})
	_, err := call(t, m, def, `{}`)
	if err == nil || !strings.Contains(err.Error(), "NOT_SET_ANYWHERE") {
		t.Fatalf("err = %v; want one naming the unset variable", err)
	}
}

func TestExitAtStart(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{})
	_, err := call(t, m, helperDef("broken", "exit", "echo", nil), `{}`)
	if err == nil || !strings.Contains(err.Error(), "exited (exit status 2) at start") || !strings.Contains(err.Error(), "fatal: no configuration") {
		t.Fatalf("err = %v; want the exit status and the last stderr line", err)
	}
	if !errors.Is(err, mcptool.ErrUnavailable) || !errors.Is(err, harness.ErrToolUnavailable) {
		t.Errorf("err %v does not wrap ErrUnavailable", err)
	}
	// Other tools are not affected.
	if _, err := call(t, m, helperDef("echo", "serve", "", nil), `{}`); err != nil {
		t.Errorf("another tool: %v", err)
	}
}

func TestHangTimesOut(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{CallTimeout: 2 * time.Second})
	def := helperDef("echo", "serve", "", nil)
	first, err := call(t, m, def, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = call(t, m, def, `{"hang": true}`)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not answer within 2s") {
		t.Fatalf("err = %v; want the tool timeout", err)
	}
	if !errors.Is(err, harness.ErrToolUnavailable) {
		t.Errorf("err %v does not wrap harness.ErrToolUnavailable: the tool loop would go on", err)
	}
	// The server stays up: the next call goes to the same process.
	after, err := call(t, m, def, `{}`)
	if err != nil || pidOf(t, after) != pidOf(t, first) {
		t.Errorf("after the timeout: %v, %v; want the same process answering", after, err)
	}
}

func TestCrashRestartsOnce(t *testing.T) {
	m, logs := newManager(t, mcptool.Options{})
	marker := filepath.Join(t.TempDir(), "crashed")
	def := helperDef("echo", "serve", "", map[string]string{"MCP_TEST_MARKER": marker})
	first, err := call(t, m, def, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	// It crashes under this call, and answers it once restarted.
	out, err := call(t, m, def, `{"crash_once": true}`)
	if err != nil {
		t.Fatalf("crash once: %v; want the call answered by the restarted server", err)
	}
	if pidOf(t, out) == pidOf(t, first) {
		t.Error("the same process answered: it was not restarted")
	}
	if !gone(pidOf(t, first)) {
		t.Error("the crashed process is still there")
	}
	if st := m.Servers(); len(st) != 1 || st[0].Starts != 2 || !st[0].Running {
		t.Errorf("status = %+v; want 2 starts, running", st)
	}
	if !strings.Contains(logs.String(), "exited (exit status 3)") {
		t.Errorf("the log does not say how it ended:\n%s", logs)
	}
}

func TestCrashTwiceErrors(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{})
	def := helperDef("echo", "serve", "", nil)
	_, err := call(t, m, def, `{"crash": true}`)
	if err == nil || !strings.Contains(err.Error(), "retried once on a restarted server") || !strings.Contains(err.Error(), "exited (exit status 3)") {
		t.Fatalf("err = %v; want the crash, retried once", err)
	}
	if !errors.Is(err, mcptool.ErrUnavailable) {
		t.Errorf("err %v does not wrap ErrUnavailable", err)
	}
	// The server is started again for later calls (after its backoff).
	harnesstest.Eventually(t, 30*time.Second, "a call after the crashes is answered", func() bool {
		_, err := call(t, m, def, `{}`)
		return err == nil
	})
}

func TestGarbageOnStdout(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{CallTimeout: 10 * time.Second})
	def := helperDef("flood", "garbage", "echo", nil)
	_, err := call(t, m, def, `{}`)
	if err == nil {
		t.Fatal("a server flooding stdout with garbage answered")
	}
	t.Logf("error: %v", err)
	if errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "wrote what is not an MCP message") {
		t.Errorf("err = %v; want the broken stream, not a timeout", err)
	}
}

func TestHugeAnswerBounded(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{MaxAnswerBytes: 1 << 20, CallTimeout: 20 * time.Second})
	def := helperDef("big", "big", "echo", nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := call(t, m, def, `{}`)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "over 1 MiB, the answer limit") {
		t.Fatalf("err = %v; want the answer limit", err)
	}
	if !errors.Is(err, harness.ErrToolUnavailable) {
		t.Errorf("err %v does not wrap harness.ErrToolUnavailable", err)
	}
	// The 100 MiB answer was cut at the limit: what this process
	// allocated meanwhile is far below it.
	if got := after.TotalAlloc - before.TotalAlloc; got > 40<<20 {
		t.Errorf("allocated %d MiB during the call; the answer was not bounded", got>>20)
	}
	if st := m.Servers(); len(st) != 1 || st[0].Running {
		t.Errorf("status = %+v; the connection whose stream was cut must be dropped", st)
	}
}

func TestStderrLogged(t *testing.T) {
	m, logs := newManager(t, mcptool.Options{})
	def := helperDef("talker", "serve", "echo", nil)
	if _, err := call(t, m, def, `{"say": 1}`); err != nil {
		t.Fatal(err)
	}
	harnesstest.Eventually(t, 10*time.Second, "the stderr line is logged", func() bool {
		return strings.Contains(logs.String(), `msg="tool talker: line 0 of the helper"`)
	})
	// A flood is bounded.
	if _, err := call(t, m, def, `{"say": 5000}`); err != nil {
		t.Fatal(err)
	}
	harnesstest.Eventually(t, 10*time.Second, "the dropped lines are counted", func() bool {
		return strings.Contains(logs.String(), "lines of stderr a second: lines not logged")
	})
	if n := strings.Count(logs.String(), "of the helper"); n > 1000 {
		t.Errorf("%d stderr lines logged of 5001: not bounded", n)
	}
}

func TestCloseEndsProcesses(t *testing.T) {
	for _, mode := range []string{"serve", "stubborn"} {
		t.Run(mode, func(t *testing.T) {
			m, _ := newManager(t, mcptool.Options{StopGrace: 300 * time.Millisecond})
			out, err := call(t, m, helperDef("echo", mode, "", nil), `{}`)
			if err != nil {
				t.Fatal(err)
			}
			pid := pidOf(t, out)
			if gone(pid) {
				t.Fatal("the server is not running")
			}
			m.Close()
			if !gone(pid) {
				t.Errorf("process %d is still there after Close", pid)
			}
			if _, err := m.ToolFor(helperDef("echo", mode, "", nil)); err == nil {
				t.Error("a tool after Close")
			}
		})
	}
}

func TestChangedRecordReplacesServer(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{})
	def := helperDef("echo", "serve", "", nil)
	first, err := call(t, m, def, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	changed := helperDef("echo", "serve", "", map[string]string{"MCP_TEST_SECRET": "v2"})
	out, err := call(t, m, changed, `{}`)
	if err != nil || out["secret"] != "v2" {
		t.Fatalf("changed record: %v, %v", out, err)
	}
	harnesstest.Eventually(t, 10*time.Second, "the old server ends", func() bool { return gone(pidOf(t, first)) })
}

// newHTTPServer serves the helper's tools over streamable HTTP.
func newHTTPServer(t *testing.T) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "http-helper", Version: "1"}, nil)
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "add"}, func(ctx context.Context, req *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(strings.Repeat(" ", 1)) + jsonNumber(in.A+in.B)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "big"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("y", 2<<20)}}}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func TestHTTPCall(t *testing.T) {
	hs := newHTTPServer(t)
	m, _ := newManager(t, mcptool.Options{MaxAnswerBytes: 1 << 20})
	def := &harness.ToolDefinition{ID: "add", Function: harness.FunctionDef{Name: "add"}, MCP: &harness.ToolMCP{URL: hs.URL}}
	tool, err := m.ToolFor(def)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tool.Call(context.Background(), &harness.ToolCallRequest{Arguments: json.RawMessage(`{"a": 40, "b": 2}`)})
	if err != nil || string(res.Output) != "42" {
		t.Fatalf("add over HTTP = %v, %v; want 42", res, err)
	}
	big := &harness.ToolDefinition{ID: "big", Function: harness.FunctionDef{Name: "big"}, MCP: &harness.ToolMCP{URL: hs.URL}}
	if _, err := call(t, m, big, `{}`); err == nil || !strings.Contains(err.Error(), "answer limit") {
		t.Errorf("a 2 MiB answer over HTTP with a 1 MiB limit: %v", err)
	}
	// A server that is down fails the call, saying where.
	hs.Close()
	down := &harness.ToolDefinition{ID: "down", Function: harness.FunctionDef{Name: "add"}, MCP: &harness.ToolMCP{URL: hs.URL}}
	if _, err := call(t, m, down, `{}`); err == nil || !strings.Contains(err.Error(), hs.URL) {
		t.Errorf("a server that is down: %v", err)
	}
}

// TestAnswerToolCall: harness.AnswerToolCall, the path of evaluations and
// chats, sends a record with an MCP block to its server, and says why
// when no MCP client is registered.
func TestAnswerToolCall(t *testing.T) {
	def := helperDef("add_numbers", "serve", "add", nil)
	offered := []harness.ToolDefinition{*def}
	call := harness.ToolCall{ID: "c1", Name: "add_numbers", Arguments: `{"a": 1, "b": 2}`}

	bare := harness.NewRegistry()
	out := harness.AnswerToolCall(context.Background(), bare, offered, call, harness.ToolCallRequest{})
	if !strings.Contains(out, "no MCP client") {
		t.Errorf("without a connector: %s", out)
	}

	m, _ := newManager(t, mcptool.Options{})
	reg := harness.NewRegistry()
	if err := reg.RegisterToolConnector(m); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterToolConnector(m); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("a second connector: %v", err)
	}
	out = harness.AnswerToolCall(context.Background(), reg, offered, call, harness.ToolCallRequest{})
	if out != `{"sum":3}` {
		t.Errorf("output = %s; want {\"sum\":3}", out)
	}
}

// TestConformance runs the tool kit against an MCP tool.
func TestConformance(t *testing.T) {
	m, _ := newManager(t, mcptool.Options{})
	tool, err := m.ToolFor(helperDef("echo", "serve", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	harnesstest.TestTool(t, tool)
}
