package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// A queued run's budget is honoured by the workers themselves: before
// each model request (a test's first, a tool round, pass 2, a judge's),
// a worker compares the run's recorded spend (what the store counted,
// every worker's stored results and the run's earlier sessions included)
// plus what this worker spent on results it has not stored yet with the
// budget, and sends nothing once they reach it. The recorded spend is
// read from the store at most every budgetRefresh while the budget is far
// (the run's spend rate, measured from those reads, says how far), and
// before each request once it is near, so that what passes the budget is
// what the workers had in flight when it was reached. The process that
// follows the run ends it stopped, naming the budget, as it does for a
// run executed in process.

// budgetRefresh is how often a worker reads a queued run's recorded spend
// while the run's budget is far.
const budgetRefresh = 200 * time.Millisecond

// budgetNear is how many budgetRefresh periods of the run's spend, at the
// rate measured, make the budget near: a worker then reads the recorded
// spend before each request.
const budgetNear = 3

// budgetReadTimeout bounds one read of the recorded spend.
const budgetReadTimeout = 5 * time.Second

// BudgetSnooze is how long a queued job whose test was not sent because
// its run's budget is spent waits before it is tried again: the process
// that follows the run stops it and cancels its jobs meanwhile, and a
// job tried again (the spend that reached the budget was not stored
// after all) finds the budget as the store has it then.
const BudgetSnooze = 5 * time.Second

// workBudget is a worker's view of a queued run's budget (see above).
// Its zero value, and a nil one, is a run without a budget.
type workBudget struct {
	read func(context.Context) (runs.Budget, error)
	log  *slog.Logger
	run  string

	mu sync.Mutex
	// max is the run's budget, as its config said when last read.
	max float64
	// recorded is the run's recorded spend at the last read, readAt when
	// that read began (zero before the first), ended whether the run was
	// no longer running then.
	recorded float64
	readAt   time.Time
	ended    bool
	// rate is the run's spend per second, all workers', measured between
	// reads at least budgetRefresh apart (from anchor, read at anchorAt);
	// rated once measured.
	rate     float64
	rated    bool
	anchor   float64
	anchorAt time.Time
	// unstored is what this worker's finished results of the run cost
	// until their store returned; stored what those stored since the
	// last read began cost (the read may not have counted them).
	unstored float64
	stored   float64
	// largest is the largest cost of one of this worker's results, and
	// inflight its tests of the run in flight.
	largest  float64
	inflight int
	// reading is closed when the read in progress ends; nil when none.
	reading chan struct{}
	failing int  // reads in a row that failed
	said    bool // the worker logged that the budget is spent
}

// newWorkBudget is the budget of a queued run a worker executes jobs of,
// as its stored config says; nil for a run without one.
func (e *Engine) newWorkBudget(info runs.Info) *workBudget {
	if info.Config == nil || info.Config.MaxCostUSD <= 0 {
		return nil
	}
	id := info.RunID
	return &workBudget{max: info.Config.MaxCostUSD, log: e.log, run: id,
		read: func(ctx context.Context) (runs.Budget, error) { return e.opts.Runs.Budget(ctx, id) }}
}

// estimate is the run's spend as this worker knows it. b.mu held.
func (b *workBudget) estimate() float64 { return b.recorded + b.unstored + b.stored }

// near reports whether the spend est is close enough to the budget that
// a decision needs a fresh read: the run may spend the rest before the
// next periodic read, or this worker's tests in flight may. b.mu held.
func (b *workBudget) near(est float64) bool {
	if !b.rated {
		return true
	}
	margin := b.rate*budgetNear*budgetRefresh.Seconds() + b.largest*float64(b.inflight)
	return b.max-est <= margin
}

// over reports whether the run's budget is spent, reading the recorded
// spend first when the view is stale, near the budget, or says it is
// spent only because of results stored since the last read.
func (b *workBudget) over() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max <= 0 || b.ended {
		return b.ended
	}
	if b.recorded+b.unstored >= b.max {
		return b.spent()
	}
	est := b.estimate()
	must := est >= b.max || b.near(est)
	if !must && time.Since(b.readAt) < budgetRefresh {
		return false
	}
	if ch := b.reading; ch != nil {
		if !must {
			return false // the read in progress refreshes the view
		}
		b.mu.Unlock()
		<-ch
		b.mu.Lock()
	} else {
		b.refresh()
	}
	if b.ended {
		return true
	}
	return b.max > 0 && b.estimate() >= b.max && b.spent()
}

// spent logs, once, that the budget is spent on this worker, and returns
// true. b.mu held.
func (b *workBudget) spent() bool {
	if !b.said {
		b.said = true
		b.log.Info("a queued run's budget is spent: this worker sends it no new request",
			slog.String("run", b.run), slog.Float64("spent_usd", b.estimate()), slog.Float64("max_cost_usd", b.max))
	}
	return true
}

// refresh reads the run's budget and recorded spend. b.mu held; it is
// released during the read.
func (b *workBudget) refresh() {
	ch := make(chan struct{})
	b.reading = ch
	began := time.Now()
	carried := b.stored // the read counts what was stored before it began
	b.stored = 0
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), budgetReadTimeout)
	got, err := b.read(ctx)
	cancel()
	b.mu.Lock()
	b.reading = nil
	close(ch)
	b.readAt = began
	if err != nil {
		b.stored += carried
		b.failing++
		if b.failing == 1 || b.failing%25 == 0 {
			b.log.Warn("read a queued run's spend", slog.String("run", b.run), slog.Int("attempts", b.failing), slog.Any("error", err))
		}
		return
	}
	b.failing = 0
	b.max, b.recorded = got.MaxCostUSD, got.SpentUSD
	b.ended = got.Status != runs.StatusRunning
	switch {
	case b.anchorAt.IsZero():
		b.anchor, b.anchorAt = got.SpentUSD, began
	case began.Sub(b.anchorAt) >= budgetRefresh:
		b.rate = max(0, (got.SpentUSD-b.anchor)/began.Sub(b.anchorAt).Seconds())
		b.rated = true
		b.anchor, b.anchorAt = got.SpentUSD, began
	}
}

// begin counts a test of the run this worker starts.
func (b *workBudget) begin() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.inflight++
	b.mu.Unlock()
}

// finished counts what a test this worker finished cost, before its
// result is stored.
func (b *workBudget) finished(cost float64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.unstored += cost
	b.largest = max(b.largest, cost)
	b.mu.Unlock()
}

// end counts a test of the run this worker is done with: finished (its
// cost counted by finished) and stored or not.
func (b *workBudget) end(cost float64, finished, stored bool) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inflight--
	if finished {
		b.unstored -= cost
	}
	if stored {
		b.stored += cost
	}
	if b.inflight == 0 {
		b.unstored = 0 // no rounding left behind
	}
}

// refusal is the error of a job whose test was not sent because the
// run's budget is spent (it wraps ErrBudgetSpent), or runs.ErrRunEnded
// when the run is no longer running.
func (b *workBudget) refusal() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return runs.ErrRunEnded
	}
	return fmt.Errorf("%w: the run spent $%.6f of its max_cost_usd $%.6f", ErrBudgetSpent, b.estimate(), b.max)
}

// spentNow reports, without reading the store, whether the run's budget
// is known to be spent: a job then starts no test.
func (b *workBudget) spentNow() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended || b.max > 0 && b.recorded+b.unstored >= b.max
}
