package engine

import (
	"context"
	"log/slog"
	"time"
)

// QueueCurrent is what a Queue may also say: the job of a run that a
// worker started last among those being executed, for the run's live
// status (Status.CurrentDomain and CurrentLevel), as a run executed in
// process says the test it started last. ok is false when none is being
// executed.
type QueueCurrent interface {
	Current(ctx context.Context, runID string) (job QueuedJob, ok bool, err error)
}

// currentPoll is how often a queued run asks the queue for the job
// started last.
const currentPoll = time.Second

// stopDrain bounds how long a stopped queued run waits for the jobs being
// executed to end (their tests cancelled, or finished and stored) before
// its end is recorded: a worker that died with a job holds it until the
// queue rescues it, and its result would then be refused.
const stopDrain = 15 * time.Second

// pollCurrent copies the domain and level of the job started last into
// the run's live state, at most once per currentPoll, when the queue says
// them; with no job being executed, the last ones stay.
func (r *run) pollCurrent() {
	qc, ok := r.e.opts.Queue.(QueueCurrent)
	if !ok || time.Since(r.currentAt) < currentPoll {
		return
	}
	r.currentAt = time.Now()
	j, ok, err := qc.Current(r.ctx, r.info.RunID)
	if err != nil || !ok || j.Domain == "" {
		return
	}
	r.mu.Lock()
	if _, known := r.cellOf[cellKey{j.Domain, j.Level}]; known {
		r.currentDomain, r.currentLevel = j.Domain, j.Level
	}
	r.mu.Unlock()
}

// drain winds a stopped queued run's jobs down before its end is
// recorded, as a run executed in process waits for its tests in flight:
// the jobs waiting are cancelled, the tests being executed are cancelled,
// and the results of those that finished first are stored, since the run
// takes results until every job has ended (or stopDrain passed). Only the
// tests cancelled in flight are left without a result.
func (r *run) drain(cur *cursor) {
	ctx := context.Background()
	if err := r.e.opts.Queue.Cancel(ctx, r.info.RunID); err != nil {
		r.e.log.Error("cancel the run's jobs", slog.String("run", r.info.RunID), slog.Any("error", err))
		return
	}
	deadline := time.Now().Add(stopDrain)
	for {
		st, err := r.e.opts.Queue.State(ctx, r.info.RunID)
		if err == nil && st.Open == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.e.log.Warn("the run's jobs being executed did not end in time; their results are refused",
				slog.String("run", r.info.RunID), slog.Int("jobs", st.Open), slog.Any("error", err))
			return
		}
		if err := r.poll(cur); err != nil {
			r.e.log.Warn("read the run's progress", slog.String("run", r.info.RunID), slog.Any("error", err))
		}
		time.Sleep(followPoll)
	}
}

// quietJobs cancels the jobs a queued run left (waiting, or executed by a
// worker that the run's stop did not wait for), so that none stores a
// result into the run once it is reopened: a resumed run executes its
// tests itself.
func (e *Engine) quietJobs(ctx context.Context, runID string) error {
	if e.opts.Queue == nil {
		return nil
	}
	return e.opts.Queue.Cancel(ctx, runID)
}
