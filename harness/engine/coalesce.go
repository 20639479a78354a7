package engine

import (
	"context"
	"sync"
)

// coalescer hands requests to fn in batches: while one call of fn runs,
// the requests that arrive wait, and the next call takes them all (up to
// max). A request never waits for a timer, only for the call before it,
// so one alone goes at once; under load the batches grow by themselves.
// A worker executing many jobs at once reads their tests and stores
// their results this way: one query or transaction for the jobs that
// reach that point together, instead of one each.
type coalescer[Q, R any] struct {
	// fn answers a batch: a result and an error for each request.
	fn  func(ctx context.Context, reqs []Q) ([]R, []error)
	max int

	mu    sync.Mutex
	queue []*coalesced[Q, R]
	busy  bool // a goroutine is running batches
}

// coalesced is a request waiting in a coalescer.
type coalesced[Q, R any] struct {
	req  Q
	res  R
	err  error
	done chan struct{}
}

// do queues req and waits for its answer, or for ctx to end (the batch
// still runs). The batch runs with ctx's values, not its cancellation:
// it holds other requests too.
func (c *coalescer[Q, R]) do(ctx context.Context, req Q) (R, error) {
	p := &coalesced[Q, R]{req: req, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if !c.busy {
		c.busy = true
		go c.loop(context.WithoutCancel(ctx))
	}
	c.mu.Unlock()
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// loop runs batches until no request waits.
func (c *coalescer[Q, R]) loop(ctx context.Context) {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		n := min(len(c.queue), max(c.max, 1))
		batch := c.queue[:n]
		c.queue = append([]*coalesced[Q, R](nil), c.queue[n:]...)
		c.mu.Unlock()
		reqs := make([]Q, n)
		for i, p := range batch {
			reqs[i] = p.req
		}
		res, errs := c.fn(ctx, reqs)
		for i, p := range batch {
			p.res, p.err = res[i], errs[i]
			close(p.done)
		}
	}
}
