//go:build unix

package runs

import (
	"errors"
	"syscall"
)

// pidRuns reports whether a process with this pid runs on this host.
func pidRuns(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
