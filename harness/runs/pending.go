package runs

// Declarations of the store methods the engine is being moved onto. The
// store's implementation replaces this file.

import (
	"context"
	"errors"

	"github.com/gauntlet-eval/gauntlet/harness"
)

var errPending = errors.New("runs: not implemented yet")

// SaveResult stores one result alone, in its own transaction: the engine's
// fallback when a batch could not be stored, so that one bad row never
// takes the others with it.
func (s *Store) SaveResult(ctx context.Context, r Result) error { return errPending }

// SaveCells stores the states of cells, in one transaction.
func (s *Store) SaveCells(ctx context.Context, cells []CellUpdate) error { return errPending }

// SaveDefinitions stores a definitions snapshot, compressed, once per
// content, and returns its hash (hex SHA-256 of its canonical JSON): a
// thousand runs of the same suite store it once.
func (s *Store) SaveDefinitions(ctx context.Context, snap *harness.Snapshot) (string, error) {
	return "", errPending
}

// Definitions returns the definitions snapshot a run used; an error
// wrapping harness.ErrNotFound when the run is unknown or recorded none.
func (s *Store) Definitions(ctx context.Context, runID string) (*harness.Snapshot, error) {
	return nil, errPending
}

// ReopenRun prepares a finished run to be resumed: it deletes the results
// that ended in error, recounts the run's and its cells' counts from the
// results kept, and marks the run running again (completed_at and error
// cleared). It returns the reopened run's summary.
func (s *Store) ReopenRun(ctx context.Context, runID string) (Info, error) { return Info{}, errPending }
