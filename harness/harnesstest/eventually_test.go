package harnesstest_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
)

// recorder is a testing.TB that records failures instead of ending the
// test; Fatalf returns, so the helper under test must return after it.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func TestEventually(t *testing.T) {
	t.Run("waits for another goroutine", func(t *testing.T) {
		var done atomic.Bool
		go func() { done.Store(true) }()
		harnesstest.Eventually(t, 0, "the goroutine", done.Load)
	})
	t.Run("fails after the timeout", func(t *testing.T) {
		r := &recorder{TB: t}
		harnesstest.Eventually(r, 20*time.Millisecond, "nothing", func() bool { return false })
		if len(r.failed) != 1 || r.failed[0] != "nothing: not within 20ms" {
			t.Errorf("failures %q", r.failed)
		}
	})
}

func TestWithin(t *testing.T) {
	calls := 0
	if !harnesstest.Within(time.Hour, func() bool { calls++; return calls == 3 }) {
		t.Error("Within = false for a condition that turned true")
	}
	if harnesstest.Within(10*time.Millisecond, func() bool { return false }) {
		t.Error("Within = true for a condition that never did")
	}
}

func TestNever(t *testing.T) {
	t.Run("passes when cond stays false", func(t *testing.T) {
		calls := 0
		harnesstest.Never(t, 30*time.Millisecond, "nothing", func() bool { calls++; return false })
		if calls < 2 {
			t.Errorf("cond checked %d times in the window, want it polled", calls)
		}
	})
	t.Run("fails when cond turns true", func(t *testing.T) {
		r := &recorder{TB: t}
		calls := 0
		// An hour's window: returning at all shows it stops at once.
		harnesstest.Never(r, time.Hour, "a second call", func() bool { calls++; return calls == 3 })
		if len(r.failed) != 1 || r.failed[0] != "a second call: happened within 1h0m0s" {
			t.Errorf("failures %q", r.failed)
		}
		if calls != 3 {
			t.Errorf("cond checked %d times, want 3 (none after it turned true)", calls)
		}
	})
	t.Run("no window checks once", func(t *testing.T) {
		r := &recorder{TB: t}
		harnesstest.Never(r, 0, "already", func() bool { return true })
		if len(r.failed) != 1 {
			t.Errorf("failures %q", r.failed)
		}
		calls := 0
		harnesstest.Never(t, 0, "not yet", func() bool { calls++; return false })
		if calls != 1 {
			t.Errorf("cond checked %d times, want 1", calls)
		}
	})
}
