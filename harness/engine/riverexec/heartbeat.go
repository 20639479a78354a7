package riverexec

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// heartbeatKey is the job metadata key of the last time its process
// marked it alive.
const heartbeatKey = "gauntlet:heartbeat"

// liveJobs are the ids of the jobs this process is executing, and of
// those it finished lately: River marks a job completed a moment after
// its Work returned, and it stays marked alive until then (marking a job
// no longer running changes nothing).
type liveJobs struct {
	mu    sync.Mutex
	ids   map[int64]time.Time // zero while executing, else when it ended
	grace time.Duration
}

func (l *liveJobs) add(id int64) {
	l.mu.Lock()
	l.ids[id] = time.Time{}
	l.mu.Unlock()
}

func (l *liveJobs) remove(id int64) {
	l.mu.Lock()
	l.ids[id] = time.Now()
	l.mu.Unlock()
}

// list returns the ids to mark alive, and forgets the jobs that ended
// more than the grace period ago.
func (l *liveJobs) list() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int64, 0, len(l.ids))
	for id, ended := range l.ids {
		if !ended.IsZero() && time.Since(ended) > l.grace {
			delete(l.ids, id)
			continue
		}
		out = append(out, id)
	}
	return out
}

// heartbeats marks this process's jobs alive and makes the jobs of dead
// processes available again, every Options.Heartbeat, until ctx ends.
func (q *Queue) heartbeats(ctx context.Context) {
	defer close(q.beating)
	tick := time.NewTicker(q.opts.Heartbeat)
	defer tick.Stop()
	failing := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := q.markAlive(ctx)
		if err == nil {
			_, err = q.rescueDead(ctx)
		}
		if err != nil && ctx.Err() == nil {
			failing++
			if failing == 1 || failing%12 == 0 {
				q.log.Warn("mark the jobs being executed alive, or rescue those of dead processes",
					slog.Int("attempts", failing), slog.Any("error", err))
			}
			continue
		}
		failing = 0
	}
}

// markAlive sets the heartbeat of the jobs this process is executing.
func (q *Queue) markAlive(ctx context.Context) error {
	ids := q.live.list()
	if len(ids) == 0 {
		return nil
	}
	_, err := q.pool.Exec(ctx, `UPDATE river_job SET metadata = metadata || jsonb_build_object('`+heartbeatKey+`', now())
		WHERE id = ANY($1) AND state = 'running'`, ids)
	return err
}

// rescueDead makes the running jobs whose heartbeat (or start, before the
// first) is older than Options.DeadAfter available again, as River's
// rescuer does with the jobs older than Options.RescueAfter: an error
// appended, the rescue counted, a job past its last attempt discarded, a
// job whose cancellation was asked cancelled. Rows another process is
// rescuing at the same moment are skipped. It returns the ids rescued.
func (q *Queue) rescueDead(ctx context.Context) ([]int64, error) {
	rows, err := q.pool.Query(ctx, `WITH dead AS (
			SELECT id FROM river_job
			WHERE state = 'running' AND kind = $1
				AND coalesce((metadata->>'`+heartbeatKey+`')::timestamptz, attempted_at) < now() - make_interval(secs => $2)
			FOR UPDATE SKIP LOCKED
		), decided AS (
			SELECT j.id, CASE WHEN j.metadata ? 'cancel_attempted_at' THEN 'cancelled'
				WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END AS state
			FROM river_job j JOIN dead ON dead.id = j.id
		)
		UPDATE river_job j SET
			state = decided.state::river_job_state,
			finalized_at = CASE WHEN decided.state = 'available' THEN NULL ELSE now() END,
			scheduled_at = now(),
			errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt, 'error', $3::text, 'trace', '')),
			metadata = (j.metadata - '`+heartbeatKey+`') || jsonb_build_object('river:rescue_count',
				coalesce(CASE WHEN jsonb_typeof(j.metadata->'river:rescue_count') = 'number'
					THEN (j.metadata->>'river:rescue_count')::int END, 0) + 1)
		FROM decided WHERE j.id = decided.id
		RETURNING j.id`,
		Kind, q.opts.DeadAfter.Seconds(),
		"the process executing the job stopped marking it alive for "+q.opts.DeadAfter.String()+": taken for dead")
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		q.log.Warn("jobs of a dead process made available again", slog.Int("jobs", len(ids)), slog.Duration("silent_for", q.opts.DeadAfter))
	}
	return ids, nil
}
