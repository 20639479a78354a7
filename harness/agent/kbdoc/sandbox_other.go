//go:build !linux

package kbdoc

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// Elsewhere than Linux the child is bounded by the parent's time limit
// only: neither its memory nor its CPU time is limited by the system.

func childExecutable() (string, error) { return os.Executable() }

func limitChild(mem int64, timeout time.Duration) {}

func childAttr() *syscall.SysProcAttr { return nil }

func watchMemory(p *os.Process, max int64, over *atomic.Bool) func() int64 {
	return func() int64 { return 0 }
}

func selfPeakRSS() int64 { return 0 }

func cpuLimited(ps *os.ProcessState) bool { return false }
