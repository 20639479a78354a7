package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// The helper process is this test binary run again with these variables
// set, as os/exec's tests do.
const (
	helperEnv    = "GAUNTLET_ENGINE_HELPER"
	helperDirEnv = "GAUNTLET_ENGINE_HELPER_DIR"
	helperLLMEnv = "GAUNTLET_ENGINE_HELPER_LLM"
	helperDBEnv  = "GAUNTLET_ENGINE_HELPER_DB" // the database's URL, when not the directory's SQLite file
)

// TestEngineHelperProcess is not a test: run by TestInterruptedRun in a
// child process, it starts a run over the database in helperDirEnv
// against the model at helperLLMEnv, prints the run id, and waits to be
// killed.
func TestEngineHelperProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for TestInterruptedRun")
	}
	ctx := context.Background()
	dir := os.Getenv(helperDirEnv)
	url := os.Getenv(helperDBEnv)
	if url == "" {
		url = filepath.Join(dir, "g.db")
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	cat, _, err := catalog.Open(ctx, catalog.Options{Dir: filepath.Join(dir, "definitions"), DB: db})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	model, err := llm.New(llm.Options{BaseURL: os.Getenv(helperLLMEnv), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: model, Concurrency: 2,
		LogDir: filepath.Join(dir, "logs")})
	if err != nil {
		t.Fatal(err)
	}
	id, err := eng.Start(ctx, engine.StartRequest{ModelName: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("RUN %s\n", id)
	for {
		time.Sleep(time.Minute)
	}
}

// TestInterruptedRun kills a process in the middle of a run: its finished
// results are in the database, and the next engine marks the run
// interrupted.
func TestInterruptedRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a process")
	}
	const total = 40
	dir := t.TempDir()
	d := newDefs().domain("d", "", true).sums("d", 1, total/2, 0).sums("d", 2, total/2, 0)
	db, cat, rs := openStores(t, dir, "", d.snap())
	mock := llmtest.NewServer(llmtest.Options{Latency: 150 * time.Millisecond})
	defer mock.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestEngineHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperDirEnv+"="+dir, helperLLMEnv+"="+mock.URL, helperDBEnv+"="+databaseOf(t, dir))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "RUN "); ok {
				lines <- id
			}
		}
		close(lines)
	}()
	var id string
	select {
	case id = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not start a run")
	}
	if id == "" {
		t.Fatal("the helper exited without starting a run")
	}

	ctx := context.Background()
	harnesstest.Eventually(t, 30*time.Second, "stored results", func() bool {
		st, err := rs.Stats(ctx, id)
		return err == nil && st.TotalTests >= 4
	})
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no clean-up runs
		t.Fatal(err)
	}
	killed = true
	cmd.Wait()

	info, err := rs.Run(ctx, id)
	if err != nil || info.Status != runs.StatusRunning {
		t.Fatalf("after the kill: %+v %v", info, err)
	}
	kept, err := rs.Results(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) < 4 || len(kept) >= total {
		t.Fatalf("%d results kept", len(kept))
	}

	// The next engine over the same database marks the run interrupted.
	model, err := llm.New(llm.Options{BaseURL: mock.URL})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan engine.Event, 1000)
	eng, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: model, Concurrency: 8,
		OnEvent: func(ev engine.Event) { events <- ev }})
	if err != nil {
		t.Fatal(err)
	}
	info, err = rs.Run(ctx, id)
	if err != nil || info.Status != runs.StatusInterrupted || info.CompletedAt == nil {
		t.Fatalf("after restart: %+v %v", info, err)
	}
	results, err := rs.Results(ctx, id)
	if err != nil || len(results) != len(kept) {
		t.Fatalf("after restart: %d results (had %d) %v", len(results), len(kept), err)
	}
	tokens, score := 0, 0.0
	for _, r := range results {
		if r.Status != runs.TestPassed {
			t.Errorf("%s: %s", r.TestID, r.Status)
		}
		tokens += r.PromptTokens + r.CompletionTokens
		score += r.Score
	}
	if info.TotalTokens != tokens || info.OverallScore == nil || *info.OverallScore != score/float64(len(results)) {
		t.Errorf("interrupted run totals: %+v, want %d tokens", info, tokens)
	}
	m, err := rs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, lvl := range m["d"] {
		if lvl.Status == runs.CellRunning || lvl.Status == runs.CellPending {
			t.Errorf("cell left %s: %+v", lvl.Status, lvl)
		}
	}
	// The process died between batches: what it committed, it committed
	// with the cells' counters.
	runstest.CheckCounters(t, db, id)
	if st := eng.Status(); st.Status != "idle" || st.LastRunID == nil || *st.LastRunID != id {
		t.Errorf("status after restart: %+v", st)
	}
	if n, err := sqldb.Bun(db).NewSelect().Table("runs").Where("status = ?", runs.StatusRunning).Count(ctx); err != nil || n != 0 {
		t.Errorf("%d runs still running: %v", n, err)
	}

	// The interrupted run resumes into itself: the tests the dead process
	// did not finish run, the others are kept, none twice.
	if err := eng.Resume(ctx, id); err != nil {
		t.Fatalf("resume the interrupted run: %v", err)
	}
	for ev := range events {
		if ev.Kind == engine.EventRunFinished && ev.RunID == id {
			if ev.Info.Status != runs.StatusCompleted || !ev.Info.Complete || ev.Info.DoneTests != total {
				t.Errorf("resumed run: %+v", ev.Info)
			}
			break
		}
	}
	if results, err := rs.Results(ctx, id); err != nil || len(results) != total {
		t.Errorf("after the resume: %d results of %d, %v", len(results), total, err)
	}
	if n, err := sqldb.Bun(db).NewSelect().Table("run_results").Where("run_id = ?", id).Count(ctx); err != nil || n != total {
		t.Errorf("after the resume: %d rows stored, %v", n, err)
	}
	runstest.CheckCounters(t, db, id)

	// And it runs again.
	again, err := eng.Start(ctx, engine.StartRequest{Domains: []string{"d"}})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == engine.EventRunFinished && ev.RunID == again {
			if ev.Info.Status != runs.StatusCompleted {
				t.Errorf("run after restart: %+v", ev.Info)
			}
			break
		}
	}
}
