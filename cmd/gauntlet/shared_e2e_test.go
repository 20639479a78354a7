package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/pgtest"
)

// gauntletCmd is the gauntlet binary (this test binary as main) with
// args, for a process the test waits for.
func gauntletCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperGauntletMain$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "GAUNTLET_HELPER_MAIN=1", "GAUNTLET_DEFINITIONS=")
	return cmd
}

// httpJSON sends a request to a server and decodes its JSON answer into
// out (when not nil); it returns the status.
func httpJSON(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v; %s", method, url, err, data)
		}
	}
	return res.StatusCode
}

// serverBase starts `gauntlet serve` as a process and returns its address.
func serverBase(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	p := startGauntlet(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	line := p.waitLine(t, "listening on")
	return p, strings.Fields(strings.SplitAfter(line, "listening on ")[1])[0]
}

// TestRunBesideServe: `gauntlet run` with other definitions on the data
// directory a running `gauntlet serve` uses leaves the server alone: its
// live run stays running (not interrupted), its API still knows its own
// domains and accepts writes to them, and its next run runs its own
// tests.
func TestRunBesideServe(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { runBesideServe(t, nil) })
	t.Run("postgres", func(t *testing.T) {
		skipWithoutPostgres(t)
		runBesideServe(t, []string{"--database", pgtest.NewDatabase(t)})
	})
}

