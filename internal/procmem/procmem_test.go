package procmem_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/gauntlet-eval/gauntlet/internal/procmem"
)

func TestSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	rss, ok := procmem.RSS(procmem.Self)
	if !ok || rss <= 0 || rss%1024 != 0 {
		t.Fatalf("RSS(Self) = %d, %v; want a positive number of KiB", rss, ok)
	}
	peak, ok := procmem.PeakRSS(procmem.Self)
	if !ok || peak < rss {
		t.Fatalf("PeakRSS(Self) = %d, %v; want at least the RSS %d", peak, ok, rss)
	}
	// The same process by its number.
	if n, ok := procmem.PeakRSS(os.Getpid()); !ok || n < rss {
		t.Fatalf("PeakRSS(getpid) = %d, %v", n, ok)
	}
}

func TestChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep to start:", err)
	}
	pid := cmd.Process.Pid
	if n, ok := procmem.RSS(pid); !ok || n <= 0 {
		t.Errorf("RSS(child) = %d, %v", n, ok)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n, ok := procmem.RSS(pid); ok {
		t.Errorf("RSS of a process that is gone = %d, want ok false", n)
	}
}
