package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestInterruptedRunLogged: the engine that finds a run left running by a
// dead process writes why it ended into the run's log file and its log
// stream, in the "[domain][Ln]" form of every line; a run whose owner is
// alive (another process on the same database) is left running, with
// nothing written.
func TestInterruptedRunLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	d := newDefs().domain("d", "", true).sums("d", 1, 2, 0)
	db, cat, rs := openStores(t, dir, "", d.snap())
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	create := func(s *runs.Store, id string) {
		t.Helper()
		if err := s.CreateRun(ctx, runs.Info{RunID: id, StartedAt: runs.Now(), ModelName: id, Model: "m", Status: runs.StatusRunning,
			TotalTests: 2, Domains: []string{"d"}}, []runs.CellKey{{Domain: "d", Level: 1, Tests: 2}}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(logDir, id+".log"), []byte("2026-01-01T00:00:00Z [d][L1] started\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	create(rs, "dead") // no lease: its process is gone
	live, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := live.Lease(ctx, runs.LeaseOptions{Kind: runs.KindServe, Command: "gauntlet serve", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	create(live, "alive")

	mock := llmtest.NewServer(llmtest.Options{})
	defer mock.Close()
	model, err := llm.New(llm.Options{BaseURL: mock.URL})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: model, LogDir: logDir})
	if err != nil {
		t.Fatal(err)
	}
	want := "[d][L1] run dead interrupted: the process running it ended before the run finished"
	data, _ := os.ReadFile(filepath.Join(logDir, "dead.log"))
	if !strings.Contains(string(data), want) {
		t.Errorf("dead.log lacks %q:\n%s", want, data)
	}
	lines, _ := eng.PollLogs()
	if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("log stream = %q; want the line %q", lines, want)
	}
	if info, _ := rs.Run(ctx, "alive"); info.Status != runs.StatusRunning {
		t.Errorf("the live process's run = %s", info.Status)
	}
	if data, _ := os.ReadFile(filepath.Join(logDir, "alive.log")); strings.Contains(string(data), "interrupted") {
		t.Errorf("alive.log:\n%s", data)
	}
}