// runBesideServe is TestRunBesideServe with the database flags db (none:
// the data directory's SQLite file) given to both processes.
func runBesideServe(t *testing.T, db []string) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	defsB := filepath.Join(dir, "server-defs")
	if err := os.CopyFS(defsB, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	defsA := filepath.Join(dir, "cli-defs")
	for rel, text := range map[string]string{
		"domains/alpha/domain.yaml":  "id: alpha\nname: Alpha\nenabled: true\n",
		"domains/alpha/level-1.yaml": "tests:\n  - id: alpha-1\n    prompt: What is 20 + 22?\n    expected:\n      answer: \"42\"\n",
	} {
		p := filepath.Join(defsA, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The server's model answers slowly: its run is still going while the
	// CLI's runs.
	slow := llmtest.NewServer(llmtest.Options{Latency: 400 * time.Millisecond})
	t.Cleanup(slow.Close)
	fast := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(fast.Close)

	_, base := serverBase(t, append([]string{"--data", data, "--definitions", defsB, "--llm-base-url", slow.URL, "--concurrency", "1"}, db...)...)
	var started struct {
		RunID string `json:"run_id"`
	}
	if st := httpJSON(t, "POST", base+"/api/start", `{"model_name":"server-run"}`, &started); st != 200 || started.RunID == "" {
		t.Fatalf("start: %d %+v", st, started)
	}

	report := filepath.Join(dir, "cli.json")
	out, err := gauntletCmd(append([]string{"run", "--data", data, "--definitions", defsA, "--llm-base-url", fast.URL,
		"--format", "json", "--output", report}, db...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gauntlet run beside serve: %v\n%s", err, out)
	}
	if info := jsonReportInfo(t, report); info.TotalTests != 1 || info.DoneTests != 1 || len(info.Domains) != 1 || info.Domains[0] != "alpha" {
		t.Errorf("the CLI's run = %+v; want alpha's one test", info)
	}

	// The server's run is still its own, running.
	var info struct {
		RunInfo runs.Info `json:"run_info"`
	}
	if st := httpJSON(t, "GET", base+"/api/run/"+started.RunID, "", &info); st != 200 {
		t.Fatalf("get run: %d", st)
	}
	if info.RunInfo.Status != runs.StatusRunning {
		t.Fatalf("the server's live run = %s (%s) after the CLI ran; want running", info.RunInfo.Status, info.RunInfo.Error)
	}
	var status struct {
		Status string  `json:"status"`
		RunID  *string `json:"run_id"`
	}
	httpJSON(t, "GET", base+"/api/status", "", &status)
	if status.Status != "running" || status.RunID == nil || *status.RunID != started.RunID {
		t.Errorf("status = %+v; want the server's run running", status)
	}

	// The server's definitions are still B's.
	var list struct {
		Domains []struct {
			ID string `json:"id"`
		} `json:"domains"`
	}
	if st := httpJSON(t, "GET", base+"/api/settings/domains", "", &list); st != 200 || len(list.Domains) != 3 {
		t.Fatalf("the server's domains = %d %+v; want examples' 3", st, list)
	}
	for _, d := range list.Domains {
		if d.ID == "alpha" {
			t.Fatalf("the server lists the CLI's domain: %+v", list)
		}
	}
	if st := httpJSON(t, "POST", base+"/api/settings/tests", `{"domain_id":"arithmetic","level":1,"name":"added","prompt":"What is 1 + 1?","expected":{"answer":"2"}}`, nil); st != 200 && st != 201 {
		t.Fatalf("a write to the server's own domain: status %d", st)
	}

	// The server's next run runs its own tests.
	if st := httpJSON(t, "POST", base+"/api/stop", "", nil); st != 200 {
		t.Fatalf("stop: %d", st)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		httpJSON(t, "GET", base+"/api/status", "", &status)
		if status.Status == "idle" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's run did not stop")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var next struct {
		RunID string `json:"run_id"`
	}
	if st := httpJSON(t, "POST", base+"/api/start", `{"model_name":"next","domains":["arithmetic"]}`, &next); st != 200 {
		t.Fatalf("the server's next run: status %d", st)
	}
	// A run is accepted at once and counts its tests as it is prepared.
	deadline = time.Now().Add(time.Minute)
	for {
		if st := httpJSON(t, "GET", base+"/api/run/"+next.RunID, "", &info); st == 200 && info.RunInfo.TotalTests != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's next run was never prepared")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if info.RunInfo.TotalTests != 7 {
		t.Errorf("the server's next run = %+v; want arithmetic's 6 tests and the one added", info.RunInfo)
	}
	httpJSON(t, "POST", base+"/api/stop", "", nil)
}

// TestResumeKilledServerRun: the run of a server killed mid-run is marked
// interrupted by the next process, which writes why into the run's log;
// `gauntlet run --resume ID` with no --definitions completes it with the
// definitions it stored, and its run_info and log say it was resumed.
func TestResumeKilledServerRun(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	slow := llmtest.NewServer(llmtest.Options{Latency: 300 * time.Millisecond})
	t.Cleanup(slow.Close)
	p, base := serverBase(t, "--data", data, "--definitions", defs, "--llm-base-url", slow.URL, "--concurrency", "1")
	var started struct {
		RunID string `json:"run_id"`
	}
	if st := httpJSON(t, "POST", base+"/api/start", `{"model_name":"killed"}`, &started); st != 200 {
		t.Fatalf("start: %d", st)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var st struct {
			Progress int `json:"progress"`
		}
		httpJSON(t, "GET", base+"/api/status", "", &st)
		if st.Progress >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's run made no progress")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()

	fast := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(fast.Close)
	report := filepath.Join(dir, "resumed.json")
	cmd := gauntletCmd("run", "--resume", started.RunID, "--data", data, "--llm-base-url", fast.URL,
		"--format", "json", "--output", report)
	cmd.Dir = dir // no ./definitions here
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gauntlet run --resume without --definitions: %v\n%s", err, out)
	}
	info := jsonReportInfo(t, report)
	if info.RunID != started.RunID || info.Status != runs.StatusCompleted || info.DoneTests != 12 {
		t.Fatalf("resumed run = %+v", info)
	}
	if info.Resumed.Count != 1 || len(info.Resumed.At) != 1 {
		t.Errorf("run_info.resumed = %+v; want one resume", info.Resumed)
	}
	logText, err := os.ReadFile(filepath.Join(data, "logs", started.RunID+".log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"] run " + started.RunID + " interrupted: the process running it, gauntlet serve (pid",
		"] run " + started.RunID + " resumed (resume 1, after it ended interrupted"} {
		if !strings.Contains(string(logText), want) {
			t.Errorf("the run's log lacks %q:\n%s", want, logText)
		}
	}
}
