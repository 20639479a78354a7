package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/testbin"
)

// exampleMCPDefinitions copies the example MCP server's definitions into
// dir, its tool's command pointing at a build of the example server.
func exampleMCPDefinitions(t *testing.T, dir string) string {
	t.Helper()
	bin := testbin.Build(t, "../../examples/mcp-server")
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS("../../examples/mcp-server/definitions")); err != nil {
		t.Fatal(err)
	}
	toolFile := filepath.Join(defs, "tools", "multiply.yaml")
	b, err := os.ReadFile(toolFile)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "'./bin/mcp-calculator'", strconv.Quote(bin), 1)
	if text == string(b) {
		t.Fatal("the example tool does not start ./bin/mcp-calculator")
	}
	if err := os.WriteFile(toolFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return defs
}

// TestMCPToolEndToEnd builds the example MCP server and runs its suite
// through the real serve: a run offers the server's multiply tool (a real
// child process over stdio), the call and its real output are in the
// results and scored by tool_call and contains; an agent given the tool
// gets the same answers in its chat; the server's stderr is in the log
// with the tool id; and the child is gone once serve stops.
func TestMCPToolEndToEnd(t *testing.T) {
	dir := t.TempDir()
	defs := exampleMCPDefinitions(t, dir)
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	p := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--definitions", defs,
		"--plugins", filepath.Join(dir, "plugins"), "--llm-base-url", mock.URL, "--tool-timeout", "20s"})

	var started struct {
		RunID string `json:"run_id"`
	}
	p.call(t, http.MethodPost, "/api/start", map[string]any{"model_name": "mcp"}, http.StatusOK, &started)
	harnesstest.Eventually(t, 60*time.Second, "the run ends", func() bool {
		var last struct {
			Status string `json:"status"`
		}
		p.call(t, http.MethodGet, "/api/v1/history/last/id", nil, http.StatusOK, &last)
		return last.Status != "running"
	})
	var cell struct {
		Tests []struct {
			TestID  string         `json:"test_id"`
			Status  string         `json:"status"`
			Details map[string]any `json:"details"`
		} `json:"tests"`
	}
	p.call(t, http.MethodGet, "/api/run/"+started.RunID+"/tests/calculator/1", nil, http.StatusOK, &cell)
	want := map[string]float64{"multiply-call": 42, "multiply-answer": 144}
	if len(cell.Tests) != len(want) {
		t.Fatalf("tests = %+v\n%s", cell.Tests, p.logs)
	}
	for _, tr := range cell.Tests {
		calls, _ := tr.Details["tool_calls"].([]any)
		if tr.Status != "passed" || len(calls) != 1 {
			t.Errorf("%s: %s, calls %v; want passed with one call\n%s", tr.TestID, tr.Status, tr.Details, p.logs)
			continue
		}
		c, _ := calls[0].(map[string]any)
		out, _ := c["output"].(map[string]any)
		if c["name"] != "multiply" || out["result"] != want[tr.TestID] {
			t.Errorf("%s: call %v; want multiply's real output %v", tr.TestID, c, want[tr.TestID])
		}
	}
	// The transcript has the tool message with the server's output.
	resp, err := http.Get(p.base + "/api/run/" + started.RunID + "/results")
	if err != nil {
		t.Fatal(err)
	}
	var results struct {
		Results []struct {
			TestID     string `json:"test_id"`
			Transcript []struct {
				Role       string `json:"role"`
				Content    string `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"transcript"`
		} `json:"results"`
	}
	err = json.NewDecoder(resp.Body).Decode(&results)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range results.Results {
		for _, m := range r.Transcript {
			found = found || (r.TestID == "multiply-call" && m.Role == "tool" && m.Content == `{"result":42}` && m.ToolCallID != "")
		}
	}
	if !found {
		t.Errorf("no tool message {\"result\":42} in multiply-call's transcript: %+v", results.Results)
	}

	// An agent's chat reaches the same server.
	p.call(t, http.MethodPost, "/api/agents", map[string]any{"id": "calc_bot", "name": "Calculator bot", "system_prompt": "You calculate."}, http.StatusCreated, nil)
	p.call(t, http.MethodPut, "/api/agents/calc_bot/tools", map[string]any{"tools": []string{"multiply"}}, http.StatusOK, nil)
	var reply struct {
		Response  string           `json:"response"`
		ToolCalls []map[string]any `json:"tool_calls"`
	}
	p.call(t, http.MethodPost, "/api/agents/calc_bot/chat", map[string]any{"user_id": "u1", "message": "Use multiply to compute 3 times 5."}, http.StatusOK, &reply)
	if len(reply.ToolCalls) != 1 || !strings.Contains(reply.Response, "15") {
		t.Errorf("chat reply = %+v; want multiply called and 15 in the answer", reply)
	}

	// The server's stderr is logged, prefixed with the tool id.
	logs := p.logs.String()
	if !strings.Contains(logs, "tool multiply: calculator: multiply 6 × 7") {
		t.Errorf("the MCP server's stderr is not in the log:\n%s", logs)
	}
	m := regexp.MustCompile(`mcp: server started" tool=multiply restarts=0 pid=(\d+)`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("no start of the MCP server in the log:\n%s", logs)
	}
	pid, _ := strconv.Atoi(m[1])
	if strings.Count(logs, "mcp: server started") != 1 {
		t.Errorf("the MCP server was started more than once: one process per tool, shared by runs and chats\n%s", logs)
	}
	p.stop(t)
	if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Errorf("the MCP server (pid %d) outlived serve", pid)
	}
}

