package main

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWorkers measures a latency-bound run on PostgreSQL executed by
// 1, 2 and 4 gauntlet worker processes (concurrency 32 each, the server
// executing no test): 20,000 tests, the model answering each after 100 ms.
// Each worker is bound by the model's latency, not by its CPU, so the wall
// time should fall with the number of workers. "kill" runs 4 workers and
// kills one with SIGKILL a third of the way through: the run must complete
// with every test stored exactly once. It reports the wall time and the
// tests per second of each.
//
// GAUNTLET_BENCH_NO_SEARCH_INDEX=1 drops the results' search indexes
// first: how much of PostgreSQL's work they are.
//
// It starts PostgreSQL and five processes and takes minutes, so it runs
// only when GAUNTLET_SCALE_WORKERS is set:
//
//	GAUNTLET_SCALE_WORKERS=1 go test -run '^$' -bench Workers -benchtime 1x -timeout 30m ./cmd/gauntlet/
func BenchmarkWorkers(b *testing.B) {
	if os.Getenv("GAUNTLET_SCALE_WORKERS") == "" {
		b.Skip("set GAUNTLET_SCALE_WORKERS=1: starts PostgreSQL and worker processes, takes minutes")
	}
	skipWithoutPostgres(b)
	const n = 20000
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				wall := workerRun(b, n, workers, false)
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(float64(n)/wall.Seconds(), "tests/s")
				b.ReportMetric(loadAverage(), "load-avg")
			}
		})
	}
	b.Run("workers=4,kill=1", func(b *testing.B) {
		for range b.N {
			wall := workerRun(b, n, 4, true)
			b.ReportMetric(wall.Seconds(), "wall-s")
		}
	})
}

// workerRun runs n tests on a new cluster with the given number of
// workers and returns the run's wall time, from its start to its end as
// stored; kill kills one worker a third of the way through. It fails
// unless the run completes with every test stored once.
func workerRun(b *testing.B, n, workers int, kill bool) time.Duration {
	b.StopTimer()
	c := newCluster(b, n, 100*time.Millisecond)
	if os.Getenv("GAUNTLET_BENCH_NO_SEARCH_INDEX") != "" {
		// An experiment: what the results' trigram indexes cost PostgreSQL.
		for _, col := range []string{"prompt", "response", "test_id"} {
			if _, err := c.db.Exec(`DROP INDEX IF EXISTS "run_results_search_` + col + `"`); err != nil {
				b.Fatal(err)
			}
		}
	}
	var ws []*proc
	for range workers {
		ws = append(ws, c.worker(b, 32, "--rescue-after", "10s"))
	}
	b.StartTimer()
	pgDir := pgDirOf(c.url)
	cpu0, self0, pg0 := cpuOf(cpuGroups...), selfCPU(), postgresCPU(pgDir)
	start := time.Now()
	id := c.start(b)
	if kill {
		c.waitFor(b, id, 10*time.Minute, func(p runProgress) bool { return p.done >= n/3 })
		if err := ws[0].cmd.Process.Kill(); err != nil {
			b.Fatal(err)
		}
	}
	p := c.waitFor(b, id, 20*time.Minute, func(p runProgress) bool { return p.status != "running" })
	wall := time.Since(start)
	b.StopTimer()
	cpu1, self1, pg1 := cpuOf(cpuGroups...), selfCPU(), postgresCPU(pgDir)
	// CPU seconds per 1,000 tests of each part: the workers, the server,
	// PostgreSQL, and this process (the fake model).
	for i, g := range cpuGroups {
		b.ReportMetric((cpu1[g]-cpu0[g]).Seconds()*1000/float64(n), cpuNames[i]+"-cpu-s/1k")
	}
	b.ReportMetric((pg1-pg0).Seconds()*1000/float64(n), "postgres-cpu-s/1k")
	b.ReportMetric((self1-self0).Seconds()*1000/float64(n), "model-cpu-s/1k")
	if p.status != "completed" || p.done != n || p.results != n || p.distinct != n {
		b.Fatalf("run ended %+v, want completed with %d results, each once", p, n)
	}
	var rescued int
	c.db.QueryRow(`SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND attempt > 1`, id).Scan(&rescued)
	b.Logf("%d workers: %d tests in %v (%.0f tests/s), 0 lost, 0 duplicated, %d jobs executed again",
		workers, n, wall.Round(10*time.Millisecond), float64(n)/wall.Seconds(), rescued)
	return wall
}

// cpuGroups are the command-line marks of the processes whose CPU the
// benchmark reports (cpuNames, in the same order).
var (
	cpuGroups = []string{"-- worker ", "-- serve "}
	cpuNames  = []string{"workers", "server"}
)

// pgDirOf is the directory of the test PostgreSQL server of a
// connection URL: its socket's (host=), which holds its data.
func pgDirOf(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return ""
	}
	return u.Query().Get("host")
}

// selfCPU is the CPU time this process has used (the fake model).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's load average over the last minute.
func loadAverage() float64 {
	raw, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
