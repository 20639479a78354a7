package kbdoc

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gauntlet-eval/gauntlet/internal/procmem"
)

// limitChild bounds the child's own resources, before it reads its
// document: its data segment (the Go heap and every writable private
// mapping) to mem, so that an allocation past it fails; and its CPU time,
// a backstop to the parent's wall-clock kill, to twice the time limit
// (the garbage collector works on other threads).
//
// A race-detector build reserves far more address space than mem for its
// shadow memory, so only the parent's watch bounds its memory.
func limitChild(mem int64, timeout time.Duration) {
	if !raceBuild {
		lim := uint64(mem)
		if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
			fmt.Fprintf(os.Stderr, "kbdoc: child: cannot limit memory: %v\n", err)
		}
	}
	cpu := uint64(2*timeout/time.Second) + 1
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu}); err != nil {
		fmt.Fprintf(os.Stderr, "kbdoc: child: cannot limit CPU time: %v\n", err)
	}
}

// childExecutable is this process's own executable, as the kernel holds
// it: still the right file after the binary was replaced on disk.
func childExecutable() (string, error) { return "/proc/self/exe", nil }

// childAttr makes the child die with its parent.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// watchMemory reads the child's resident memory every 20 ms and kills it
// past max, setting over. The returned function stops the watch and
// returns the most it saw.
func watchMemory(p *os.Process, max int64, over *atomic.Bool) func() int64 {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var seen int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			rss, ok := procmem.RSS(p.Pid)
			if !ok {
				continue
			}
			seen = maxInt64(seen, rss)
			if rss > max {
				over.Store(true)
				p.Kill()
				return
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return seen
	}
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// selfPeakRSS is this process's peak resident memory since it started
// (since exec: the parent's memory at the fork does not count), in bytes.
func selfPeakRSS() int64 {
	n, _ := procmem.PeakRSS(procmem.Self)
	return n
}

// cpuLimited tells a child killed for its CPU time: at its hard limit the
// system kills it (the Go runtime ignores SIGXCPU). The caller has ruled
// out the parent's own kills.
func cpuLimited(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && (ws.Signal() == syscall.SIGKILL || ws.Signal() == syscall.SIGXCPU)
}
