package server_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// parityDefs is a domain of two levels of four tests each: "parity",
// whose level-1 tests the gate answers at once and whose level-2 tests
// it holds (see parityGate).
var parityDefs = func() map[string]string {
	files := map[string]string{"domains/parity/domain.yaml": "id: parity\nname: Parity\nevaluator_id: number\nenabled: true\n"}
	for level := 1; level <= 2; level++ {
		var b strings.Builder
		b.WriteString("tests:\n")
		for i := 1; i <= 4; i++ {
			fmt.Fprintf(&b, "  - id: l%d-t%d\n    name: L%d test %d\n    prompt: 'Level %d: what is %d + %d?'\n    expected:\n      answer: '%d'\n      type: numeric\n",
				level, i, level, i, level, i, i, 2*i)
		}
		files[fmt.Sprintf("domains/parity/level-%d.yaml", level)] = b.String()
	}
	return files
}()

// parityGate is the fake model of the parity checks: it answers every
// level-1 prompt at once, rightly, and holds every level-2 prompt until
// released (then answers it rightly too). It counts both.
type parityGate struct {
	mu       sync.Mutex
	asked    int           // level-1 requests received
	answered int           // level-1 answers handed to the endpoint
	held     int           // level-2 requests waiting
	ready    chan struct{} // closed when 4 answered and 4 held
	release  chan struct{}
	once     sync.Once
	// rest, when not nil, holds the level-1 answers until first is
	// closed, and those after the first until rest is.
	first, rest chan struct{}
}

func newParityGate() *parityGate {
	return &parityGate{ready: make(chan struct{}), release: make(chan struct{})}
}

// note closes ready when the level-1 tests are answered and the level-2
// tests held; g.mu held.
func (g *parityGate) note() {
	if g.answered == 4 && g.held == 4 {
		select {
		case <-g.ready:
		default:
			close(g.ready)
		}
	}
}

// open lets every held request (and every later one) through.
func (g *parityGate) open() { g.once.Do(func() { close(g.release) }) }

func (g *parityGate) respond(req *llmtest.Request) *llmtest.Reply {
	var level, a, b int
	if _, err := fmt.Sscanf(req.LastUser(), "Level %d: what is %d + %d?", &level, &a, &b); err != nil {
		return nil
	}
	if level == 2 {
		g.mu.Lock()
		g.held++
		g.note()
		g.mu.Unlock()
		<-g.release
		return &llmtest.Reply{Content: fmt.Sprint(a + b)}
	}
	g.mu.Lock()
	g.asked++
	wait := g.asked > 1 && g.rest != nil
	g.mu.Unlock()
	if g.rest != nil {
		<-g.first
	}
	if wait {
		<-g.rest
	}
	g.mu.Lock()
	g.answered++
	g.note()
	g.mu.Unlock()
	return &llmtest.Reply{Content: fmt.Sprint(a + b)}
}

// wait waits until the level-1 tests are answered and the level-2 tests
// are held.
func (g *parityGate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.ready:
	case <-time.After(runWait):
		g.mu.Lock()
		defer g.mu.Unlock()
		t.Fatalf("no 4 level-1 answers and 4 level-2 requests held: %d asked, %d answered, %d held", g.asked, g.answered, g.held)
	}
}

// checkCounts checks a run's counts from outside: done = passed + failed
// + errors = the results stored, by run and by cell, and returns the
// results by level.
func checkCounts(t *testing.T, e *testEnv, id string) (runInfo, map[string]int) {
	t.Helper()
	info := e.runInfo(id) // also checks done_tests = the results listed
	if info.DoneTests != info.Passed+info.Failed+info.Errors {
		t.Errorf("run %s: done %d, passed %d + failed %d + errors %d", id, info.DoneTests, info.Passed, info.Failed, info.Errors)
	}
	d := e.run(id)
	byLevel := map[string]int{}
	for _, r := range d.TestResults {
		byLevel[r.TestID[:2]]++
	}
	sum := 0
	for _, n := range d.Stats.StatusCounts {
		sum += n
	}
	if sum != len(d.TestResults) || d.Stats.TotalTests != len(d.TestResults) {
		t.Errorf("run %s: stats count %d (status counts %v), %d results", id, d.Stats.TotalTests, d.Stats.StatusCounts, len(d.TestResults))
	}
	return info, byLevel
}

