package main

import (
	"testing"
	"time"
)

// TestWorkerKilledDefaultFlags: a worker killed with SIGKILL mid-run,
// every setting left at its default (--rescue-after 15 minutes): the
// other processes find its jobs silent (no heartbeat) and execute them
// again within about half a minute, and the run completes with each
// result once.
func TestWorkerKilledDefaultFlags(t *testing.T) {
	t.Parallel()
	skipWithoutPostgres(t)
	const n = 120
	c := newCluster(t, n, 200*time.Millisecond)
	victim := c.worker(t, 8)
	c.worker(t, 8)
	id := c.start(t)
	c.waitFor(t, id, time.Minute, func(p runProgress) bool { return p.done >= n/4 })
	c.killHolding(t, victim)
	killed := time.Now()
	// Far below --rescue-after (15 minutes): only the heartbeat can end
	// the run in time.
	p := c.waitFor(t, id, 3*time.Minute, func(p runProgress) bool { return p.status != "running" })
	t.Logf("the run ended %v after the kill", time.Since(killed))
	if p.status != "completed" || p.done != n || p.results != n || p.distinct != n {
		t.Fatalf("run ended %+v, want completed with %d results, each once", p, n)
	}
	var rescued int
	if err := c.db.QueryRow(`SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND attempt > 1`, id).Scan(&rescued); err != nil {
		t.Fatal(err)
	}
	if rescued == 0 {
		t.Error("no job was executed twice: the killed worker had none in flight, the test proves nothing")
	}
}
