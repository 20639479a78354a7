//go:build unix

package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

// waitFiles waits until dir holds n files.
func waitFiles(t *testing.T, dir string, n int) {
	t.Helper()
	harnesstest.Eventually(t, 10*time.Second, fmt.Sprintf("%d calls to arrive", n), func() bool {
		entries, _ := os.ReadDir(dir)
		return len(entries) >= n
	})
}

// SIGKILL the plugin with calls in flight: each is retried once, alone,
// on a restarted process; killed again there, it fails with an error that
// names the plugin and the signal. The next call restarts the plugin and
// succeeds, and Close leaves no process or socket behind.
func TestKilledMidCall(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir, RestartBackoff: 50 * time.Millisecond})
	ev, _ := reg.Evaluator("testeval")
	if _, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err != nil {
		t.Fatal(err)
	}
	first := status(t, m, "gauntlet-evaluator-testeval").PID

	ready := t.TempDir()
	const inFlight = 4
	errs := make(chan error, inFlight)
	for range inFlight {
		go func() {
			req := evalRequest("block", "42")
			req.Evaluator.Config = map[string]any{"ready_dir": ready}
			_, err := ev.Evaluate(t.Context(), req)
			errs <- err
		}()
	}
	waitFiles(t, ready, inFlight)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The retries come one at a time: each arrives on a new process, which
	// is killed in turn.
	pids := []int{first}
	for i := range inFlight {
		waitFiles(t, ready, inFlight+i+1)
		pid := status(t, m, "gauntlet-evaluator-testeval").PID
		if slices.Contains(pids, pid) || pid == 0 {
			t.Fatalf("retry %d runs on pid %d, not a new process (%v)", i, pid, pids)
		}
		pids = append(pids, pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			msg := err.Error()
			if !errors.Is(err, plugin.ErrUnavailable) || !strings.Contains(msg, "plugin gauntlet-evaluator-testeval was killed by a signal (signal: killed) during evaluate") ||
				!strings.Contains(msg, "retried once") {
				t.Errorf("in-flight call: %v, want a crash naming the plugin and the signal, after a retry", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the killed retry did not fail")
		}
	}
	select {
	case err := <-errs:
		t.Fatalf("a call ended without its retry: %v", err)
	default:
	}
	s := status(t, m, "gauntlet-evaluator-testeval")
	if s.Health != HealthCrashed || s.PID != 0 || s.LastError == "" {
		t.Errorf("after the kills: %+v", s)
	}

	// The next call restarts it.
	res, err := ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if err != nil || res.Score != 1 {
		t.Fatalf("after restart: %+v, %v", res, err)
	}
	s = status(t, m, "gauntlet-evaluator-testeval")
	if s.Health != HealthRunning || slices.Contains(pids, s.PID) || s.Restarts != inFlight+1 {
		t.Errorf("after restart: %+v", s)
	}
	pids = append(pids, s.PID)

	sockDir := m.sockDir
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids...)
	if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket directory %s left behind (%v)", sockDir, err)
	}
}

