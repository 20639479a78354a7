package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// profileHelper starts a CPU profile of a gauntlet process run by the
// tests (TestHelperGauntletMain) when GAUNTLET_HELPER_CPUPROFILE names a
// directory: <dir>/<command>-<pid>.prof, covering the process's first
// GAUNTLET_HELPER_CPUPROFILE_SECONDS seconds (30 unless set). The
// processes end by a signal, so the profile is stopped by time, not at
// exit. For the benchmarks: where a worker's or the server's CPU goes.
func profileHelper() {
	dir := os.Getenv("GAUNTLET_HELPER_CPUPROFILE")
	if dir == "" || len(os.Args) < 2 {
		return
	}
	secs, err := strconv.Atoi(os.Getenv("GAUNTLET_HELPER_CPUPROFILE_SECONDS"))
	if err != nil || secs <= 0 {
		secs = 30
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.prof", os.Args[1], os.Getpid())))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpu profile:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "cpu profile:", err)
		f.Close()
		return
	}
	time.AfterFunc(time.Duration(secs)*time.Second, func() {
		pprof.StopCPUProfile()
		f.Close()
	})
}

// procStat is a live process's CPU time, from /proc.
type procStat struct {
	pid, ppid int
	cmd       string        // the command line, arguments separated by spaces
	cpu       time.Duration // user + system
	children  time.Duration // of its children it waited for
}

// procs lists the live processes.
func procs() []procStat {
	var out []procStat
	ents, _ := os.ReadDir("/proc")
	const tick = 100.0 // USER_HZ on Linux
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: ppid is
		// the 2nd, utime, stime, cutime and cstime the 12th to 15th.
		rest := string(stat)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) < 15 {
			continue
		}
		num := func(i int) time.Duration {
			v, _ := strconv.ParseFloat(f[i], 64)
			return time.Duration(v / tick * float64(time.Second))
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, procStat{pid: pid, ppid: ppid, cmd: strings.ReplaceAll(string(cmdline), "\x00", " "),
			cpu: num(11) + num(12), children: num(13) + num(14)})
	}
	return out
}

// cpuOf returns the CPU time used so far by the live processes whose
// command line contains each of names, by name; a process is counted
// under the first name it matches. For the benchmarks: how the machine's
// CPU splits between the workers, the server and the test process.
func cpuOf(names ...string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range procs() {
		for _, n := range names {
			if strings.Contains(p.cmd, n) {
				out[n] += p.cpu
				break
			}
		}
	}
	return out
}

// postgresCPU is the CPU time used so far by the PostgreSQL server whose
// data directory is under dir: the postmaster, its live processes, and
// those that ended (backends of closed connections).
func postgresCPU(dir string) time.Duration {
	all := procs()
	var sum time.Duration
	for _, pm := range all {
		if !strings.Contains(pm.cmd, "-D "+filepath.Join(dir, "data")) {
			continue
		}
		sum += pm.cpu + pm.children
		for _, c := range all {
			if c.ppid == pm.pid {
				sum += c.cpu
			}
		}
	}
	return sum
}