// TestParity is the black-box checks of a run's statuses, counts, stop
// and resume through the HTTP API, which hold alike on SQLite (the
// engine executes its runs in process) and on PostgreSQL (its runs are
// jobs of River's queue, which the server works):
//
//	GAUNTLET_TEST_DATABASE=postgres go test -run TestParity ./server
func TestParity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		concurrency int
		serial      bool // the gate's rest: see parityGate
		check       func(t *testing.T, e *testEnv, g *parityGate)
	}{{
		// GET /api/status during a run names the run, its progress and
		// the domain and level of the test that started last.
		name: "status during a run", concurrency: 4,
		check: func(t *testing.T, e *testEnv, g *parityGate) {
			id := e.start(map[string]any{"domains": []string{"parity"}})
			g.wait(t)
			var st statusBody
			harnesstest.Eventually(t, runWait, "the level-1 results counted, a level-2 test the current one", func() bool {
				st = e.status()
				return st.Progress == 4 && st.CurrentLevel != nil && *st.CurrentLevel == 2
			})
			if st.Status != "running" || st.RunID == nil || *st.RunID != id || st.TotalTests != 8 {
				t.Errorf("status: %+v", st)
			}
			if st.CurrentDomain == nil || *st.CurrentDomain != "parity" || st.CurrentLevel == nil || *st.CurrentLevel != 2 {
				t.Errorf("current domain %s, level %s; want parity, 2", strOf(st.CurrentDomain), intOf(st.CurrentLevel))
			}
			must(t, e.post("/api/stop", nil), http.StatusOK)
			e.waitIdle()
			info, byLevel := checkCounts(t, e, id)
			if info.Status != "stopped" || info.DoneTests != 4 || byLevel["l1"] != 4 || byLevel["l2"] != 0 {
				t.Errorf("stopped run: %+v, results by level %v", info, byLevel)
			}
		},
	}, {
		// A stop right after a level's tests finished keeps every one of
		// their results; the tests cancelled in flight leave none.
		name: "a stop keeps every finished result", concurrency: 8, serial: true,
		check: func(t *testing.T, e *testEnv, g *parityGate) {
			id := e.start(map[string]any{"domains": []string{"parity"}})
			// The results' writes are slow: they wait for the run's row,
			// which another transaction holds until the stop is sent. The
			// first level-1 result is being stored (waiting) when the
			// other three finish.
			release, waiting := e.holdRun(id)
			close(g.first)
			harnesstest.Eventually(t, runWait, "a result's write waiting", waiting)
			close(g.rest)
			g.wait(t)
			if !dbtest.Postgres() {
				// The engine executes the tests and stores their results at
				// once: the level's are stored when they are finished.
				harnesstest.Eventually(t, runWait, "the level-1 results", func() bool { return e.status().Progress == 4 })
			}
			must(t, e.post("/api/stop", nil), http.StatusOK)
			release()
			e.waitIdle()
			info, byLevel := checkCounts(t, e, id)
			if info.Status != "stopped" || info.DoneTests != 4 || info.Passed != 4 || byLevel["l1"] != 4 || byLevel["l2"] != 0 {
				t.Errorf("stopped run: %+v, results by level %v; want the 4 level-1 results", info, byLevel)
			}
			m := e.matrix("/api/run/" + id + "/matrix")
			if c := m.Domains["parity"]["1"]; c.Status != "passed" {
				t.Errorf("level 1 of the stopped run: %+v", c)
			}
		},
	}, {
		// A stopped run resumed runs every test left, into the same run,
		// and completes.
		name: "stop then resume completes", concurrency: 4,
		check: func(t *testing.T, e *testEnv, g *parityGate) {
			id := e.start(map[string]any{"domains": []string{"parity"}})
			g.wait(t)
			must(t, e.post("/api/stop", nil), http.StatusOK)
			e.waitIdle()
			if info, _ := checkCounts(t, e, id); info.Status != "stopped" || info.Complete {
				t.Fatalf("stopped run: %+v", info)
			}
			// The held tests of the stopped run are answered only once it
			// is resumed: the stop must have cancelled them.
			must(t, e.post("/api/run/"+id+"/resume", nil), http.StatusOK)
			g.open()
			e.waitIdle()
			info, byLevel := checkCounts(t, e, id)
			if info.Status != "completed" || !info.Complete || info.DoneTests != 8 || info.Passed != 8 ||
				byLevel["l1"] != 4 || byLevel["l2"] != 4 {
				t.Errorf("resumed run: %+v, results by level %v", info, byLevel)
			}
		},
	}, {
		// A run left to finish: every count says every result.
		name: "a finished run's counts", concurrency: 4,
		check: func(t *testing.T, e *testEnv, g *parityGate) {
			g.open()
			id := e.start(map[string]any{"domains": []string{"parity"}})
			e.waitIdle()
			info, byLevel := checkCounts(t, e, id)
			if info.Status != "completed" || !info.Complete || info.DoneTests != 8 || info.Passed != 8 || byLevel["l1"] != 4 || byLevel["l2"] != 4 {
				t.Errorf("finished run: %+v, results by level %v", info, byLevel)
			}
			m := e.matrix("/api/run/" + id + "/matrix")
			if got := m.cells(); len(got) != 2 || got[0] != "parity/1 passed" || got[1] != "parity/2 passed" {
				t.Errorf("matrix: %v", got)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newParityGate()
			if tc.serial {
				g.first, g.rest = make(chan struct{}), make(chan struct{})
			}
			e := newEngineEnv(t, engineConfig{concurrency: tc.concurrency, files: parityDefs,
				llm: llmtest.Options{Respond: g.respond}})
			t.Cleanup(g.open) // before the endpoint closes: registered after it
			tc.check(t, e, g)
		})
	}
	// A run whose process died (killed mid-run) is left running in the
	// database; the next server started over it marks it interrupted,
	// keeping the results stored, and it can be resumed to the end.
	t.Run("a run whose process died is interrupted", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		id := runAndKill(t, root)
		g := newParityGate()
		g.open()
		// The definitions directory is the dead process's (examples
		// included): it is not copied again.
		e := newEngineEnvIn(t, root, engineConfig{concurrency: 4, noExamples: true, files: parityDefs,
			llm: llmtest.Options{Respond: g.respond}})
		info, byLevel := checkCounts(t, e, id)
		if info.Status != "interrupted" || info.Complete || info.DoneTests != 4 || info.Passed != 4 ||
			byLevel["l1"] != 4 || byLevel["l2"] != 0 {
			t.Fatalf("the dead process's run: %+v, results by level %v; want interrupted with the 4 level-1 results", info, byLevel)
		}
		// The run's owner was the killed process's lease: the error names it.
		if !strings.Contains(info.Error, "the process running it, gauntlet serve (pid ") {
			t.Errorf("the interrupted run's error %q names no dead gauntlet serve", info.Error)
		}
		if st := e.status(); st.Status != "idle" {
			t.Errorf("status after the restart: %+v", st)
		}
		must(t, e.post("/api/run/"+id+"/resume", nil), http.StatusOK)
		e.waitIdle()
		info, byLevel = checkCounts(t, e, id)
		if info.Status != "completed" || !info.Complete || info.DoneTests != 8 || info.Passed != 8 ||
			byLevel["l1"] != 4 || byLevel["l2"] != 4 {
			t.Errorf("the resumed run: %+v, results by level %v", info, byLevel)
		}
	})
}

