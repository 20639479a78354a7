package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// Process leases. Every process that works on a store (a server, a CLI
// run, a worker) holds a lease: a row of the processes table naming it
// (pid, host, kind, definitions directory) with a heartbeat it refreshes
// every few seconds. A run records the lease of the process that created
// or resumed it (its owner). A process starting on a store closes only the
// runs left running whose owner is dead: its heartbeat is older than the
// lease's timeout, its row is gone, or, on the same host, its pid no
// longer runs. A run with no owner (made before leases, or by a store
// holding none) counts as left by a dead process, as before.

// Default lease timings.
const (
	// DefaultHeartbeat is how often a lease's owner refreshes it.
	DefaultHeartbeat = 5 * time.Second
	// DefaultLeaseTimeout is how old a heartbeat may be before the lease
	// counts as dead.
	DefaultLeaseTimeout = 30 * time.Second
)

// Process kinds.
const (
	KindServe  = "serve"
	KindRun    = "run"
	KindWorker = "worker"
)

// LeaseOptions describe the process taking a lease.
type LeaseOptions struct {
	// Kind is what the process is: KindServe, KindRun, KindWorker.
	Kind string
	// Command is the command it runs, without its arguments (they may hold
	// secrets), e.g. "gauntlet serve".
	Command string
	// Definitions is its definitions directory, "" for none.
	Definitions string
	// Heartbeat is how often the lease is refreshed (default
	// DefaultHeartbeat); Timeout how old a heartbeat may be before others
	// count the lease dead (default DefaultLeaseTimeout). Timeout must be
	// several heartbeats: a slow database must not make a live process
	// look dead.
	Heartbeat, Timeout time.Duration
	// Logger receives failed heartbeats; nil means slog.Default().
	Logger *slog.Logger
}

// Process is a lease as the processes table holds it.
type Process struct {
	ID          string `json:"id"`
	PID         int    `json:"pid"`
	Host        string `json:"host"`
	Kind        string `json:"kind"`
	Command     string `json:"command"`
	Definitions string `json:"definitions"`
	StartedAt   string `json:"started_at"`
	HeartbeatAt string `json:"heartbeat_at"` // RFC 3339, UTC, with fractions of a second.
	TimeoutMS   int64  `json:"timeout_ms"`
}

type processRow struct {
	bun.BaseModel `bun:"table:processes"`
	ID            string `bun:"id,pk"`
	PID           int    `bun:"pid,notnull"`
	Host          string `bun:"host,notnull"`
	Kind          string `bun:"kind,notnull"`
	Command       string `bun:"command,notnull"`
	Definitions   string `bun:"definitions,notnull"`
	StartedAt     string `bun:"started_at,notnull"`
	HeartbeatAt   string `bun:"heartbeat_at,notnull"`
	TimeoutMS     int64  `bun:"timeout_ms,notnull"`
}

// String names the process for a message: "gauntlet serve (pid 12, host
// h, definitions /d)".
func (p Process) String() string {
	s := fmt.Sprintf("%s (pid %d on %s", p.Command, p.PID, p.Host)
	if p.Definitions != "" {
		s += ", definitions " + p.Definitions
	}
	return s + ")"
}

// Lease is a process's lease on a store. Close it when the process ends.
type Lease struct {
	s    *Store
	row  processRow // as taken; the heartbeat updates a copy
	beat time.Duration
	log  *slog.Logger
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// hostname is the host leases are taken on.
var hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
})

func heartbeatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Lease takes a lease for this process and refreshes it in the background
// until Close. From then on the runs this store creates or resumes are
// owned by it (their owner is the lease). A store holds one lease at a
// time: a second call is an error.
func (s *Store) Lease(ctx context.Context, opts LeaseOptions) (*Lease, error) {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultLeaseTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	now := time.Now()
	l := &Lease{s: s, beat: opts.Heartbeat, log: opts.Logger, stop: make(chan struct{}), done: make(chan struct{}),
		row: processRow{ID: hex.EncodeToString(b[:]), PID: os.Getpid(), Host: hostname(), Kind: opts.Kind,
			Command: opts.Command, Definitions: opts.Definitions, StartedAt: now.UTC().Format("2006-01-02 15:04:05"),
			HeartbeatAt: heartbeatTime(now), TimeoutMS: opts.Timeout.Milliseconds()}}
	if !s.lease.CompareAndSwap(nil, l) {
		return nil, errors.New("runs: this store holds a lease already")
	}
	if _, err := s.db.NewInsert().Model(&l.row).Exec(ctx); err != nil {
		s.lease.Store(nil)
		return nil, fmt.Errorf("take a process lease: %w", err)
	}
	go l.refresh()
	return l, nil
}

// ID returns the lease's id: the owner recorded in the runs it owns.
func (l *Lease) ID() string { return l.row.ID }

// Process returns the lease as it was taken (its heartbeat time is the
// first; Processes reads the current ones).
func (l *Lease) Process() Process { return l.row.process() }

