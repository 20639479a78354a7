package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// heldSource is definitions of domains × levels × perLevel arithmetic
// tests, made as they are read, whose full walk (the one that stores a
// run's definitions) waits for release before its first test: a run's
// preparation is held for as long as the test wants. It implements
// engine.TestSource and engine.TestCounter, as the catalog does.
type heldSource struct {
	domains, levels, perLevel int
	reached                   chan struct{} // closed when a full walk waits
	release                   chan struct{} // closing it lets the walks go on
	fail                      error         // what a released walk returns, when set
	once                      *sync.Once

	mu sync.Mutex // guards the channels and once, which hold renews
}

func newHeldSource(domains, levels, perLevel int) *heldSource {
	return &heldSource{domains: domains, levels: levels, perLevel: perLevel,
		reached: make(chan struct{}), release: make(chan struct{}), once: &sync.Once{}}
}

func (s *heldSource) outline() *harness.Snapshot {
	d := newDefs()
	for i := range s.domains {
		id := fmt.Sprintf("d%d", i)
		d.domain(id, "You are a careful calculator.", true)
		for l := 1; l <= s.levels; l++ {
			d.level(id, l, "Answer with the number only.", harness.PromptAppend, 0.5)
		}
	}
	return d.snap()
}

func (s *heldSource) Export(ctx context.Context) (*harness.Snapshot, error) {
	return nil, errors.New("a held source is read a test at a time")
}

func (s *heldSource) Outline(context.Context) (*harness.Snapshot, error) { return s.outline(), nil }

func (s *heldSource) CountTests(context.Context) (map[string]map[int]int, error) {
	out := map[string]map[int]int{}
	for i := range s.domains {
		out[fmt.Sprintf("d%d", i)] = map[int]int{}
		for l := 1; l <= s.levels; l++ {
			out[fmt.Sprintf("d%d", i)][l] = s.perLevel
		}
	}
	return out, nil
}

// hold makes the next full walk wait again, for a release of its own.
func (s *heldSource) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reached, s.release, s.once = make(chan struct{}), make(chan struct{}), &sync.Once{}
}

// waitReached waits until a full walk waits for the current hold's
// release: a run's preparation has begun storing its definitions.
func (s *heldSource) waitReached(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	reached := s.reached
	s.mu.Unlock()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the run's preparation never began storing its definitions")
	}
}

