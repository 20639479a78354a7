//go:build unix

package host

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A host killed without the chance to stop its plugins leaves no orphan:
// the plugin sees its parent gone and exits.
func TestHostKilledLeavesNoOrphan(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHost$", "-test.v")
	// The killed host cannot remove its socket directory: keep it in the
	// test's temporary directory.
	cmd.Env = append(os.Environ(), "GAUNTLET_HELPER_HOST_DIR="+dir, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "PLUGIN PID "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
	}
	if pid == 0 {
		t.Fatal("the helper host did not report its plugin's pid")
	}
	if !alive(pid) {
		t.Fatal("the plugin is not running")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGone(t, pid)
}

// TestHelperHost is the host process of TestHostKilledLeavesNoOrphan.
func TestHelperHost(t *testing.T) {
	dir := os.Getenv("GAUNTLET_HELPER_HOST_DIR")
	if dir == "" {
		t.Skip("run by TestHostKilledLeavesNoOrphan")
	}
	m, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background(), "gauntlet-evaluator-testeval"); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("PLUGIN PID %d\n", m.List()[0].PID)
	time.Sleep(time.Minute) // until killed
}