// One call among eight in flight makes the plugin exit: the crash takes
// all eight, each is retried once on the restarted process, and only the
// call that crashes it again fails, with an error naming the plugin and
// its exit status. The seven others succeed.
func TestCrashRetriesCallsInFlight(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir, RestartBackoff: 20 * time.Millisecond})
	ev, _ := reg.Evaluator("testeval")
	if _, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err != nil {
		t.Fatal(err)
	}
	first := status(t, m, "gauntlet-evaluator-testeval").PID
	ready := t.TempDir()
	marker := filepath.Join(t.TempDir(), "exited")
	const n = 8
	type outcome struct {
		i   int
		res *harness.EvalResult
		err error
	}
	out := make(chan outcome, n)
	for i := range n {
		go func() {
			resp := "gate"
			if i == 5 {
				resp = "gate-exit"
			}
			req := evalRequest(resp, "gate")
			req.Evaluator.Config = map[string]any{"ready_dir": ready, "gate": float64(n), "marker": marker}
			res, err := ev.Evaluate(t.Context(), req)
			out <- outcome{i, res, err}
		}()
	}
	for range n {
		var o outcome
		select {
		case o = <-out:
		case <-time.After(30 * time.Second):
			t.Fatal("the calls did not end")
		}
		if o.i == 5 {
			if o.err == nil || !errors.Is(o.err, plugin.ErrUnavailable) ||
				!strings.Contains(o.err.Error(), "plugin gauntlet-evaluator-testeval exited (exit status 2) during evaluate") {
				t.Errorf("the crashing call: %+v, %v; want an error naming the plugin and its exit status", o.res, o.err)
			}
			continue
		}
		if o.err != nil || o.res == nil || o.res.Score != 1 {
			t.Errorf("call %d: %+v, %v; want it to succeed on the restarted process", o.i, o.res, o.err)
			continue
		}
		if pid := fmt.Sprint(o.res.Details["pid"]); pid == fmt.Sprint(first) {
			t.Errorf("call %d succeeded on the process that crashed", o.i)
		}
	}
	s := status(t, m, "gauntlet-evaluator-testeval")
	if s.Restarts < 1 || s.Restarts > 2 {
		t.Errorf("status %+v: want one restart after the crash, two when the crashing retry came first", s)
	}
	if files, _ := os.ReadDir(ready); len(files) != 2*n {
		t.Errorf("%d calls arrived at the plugin, want %d: every call once, then once more", len(files), 2*n)
	}
}