func (s *heldSource) EachTest(ctx context.Context, domainID string, fn func(harness.Test) error) error {
	if domainID == "" {
		s.mu.Lock()
		reached, release, once := s.reached, s.release, s.once
		s.mu.Unlock()
		once.Do(func() { close(reached) })
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		if s.fail != nil {
			return s.fail
		}
	}
	for i := range s.domains {
		d := fmt.Sprintf("d%d", i)
		if domainID != "" && domainID != d {
			continue
		}
		for l := 1; l <= s.levels; l++ {
			for k := range s.perLevel {
				id := fmt.Sprintf("%s-l%d-t%d", d, l, k)
				if err := fn(harness.Test{ID: id, DomainID: d, Level: l, Name: "Sum " + id,
					Prompt:   fmt.Sprintf("[%s] What is %d + %d?", id, k, l),
					Expected: harness.Expected{Answer: fmt.Sprint(k + l), Type: "numeric"}}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// preparedEngine is an engine over src on dbtest's database (SQLite, or
// PostgreSQL with GAUNTLET_TEST_DATABASE=postgres) answering at once;
// queued, its runs' tests go through a queue (River on PostgreSQL, a
// queue the test works on SQLite) that it executes itself. finished
// receives the end of each run.
type preparedEngine struct {
	eng      *engine.Engine
	runs     *runs.Store
	finished chan runs.Info
	inline   *inlineQueue
}

func newPreparedEngine(t *testing.T, src engine.Definitions, queued bool) *preparedEngine {
	t.Helper()
	ctx := context.Background()
	url := dbtest.URL(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	pe := &preparedEngine{runs: rs, finished: make(chan runs.Info, 16)}
	opts := engine.Options{Definitions: src, Runs: rs, Client: instantModel{}, Model: "instant", Concurrency: 4,
		OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventRunFinished {
				pe.finished <- *ev.Info
			}
		}}
	var river *riverexec.Queue
	switch {
	case queued && dbtest.Postgres():
		river, err = riverexec.Open(ctx, riverexec.Options{URL: url, DB: db, Concurrency: 4, Server: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { river.Close() })
		opts.Queue = river
	case queued:
		pe.inline = &inlineQueue{}
		opts.Queue = pe.inline
	}
	if pe.eng, err = engine.New(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if river != nil {
		if err := river.Work(ctx, pe.eng); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		pe.eng.Stop(30 * time.Second)
		// A run a reset left behind records its end again when its
		// goroutine returns: before the database closes, and before the
		// test's directory is removed under it.
		engine.WaitRuns(pe.eng)
	})
	return pe
}

// start starts a run and returns its id.
func (pe *preparedEngine) start(t *testing.T, req engine.StartRequest) string {
	t.Helper()
	id, err := pe.eng.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// stop stops the active run, id, and returns its end.
func (pe *preparedEngine) stop(t *testing.T, id string) runs.Info {
	t.Helper()
	if _, err := pe.eng.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return pe.wait(t, id)
}

// wait returns the end of run id.
func (pe *preparedEngine) wait(t *testing.T, id string) runs.Info {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case info := <-pe.finished:
			if info.RunID == id {
				return info
			}
		case <-deadline:
			t.Fatalf("run %s did not finish", id)
		}
	}
}

// TestStartAnswersBeforePreparation: Start of a suite of 50,000 tests
// returns while the run's preparation (storing its definitions, its
// cells, its queued jobs) has not even begun reading the tests, which it
// cannot do until the test lets it; meanwhile the run is active
// (running, its size known, preparing), another start is a conflict, and
// a stop, a reset, a failure or the death of the process ends it without
// losing anything, in a state Resume refuses with the reason. Released,
// a run is prepared and completes. In process and queued; on SQLite, and
// on PostgreSQL (River) with GAUNTLET_TEST_DATABASE=postgres.
func TestStartAnswersBeforePreparation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const large = 5 * 10 * 1000
	for _, queued := range []bool{false, true} {
		name := "in process"
		if queued {
			name = "queued"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("stop", func(t *testing.T) {
				src := newHeldSource(5, 10, 1000)
				pe := newPreparedEngine(t, src, queued)
				id := pe.start(t, engine.StartRequest{})
				// Start returned; only now does the test look at the
				// preparation, which waits for release.
				src.waitReached(t)
				st := pe.eng.Status()
				if st.Status != "running" || st.RunID == nil || *st.RunID != id || !st.Preparing || st.TotalTests != large || st.Progress != 0 {
					t.Errorf("status while preparing: %+v", st)
				}
				live, err := pe.eng.Matrix(ctx)
				if err != nil || live.Status != runs.StatusRunning || live.Domains["d0"]["1"].Tests != 1000 || live.Domains["d0"]["1"].Status != runs.CellPending {
					t.Errorf("live matrix while preparing: %+v %v", live.Domains["d0"], err)
				}
				if _, err := pe.eng.Start(ctx, engine.StartRequest{}); !errors.Is(err, harness.ErrConflict) {
					t.Errorf("start while another run is being prepared: %v, want ErrConflict", err)
				}
				if info, err := pe.runs.Run(ctx, id); err != nil || info.Status != runs.StatusRunning {
					t.Errorf("stored run while preparing: %+v %v", info, err)
				}
				info := pe.stop(t, id)
				if info.Status != runs.StatusStopped || info.DoneTests != 0 || info.Error != "" {
					t.Errorf("run stopped while preparing: %+v", info)
				}
				stored, err := pe.runs.Run(ctx, id)
				if err != nil || stored.Status != runs.StatusStopped || !runs.Unprepared(stored) || stored.CompletedAt == nil {
					t.Errorf("stored run: %+v %v", stored, err)
				}
				if err := pe.eng.Resume(ctx, id); !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "prepared") {
					t.Errorf("resume of a run stopped while preparing: %v, want ErrInvalid saying it was never prepared", err)
				}
				if pe.eng.Running() {
					t.Error("the engine is still running")
				}
			})

			t.Run("reset", func(t *testing.T) {
				src := newHeldSource(5, 10, 1000)
				pe := newPreparedEngine(t, src, queued)
				id := pe.start(t, engine.StartRequest{})
				src.waitReached(t)
				if got := pe.eng.Reset(); got != id {
					t.Fatalf("reset aborted %q, want %s", got, id)
				}
				if info := pe.wait(t, id); info.Status != runs.StatusAborted {
					t.Errorf("run reset while preparing: %+v", info)
				}
				harnesstest.Eventually(t, 30*time.Second, "the run's goroutine to end", func() bool {
					stored, err := pe.runs.Run(ctx, id)
					return err == nil && stored.Status == runs.StatusAborted && stored.CompletedAt != nil
				})
			})

			t.Run("failure", func(t *testing.T) {
				src := newHeldSource(5, 10, 1000)
				src.fail = errors.New("the definitions directory went away")
				pe := newPreparedEngine(t, src, queued)
				id := pe.start(t, engine.StartRequest{})
				close(src.release)
				info := pe.wait(t, id)
				if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "could not be prepared") ||
					!strings.Contains(info.Error, "the definitions directory went away") {
					t.Errorf("run whose preparation failed: %+v", info)
				}
				if stored, err := pe.runs.Run(ctx, id); err != nil || stored.Error != info.Error || stored.Status != runs.StatusStopped {
					t.Errorf("stored run: %+v %v", stored, err)
				}
			})

			t.Run("process died", func(t *testing.T) {
				src := newHeldSource(5, 10, 1000)
				pe := newPreparedEngine(t, src, queued)
				id := pe.start(t, engine.StartRequest{})
				src.waitReached(t)
				// A process started over the store finds the run left
				// running: its own was killed while preparing it.
				next, err := engine.New(ctx, engine.Options{Definitions: src, Runs: pe.runs, Client: instantModel{}})
				if err != nil {
					t.Fatal(err)
				}
				stored, err := pe.runs.Run(ctx, id)
				if err != nil || stored.Status != runs.StatusInterrupted || !runs.Unprepared(stored) {
					t.Fatalf("run found after its process died: %+v %v", stored, err)
				}
				if err := next.Resume(ctx, id); !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "prepared") {
					t.Errorf("resume of a run interrupted while preparing: %v, want ErrInvalid saying it was never prepared", err)
				}
			})

			t.Run("released", func(t *testing.T) {
				src := newHeldSource(2, 2, 3)
				pe := newPreparedEngine(t, src, queued)
				id := pe.start(t, engine.StartRequest{Repeats: 2})
				src.waitReached(t)
				if st := pe.eng.Status(); !st.Preparing || st.TotalTests != 24 {
					t.Errorf("status while preparing: %+v", st)
				}
				close(src.release)
				if pe.inline != nil {
					harnesstest.Eventually(t, 30*time.Second, "the run prepared", func() bool { return !pe.eng.Status().Preparing })
					go pe.inline.work(t, pe.eng)
				}
				info := pe.wait(t, id)
				if info.Status != runs.StatusCompleted || info.TotalTests != 24 || info.Passed != 24 || !info.Complete {
					t.Errorf("released run: %+v", info)
				}
				stored, err := pe.runs.Run(ctx, id)
				if err != nil || stored.TotalTests != 24 || runs.Unprepared(stored) || stored.Config.DefinitionsHash == "" {
					t.Errorf("stored run: %+v %v", stored, err)
				}
				m, err := pe.runs.Matrix(ctx, id)
				if err != nil || len(m) != 2 || m["d1"]["2"].Tests != 6 || m["d1"]["2"].Status != runs.CellPassed {
					t.Errorf("stored matrix: %+v %v", m, err)
				}

				// A rescore answers at once too: it stores today's
				// definitions as it is prepared.
				src.hold()
				re, err := pe.eng.Rescore(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				src.waitReached(t)
				if st := pe.eng.Status(); !st.Preparing || st.TotalTests != 24 || *st.RunID != re {
					t.Errorf("status while a rescore is prepared: %+v", st)
				}
				if live, err := pe.eng.Matrix(ctx); err != nil || live.Domains["d1"]["2"].Tests != 6 {
					t.Errorf("live matrix while a rescore is prepared: %+v %v", live, err)
				}
				if info := pe.stop(t, re); info.Status != runs.StatusStopped || info.DoneTests != 0 || info.RescoredFrom != id {
					t.Errorf("rescore stopped while prepared: %+v", info)
				}
			})
		})
	}
}
