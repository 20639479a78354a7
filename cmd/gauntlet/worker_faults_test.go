package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// deadEndpoint returns the URL of a model endpoint nothing listens on.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/v1"
}

// TestStalledRunEnds: a run whose jobs River gives up after their last
// attempt does not wait for them forever: the server finds every job final
// with results missing and ends the run, saying how many tests were lost
// and why.
func TestStalledRunEnds(t *testing.T) {
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
