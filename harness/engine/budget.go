package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// ErrBudgetSpent is the error of a model request not sent because the
// run's budget is spent: its test is left not done, as a stop leaves it.
// A queued job whose test was left so ends with it (wrapped): the queue
// puts such a job off (BudgetSnooze) rather than counting an attempt,
// and the process that follows the run stops it meanwhile.
var ErrBudgetSpent = errors.New("the run's budget is spent")

// budget is a run's spending limit (StartRequest.MaxCostUSD,
// ResumeOptions.MaxCostUSD).
type budget struct {
	max float64 // US dollars; 0: none
	mu  sync.Mutex
	// spent is the run's spend: what its earlier sessions recorded and
	// every result this session finished, counted as each test ends,
	// before it is stored, so that no test starts after the one that
	// reached the budget.
	spent float64
	// reached is set once spent reaches max: no test starts and no
	// request is sent after it.
	reached atomic.Bool
	// stopped: the run ends stopped because of the budget (unless every
	// test finished after all).
	stopped bool
	// check, when set, says whether the budget is spent in reached's
	// place: a worker's view of a queued run's spend (workBudget).
	check func() bool
}

// overBudget reports whether the run's budget is spent, so that no new
// model request is sent.
func (r *run) overBudget() bool {
	if c := r.budget.check; c != nil {
		return c()
	}
	return r.budget.reached.Load()
}

// ResumeOptions are the options of a resume (Engine.ResumeWith).
type ResumeOptions struct {
	// MaxCostUSD, when positive, is the resumed run's budget, as
	// StartRequest.MaxCostUSD: it bounds the run's whole recorded cost,
	// its earlier sessions' included. 0: no budget (a resume does not
	// keep the budget the run had).
	MaxCostUSD float64
}

// noteSpend counts what a finished test spent toward the budget.
func (r *run) noteSpend(res *runs.Result) {
	if r.budget.max <= 0 {
		return
	}
	b := &r.budget
	b.mu.Lock()
	b.spent += runs.SpendOf(res).CostUSD
	spent := b.spent
	b.mu.Unlock()
	if spent >= b.max {
		r.budgetReached(spent)
	}
}

// checkBudget compares the run's recorded spend (its live total: what
// the store counted, for a resumed or queued run) with its budget.
func (r *run) checkBudget() {
	if r.budget.max <= 0 {
		return
	}
	r.mu.Lock()
	recorded := r.total.spend.CostUSD
	r.mu.Unlock()
	b := &r.budget
	b.mu.Lock()
	b.spent = max(b.spent, recorded)
	spent := b.spent
	b.mu.Unlock()
	if spent >= b.max {
		r.budgetReached(spent)
	}
}

// budgetReached ends the run's intake: no new test starts, no request is
// sent, and the run will end stopped with an error naming the budget.
// The tests in flight finish with what they got. A queued run's jobs are
// stopped as a stop stops them.
func (r *run) budgetReached(spent float64) {
	if r.budget.reached.Swap(true) {
		return
	}
	r.mu.Lock()
	if r.endStatus == "" {
		r.endStatus = runs.StatusStopped
		r.endError = fmt.Sprintf("budget reached: the run spent $%.6f of its max_cost_usd $%.6f; resume it with a new budget to go on", spent, r.budget.max)
		r.budget.stopped = true
	}
	queued := r.queued
	r.mu.Unlock()
	r.logRun("run %s reached its budget: $%.6f spent of $%.6f; no new request is sent", r.info.RunID, spent, r.budget.max)
	if queued {
		r.cancel()
	}
}
