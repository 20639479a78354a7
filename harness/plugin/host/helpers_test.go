package host

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

// binDir holds the test plugins, built once per test binary.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv("GAUNTLET_HELPER_HOST_DIR") != "" {
		os.Exit(m.Run()) // a helper process: nothing to build
	}
	dir, err := os.MkdirTemp("", "gauntlet-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// Plugins built with -race sleep a second before exiting, unless told
	// not to; go-plugin passes the environment on.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildMu sync.Mutex
	built   = map[string]error{}
)

// build compiles the plugin main package ./testdata/<pkg> (or another
// package path) once and returns the executable's path.
func build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	out := filepath.Join(binDir, filepath.Base(pkg))
	err, done := built[pkg]
	if !done {
		args := []string{"build", "-o", out}
		if raceEnabled {
			args = append(args, "-race")
		}
		src := pkg
		if filepath.Base(pkg) == pkg {
			src = "./testdata/" + pkg
		}
		cmd := exec.Command("go", append(args, src)...)
		if b, cerr := cmd.CombinedOutput(); cerr != nil {
			err = fmt.Errorf("go build %s: %v\n%s", src, cerr, b)
		}
		built[pkg] = err
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// install copies the test plugin pkg into dir under name.
func install(t testing.TB, dir, pkg, name string) string {
	t.Helper()
	src := build(t, pkg)
	dst := filepath.Join(dir, name)
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// testLogger logs to the test's output when -v is given.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// newManager discovers dir and registers its plugins in a fresh registry;
// the manager is closed when the test ends.
func newManager(t testing.TB, opts Options) (*Manager, *harness.Registry) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	reg := harness.NewRegistry()
	if err := m.Register(reg); err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func status(t testing.TB, m *Manager, name string) Status {
	t.Helper()
	for _, s := range m.List() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("plugin %s not listed", name)
	return Status{}
}

// waitGone fails the test unless every pid is gone within a few seconds.
func waitGone(t testing.TB, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		harnesstest.Eventually(t, 5*time.Second, fmt.Sprintf("process %d gone", pid), func() bool { return !alive(pid) })
	}
}

// waitStopped waits until every thread of pid is in the stopped state.
// kill(SIGSTOP) returns before the group stop completes: until each thread
// has taken the signal, the process can still answer a call.
func waitStopped(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !stopped(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stopped reports whether every thread of pid shows state T in /proc.
func stopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			return false
		}
		// The state follows the parenthesised command name.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// fakeModel is a harness.ChatModel that answers with a fixed verdict and
// records what it was asked.
type fakeModel struct {
	mu     sync.Mutex
	reqs   []*harness.ChatRequest
	answer string
	err    error
}

func (f *fakeModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return nil, f.err
	}
	return &harness.ChatResponse{
		Message: harness.Message{Role: harness.RoleAssistant, Content: f.answer},
		Usage:   harness.Usage{PromptTokens: 7, CompletionTokens: 2, TotalTokens: 9},
		Model:   req.Model,
	}, nil
}

// fakeHost is a harness.ChannelHost that answers in upper case and
// records the conversation.
type fakeHost struct {
	mu      sync.Mutex
	msgs    []harness.InboundMessage
	cleared []string
	changed chan struct{}
}

func newFakeHost() *fakeHost { return &fakeHost{changed: make(chan struct{}, 100)} }

func (h *fakeHost) Chat(ctx context.Context, msg *harness.InboundMessage) (*harness.Reply, error) {
	h.mu.Lock()
	h.msgs = append(h.msgs, *msg)
	h.mu.Unlock()
	h.changed <- struct{}{}
	if msg.Text == "fail" {
		return nil, fmt.Errorf("agent %q: %w", "nobody", harness.ErrNotFound)
	}
	reply := &harness.Reply{Text: upper(msg.Text)}
	if msg.Text == "ping" {
		// The agent's knowledge base gave it two chunks.
		reply.Sources = []harness.Source{{File: "faq.md", Chunk: 2, Score: 0.5}, {File: "guide.pdf", Chunk: 0, Score: 0.25}}
	}
	return reply, nil
}

func (h *fakeHost) Clear(ctx context.Context, userID string) error {
	h.mu.Lock()
	h.cleared = append(h.cleared, userID)
	h.mu.Unlock()
	h.changed <- struct{}{}
	return nil
}

func (h *fakeHost) snapshot() ([]harness.InboundMessage, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]harness.InboundMessage(nil), h.msgs...), append([]string(nil), h.cleared...)
}

// waitFor waits until cond holds, checking whenever the host changes.
func (h *fakeHost) waitFor(t testing.TB, what string, cond func(msgs []harness.InboundMessage, cleared []string) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if cond(h.snapshot()) {
			return
		}
		select {
		case <-h.changed:
		case <-timeout:
			msgs, cleared := h.snapshot()
			t.Fatalf("timed out waiting for %s; messages %+v, cleared %v", what, msgs, cleared)
		}
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
