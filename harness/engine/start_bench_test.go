package engine_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// heldModel never answers: its first request says that the run's
// preparation is over and its first test started; every request then
// waits for the run to be stopped.
type heldModel struct {
	mu    sync.Mutex
	first chan struct{}
}

func (m *heldModel) arm() chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.first = make(chan struct{})
	return m.first
}

func (m *heldModel) Chat(ctx context.Context, _ *harness.ChatRequest) (*harness.ChatResponse, error) {
	m.mu.Lock()
	if m.first != nil {
		close(m.first)
		m.first = nil
	}
	m.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

// BenchmarkStartLarge starts runs of a suite of 100,000 tests (10
// domains × 10 levels × 1,000) in a definitions directory synced into the
// catalog, on dbtest's database (SQLite, or PostgreSQL with
// GAUNTLET_TEST_DATABASE=postgres), and stops each once its first test
// reached the model. Metrics: answer-ms, the time Start takes to return
// (what POST /api/start waits for), and prepared-s, the time until the
// first test reached the model (the run's definitions, cells and plan
// stored); first-… for the first start, which stores the definitions,
// the others for a start of a suite stored already. Not a test (-short
// skips it):
//
//	go test -run '^$' -bench StartLarge -benchtime 3x ./harness/engine/
func BenchmarkStartLarge(b *testing.B) {
	if testing.Short() {
		b.Skip("the large start takes a minute to set up")
	}
	const domains, levels, perLevel = 10, 10, 1000
	ctx := context.Background()
	dir := b.TempDir()
	defsDir := filepath.Join(dir, "definitions")
	writeScaleSuite(b, defsDir, domains, levels, perLevel)
	db := dbtest.Open(b)
	t0 := time.Now()
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: defsDir, DB: db})
	if err != nil || len(res.Errors) > 0 || res.Loaded.Tests != domains*levels*perLevel {
		b.Fatalf("catalog: %v %+v", err, res)
	}
	b.Logf("catalog synced in %v", time.Since(t0))
	rs, err := runs.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	model := &heldModel{}
	eng, err := engine.New(ctx, engine.Options{Definitions: cat, Runs: rs, Client: model, Model: "held",
		Version: "bench", Concurrency: 8})
	if err != nil {
		b.Fatal(err)
	}
	once := func() (answer, prepared time.Duration) {
		first := model.arm()
		t := time.Now()
		if _, err := eng.Start(ctx, engine.StartRequest{}); err != nil {
			b.Fatal(err)
		}
		answer = time.Since(t)
		select {
		case <-first:
		case <-time.After(10 * time.Minute):
			b.Fatal("the run's first test never reached the model")
		}
		prepared = time.Since(t)
		if _, err := eng.Stop(time.Minute); err != nil {
			b.Fatal(err)
		}
		return answer, prepared
	}
	firstA, firstP := once()
	var answers, prepares time.Duration
	n := 0
	for b.Loop() {
		a, p := once()
		answers += a
		prepares += p
		n++
	}
	b.ReportMetric(float64(firstA.Microseconds())/1000, "first-answer-ms")
	b.ReportMetric(firstP.Seconds(), "first-prepared-s")
	b.ReportMetric(float64(answers.Microseconds())/1000/float64(n), "answer-ms")
	b.ReportMetric(prepares.Seconds()/float64(n), "prepared-s")
}
