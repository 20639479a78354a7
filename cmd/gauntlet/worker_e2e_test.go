package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/pgtest"
)

// scaleSuite writes a suite of one domain, "sums", with n tests the fake
// model answers right, and returns the definitions directory.
func scaleSuite(t testing.TB, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "defs")
	if err := os.CopyFS(filepath.Join(dir, "evaluators"), os.DirFS("../../examples/definitions/evaluators")); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, "domains", "sums")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, "domain.yaml"), []byte("id: sums\nname: Sums\nevaluator_id: number\nenabled: true\n"), 0o644)
	var b strings.Builder
	b.WriteString("tests:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: s%d\n    prompt: What is %d + 1?\n    expected:\n      answer: '%d'\n      type: numeric\n", i, i, i+1)
	}
	if err := os.WriteFile(filepath.Join(d, "level-1.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// proc is a gauntlet process started by a test: this test binary run as
// the gauntlet binary (TestHelperGauntletMain).
type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	mu     *sync.Mutex
	lines  chan string // stdout
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func startGauntlet(t testing.TB, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperGauntletMain$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "GAUNTLET_HELPER_MAIN=1")
	p := &proc{cmd: cmd, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}, lines: make(chan string, 100)}
	cmd.Stderr = lockedBuffer{p.mu, p.stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", args[0], p.log())
		}
	})
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitLine returns the first stdout line containing s.
func (p *proc) waitLine(t testing.TB, s string) string {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("the process ended before printing %q:\n%s", s, p.log())
			}
			if strings.Contains(l, s) {
				return l
			}
		case <-deadline:
			t.Fatalf("no %q after 2 minutes:\n%s", s, p.log())
		}
	}
}

// cluster is a server on PostgreSQL with no local worker, its database
// and a fake model.
type cluster struct {
	url, addr string
	db        *sql.DB
	model     string
	server    *proc
	data      string
	args      []string // the server's
}

func newCluster(t testing.TB, tests int, latency time.Duration, serverArgs ...string) *cluster {
	t.Helper()
	return newClusterOn(t, pgtest.NewDatabase(t), tests, latency, serverArgs...)
}

// newClusterOn is newCluster on the database of url.
func newClusterOn(t testing.TB, url string, tests int, latency time.Duration, serverArgs ...string) *cluster {
	t.Helper()
	mock := llmtest.NewServer(llmtest.Options{Latency: latency})
	t.Cleanup(mock.Close)
	defs := scaleSuite(t, tests)
	data := t.TempDir()
	args := []string{"serve", "--database", url, "--definitions", defs, "--data", data, "--addr", "127.0.0.1:0",
		"--plugins", t.TempDir(), "--llm-base-url", mock.URL, "--llm-model", "mock", "--no-local-worker"}
	args = append(args, serverArgs...)
	srv := startGauntlet(t, args...)
	line := srv.waitLine(t, "listening on http://")
	addr := strings.Fields(strings.SplitN(line, "http://", 2)[1])[0]
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &cluster{url: url, addr: addr, db: db, model: mock.URL, server: srv, data: data, args: args}
}

// killHolding kills worker with SIGKILL once it holds a job that has no
// result yet: a job that must then be executed again elsewhere.
func (c *cluster) killHolding(t testing.TB, worker *proc) {
	t.Helper()
	workerID := fmt.Sprintf("gauntlet-%%-%d-%%", worker.cmd.Process.Pid)
	deadline := time.Now().Add(time.Minute)
	for {
		var held int
		if err := c.db.QueryRow(`SELECT count(*) FROM river_job j
			WHERE state = 'running' AND attempted_by[1] LIKE $1 AND NOT EXISTS (SELECT 1 FROM run_results r
				WHERE r.run_id = j.args->>'run_id' AND r.test_id = j.args->>'test_id' AND r.repeat = (j.args->>'repeat')::int)`, workerID).Scan(&held); err != nil {
			t.Fatal(err)
		}
		if held > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker to kill never held a job")
		}
	}
	if err := worker.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) worker(t testing.TB, concurrency int, extra ...string) *proc {
	t.Helper()
	args := append([]string{"worker", "--database", c.url, "--data", t.TempDir(), "--plugins", t.TempDir(),
		"--llm-base-url", c.model, "--llm-model", "mock", "--concurrency", fmt.Sprint(concurrency)}, extra...)
	w := startGauntlet(t, args...)
	w.waitLine(t, "Gauntlet worker")
	return w
}

func (c *cluster) start(t testing.TB) string {
	t.Helper()
	resp, err := http.Post("http://"+c.addr+"/api/start", "application/json", strings.NewReader(`{"domains":["sums"],"model_name":"scale"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		RunID string `json:"run_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.RunID == "" {
		t.Fatalf("start: status %d, %v", resp.StatusCode, err)
	}
	return out.RunID
}

// runProgress is a run's stored state.
type runProgress struct {
	status        string
	done, results int
	distinct      int
}

func (c *cluster) progressOf(t testing.TB, runID string) runProgress {
	t.Helper()
	p, err := c.tryProgress(runID)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryProgress reads a run's stored state.
func (c *cluster) tryProgress(runID string) (runProgress, error) {
	var p runProgress
	err := c.db.QueryRow(`SELECT r.status, r.done_tests,
		(SELECT count(*) FROM run_results WHERE run_id = $1),
		(SELECT count(DISTINCT (test_id, repeat)) FROM run_results WHERE run_id = $1)
		FROM runs r WHERE run_id = $1`, runID).Scan(&p.status, &p.done, &p.results, &p.distinct)
	return p, err
}

// waitFor polls the run's stored state until ok says so.
func (c *cluster) waitFor(t testing.TB, runID string, timeout time.Duration, ok func(runProgress) bool) runProgress {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		// An error (the database restarting) is read again.
		p, err := c.tryProgress(runID)
		if err == nil && ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: still %+v (%v) after %v\nserver:\n%s", runID, p, err, timeout, c.server.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func skipWithoutPostgres(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL and gauntlet processes")
	}
	pgtest.Shared(t)
}

