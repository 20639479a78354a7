package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// ErrResultLost is the error (wrapped) of a queued job whose result the
// database refused, and then refused again as the error result that
// would stand in for it: the test has no result, and trying the job
// again would store none either. The queue gives such a job up; the run
// that started it counts the test as lost (see Queue).
var ErrResultLost = errors.New("the test's result could not be stored")

// abandonAfter is how long a queued job whose context ended (its run was
// stopped or reset, or the worker is closing) waits for its test to
// return before the job ends without it: a model call that ignores
// cancellation then holds none of the worker's slots, as a run executed
// in process leaves such calls behind. The test's result, if it ever
// comes, is dropped.
const abandonAfter = 2 * time.Second

// runTest executes a queued job's test with the job's context. When that
// context ends first, the test is given abandonAfter to return (a test
// that finished meanwhile is still stored), then left behind: finished is
// false.
func (w *workRun) runTest(ctx context.Context, j *job) (res runs.Result, finished bool) {
	type outcome struct {
		res      runs.Result
		finished bool
	}
	out := make(chan outcome, 1)
	go func() {
		res, finished := w.run.runTestIn(ctx, j)
		out <- outcome{res, finished}
	}()
	select {
	case o := <-out:
		return o.res, o.finished
	case <-ctx.Done():
	}
	t := time.NewTimer(abandonAfter)
	defer t.Stop()
	select {
	case o := <-out:
		return o.res, o.finished
	case <-t.C:
		w.run.e.log.Warn("a test of a queued job did not return once the job was cancelled; the job ends without it",
			slog.String("run", w.run.info.RunID), slog.String("test", j.test.ID), slog.Int("repeat", j.repeat))
		return runs.Result{}, false
	}
}

// record stores the results of jobs that finished together, as a run
// executed in process stores a batch (run.store): a result the database
// refuses is tried alone a few times, then replaced by an error result
// saying why; one refused even so is lost (its error wraps
// ErrResultLost). When batches in a row lose results, the worker ends
// the run, stopped, saying why, as a run executed in process stops: the
// process that follows the run finds it ended. A result that did not
// reach the database (the connection failed: PostgreSQL restarting, the
// network) keeps its error, for the queue to execute the job again
// later.
func (w *workRun) record(ctx context.Context, rs *runs.Store, results []runs.Result) ([]bool, []error) {
	settle := func(domain string, level int, samples []runs.Sample) runs.Cell {
		return settleSamples(w.plan.cellOf[cellKey{domain, level}], samples)
	}
	one := func(r runs.Result) (bool, error) {
		return rs.RecordResult(ctx, r, func(samples []runs.Sample) runs.Cell { return settle(r.Domain, r.Level, samples) })
	}
	inserted, errs := rs.RecordResults(ctx, results, settle)
	lost := 0
	var last error
	for i, err := range errs {
		if err == nil || !refused(err) {
			continue // stored, the run ended, or the database was not reached: the queue tries the job again
		}
		// RecordResults tried it alone once already.
		res := results[i]
		for attempt := 1; attempt < storeAttempts && err != nil && refused(err); attempt++ {
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
			inserted[i], err = one(res)
		}
		if err != nil && refused(err) {
			var err2 error
			inserted[i], err2 = one(standIn(res, err))
			switch {
			case err2 == nil:
				w.run.e.log.Warn("a result could not be stored; an error result saying why stands in for it",
					slog.String("run", res.RunID), slog.String("test", res.TestID), slog.Any("error", err))
				err = nil
			case !refused(err2):
				err = err2
			default:
				lost++
				last = err
				w.run.e.log.Error("result lost: it could not be stored", slog.String("run", res.RunID),
					slog.String("test", res.TestID), slog.Any("error", err))
				err = fmt.Errorf("%w: %w", ErrResultLost, err)
			}
		}
		errs[i] = err
	}
	w.noteStore(ctx, rs, lost, last)
	return inserted, errs
}

// noteStore counts the batches in a row that lost results (lost of them,
// the last with err) and ends the run, stopped, when there are storeStop.
func (w *workRun) noteStore(ctx context.Context, rs *runs.Store, lost int, err error) {
	w.mu.Lock()
	if lost > 0 {
		w.storeFailures++
	} else {
		w.storeFailures = 0
	}
	stop := w.storeFailures >= storeStop && !w.ended
	w.mu.Unlock()
	if !stop {
		return
	}
	why := keepsRefusing(err)
	id := w.run.info.RunID
	w.run.e.log.Error("run stopped", slog.String("run", id), slog.String("error", why))
	if _, err := rs.FenceRun(ctx, id, runs.StatusStopped, why); err != nil {
		w.run.e.log.Error("stop the run", slog.String("run", id), slog.Any("error", err))
		return // the next batch that loses a result tries again
	}
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}

// keepsRefusing is why a run stops, in process or on the queue's
// workers, when storeStop batches in a row lost results, the last with
// err.
func keepsRefusing(err error) string {
	return fmt.Sprintf("the database keeps refusing results (%d batches in a row lost some): %v", storeStop, err)
}

// isEnded reports whether this worker ended the run (noteStore).
func (w *workRun) isEnded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// leftSamples gives each cell a queued run leaves unfinished the samples
// its workers stored, read from the database: a cell's interval (and its
// latency) is
// measured from its samples when the run leaves it (cell.leave), as in a
// run executed in process, and a queued run's live cells hold counters
// only.
func (r *run) leftSamples(ctx context.Context) error {
	r.mu.Lock()
	var left []*cell
	for _, c := range r.cells {
		if (c.status == runs.CellPending || c.status == runs.CellRunning) && c.done > 0 {
			left = append(left, c)
		}
	}
	r.mu.Unlock()
	for _, c := range left {
		var samples []stats.Sample
		var lat cellLatency
		lvl := c.level
		err := r.e.opts.Runs.EachResult(ctx, r.info.RunID, runs.ResultQuery{Domain: c.domain, Level: &lvl}, func(res runs.Result) error {
			samples = append(samples, res.Sample())
			lat.add(&res)
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the samples of cell %s/%d: %w", c.domain, c.level, err)
		}
		r.mu.Lock()
		c.samples, c.lat = samples, lat
		r.mu.Unlock()
	}
	return nil
}

// refused reports whether err is the database refusing a statement it
// received (a row it will not take: a constraint, a trigger, a value out
// of range), which trying again soon would not change, rather than the
// database not being reached or the transaction being cut short
// (connection failures, the server shutting down or out of resources, a
// serialisation failure or deadlock), which a later attempt may get past.
func refused(err error) bool {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || len(pg.Code) < 2 {
		return false
	}
	switch pg.Code[:2] {
	case "08", // connection exception
		"40", // transaction rollback: serialisation failure, deadlock
		"53", // insufficient resources
		"57", // operator intervention: shutdown, cancelled
		"58": // system error
		return false
	}
	return true
}
