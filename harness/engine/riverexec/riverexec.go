// Package riverexec runs an engine's tests as jobs of River
// (github.com/riverqueue/river), a job queue kept in PostgreSQL, so that
// any number of worker processes on any machines share one run's work.
//
// # Lifecycle
//
// Open connects to the database the runs are stored in, runs River's own
// schema migrations (under an advisory lock, so processes starting at once
// take turns) and returns a Queue. Given to engine.Options.Queue, it makes
// the engine enqueue each new run's samples (one job per test and repeat)
// in the transaction that creates the run. Work (with a worker engine,
// engine.Options.Worker, or the server's own engine) starts pulling jobs
// and executing them with engine.Engine.Work, up to Options.Concurrency at
// once, until Close.
//
// # Delivery
//
// A job is executed at least once. Every process that works the queue
// marks the jobs it is executing as alive every Options.Heartbeat (5
// seconds by default: a "gauntlet:heartbeat" time in the job's metadata),
// and looks as often for running jobs whose mark (or, before the first,
// whose start) is older than Options.DeadAfter (20 seconds): their
// process died or lost the database, and they are made available again
// (an error saying so appended, the attempt counted; a job past its last
// attempt is discarded, one being cancelled is cancelled). A dead
// worker's tests thus run again within about half a minute, while a live
// worker's test is never taken from it however long it takes, up to
// Options.RescueAfter, which bounds one execution (the test is then
// cancelled and River's own rescuer makes the job available again). A
// result is stored at most once, whatever the number of executions: runs
// store one result per run, test and repeat, and a second is a no-op that
// moves no counter.
//
// Jobs are inserted through River's database/sql driver in the runs
// store's own transaction (the store uses bun over pgx's database/sql
// driver), and worked through River's pgx driver on a pgx pool opened
// beside it on the same URL.
package riverexec

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// Kind is the River job kind of a run's sample.
const Kind = "gauntlet_test"

// QueueName is the River queue the jobs go to.
const QueueName = "gauntlet"

// LocalQueueName is the River queue of the jobs only the server that
// started their run executes (engine.QueuedJob.Local: the run evaluates
// an agent, whose knowledge-base files and tools are on the server's
// machine).
const LocalQueueName = "gauntlet_server"

// DefaultRescueAfter bounds one execution of a job, when
// Options.RescueAfter is 0: a test still running then is cancelled, and
// the job made available again. It must exceed the longest a test can
// take: the model's timeout times its attempts, plus the evaluator's. (A
// job whose process died is run again much sooner: see DefaultDeadAfter.)
const DefaultRescueAfter = 15 * time.Minute

// DefaultHeartbeat is how often a process marks the jobs it executes as
// alive, and looks for the jobs of dead processes, when
// Options.Heartbeat is 0.
const DefaultHeartbeat = 5 * time.Second

// DefaultDeadAfter is how old the mark of a running job may grow before
// its process is taken for dead and the job made available again, when
// Options.DeadAfter is 0: four heartbeats.
const DefaultDeadAfter = 20 * time.Second

// DefaultMaxAttempts is how often a job that failed (its result did not
// reach the database, its run's definitions could not be read) is tried
// before River gives it up. A job whose result the database refused is
// not tried again (engine.ErrResultLost).
const DefaultMaxAttempts = 25

// Options configure a Queue.
type Options struct {
	// URL is the PostgreSQL database's URL, the one DB was opened with.
	URL string
	// DB is the database the runs are stored in (required).
	DB *store.DB
	// Concurrency bounds the jobs this process executes at once (Work);
	// default 8.
	Concurrency int
	// RescueAfter bounds one execution of a job; DefaultRescueAfter when
	// 0.
	RescueAfter time.Duration
	// Heartbeat is how often Work marks its jobs alive and looks for the
	// jobs of dead processes; DefaultHeartbeat when 0.
	Heartbeat time.Duration
	// DeadAfter is how old a running job's mark may grow before the job
	// is made available again; DefaultDeadAfter when 0. Every process
	// sharing a queue must use the same (or a longer) value than the
	// heartbeat of the others allows.
	DeadAfter time.Duration
	// MaxAttempts is how often a job is tried before River gives it up
	// (and the run, finding it lost, ends with its error);
	// DefaultMaxAttempts when 0. It is recorded in each job inserted.
	MaxAttempts int
	// Server: this process starts runs, and its Work also executes the
	// jobs only it can (LocalQueueName); a worker's leaves them.
	Server bool
	// Logger receives the queue's log lines; nil means slog.Default().
	Logger *slog.Logger
}

