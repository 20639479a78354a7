package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/uptrace/bun"
)

// Budget is where a run stands against its budget, as the store has it:
// what the workers of a queued run read to honour the budget themselves.
type Budget struct {
	// MaxCostUSD is the run's budget (Config.MaxCostUSD); 0: none.
	MaxCostUSD float64
	// SpentUSD is the run's recorded cost: every result stored, in every
	// session of the run (Info.CostUSD), 0 when none had a price.
	SpentUSD float64
	// Status is the run's status.
	Status string
}

// Budget reads a run's budget and recorded spend: one row, by key.
func (s *Store) Budget(ctx context.Context, runID string) (Budget, error) {
	var row struct {
		Status string         `bun:"status"`
		Cost   float64        `bun:"cost_usd"`
		Config sql.NullString `bun:"config"`
	}
	err := s.db.NewSelect().Table("runs").Column("status", "cost_usd", "config").
		Where("run_id = ?", runID).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return Budget{}, notFound(runID)
	}
	if err != nil {
		return Budget{}, fmt.Errorf("read the budget of run %q: %w", runID, err)
	}
	b := Budget{SpentUSD: row.Cost, Status: row.Status}
	if row.Config.Valid && row.Config.String != "" {
		var cfg struct {
			MaxCostUSD float64 `json:"max_cost_usd"`
		}
		if err := json.Unmarshal([]byte(row.Config.String), &cfg); err != nil {
			return Budget{}, fmt.Errorf("read the budget of run %q: %w", runID, err)
		}
		b.MaxCostUSD = cfg.MaxCostUSD
	}
	return b, nil
}

// SetMaxCost records a run's new budget in its config (Config.MaxCostUSD;
// 0 removes it), keeping the rest of the config as it is stored. A run
// without a config is left as it is.
func (s *Store) SetMaxCost(ctx context.Context, runID string, usd float64) error {
	if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
		return fmt.Errorf("set the budget of run %q: %v is not a budget", runID, usd)
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var config sql.NullString
		err := tx.NewSelect().Table("runs").Column("config").Where("run_id = ?", runID).Scan(ctx, &config)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(runID)
		}
		if err != nil {
			return fmt.Errorf("set the budget of run %q: %w", runID, err)
		}
		if !config.Valid || config.String == "" {
			return nil
		}
		// The config's other keys are kept byte for byte, whatever
		// version wrote them.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(config.String), &fields); err != nil || fields == nil {
			return fmt.Errorf("set the budget of run %q: its config does not decode: %v", runID, err)
		}
		if usd > 0 {
			v, err := json.Marshal(usd)
			if err != nil {
				return fmt.Errorf("set the budget of run %q: %w", runID, err)
			}
			fields["max_cost_usd"] = v
		} else {
			delete(fields, "max_cost_usd")
		}
		b, err := json.Marshal(fields)
		if err != nil {
			return fmt.Errorf("set the budget of run %q: %w", runID, err)
		}
		if _, err := tx.NewUpdate().Table("runs").Set("config = ?", string(b)).Where("run_id = ?", runID).Exec(ctx); err != nil {
			return fmt.Errorf("set the budget of run %q: %w", runID, err)
		}
		return nil
	})
}