// A plugin that exits by itself during a call is a crash too; one that
// panics in a call is not (the SDK recovers).
func TestExitAndPanic(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir, RestartBackoff: 10 * time.Millisecond})
	ev, _ := reg.Evaluator("testeval")

	if _, err := ev.Evaluate(t.Context(), evalRequest("panic", "42")); err == nil || errors.Is(err, plugin.ErrUnavailable) {
		t.Errorf("panic: %v, want a plain error", err)
	}
	first := status(t, m, "gauntlet-evaluator-testeval").PID
	if _, err := ev.Evaluate(t.Context(), evalRequest("exit", "42")); !errors.Is(err, plugin.ErrUnavailable) {
		t.Errorf("exit: %v, want ErrUnavailable", err)
	}
	waitGone(t, first)
	deadline := time.Now().Add(5 * time.Second)
	for s := status(t, m, "gauntlet-evaluator-testeval"); s.Health != HealthCrashed || !strings.Contains(s.LastError, "exit status 3"); s = status(t, m, "gauntlet-evaluator-testeval") {
		if time.Now().After(deadline) {
			t.Fatalf("status %+v, want crashed with the exit status", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err != nil || res.Score != 1 {
		t.Errorf("after the exit: %+v, %v", res, err)
	}
}

// A call that hangs hits CallTimeout; the plugin still answers, so it is
// kept. A plugin that stops answering altogether (SIGSTOP) is killed and
// restarted.
func TestHang(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir, CallTimeout: time.Second, RestartBackoff: 10 * time.Millisecond})
	ev, _ := reg.Evaluator("testeval")
	if _, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err != nil {
		t.Fatal(err)
	}
	first := status(t, m, "gauntlet-evaluator-testeval").PID

	start := time.Now()
	_, err := ev.Evaluate(t.Context(), evalRequest("hang", "42"))
	// A hang is for ever: 10 s tells it from the deadline on a loaded
	// machine.
	if d := time.Since(start); d < 900*time.Millisecond || d > 15*time.Second {
		t.Errorf("the hanging call returned after %v, want about 1s", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not finish within 1s") {
		t.Errorf("hang: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // the probe
	if res, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err != nil || res.Score != 1 {
		t.Errorf("after a hanging call: %+v, %v", res, err)
	}
	if s := status(t, m, "gauntlet-evaluator-testeval"); s.PID != first || s.Health != HealthRunning {
		t.Errorf("a plugin that answers was restarted: %+v", s)
	}

	// A frozen process: the call times out, the probe gets no answer, the
	// process is killed and the next call gets a new one.
	if err := syscall.Kill(first, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, first)
	if _, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("frozen: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for status(t, m, "gauntlet-evaluator-testeval").Health != HealthCrashed {
		if time.Now().After(deadline) {
			t.Fatalf("the frozen plugin was not found out: %+v", status(t, m, "gauntlet-evaluator-testeval"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitGone(t, first)
	if res, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err != nil || res.Score != 1 {
		t.Errorf("after the restart: %+v, %v", res, err)
	}
	s := status(t, m, "gauntlet-evaluator-testeval")
	if s.PID == first || s.Restarts != 1 || !strings.Contains(s.LastError, "stopped answering") {
		t.Errorf("after the restart: %+v", s)
	}
}

// A plugin that cannot start is retried with a growing backoff; calls
// whose deadline comes before the next attempt fail at once.
func TestBackoff(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "gauntlet-evaluator-broken")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho not a plugin\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, reg := newManager(t, Options{Dir: dir, RestartBackoff: 500 * time.Millisecond, StartTimeout: 5 * time.Second})
	ev, _ := reg.Evaluator("broken")
	_, err := ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if !errors.Is(err, plugin.ErrUnavailable) || !strings.Contains(err.Error(), "gauntlet-evaluator-broken: start") {
		t.Fatalf("first call: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = ev.Evaluate(ctx, evalRequest("42", "42"))
	// At once: well before the 500 ms backoff (the bound is loose for
	// a loaded CI machine; the message tells the two apart).
	if !errors.Is(err, plugin.ErrUnavailable) || !strings.Contains(err.Error(), "restart in") || time.Since(start) > 450*time.Millisecond {
		t.Errorf("during the backoff: %v after %v", err, time.Since(start))
	}
	// Without a deadline the call waits for the backoff and tries again.
	start = time.Now()
	if _, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err == nil || time.Since(start) < 300*time.Millisecond {
		t.Errorf("after the backoff: %v after %v", err, time.Since(start))
	}
	s := status(t, m, "gauntlet-evaluator-broken")
	if s.Health != HealthCrashed || s.LastError == "" {
		t.Errorf("status %+v", s)
	}
	p := m.byName["gauntlet-evaluator-broken"]
	p.mu.Lock()
	backoff := p.backoff()
	p.mu.Unlock()
	if backoff != time.Second {
		t.Errorf("backoff after 2 failures %v, want 1s", backoff)
	}
	// A second's wait is still worth it; after the third failure (2 s),
	// calls fail at once until the restart is due.
	if _, err := ev.Evaluate(t.Context(), evalRequest("42", "42")); err == nil || strings.Contains(err.Error(), "restart in") {
		t.Errorf("third attempt: %v", err)
	}
	start = time.Now()
	_, err = ev.Evaluate(t.Context(), evalRequest("42", "42"))
	if !errors.Is(err, plugin.ErrUnavailable) || !strings.Contains(err.Error(), "restart in") || time.Since(start) > time.Second {
		t.Errorf("during a long backoff: %v after %v", err, time.Since(start))
	}
	// Config validation never waits, and accepts the record unchecked.
	if err := ev.(harness.ConfigValidator).ValidateConfig(harness.EvaluatorConfig{Type: "broken"}); err != nil {
		t.Errorf("ValidateConfig of an unavailable plugin: %v", err)
	}
	if s := status(t, m, "gauntlet-evaluator-broken"); s.Restarts != 0 {
		t.Errorf("status %+v", s)
	}
}

// Close while calls are in flight and a start is in progress leaves no
// process behind.
func TestCloseWithCallsInFlight(t *testing.T) {
	dir := t.TempDir()
	install(t, dir, "evaluator", "gauntlet-evaluator-testeval")
	m, reg := newManager(t, Options{Dir: dir})
	ev, _ := reg.Evaluator("testeval")
	ready := t.TempDir()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			req := evalRequest("block", "42")
			req.Evaluator.Config = map[string]any{"ready_dir": ready}
			if _, err := ev.Evaluate(t.Context(), req); err == nil {
				t.Error("a call in flight at Close succeeded")
			}
		})
	}
	waitFiles(t, ready, 3)
	pid := status(t, m, "gauntlet-evaluator-testeval").PID
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	waitGone(t, pid)
	if s := status(t, m, "gauntlet-evaluator-testeval"); s.Health != HealthStopped || s.PID != 0 {
		t.Errorf("after Close: %+v", s)
	}
	var _ harness.Evaluator = ev
}
