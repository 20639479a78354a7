// Package procmem reads a process's resident memory from Linux's /proc:
// the sandbox that watches a document converter, and the benchmarks that
// report memory, read it the same way. Elsewhere (no /proc) every read
// says so with ok false.
package procmem

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// Self, as a pid, names the calling process (/proc/self).
const Self = 0

// RSS returns the resident memory of process pid (VmRSS), in bytes; ok is
// false when it cannot be read (no /proc, the process is gone).
func RSS(pid int) (n int64, ok bool) { return status(pid, "VmRSS:") }

// PeakRSS returns the peak resident memory of process pid (VmHWM), in
// bytes, since it started or since ResetPeak; ok is false when it cannot
// be read.
func PeakRSS(pid int) (n int64, ok bool) { return status(pid, "VmHWM:") }

// ResetPeak starts the calling process's peak resident memory again from
// its current one (Linux 4.0 and later).
func ResetPeak() error { return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// status reads a field in kB of /proc/<pid>/status, in bytes.
func status(pid int, field string) (int64, bool) {
	path := "/proc/self/status"
	if pid != Self {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte(field))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}
