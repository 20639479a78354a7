//go:build unix

package nodeplugin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
)

// nodeSetup finds node and the example's installed dependencies. Without
// them the test is skipped, unless CI is set: there it fails.
func nodeSetup(t *testing.T) (node, dir string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set, but " + msg)
		}
		t.Skip(msg + "; the Node plugin example is not tested")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed (Node 20 or later)")
	}
	dir, err = filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range []string{"@grpc/grpc-js", "@grpc/proto-loader", "protobufjs"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", dep, "package.json")); err != nil {
			missing("the example's dependencies are not installed: run (cd examples/evaluator-plugin-node && npm ci)")
		}
	}
	return node, dir
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// installLauncher writes the plugin into plugins under name as the README
// says: a launcher that execs node on plugin.js, so that node is the
// server's own child and sees it go.
func installLauncher(t *testing.T, node, dir, plugins, name string) {
	t.Helper()
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec " + shellQuote(node) + " " + shellQuote(filepath.Join(dir, "plugin.js")) + "\n"
	if err := os.WriteFile(filepath.Join(plugins, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// recorder is a slog handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.records = append(r.records, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the first record with this message and its attributes.
func (r *recorder) find(msg string) (slog.Record, map[string]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if rec.Message == msg {
			attrs := map[string]string{}
			rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
			return rec, attrs, true
		}
	}
	return slog.Record{}, nil, false
}

func request(response string, config map[string]any) *harness.EvalRequest {
	return &harness.EvalRequest{
		Test:      harness.Test{ID: "colours", Prompt: "Name the colours of the French flag.", Expected: harness.Expected{Answer: "blue, white, red", Type: "contains"}},
		Evaluator: harness.EvaluatorConfig{ID: "kw", Name: "Keywords", Type: "keyword", Config: config},
		Response:  response,
	}
}

// yesModel is the run's model of the judge case: it says yes and counts
// its tokens.
type yesModel struct {
	mu   sync.Mutex
	asks []string
}

func (m *yesModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(req.Messages) > 0 {
		m.asks = append(m.asks, req.Messages[0].Content)
	}
	return &harness.ChatResponse{
		Message: harness.Message{Role: harness.RoleAssistant, Content: "Yes."},
		Usage:   harness.Usage{PromptTokens: 11, CompletionTokens: 1, TotalTokens: 12},
		Model:   req.Model,
	}, nil
}

// The same verdicts as the Go example's keyword evaluator, and the judge
// option, which calls the run's model back through the host.
func cases(judge harness.ChatModel) []harnesstest.EvalCase {
	judged := request("Blue, white and red.", map[string]any{"judge": true})
	judged.Client, judged.Model = judge, "judge-model"
	return []harnesstest.EvalCase{
		{Name: "all keywords", Request: request("Blue, white and red.", nil), Want: &harnesstest.Verdict{Score: 1, Passed: true}},
		{Name: "two of three", Request: request("Blue and white.", nil), Want: &harnesstest.Verdict{Score: 2.0 / 3}},
		{Name: "threshold", Request: request("Blue and white.", map[string]any{"pass_threshold": 0.6}), Want: &harnesstest.Verdict{Score: 2.0 / 3, Passed: true}},
		{Name: "own keywords", Request: request("BLUE", map[string]any{"keywords": []any{"blue", "gold"}}), Want: &harnesstest.Verdict{Score: 0.5}},
		{Name: "case sensitive", Request: request("BLUE", map[string]any{"keywords": []any{"blue"}, "case_sensitive": true}), Want: &harnesstest.Verdict{}},
		{Name: "judge", Request: judged, Want: &harnesstest.Verdict{Score: 1, Passed: true}},
	}
}

// The Node plugin, loaded by the real host from a plugins directory,
// passes the evaluator conformance kit; its field errors, version,
// capabilities, declared secrets and log lines reach the host intact.
func TestNodePlugin(t *testing.T) {
	node, dir := nodeSetup(t)
	t.Run("node --test", func(t *testing.T) {
		cmd := exec.Command(node, "--test", "keyword.test.js")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("node --test: %v\n%s", err, out)
		}
	})

	plugins := filepath.Join(t.TempDir(), "plugins")
	installLauncher(t, node, dir, plugins, "gauntlet-evaluator-keyword")
	logs := &recorder{}
	m, err := host.New(host.Options{Dir: plugins, Logger: slog.New(logs)})
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
	ev, ok := reg.Evaluator("keyword")
	if !ok {
		t.Fatal("keyword is not registered")
	}
	judge := &yesModel{}
	harnesstest.TestEvaluator(t, ev, cases(judge)...)

	// The judge case asked the model through the host, and its verdict
	// and tokens came back.
	judged := cases(judge)[5].Request
	res, err := ev.Evaluate(t.Context(), judged)
	if err != nil {
		t.Fatal(err)
	}
	if res.Details["judge"] != "yes" || res.Usage.TotalTokens != 12 {
		t.Errorf("judged: details %v usage %+v", res.Details, res.Usage)
	}
	judge.mu.Lock()
	asked := len(judge.asks) > 0 && strings.Contains(judge.asks[0], "Name the colours of the French flag.")
	judge.mu.Unlock()
	if !asked {
		t.Errorf("the model was asked %q", judge.asks)
	}
	// Without a model in the request, the judge says so and the score
	// stands.
	noModel := request("Blue, white and red.", map[string]any{"judge": true})
	if res, err := ev.Evaluate(t.Context(), noModel); err != nil || res.Details["judge"] != "no model" || res.Score != 1 {
		t.Errorf("judge without a model: %+v, %v", res, err)
	}

	// Records are checked by the plugin when stored, each bad field named.
	for _, tc := range []struct {
		config map[string]any
		fields []string
	}{
		{map[string]any{"keywords": "blue"}, []string{"config.keywords"}},
		{map[string]any{"pass_threshold": 2.0, "case_sensitive": "no"}, []string{"config.case_sensitive", "config.pass_threshold"}},
	} {
		err := harness.Validator{Registry: reg}.Evaluator(&harness.EvaluatorConfig{ID: "kw", Name: "Keywords", Type: "keyword", Config: tc.config})
		var ve *harness.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%v: %v, want a ValidationError", tc.config, err)
			continue
		}
		var got []string
		for _, f := range ve.Fields {
			got = append(got, f.Field)
		}
		if !slices.Equal(got, tc.fields) {
			t.Errorf("%v: fields %v, want %v", tc.config, got, tc.fields)
		}
	}
	// An evaluation error keeps its kind across the boundary.
	_, err = ev.Evaluate(t.Context(), request("x", map[string]any{"keywords": []any{}}))
	_ = err // an empty list falls back to the expected answer: no error
	_, err = ev.Evaluate(t.Context(), &harness.EvalRequest{Response: "x"})
	if !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "config.keywords") {
		t.Errorf("no keywords anywhere: %v, want ErrInvalid naming config.keywords", err)
	}

	st := m.List()
	if len(st) != 1 || st[0].Health != host.HealthRunning || st[0].Version != "1.0.0" || st[0].Restarts != 0 ||
		!slices.Equal(st[0].Capabilities, []string{"validate_config"}) || st[0].SecretFields == nil || len(st[0].SecretFields) != 0 {
		t.Errorf("List: %+v", st)
	}
	// The JSON log line the plugin wrote on stderr reached the host's log
	// with its level and attributes.
	rec, attrs, ok := logs.find("serving")
	if !ok || rec.Level != slog.LevelInfo || attrs["version"] != "1.0.0" {
		t.Errorf("the plugin's 'serving' record: %v %v %v", ok, rec.Level, attrs)
	}
	// The process is node itself (the launcher exec'd it), a child of
	// this process.
	pid := st[0].PID
	if comm, ppid := procInfo(pid); comm != "node" || ppid != os.Getpid() {
		t.Errorf("plugin process %d is %q with parent %d, want node with parent %d", pid, comm, ppid, os.Getpid())
	}

	// Stopping: the host's Shutdown call (go-plugin's controller) ends the
	// plugin at once, well before the host's 2 s grace would run out.
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("Close took %v: the plugin did not stop when asked", took)
	}
	if running(pid) {
		t.Errorf("plugin process %d still runs after Close", pid)
	}
	if _, _, ok := logs.find("exiting: the server asked the plugin to stop"); !ok {
		t.Error("the plugin did not log that the server asked it to stop")
	}
}