// Queue is the River queue of a database's runs. It implements
// engine.Queue.
type Queue struct {
	opts   Options
	log    *slog.Logger
	pool   *pgxpool.Pool
	insert *river.Client[*sql.Tx]
	stop   func(context.Context) error
	live   *liveJobs
	// beat ends the heartbeat loop; beating is closed when it returned.
	beat    context.CancelFunc
	beating chan struct{}
}

var (
	_ engine.Queue        = (*Queue)(nil)
	_ engine.QueueCurrent = (*Queue)(nil)
)

// Open connects to the database of opts.URL and brings River's tables up
// to date.
func Open(ctx context.Context, opts Options) (*Queue, error) {
	if opts.DB == nil || !sqldb.IsPostgres(opts.URL) {
		return nil, errors.New("riverexec: a PostgreSQL database is required")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.RescueAfter <= 0 {
		opts.RescueAfter = DefaultRescueAfter
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.DeadAfter <= 0 {
		opts.DeadAfter = DefaultDeadAfter
	}
	opts.DeadAfter = max(opts.DeadAfter, 2*opts.Heartbeat)
	q := &Queue{opts: opts, log: opts.Logger}
	if q.log == nil {
		q.log = slog.Default()
	}
	pool, err := pgxpool.New(ctx, opts.URL)
	if err != nil {
		return nil, fmt.Errorf("riverexec: connect: %w", err)
	}
	q.pool = pool
	if err := q.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	q.insert, err = river.NewClient(riverdatabasesql.New(sqldb.Bun(opts.DB).DB), &river.Config{
		Logger: quiet(q.log), SkipUnknownJobCheck: true,
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("riverexec: %w", err)
	}
	return q, nil
}

// migrate runs River's migrations, one process at a time.
func (q *Queue) migrate(ctx context.Context) error {
	conn, err := q.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("riverexec: connect: %w", err)
	}
	defer conn.Release()
	h := fnv.New64a()
	h.Write([]byte("gauntlet river migrations"))
	key := int64(h.Sum64())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		return fmt.Errorf("riverexec: lock migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
	m, err := rivermigrate.New(riverpgxv5.New(q.pool), &rivermigrate.Config{Logger: quiet(q.log)})
	if err != nil {
		return fmt.Errorf("riverexec: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("riverexec: migrate River's tables: %w", err)
	}
	return nil
}

// quiet passes on River's warnings and errors only: its info lines are
// one per job.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(levelFilter{log.Handler(), slog.LevelWarn})
}

// args are a job's arguments as River stores them (JSON).
type args struct {
	engine.QueuedJob
}

// Kind is the job kind.
func (args) Kind() string { return Kind }

// Enqueue inserts jobs in tx. It implements engine.Queue.
func (q *Queue) Enqueue(ctx context.Context, tx bun.Tx, jobs []engine.QueuedJob) error {
	params := make([]river.InsertManyParams, len(jobs))
	opts := &river.InsertOpts{Queue: QueueName, MaxAttempts: q.opts.MaxAttempts}
	local := &river.InsertOpts{Queue: LocalQueueName, MaxAttempts: q.opts.MaxAttempts}
	for i, j := range jobs {
		params[i] = river.InsertManyParams{Args: args{j}, InsertOpts: opts}
		if j.Local {
			params[i].InsertOpts = local
		}
	}
	_, err := q.insert.InsertManyTx(ctx, tx.Tx, params)
	return err
}

// ofRun is the condition selecting a run's jobs ($1 the kind, $2 the
// run's id), in the form River's index of job arguments serves.
const ofRun = `kind = $1 AND args @> jsonb_build_object('run_id', $2::text)`

// Cancel cancels a run's jobs that are waiting (available, scheduled,
// retryable, pending) in one statement, then each job being executed the
// way River cancels a running job: the job is marked and its worker told
// (LISTEN/NOTIFY), which cancels the job's test; a test that finished
// first still stores its result, the run taking results until it ends.
// Row locks make this correct against workers fetching jobs at the same
// moment: a job a worker took first is running, and cancelled as such.
// It implements engine.Queue.
func (q *Queue) Cancel(ctx context.Context, runID string) error {
	_, err := q.pool.Exec(ctx, `UPDATE river_job SET state = 'cancelled', finalized_at = now()
		WHERE `+ofRun+` AND state IN ('available', 'scheduled', 'retryable', 'pending')`,
		Kind, runID)
	if err != nil {
		return fmt.Errorf("cancel the jobs of run %s: %w", runID, err)
	}
	rows, err := q.pool.Query(ctx, `SELECT id FROM river_job WHERE `+ofRun+` AND state = 'running'
		AND NOT metadata ? 'cancel_attempted_at'`, Kind, runID)
	if err != nil {
		return fmt.Errorf("cancel the jobs of run %s: %w", runID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("cancel the jobs of run %s: %w", runID, err)
	}
	for _, id := range ids {
		if _, err := q.insert.JobCancel(ctx, id); err != nil && !errors.Is(err, river.ErrNotFound) {
			return fmt.Errorf("cancel job %d of run %s: %w", id, runID, err)
		}
	}
	return nil
}

// Current returns the job of a run started last among those being
// executed. It implements engine.QueueCurrent.
func (q *Queue) Current(ctx context.Context, runID string) (engine.QueuedJob, bool, error) {
	var a args
	err := q.pool.QueryRow(ctx, `SELECT args FROM river_job WHERE state = 'running' AND `+ofRun+`
		ORDER BY attempted_at DESC, id DESC LIMIT 1`, Kind, runID).Scan(&a)
	if errors.Is(err, pgx.ErrNoRows) {
		return engine.QueuedJob{}, false, nil
	}
	if err != nil {
		return engine.QueuedJob{}, false, fmt.Errorf("the job of run %s started last: %w", runID, err)
	}
	return a.QueuedJob, true, nil
}

// Pending returns how many jobs of a run are not finished.
func (q *Queue) Pending(ctx context.Context, runID string) (int, error) {
	var n int
	err := q.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE `+ofRun+`
		AND state NOT IN ('completed', 'cancelled', 'discarded')`, Kind, runID).Scan(&n)
	return n, err
}

// State returns how many of a run's jobs are open and the last errors
// of those River gave up or cancelled. It implements engine.Queue.
func (q *Queue) State(ctx context.Context, runID string) (engine.QueueState, error) {
	var st engine.QueueState
	var err error
	if st.Open, err = q.Pending(ctx, runID); err != nil || st.Open > 0 {
		return st, err
	}
	rows, err := q.pool.Query(ctx, `SELECT coalesce(errors[array_length(errors, 1)]->>'error', state::text), count(*)
		FROM river_job WHERE `+ofRun+` AND state IN ('cancelled', 'discarded')
		GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 3`, Kind, runID)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var e engine.JobError
		if err := rows.Scan(&e.Error, &e.Jobs); err != nil {
			return st, err
		}
		st.Errors = append(st.Errors, e)
	}
	return st, rows.Err()
}

// Work starts executing jobs with e, up to Options.Concurrency at once,
// until Close. e is a worker engine (engine.Options.Worker) or the
// server's own.
func (q *Queue) Work(ctx context.Context, e *engine.Engine) error {
	workers := river.NewWorkers()
	q.live = &liveJobs{ids: map[int64]time.Time{}, grace: q.opts.DeadAfter}
	river.AddWorker(workers, &worker{e: e, log: q.log, live: q.live})
	host, _ := os.Hostname()
	queues := map[string]river.QueueConfig{QueueName: {MaxWorkers: q.opts.Concurrency}}
	if q.opts.Server {
		queues[LocalQueueName] = river.QueueConfig{MaxWorkers: q.opts.Concurrency}
	}
	c, err := river.NewClient(riverpgxv5.New(q.pool), &river.Config{
		// The id names the process in each job's attempted_by.
		ID:                   fmt.Sprintf("gauntlet-%s-%d-%d", host, os.Getpid(), time.Now().UnixNano()%1e6),
		Queues:               queues,
		Workers:              workers,
		RescueStuckJobsAfter: q.opts.RescueAfter,
		// River rescues a job only once it has run longer than its
		// timeout: a test is given until the rescue, then taken for lost.
		JobTimeout:        q.opts.RescueAfter,
		Logger:            quiet(q.log),
		FetchPollInterval: 250 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("riverexec: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("riverexec: start working: %w", err)
	}
	q.stop = c.StopAndCancel
	beatCtx, beat := context.WithCancel(context.WithoutCancel(ctx))
	q.beat, q.beating = beat, make(chan struct{})
	go q.heartbeats(beatCtx)
	return nil
}

// Close stops working (the jobs in flight are cancelled and left for
// another worker) and closes the connections.
func (q *Queue) Close() error {
	var err error
	if q.stop != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = q.stop(ctx)
		cancel()
	}
	if q.beat != nil {
		q.beat()
		<-q.beating
	}
	q.pool.Close()
	return err
}

// worker executes the jobs.
type worker struct {
	river.WorkerDefaults[args]
	e    *engine.Engine
	log  *slog.Logger
	live *liveJobs
}

// Work executes one job. A job of a run made by a newer schema is
// snoozed for a newer worker, one whose run's budget is spent
// (engine.ErrBudgetSpent) for engine.BudgetSnooze; one whose run has
// ended, or whose result the database refused even as an error
// (engine.ErrResultLost), is cancelled with its error; any other error
// is one River retries.
func (w *worker) Work(ctx context.Context, job *river.Job[args]) error {
	a := job.Args
	if have := runs.SchemaVersion(); a.Schema > have {
		w.log.Error("refusing a job of a run made by a newer Gauntlet: its runs schema is newer than this worker's; "+
			"it is left for a newer worker", slog.String("run", a.RunID), slog.String("test", a.TestID),
			slog.Int("run_schema", a.Schema), slog.Int("worker_schema", have))
		return river.JobSnooze(time.Minute)
	}
	w.live.add(job.ID)
	defer w.live.remove(job.ID)
	err := w.e.Work(ctx, a.QueuedJob)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrBudgetSpent):
		// The run's budget is spent: the process that follows the run
		// stops it and cancels this job meanwhile. Snoozing counts no
		// attempt.
		return river.JobSnooze(engine.BudgetSnooze)
	case errors.Is(err, runs.ErrRunEnded), errors.Is(err, harness.ErrNotFound), errors.Is(err, engine.ErrResultLost):
		// Trying again would store nothing either: the run ended, or the
		// database refused the result and the error standing in for it.
		return river.JobCancel(err)
	default:
		return err
	}
}

// levelFilter passes on the records of a handler at or above a level.
type levelFilter struct {
	slog.Handler
	min slog.Level
}

func (f levelFilter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.Handler.Enabled(ctx, l)
}

func (f levelFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return levelFilter{f.Handler.WithAttrs(as), f.min}
}

func (f levelFilter) WithGroup(name string) slog.Handler {
	return levelFilter{f.Handler.WithGroup(name), f.min}
}