// TestWorkersShareARun: a run on PostgreSQL with two worker processes and
// no local worker completes with every test exactly once.
func TestWorkersShareARun(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 300
	c := newCluster(t, n, 5*time.Millisecond)
	c.worker(t, 4)
	c.worker(t, 4)
	id := c.start(t)
	p := c.waitFor(t, id, 2*time.Minute, func(p runProgress) bool { return p.status != "running" })
	if p.status != "completed" || p.done != n || p.results != n || p.distinct != n {
		t.Fatalf("run ended %+v, want completed with %d results, each once", p, n)
	}
	var passed int
	c.db.QueryRow(`SELECT passed FROM runs WHERE run_id = $1`, id).Scan(&passed)
	var cell string
	c.db.QueryRow(`SELECT status FROM run_cells WHERE run_id = $1`, id).Scan(&cell)
	if passed != n || cell != "passed" {
		t.Errorf("passed %d of %d, cell %s; want all, passed", passed, n, cell)
	}
	c.checkLog(t, id, n)
}

// checkLog waits for the run's log file to end with EVAL_COMPLETE, and
// checks that it has one line per test.
func (c *cluster) checkLog(t testing.TB, runID string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var b []byte
	for {
		b, _ = os.ReadFile(filepath.Join(c.data, "logs", runID+".log"))
		if bytes.Contains(b, []byte("EVAL_COMPLETE")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no EVAL_COMPLETE in the run's log:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := bytes.Count(b, []byte(" passed (score")); got != n {
		t.Errorf("the run's log has %d test lines, want %d", got, n)
	}
}

// TestWorkerKilled: a worker killed with SIGKILL mid-run loses nothing:
// its jobs are rescued and executed by the other after the rescue
// interval, and no result is stored twice.
func TestWorkerKilled(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 400
	c := newCluster(t, n, 200*time.Millisecond)
	victim := c.worker(t, 8, "--rescue-after", "2s")
	c.worker(t, 8, "--rescue-after", "2s")
	id := c.start(t)
	c.waitFor(t, id, time.Minute, func(p runProgress) bool { return p.done >= n/4 })
	// Killed while it holds jobs with no result yet: they are what must
	// be rescued.
	c.killHolding(t, victim)
	p := c.waitFor(t, id, 3*time.Minute, func(p runProgress) bool { return p.status != "running" })
	if p.status != "completed" || p.done != n || p.results != n || p.distinct != n {
		t.Fatalf("run ended %+v, want completed with %d results, each once", p, n)
	}
	c.checkLog(t, id, n)
	var rescued int
	if err := c.db.QueryRow(`SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND attempt > 1`, id).Scan(&rescued); err != nil {
		t.Fatal(err)
	}
	if rescued == 0 {
		t.Error("no job was executed twice: the killed worker had none in flight, the test proves nothing")
	}
	t.Logf("%d jobs rescued from the killed worker and executed again", rescued)
}

// TestStopCancelsJobs: stopping a run on PostgreSQL cancels the jobs no
// worker has started, and the run's totals are exactly the results stored:
// a result finished after the stop is refused.
func TestStopCancelsJobs(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 200
	c := newCluster(t, n, 200*time.Millisecond)
	c.worker(t, 4)
	id := c.start(t)
	c.waitFor(t, id, time.Minute, func(p runProgress) bool { return p.done >= 8 })
	resp, err := http.Post("http://"+c.addr+"/api/stop", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stop: status %d", resp.StatusCode)
	}
	p := c.waitFor(t, id, time.Minute, func(p runProgress) bool { return p.status != "running" })
	if p.status != "stopped" || p.done >= n {
		t.Fatalf("run ended %+v, want stopped before the end", p)
	}
	// Every job is final once the worker's in-flight ones come back.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var open, cancelled int
		if err := c.db.QueryRow(`SELECT count(*) FILTER (WHERE state NOT IN ('completed', 'cancelled', 'discarded')),
			count(*) FILTER (WHERE state = 'cancelled') FROM river_job WHERE args->>'run_id' = $1`, id).Scan(&open, &cancelled); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			if cancelled < n-p.done-4 {
				t.Errorf("%d jobs cancelled, want at least %d", cancelled, n-p.done-4)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs of the stopped run still open", open)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if q := c.progressOf(t, id); q.results != p.done || q.done != p.done {
		t.Errorf("after the stop: %+v, want the %d results counted at the stop and no more", q, p.done)
	}
	c.checkStopLog(t, id)
}

// checkStopLog waits for the run's log to end.
func (c *cluster) checkStopLog(t testing.TB, runID string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(c.data, "logs", runID+".log"))
		if bytes.Contains(b, []byte("EVAL_COMPLETE")) {
			if !bytes.Contains(b, []byte("stopped")) {
				t.Errorf("the run's log does not say it stopped:\n%s", b)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no EVAL_COMPLETE in the run's log:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