func (l *Lease) refresh() {
	defer close(l.done)
	row := l.row // l.row never changes: Process and owner read it at any time
	t := time.NewTicker(l.beat)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		// A heartbeat later than the timeout is worth nothing.
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(l.row.TimeoutMS)*time.Millisecond)
		err := l.s.heartbeat(ctx, &row)
		cancel()
		if err != nil {
			l.log.Warn("process lease heartbeat", slog.Any("error", err))
		}
	}
}

// heartbeat refreshes a lease's row, writing it again when another process
// removed it as dead (the database was too slow for a while).
func (s *Store) heartbeat(ctx context.Context, row *processRow) error {
	row.HeartbeatAt = heartbeatTime(time.Now())
	res, err := s.db.NewUpdate().Model((*processRow)(nil)).Set("heartbeat_at = ?", row.HeartbeatAt).
		Where("id = ?", row.ID).Exec(ctx)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		_, err = s.db.NewInsert().Model(row).Exec(ctx)
		return err
	}
	return nil
}

// Close stops the heartbeat and removes the lease: the process is ending.
// The runs it owns that are still running then count as left by a dead
// process. A second call does nothing.
func (l *Lease) Close() error {
	var err error
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = l.s.db.NewDelete().Model((*processRow)(nil)).Where("id = ?", l.row.ID).Exec(ctx)
		l.s.lease.CompareAndSwap(l, nil)
	})
	return err
}

// abandon stops the heartbeat and forgets the lease without removing its
// row, as a process killed at once would: for tests.
func (l *Lease) abandon() {
	l.once.Do(func() {
		close(l.stop)
		<-l.done
		l.s.lease.CompareAndSwap(l, nil)
	})
}

// owner returns the id of the store's lease, "" when it holds none.
func (s *Store) owner() string {
	if l := s.lease.Load(); l != nil {
		return l.row.ID
	}
	return ""
}

func (r processRow) process() Process {
	return Process{ID: r.ID, PID: r.PID, Host: r.Host, Kind: r.Kind, Command: r.Command, Definitions: r.Definitions,
		StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt, TimeoutMS: r.TimeoutMS}
}

// alive reports whether a lease's process is alive as seen at now: its
// heartbeat is recent and, on this host, its pid runs.
func (r processRow) alive(now time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, r.HeartbeatAt)
	if err != nil || now.Sub(t) > time.Duration(r.TimeoutMS)*time.Millisecond {
		return false
	}
	if r.Host == hostname() && r.PID != os.Getpid() && !pidRuns(r.PID) {
		return false
	}
	return true
}

// Processes lists the live leases on the store, oldest first.
func (s *Store) Processes(ctx context.Context) ([]Process, error) {
	live, err := s.liveLeases(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Process, 0, len(live))
	for _, r := range live {
		out = append(out, r.process())
	}
	return out, nil
}

// liveLeases returns the live leases by id, oldest first.
func (s *Store) liveLeases(ctx context.Context) (map[string]processRow, error) {
	var rows []processRow
	if err := s.db.NewSelect().Model(&rows).Order("started_at", "id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("read process leases: %w", err)
	}
	now := time.Now()
	live := map[string]processRow{}
	for _, r := range rows {
		if r.alive(now) {
			live[r.ID] = r
		}
	}
	return live, nil
}

// removeDeadLeases removes the rows of leases that are dead and own no
// run left running.
func (s *Store) removeDeadLeases(ctx context.Context, live map[string]processRow) error {
	var ids []string
	if err := s.db.NewSelect().Model((*processRow)(nil)).Column("id").Scan(ctx, &ids); err != nil {
		return err
	}
	for _, id := range ids {
		if _, ok := live[id]; ok {
			continue
		}
		if _, err := s.db.NewDelete().Model((*processRow)(nil)).Where("id = ?", id).
			Where(`NOT EXISTS (SELECT 1 FROM "runs" WHERE "owner" = ? AND `+leftRunning+`)`, id, StatusRunning, StatusInterrupted).
			Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// RunOwner returns the process that owns a run left running, and whether
// that process is alive; ok is false when the run has no owner or its
// lease is gone.
func (s *Store) RunOwner(ctx context.Context, runID string) (p Process, alive, ok bool, err error) {
	row, err := s.run(ctx, runID)
	if err != nil {
		return Process{}, false, false, err
	}
	if row.Owner == "" {
		return Process{}, false, false, nil
	}
	var pr processRow
	if err := s.db.NewSelect().Model(&pr).Where("id = ?", row.Owner).Scan(ctx); err != nil {
		return Process{}, false, false, nil
	}
	return pr.process(), pr.alive(time.Now()), true, nil
}

// FirstCell returns the domain and level of a run's first cell: where its
// run-wide log lines are filed. ok is false for a run with no cell.
func (s *Store) FirstCell(ctx context.Context, runID string) (domain string, level int, ok bool, err error) {
	var rows []cellRow
	if err := s.db.NewSelect().Model(&rows).Column("domain", "level").Where("run_id = ?", runID).
		Order("position").Limit(1).Scan(ctx); err != nil {
		return "", 0, false, fmt.Errorf("read run %q: %w", runID, err)
	}
	if len(rows) == 0 {
		return "", 0, false, nil
	}
	return rows[0].Domain, rows[0].Level, true, nil
}
