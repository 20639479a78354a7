package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/deadport"
	"github.com/gauntlet-eval/gauntlet/internal/pgtest"
)

// deadEndpoint returns the URL of a model endpoint that refuses
// connections for the whole test.
func deadEndpoint(t testing.TB) string { return "http://" + deadport.Addr(t) + "/v1" }

// TestStalledRunEnds: a run whose jobs River gives up after their last
// attempt does not wait for them forever: the server finds every job final
// with results missing and ends the run, saying how many tests were lost
// and why.
func TestStalledRunEnds(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 40
	c := newCluster(t, n, 0, "--job-attempts", "2")
	// The worker's endpoint is down: after a few tests find it
	// unreachable, the worker gives each job of the run back with that
	// error, and River discards it after its second attempt.
	c.worker(t, 2, "--llm-base-url", deadEndpoint(t), "--llm-retries", "0")
	id := c.start(t)
	p := c.waitFor(t, id, 2*time.Minute, func(p runProgress) bool { return p.status != "running" })
	var why string
	if err := c.db.QueryRow(`SELECT error FROM runs WHERE run_id = $1`, id).Scan(&why); err != nil {
		t.Fatal(err)
	}
	if p.status != "stopped" || p.done >= n || p.results != p.done {
		t.Fatalf("run ended %+v, want stopped with tests missing", p)
	}
	lost := n - p.done
	if !strings.Contains(why, fmt.Sprintf("%d of %d tests were lost", lost, n)) ||
		!strings.Contains(why, "unreachable") {
		t.Errorf("the run's error %q does not say that %d tests were lost and why", why, lost)
	}
	var discarded int
	if err := c.db.QueryRow(`SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND state = 'discarded' AND attempt = 2`, id).Scan(&discarded); err != nil {
		t.Fatal(err)
	}
	if discarded == 0 {
		t.Error("no job was discarded after its attempts: the test proves nothing")
	}
	c.checkStopLog(t, id)
	if !strings.Contains(c.server.log(), "tests were lost") {
		t.Error("the server's log does not say the run stalled")
	}
}