// procInfo reads a process's command name and parent from /proc ("" when
// it is gone or a zombie).
func procInfo(pid int) (comm string, ppid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return "", 0
	}
	fields := strings.Fields(string(b[closing+1:]))
	if len(fields) < 2 || fields[0] == "Z" || fields[0] == "X" {
		return "", 0
	}
	ppid, _ = strconv.Atoi(fields[1])
	return string(b[open+1 : closing]), ppid
}

// running reports whether pid is a live process (not gone, not a zombie).
func running(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		comm, _ := procInfo(pid)
		return comm != ""
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// A server killed with SIGKILL cannot stop its plugins: the Node plugin
// sees its parent gone and exits on its own.
func TestNodePluginExitsWhenTheHostIsKilled(t *testing.T) {
	node, dir := nodeSetup(t)
	plugins := filepath.Join(t.TempDir(), "plugins")
	installLauncher(t, node, dir, plugins, "gauntlet-evaluator-keyword")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHost$", "-test.v")
	// The killed host cannot remove its socket directory: keep it in a
	// temporary directory of the test's, short enough for a socket path.
	tmp, err := os.MkdirTemp("", "gnode")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	cmd.Env = append(os.Environ(), "GAUNTLET_NODE_HELPER_DIR="+plugins, "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := 0
	var said strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "PLUGIN PID "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
		said.WriteString(sc.Text() + "\n")
	}
	if pid == 0 {
		t.Fatalf("the helper host did not report its plugin's pid:\n%s", said.String())
	}
	comm, ppid := procInfo(pid)
	if comm != "node" || ppid != cmd.Process.Pid {
		t.Fatalf("plugin process %d is %q with parent %d, want node with parent %d", pid, comm, ppid, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The plugin checks its parent every half second.
	deadline := time.Now().Add(5 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the Node plugin %d still runs 5 s after its host was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHelperHost is the host process of
// TestNodePluginExitsWhenTheHostIsKilled: it starts the plugin, says its
// pid, and waits to be killed.
func TestHelperHost(t *testing.T) {
	dir := os.Getenv("GAUNTLET_NODE_HELPER_DIR")
	if dir == "" {
		t.Skip("run by TestNodePluginExitsWhenTheHostIsKilled")
	}
	m, err := host.New(host.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background(), "gauntlet-evaluator-keyword"); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("PLUGIN PID %d\n", m.List()[0].PID)
	time.Sleep(time.Minute) // until killed
}