// The environment of the process TestParity kills (TestParityOwner):
// its root directory and, on PostgreSQL, its database.
const (
	ownerRootEnv = "GAUNTLET_PARITY_OWNER_ROOT"
	ownerDBEnv   = "GAUNTLET_PARITY_OWNER_DB"
)

// runAndKill starts this test binary again as a server over root
// (TestParityOwner), which takes a process lease as "gauntlet serve"
// does and starts a parity run, stores its level-1 results and holds
// its level-2 tests; it then kills that process and returns the run's
// id, left running in the database by a dead process.
func runAndKill(t *testing.T, root string) string {
	t.Helper()
	url := databaseURL(t, filepath.Join(root, "data"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestParityOwner$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), ownerRootEnv+"="+root, ownerDBEnv+"="+url)
	stdin, err := cmd.StdinPipe() // closed when this process ends: the child then exits
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			cmd.Process.Kill()
			cmd.Wait()
			stdin.Close()
		}
	}
	t.Cleanup(kill)
	ids := make(chan string, 1)
	var lines syncBuffer
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "PARITY RUN "); ok {
				ids <- id
			}
			lines.Write(append(sc.Bytes(), '\n'))
		}
		close(ids)
	}()
	var id string
	select {
	case got, ok := <-ids:
		if !ok {
			cmd.Wait()
			t.Fatalf("the run's process ended before its run was under way:\n%s%s", lines.String(), stderr.String())
		}
		id = got
	case <-time.After(runWait):
		t.Fatalf("the run's process did not start its run:\n%s%s", lines.String(), stderr.String())
	}
	kill()
	return id
}