// TestWorkerRefusesNewerSchema: a worker refuses a job whose run was made
// by a newer runs schema than its own: it logs why and snoozes the job for
// a newer worker; the job is neither executed nor given up.
func TestWorkerRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	c := newCluster(t, 1, 0)
	w := c.worker(t, 1)
	future := runs.SchemaVersion() + 1
	var jobID int64
	if err := c.db.QueryRow(`INSERT INTO river_job (args, kind, max_attempts, queue, state, priority)
		VALUES ($1, $2, 2, $3, 'available', 1) RETURNING id`,
		fmt.Sprintf(`{"run_id":"from-the-future","test_id":"t1","repeat":0,"schema":%d}`, future),
		riverexec.Kind, riverexec.QueueName).Scan(&jobID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.log(), "refusing a job of a run made by a newer Gauntlet") {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal in the worker's log:\n%s", w.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(w.log(), fmt.Sprintf("run_schema=%d", future)) || !strings.Contains(w.log(), "run=from-the-future") {
		t.Errorf("the refusal does not name the run and its schema:\n%s", w.log())
	}
	// Snoozed: scheduled again later, with no attempt spent and no error.
	for {
		var state string
		var later bool
		var errs int
		if err := c.db.QueryRow(`SELECT state, scheduled_at > now() + interval '30 seconds', coalesce(array_length(errors, 1), 0)
			FROM river_job WHERE id = $1`, jobID).Scan(&state, &later, &errs); err != nil {
			t.Fatal(err)
		}
		if state == "scheduled" {
			if !later || errs != 0 {
				t.Errorf("snoozed job: scheduled in the future %v, %d errors; want later and none", later, errs)
			}
			break
		}
		if state != "running" && state != "available" {
			t.Fatalf("the refused job is %s, want scheduled (snoozed)", state)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused job is still %s", state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPostgresRestartedMidRun: PostgreSQL stopped and started again while
// a run's jobs are being executed. The server and the workers reconnect,
// and the run completes with every test exactly once: a result stored
// before the restart stays, a job whose result or completion the restart
// cut off is executed again and its second result dropped.
func TestPostgresRestartedMidRun(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	pg, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	c := newClusterOn(t, url, n, 100*time.Millisecond)
	c.worker(t, 8, "--rescue-after", "5s")
	c.worker(t, 8, "--rescue-after", "5s")
	id := c.start(t)
	before := c.waitFor(t, id, time.Minute, func(p runProgress) bool { return p.done >= n/4 })
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	p := c.waitFor(t, id, 3*time.Minute, func(p runProgress) bool { return p.status != "running" })
	if p.status != "completed" || p.done != n || p.results != n || p.distinct != n {
		t.Fatalf("run ended %+v after a restart of PostgreSQL, want completed with %d results, each once", p, n)
	}
	if p.done < before.done {
		t.Fatalf("results lost: %d before the restart, %d after", before.done, p.done)
	}
	c.checkLog(t, id, n)
	var passed int
	if err := c.db.QueryRow(`SELECT passed FROM runs WHERE run_id = $1`, id).Scan(&passed); err != nil {
		t.Fatal(err)
	}
	if passed != n {
		t.Errorf("the run counts %d passed, want %d", passed, n)
	}
}

// post sends a JSON body to the server and returns the status and body.
func (c *cluster) post(t testing.TB, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+c.addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitIdle waits until the server says no run is active: a run's end is
// stored before the server lets go of it.
func (c *cluster) waitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + c.addr + "/api/status")
		if err == nil {
			var st struct {
				Status string `json:"status"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.Status == "idle" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server is not idle after a minute (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startBody starts a run with the given request body.
func (c *cluster) startBody(t testing.TB, body string) string {
	t.Helper()
	status, b := c.post(t, "/api/start", body)
	var out struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(b), &out); err != nil || status != http.StatusOK || out.RunID == "" {
		t.Fatalf("start: status %d, %s", status, b)
	}
	return out.RunID
}

// TestAgentRunsStayOnTheServer: the jobs of a run that evaluates an agent
// go to the server's own queue (the agent's knowledge-base files and tools
// are on its machine): the server executes them, never a worker; a server
// that executes no test (--no-local-worker) refuses such a run.
func TestAgentRunsStayOnTheServer(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 30
	c := newCluster(t, n, 0, "--no-local-worker=false")
	w := c.worker(t, 4)
	if status, b := c.post(t, "/api/agents", `{"id":"helper","name":"Helper","system_prompt":"You add numbers."}`); status != http.StatusCreated {
		t.Fatalf("create agent: %d %s", status, b)
	}
	id := c.startBody(t, `{"agent_id":"helper","domains":["sums"]}`)
	p := c.waitFor(t, id, 2*time.Minute, func(p runProgress) bool { return p.status != "running" })
	if p.status != "completed" || p.done != n || p.results != n || p.distinct != n {
		t.Fatalf("agent run ended %+v, want completed with %d results", p, n)
	}
	var jobs, onServerQueue, byWorker int
	if err := c.db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE queue = $2),
		count(*) FILTER (WHERE attempted_by[1] LIKE $3) FROM river_job WHERE args->>'run_id' = $1`,
		id, riverexec.LocalQueueName, fmt.Sprintf("gauntlet-%%-%d-%%", w.cmd.Process.Pid)).Scan(&jobs, &onServerQueue, &byWorker); err != nil {
		t.Fatal(err)
	}
	if jobs != n || onServerQueue != n || byWorker != 0 {
		t.Errorf("%d jobs, %d on the server's queue, %d executed by the worker; want %d, %d, 0", jobs, onServerQueue, byWorker, n, n)
	}

	// A server that executes no test refuses an agent run, saying why.
	c2 := newCluster(t, 2, 0)
	if status, b := c2.post(t, "/api/agents", `{"id":"helper","name":"Helper","system_prompt":"You add numbers."}`); status != http.StatusCreated {
		t.Fatalf("create agent: %d %s", status, b)
	}
	status, b := c2.post(t, "/api/start", `{"agent_id":"helper","domains":["sums"]}`)
	if status != http.StatusUnprocessableEntity && status != http.StatusBadRequest || !strings.Contains(b, "no-local-worker") {
		t.Errorf("agent run on a server with no local worker: %d %s, want refused naming --no-local-worker", status, b)
	}
}

// TestResponseCacheOnWorkers: with cache on, the answers workers get are
// stored in the shared database, and a second run's requests are all
// answered from it, counted in the run's cache_hits.
func TestResponseCacheOnWorkers(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 30
	c := newCluster(t, n, 0)
	c.worker(t, 4)
	c.worker(t, 4)
	var hits [2]int
	for i := range hits {
		id := c.startBody(t, `{"domains":["sums"],"model_name":"cached","cache":true}`)
		p := c.waitFor(t, id, 2*time.Minute, func(p runProgress) bool { return p.status != "running" })
		if p.status != "completed" || p.done != n || p.results != n {
			t.Fatalf("run %d ended %+v, want completed with %d results", i+1, p, n)
		}
		// cache_hits is final once the run's end is recorded.
		if err := c.db.QueryRow(`SELECT cache_hits FROM runs WHERE run_id = $1`, id).Scan(&hits[i]); err != nil {
			t.Fatal(err)
		}
		c.waitIdle(t)
	}
	if hits[0] != 0 || hits[1] != n {
		t.Errorf("cache hits of the two runs: %v, want [0 %d]", hits, n)
	}
}

// TestServerRestartCancelsJobs: a server killed mid-run leaves its run
// "running" and its jobs queued; the server started again marks the run
// interrupted and cancels its jobs, so no worker executes them for a run
// that has ended.
func TestServerRestartCancelsJobs(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 50
	c := newCluster(t, n, 0) // no worker: every job stays queued
	id := c.start(t)
	// The run is accepted at once and its jobs are queued as it is
	// prepared: wait for them before the kill.
	deadline := time.Now().Add(time.Minute)
	for {
		var queued int
		if err := c.db.QueryRow(`SELECT count(*) FROM river_job WHERE args->>'run_id' = $1`, id).Scan(&queued); err != nil {
			t.Fatal(err)
		}
		if queued == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs queued a minute after the start, want %d", queued, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.server.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.server.cmd.Wait()
	var open int
	if err := c.db.QueryRow(`SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND state = 'available'`, id).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != n {
		t.Fatalf("%d jobs queued after the server died, want %d", open, n)
	}
	args := slices.Clone(c.args)
	again := startGauntlet(t, args...)
	again.waitLine(t, "listening on http://")
	p := c.progressOf(t, id)
	var states string
	if err := c.db.QueryRow(`SELECT string_agg(DISTINCT state::text, ',') FROM river_job WHERE args->>'run_id' = $1`, id).Scan(&states); err != nil {
		t.Fatal(err)
	}
	if p.status != "interrupted" || states != "cancelled" {
		t.Errorf("after the restart: run %s, its jobs %s; want interrupted, cancelled", p.status, states)
	}
	if !strings.Contains(again.log(), "marked interrupted") {
		t.Errorf("the server's log does not say it marked the run interrupted:\n%s", again.log())
	}
}