// TestMCPToolFaultsEndToEnd: tools whose MCP server exits at start, hangs
// on a call or floods stdout with garbage make their tests `error`, the
// reason named, within --tool-timeout; the healthy tool's test passes, the
// hung server stays up (one process, until serve stops) and serve keeps
// answering.
func TestMCPToolFaultsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	defs := exampleMCPDefinitions(t, dir)
	fault := testbin.Build(t, "./testdata/mcpfault")
	level := "tools:\n  - multiply\ntests:\n" +
		"  - id: ok\n    prompt: Use multiply to compute 2 times 3.\n    expected:\n      answer: multiply\n      type: tool_call\n"
	for _, mode := range []string{"exit", "hang", "flood"} {
		tool := "id: " + mode + "_tool\nname: " + mode + "\nfunction:\n  name: " + mode + "_tool\n" +
			"mcp:\n  command:\n    - " + strconv.Quote(fault) + "\n    - " + mode + "\n  tool: fault\n"
		if err := os.WriteFile(filepath.Join(defs, "tools", mode+"_tool.yaml"), []byte(tool), 0o644); err != nil {
			t.Fatal(err)
		}
		level += "  - id: " + mode + "\n    prompt: Use " + mode + "_tool now.\n    tools:\n      - " + mode + "_tool\n" +
			"    expected:\n      answer: " + mode + "_tool\n      type: tool_call\n"
	}
	if err := os.WriteFile(filepath.Join(defs, "domains", "calculator", "level-1.yaml"), []byte(level), 0o644); err != nil {
		t.Fatal(err)
	}
	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	p := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--definitions", defs,
		"--plugins", filepath.Join(dir, "plugins"), "--llm-base-url", mock.URL, "--tool-timeout", "2s"})
	var loaded struct {
		Total int `json:"total"`
	}
	p.call(t, http.MethodGet, "/api/settings/tools", nil, http.StatusOK, &loaded)
	if loaded.Total != 4 {
		t.Fatalf("%d tools loaded, want 4\n%s", loaded.Total, p.logs)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	p.call(t, http.MethodPost, "/api/start", map[string]any{"model_name": "faults"}, http.StatusOK, &started)
	harnesstest.Eventually(t, 90*time.Second, "the run ends", func() bool {
		var last struct {
			Status string `json:"status"`
		}
		p.call(t, http.MethodGet, "/api/v1/history/last/id", nil, http.StatusOK, &last)
		return last.Status != "running"
	})
	var cell struct {
		Tests []struct {
			TestID  string         `json:"test_id"`
			Status  string         `json:"status"`
			Details map[string]any `json:"details"`
		} `json:"tests"`
	}
	p.call(t, http.MethodGet, "/api/run/"+started.RunID+"/tests/calculator/1", nil, http.StatusOK, &cell)
	reasons := map[string]string{
		"exit":  "exited (exit status 2) at start",
		"hang":  "did not answer within 2s",
		"flood": "not an MCP message",
	}
	if len(cell.Tests) != 4 {
		t.Fatalf("tests = %+v", cell.Tests)
	}
	for _, tr := range cell.Tests {
		reason := fmt.Sprint(tr.Details["error"])
		switch want := reasons[tr.TestID]; {
		case tr.TestID == "ok":
			if tr.Status != "passed" {
				t.Errorf("ok: %s %v; want passed", tr.Status, tr.Details)
			}
		case tr.Status != "error" || !strings.Contains(reason, want) || !strings.Contains(reason, tr.TestID+"_tool"):
			t.Errorf("%s: %s, %q; want error saying %q", tr.TestID, tr.Status, reason, want)
		}
	}
	// An agent's chat whose tool cannot answer fails, naming the tool.
	p.call(t, http.MethodPost, "/api/agents", map[string]any{"id": "broken_bot", "name": "Broken bot"}, http.StatusCreated, nil)
	p.call(t, http.MethodPut, "/api/agents/broken_bot/tools", map[string]any{"tools": []string{"exit_tool"}}, http.StatusOK, nil)
	var problem struct {
		Detail string `json:"detail"`
	}
	p.call(t, http.MethodPost, "/api/agents/broken_bot/chat", map[string]any{"user_id": "u1", "message": "Use exit_tool now."}, http.StatusBadGateway, &problem)
	if !strings.Contains(problem.Detail, "a tool of the agent failed") || !strings.Contains(problem.Detail, "exit_tool") {
		t.Errorf("chat problem = %q; want the failed tool named", problem.Detail)
	}
	if !strings.Contains(p.logs.String(), "tool exit_tool: mcpfault: no configuration, giving up") {
		t.Errorf("the failed server's stderr is not in the log:\n%s", p.logs)
	}
	// The hung server stays up: started once, alive until serve stops.
	m := regexp.MustCompile(`mcp: server started" tool=hang_tool restarts=0 pid=(\d+)`).FindAllStringSubmatch(p.logs.String(), -1)
	if len(m) != 1 {
		t.Fatalf("hang_tool's server started %d times, want once:\n%s", len(m), p.logs)
	}
	pid, _ := strconv.Atoi(m[0][1])
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Error("the hung server was stopped: a call that times out leaves it up")
	}
	p.call(t, http.MethodGet, "/api/settings/tools", nil, http.StatusOK, nil)
	p.stop(t)
	if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		t.Errorf("the hung server (pid %d) outlived serve", pid)
	}
}
