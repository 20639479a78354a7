//go:build unix

package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// sayModel answers a prompt "say:X" with X.
type sayModel struct{}

func (sayModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	last := req.Messages[len(req.Messages)-1].Content
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: strings.TrimPrefix(last, "say:")}}, nil
}

// An evaluation run scored by a plugin: one test makes the plugin exit
// while it scores three tests at once; all three are retried on the
// restarted plugin, the one that crashes it again gets status error with
// the plugin's name and exit status, the two others pass, and so does the
// rest of the run.
func TestEngineRunSurvivesCrash(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	install(t, plugins, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: plugins, RestartBackoff: 20 * time.Millisecond})

	db, err := store.Open(ctx, filepath.Join(dir, "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defs, _, err := catalog.Open(ctx, catalog.Options{Dir: filepath.Join(dir, "definitions"), DB: db, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ready := t.TempDir()
	marker := filepath.Join(t.TempDir(), "exited")
	// The record is validated by the plugin.
	if _, err := defs.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "plug", Name: "Plugin", Type: "testeval",
		Config: map[string]any{"mode": "bad"}}); err == nil || !strings.Contains(err.Error(), "config.mode") {
		t.Fatalf("a record the plugin refuses: %v", err)
	}
	if _, err := defs.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "plug", Name: "Plugin", Type: "testeval",
		Config: map[string]any{"ready_dir": ready, "gate": 3, "marker": marker}}); err != nil {
		t.Fatal(err)
	}
	if _, err := defs.CreateDomain(ctx, harness.Domain{ID: "d", Name: "D", Enabled: true, EvaluatorID: "plug"}); err != nil {
		t.Fatal(err)
	}
	// Level 1: three tests scored together (all the run's slots), one of
	// which crashes the plugin; level 2: ten that pass.
	for i := range 3 {
		prompt := "say:gate"
		if i == 1 {
			prompt = "say:gate-exit"
		}
		if _, err := defs.CreateTest(ctx, harness.Test{ID: fmt.Sprintf("gate%d", i), DomainID: "d", Level: 1,
			Prompt: prompt, Expected: harness.Expected{Answer: "gate", Type: "exact"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if _, err := defs.CreateTest(ctx, harness.Test{ID: fmt.Sprintf("ok%d", i), DomainID: "d", Level: 2,
			Prompt: "say:42", Expected: harness.Expected{Answer: "42", Type: "exact"}}); err != nil {
			t.Fatal(err)
		}
	}
	history, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	results := map[string]runs.Result{}
	finished := make(chan runs.Info, 1)
	eng, err := engine.New(ctx, engine.Options{
		Definitions: defs, Runs: history, Client: sayModel{}, Model: "m", Concurrency: 3, Registry: reg,
		Logger: testLogger(t),
		OnEvent: func(ev engine.Event) {
			switch ev.Kind {
			case engine.EventTestFinished:
				mu.Lock()
				results[ev.Result.TestID] = *ev.Result
				mu.Unlock()
			case engine.EventRunFinished:
				finished <- *ev.Info
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Start(ctx, engine.StartRequest{ModelName: "m"}); err != nil {
		t.Fatal(err)
	}
	select {
	case info := <-finished:
		if info.Status != runs.StatusCompleted {
			t.Errorf("run %s", info.Status)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	for id, r := range results {
		want := runs.TestPassed
		if id == "gate1" {
			want = runs.TestError
		}
		if r.Status != want {
			t.Errorf("%s: %s (%s), want %s", id, r.Status, fmt.Sprint(r.Details["error"]), want)
		}
		if want == runs.TestError && !strings.Contains(fmt.Sprint(r.Details["error"]), "plugin gauntlet-evaluator-testeval exited (exit status 2)") {
			t.Errorf("%s: error %q", id, fmt.Sprint(r.Details["error"]))
		}
	}
	if len(results) != 13 {
		t.Errorf("%d results, want 13", len(results))
	}
	if s := status(t, m, "gauntlet-evaluator-testeval"); s.Restarts < 1 || s.Restarts > 2 || s.Health != HealthRunning {
		t.Errorf("status %+v", s)
	}
}
