package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestCoalescer: a request alone goes at once; the requests that arrive
// while a batch runs go together in the next (at most max), each gets its
// own answer and error, and a caller whose context ends stops waiting.
func TestCoalescer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	c := &coalescer[int, string]{max: 4, fn: func(_ context.Context, reqs []int) ([]string, []error) {
		mu.Lock()
		batches = append(batches, slices.Clone(reqs))
		first := len(batches) == 1
		mu.Unlock()
		if first {
			<-release
		}
		out, errs := make([]string, len(reqs)), make([]error, len(reqs))
		for i, r := range reqs {
			out[i] = fmt.Sprint("answer ", r)
			if r%2 == 1 {
				errs[i] = fmt.Errorf("odd %d", r)
			}
		}
		return out, errs
	}}
	ctx := context.Background()
	type answer struct {
		res string
		err error
	}
	answers := make([]chan answer, 7)
	ask := func(i int) {
		answers[i] = make(chan answer, 1)
		go func() {
			res, err := c.do(ctx, i)
			answers[i] <- answer{res, err}
		}()
	}
	ask(0)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 })
	for i := 1; i < 7; i++ {
		ask(i)
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == 6 })
	// A caller that gives up while its batch waits.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.do(gone, 99); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled caller: %v", err)
	}
	close(release)
	for i, ch := range answers {
		a := <-ch
		if a.res != fmt.Sprint("answer ", i) || (a.err != nil) != (i%2 == 1) {
			t.Errorf("request %d: %q, %v", i, a.res, a.err)
		}
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return !c.busy })
	mu.Lock()
	defer mu.Unlock()
	sizes := make([]int, len(batches))
	for i, b := range batches {
		sizes[i] = len(b)
	}
	if !slices.Equal(sizes, []int{1, 4, 3}) {
		t.Errorf("batches %v, want one alone, then 4 (the most), then the other 3", batches)
	}
}

// waitFor polls cond until it holds, for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}
