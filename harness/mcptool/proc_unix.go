//go:build unix

package mcptool

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own, so that
// stopping it also stops what it started (a wrapper's child, such as the
// program `go run` builds).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group of pid, which ownProcessGroup made.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
