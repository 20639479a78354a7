package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// jsonReportInfo reads run_info from a JSON report.
func jsonReportInfo(t *testing.T, path string) runs.Info {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RunInfo runs.Info `json:"run_info"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	return doc.RunInfo
}

// TestRunResumeAfterOutage: a run against an endpoint that is down stops
// early with the reason and fails the gate (status 1); once the endpoint is up, --resume
// runs the same run to completion, with no result twice.
func TestRunResumeAfterOutage(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nothing listens there now: connections are refused
	flags := []string{"--data", filepath.Join(dir, "data"), "--definitions", defs, "--llm-model", "mock",
		"--llm-retries", "0", "--format", "json"}

	first := filepath.Join(dir, "first.json")
	var errOut strings.Builder
	err = run(context.Background(), append([]string{"run", "--llm-base-url", down, "--output", first}, flags...), io.Discard, &errOut)
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("a run against a dead endpoint: err = %v, want the gate to fail", err)
	}
	info := jsonReportInfo(t, first)
	if info.Complete || info.Errors == 0 || info.Passed != 0 || info.OverallScore != nil {
		t.Fatalf("first run: %+v", info)
	}
	if info.Config == nil || info.Config.BaseURL != down || info.Config.Retries != 0 {
		t.Errorf("config: %+v", info.Config)
	}

	mock := llmtest.NewServer(llmtest.Options{})
	t.Cleanup(mock.Close)
	second := filepath.Join(dir, "second.json")
	err = run(context.Background(), append([]string{"run", "--resume", info.RunID, "--llm-base-url", mock.URL, "--output", second}, flags...), io.Discard, &errOut)
	resumed := jsonReportInfo(t, second)
	if resumed.RunID != info.RunID || resumed.Status != runs.StatusCompleted || resumed.DoneTests != 12 || resumed.Errors != 0 {
		t.Fatalf("resumed run: %+v (err %v)\n%s", resumed, err, errOut.String())
	}
	if st := mock.Stats(); st.ChatCompletions < 12 {
		t.Errorf("%d requests: the errored tests were not run again", st.ChatCompletions)
	}
	// --resume takes the stored run as it is.
	if err := run(context.Background(), append([]string{"run", "--resume", info.RunID, "--domains", "arithmetic"}, flags...), io.Discard, io.Discard); err == nil {
		t.Error("--resume with --domains accepted")
	}
}

// TestRunHugeAnswer: an answer larger than --llm-max-response-bytes makes
// its test an error ("response too large"), read no further and not
// retried; the other tests are scored, and the run is not complete.
func TestRunHugeAnswer(t *testing.T) {
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	if err := os.CopyFS(defs, os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	mock := llmtest.NewServer(llmtest.Options{Huge: llmtest.Schedule{First: 1}, HugeBytes: 64 << 20})
	t.Cleanup(mock.Close)
	out := filepath.Join(dir, "report.json")
	err := run(context.Background(), []string{"run", "--data", filepath.Join(dir, "data"), "--definitions", defs,
		"--llm-base-url", mock.URL, "--llm-model", "mock", "--llm-max-response-bytes", "100000",
		"--concurrency", "1", "--format", "json", "--output", out}, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("a run with an errored test passed the gate")
	}
	info := jsonReportInfo(t, out)
	if info.Errors != 1 || info.DoneTests != 12 || info.Complete || info.OverallScore == nil {
		t.Fatalf("run_info: %+v", info)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "response too large") {
		t.Error("the report does not say the answer was too large")
	}
	if st := mock.Stats(); st.Huge != 1 || st.HugeBytesSent > 16<<20 {
		t.Errorf("endpoint stats %+v: the huge answer was retried or read whole", st)
	}
}
