//go:build !unix

package mcptool

import (
	"os"
	"os/exec"
)

// ownProcessGroup does nothing where there are no Unix process groups.
func ownProcessGroup(*exec.Cmd) {}

// killGroup kills the process pid.
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
