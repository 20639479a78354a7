package server_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/server"
)

// heldCatalog is the catalog, but the full walk of its tests (the one
// that stores a run's definitions with the run) waits until release is
// closed: a run's preparation is held for as long as the test wants.
type heldCatalog struct {
	*catalog.Catalog
	reached chan struct{} // closed when a walk waits
	release chan struct{}
	once    sync.Once
}

func (c *heldCatalog) EachTest(ctx context.Context, domainID string, fn func(harness.Test) error) error {
	if domainID == "" {
		c.once.Do(func() { close(c.reached) })
		select {
		case <-c.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Catalog.EachTest(ctx, domainID, fn)
}

// withHeldEngine gives the server an engine, over the same store and
// model as newEngineEnv's, whose runs' preparation waits for held.
func withHeldEngine(t *testing.T, held *heldCatalog) envOption {
	return func(o *server.Options) {
		held.Catalog = o.Catalog
		eng, err := engine.New(context.Background(), engine.Options{Definitions: held, Runs: o.Runs,
			Client: o.Models.(harness.ChatModel), Model: o.LLM.Model, Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Stop(10 * time.Second) })
		o.Engine = eng
	}
}

// TestStartAnswersWhilePreparing: POST /api/start answers 200 with the
// run's id while the run's preparation (storing its definitions) is
// held; the run is active meanwhile (GET /api/status running, preparing,
// with its size; another start 409), a stop ends it stopped with nothing
// run, and a resume of it is a 422 saying why. Released, a new run
// completes.
func TestStartAnswersWhilePreparing(t *testing.T) {
	t.Parallel()
	held := &heldCatalog{reached: make(chan struct{}), release: make(chan struct{})}
	env := newEngineEnv(t, engineConfig{}, withHeldEngine(t, held))
	id := env.start(map[string]any{})
	// The answer came; only now does the test wait for the preparation
	// to be held.
	select {
	case <-held.reached:
	case <-time.After(runWait):
		t.Fatal("the run's preparation never began storing its definitions")
	}
	var st struct {
		statusBody
		Preparing bool `json:"preparing"`
	}
	must(t, env.get("/api/status"), http.StatusOK).decode(t, &st)
	if st.Status != "running" || st.RunID == nil || *st.RunID != id || !st.Preparing || st.TotalTests != 12 || st.Progress != 0 {
		t.Errorf("status while preparing: %+v", st)
	}
	must(t, env.post("/api/start", map[string]any{}), http.StatusConflict)
	var details struct {
		Info struct {
			Status     string `json:"status"`
			TotalTests int    `json:"total_tests"`
			Error      string `json:"error"`
		} `json:"run_info"`
	}
	info := &details.Info
	must(t, env.get("/api/run/"+id), http.StatusOK).decode(t, &details)
	if info.Status != "running" {
		t.Errorf("stored run while preparing: %+v", info)
	}

	var stopped struct {
		Success bool   `json:"success"`
		RunID   string `json:"run_id"`
	}
	must(t, env.post("/api/stop", nil), http.StatusOK).decode(t, &stopped)
	if !stopped.Success || stopped.RunID != id {
		t.Errorf("stop: %+v", stopped)
	}
	env.waitIdle()
	must(t, env.get("/api/run/"+id), http.StatusOK).decode(t, &details)
	if info.Status != "stopped" || info.Error != "" {
		t.Errorf("run stopped while preparing: %+v", info)
	}
	r := must(t, env.post("/api/run/"+id+"/resume", nil), http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "prepared") {
		t.Errorf("resume of a run stopped while preparing: %s", r.body)
	}

	close(held.release)
	next := env.runToEnd(map[string]any{})
	must(t, env.get("/api/run/"+next), http.StatusOK).decode(t, &details)
	if info.Status != "completed" || info.TotalTests != 12 {
		t.Errorf("run prepared at once: %+v", info)
	}
}
