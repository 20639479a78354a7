package harnesstest

import (
	"testing"
	"time"
)

// DefaultWait is how long Eventually waits when given no timeout: long
// enough for a loaded CI machine running tests with the race detector,
// short enough that a test waiting for something that never happens
// fails in seconds.
const DefaultWait = 10 * time.Second

// Eventually waits until cond returns true, checking it at once and then
// at short, growing intervals (1 ms doubling up to 25 ms), and fails the
// test with "<what>: not within <timeout>" when timeout passes first
// (0 means DefaultWait). It is how a test waits for something another
// goroutine or process does — a channel to start, a plugin to restart, a
// file to appear — without a fixed sleep that is too long on a quiet
// machine and too short on a busy one.
//
// cond runs on the test's goroutine; it must not call t.Fatal.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(timeout, cond) {
		if timeout <= 0 {
			timeout = DefaultWait
		}
		t.Fatalf("%s: not within %v", what, timeout)
	}
}

// Within reports whether cond became true within timeout (0 means
// DefaultWait), polling as Eventually does. Use it where running out of
// time is not a failure of its own, or needs its own message.
func Within(timeout time.Duration, cond func() bool) bool {
	if timeout <= 0 {
		timeout = DefaultWait
	}
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 25*time.Millisecond)
	}
	return true
}

// Never checks that cond stays false for the whole of window, polling it
// as Eventually does, and marks the test failed with "<what>: happened
// within <window>" as soon as it turns true; the test goes on, so the
// caller may report the details. A window of 0 or less checks cond once.
//
// It is for what a test can only watch for a while: that something does
// not happen when nothing marks the moment it would have — a stopped
// channel polling again, a leaked goroutine calling out. Prefer a barrier
// where there is one (an event that must come after the unwanted one, such
// as the answer to a later message in the same ordered queue) and an
// Eventually on it. When only a window will do, make it one that cannot
// fail wrongly: first wait for everything that should happen and for
// anything in flight to land, so that all cond can see is what must not
// happen. A slow machine then only makes the check see less, never fail.
func Never(t testing.TB, window time.Duration, what string, cond func() bool) {
	t.Helper()
	happened := cond()
	if !happened && window > 0 {
		happened = Within(window, cond)
	}
	if happened {
		t.Errorf("%s: happened within %v", what, window)
	}
}
