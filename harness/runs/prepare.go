package runs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/uptrace/bun"
)

// A large run is recorded in two steps, so that starting it answers at
// once: CreateRun with no cells when it is accepted (the run is running,
// its TotalTests 0 and its Config without a DefinitionsHash while its
// tests are prepared), then PrepareRunThen once its definitions are
// stored and its plan made.

// PrepareRunThen records the plan of a run CreateRun recorded without
// cells: its number of tests (samples), its config (with the hash of the
// definitions it stored) and its cells, all pending; and calls then, when
// not nil, in the same transaction (the run's queued jobs). A run that is
// no longer running (stopped, reset, or marked interrupted meanwhile) is
// left as it is: the error wraps ErrRunEnded and nothing is written.
func (s *Store) PrepareRunThen(ctx context.Context, runID string, total int, cfg *Config, cells []CellKey,
	then func(ctx context.Context, tx bun.Tx) error) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		hash := ""
		var config *string // NULL without a config
		if cfg != nil {
			b, err := json.Marshal(cfg)
			if err != nil {
				return fmt.Errorf("prepare run %s: %w", runID, err)
			}
			hash, config = cfg.DefinitionsHash, new(string(b))
		}
		up, err := tx.NewUpdate().Model((*runRow)(nil)).Set("total_tests = ?", total).
			Set("config = ?", config).Set("definitions_hash = ?", hash).
			Where("run_id = ? AND status = ?", runID, StatusRunning).Exec(ctx)
		if err != nil {
			return fmt.Errorf("prepare run %s: %w", runID, err)
		}
		if n, err := up.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("prepare run %s: %w", runID, ErrRunEnded)
		}
		rows := make([]*cellRow, len(cells))
		for i, c := range cells {
			rows[i] = &cellRow{RunID: runID, Domain: c.Domain, Level: c.Level, Position: i, Status: CellPending, Tests: c.Tests}
		}
		if len(rows) > 0 {
			if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return fmt.Errorf("create run cells: %w", err)
			}
		}
		if then != nil {
			return then(ctx, tx)
		}
		return nil
	})
}

// Unprepared reports whether a run was accepted but its tests were never
// prepared (PrepareRunThen never ran: the run was stopped, failed or
// interrupted first): it has no tests and stored no definitions. Such a
// run ran nothing.
func Unprepared(in Info) bool {
	return in.TotalTests == 0 && (in.Config == nil || in.Config.DefinitionsHash == "")
}