// TestParityOwner is the server process TestParity kills mid-run (see
// runAndKill); run alone, it is skipped.
func TestParityOwner(t *testing.T) {
	t.Parallel()
	root := os.Getenv(ownerRootEnv)
	if root == "" {
		t.Skip("the process TestParity starts and kills")
	}
	if dbtest.Postgres() {
		pgDatabases.Store(filepath.Join(root, "data"), os.Getenv(ownerDBEnv))
	}
	g := newParityGate()
	e := newEngineEnvIn(t, root, engineConfig{concurrency: 4, files: parityDefs, llm: llmtest.Options{Respond: g.respond}})
	lease, err := e.runs.Lease(context.Background(), runs.LeaseOptions{Kind: runs.KindServe, Command: "gauntlet serve"})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	id := e.start(map[string]any{"domains": []string{"parity"}})
	g.wait(t)
	harnesstest.Eventually(t, runWait, "the level-1 results stored", func() bool { return e.status().Progress == 4 })
	fmt.Println("PARITY RUN " + id)
	io.Copy(io.Discard, os.Stdin) // until killed, or the test that started it ends
}

func strOf(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func intOf(n *int) string {
	if n == nil {
		return "null"
	}
	return fmt.Sprint(*n)
}

// holdRun locks a run's row on PostgreSQL from a transaction beside the
// server, until the function it returns is called: every result a
// worker stores (it counts the result in the run's row) waits meanwhile.
// On SQLite it does nothing: the engine stores the results it executes,
// none is pending when a stop ends it.
//
// waiting reports whether a write waits for the row (always true on
// SQLite).
func (e *testEnv) holdRun(id string) (release func(), waiting func() bool) {
	e.t.Helper()
	if !dbtest.Postgres() {
		return func() {}, func() bool { return true }
	}
	// The run is accepted at once and prepared after: held before its
	// preparation recorded it, it would never be prepared.
	harnesstest.Eventually(e.t, runWait, "the run's preparation", func() bool { return !e.status().Preparing })
	db, err := sql.Open("pgx", databaseURL(e.t, e.dataDir))
	if err != nil {
		e.t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		db.Close()
		e.t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(`SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE`, id).Scan(&n); err != nil {
		tx.Rollback()
		db.Close()
		e.t.Fatal(err)
	}
	var once sync.Once
	var mu sync.Mutex // the transaction's one connection: waiting and release take turns
	release = func() {
		mu.Lock()
		defer mu.Unlock()
		once.Do(func() {
			tx.Rollback()
			db.Close()
		})
	}
	e.t.Cleanup(release)
	waiting = func() bool {
		mu.Lock()
		defer mu.Unlock()
		var n int
		err := tx.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))`).Scan(&n)
		return err == nil && n > 0
	}
	return release, waiting
}
