// Package runstest checks what the runs store keeps, from outside it, for
// the tests of the packages that write runs (the store, the engine, the
// queue's workers).
package runstest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// Counts are a cell's done, passed, failed and errors.
type Counts struct{ Done, Passed, Failed, Errors int }

// CheckCounters fails t unless run runID of db is counted and its cells'
// counters are exactly its results' counts by cell and status, and their
// score sums its scored results' (up to float rounding), read with
// plain SQL (SELECT domain, level, status, COUNT(*) … GROUP BY): every
// result in a cell of the run, every status passed, failed or error.
func CheckCounters(t testing.TB, db *store.DB, runID string) {
	t.Helper()
	if err := Counters(context.Background(), db, runID); err != nil {
		t.Error(err)
	}
}

// Counters is CheckCounters returning what it found wrong as an error.
func Counters(ctx context.Context, db *store.DB, runID string) error {
	b := sqldb.Bun(db)
	var counted bool
	if err := b.QueryRowContext(ctx, `SELECT "counted" FROM "runs" WHERE "run_id" = ?`, runID).Scan(&counted); err != nil {
		return fmt.Errorf("run %s: %w", runID, err)
	}
	if !counted {
		return fmt.Errorf("run %s is not counted", runID)
	}
	type key struct {
		domain string
		level  int
	}
	stored := map[key]Counts{}
	storedSum := map[key]float64{}
	rows, err := b.QueryContext(ctx, `SELECT "domain", "level", "done", "passed", "failed", "errors", "score_sum" FROM "run_cells" WHERE "run_id" = ?`, runID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var k key
		var c Counts
		var sum float64
		if err := rows.Scan(&k.domain, &k.level, &c.Done, &c.Passed, &c.Failed, &c.Errors, &sum); err != nil {
			rows.Close()
			return err
		}
		stored[k], storedSum[k] = c, sum
	}
	if err := rows.Close(); err != nil {
		return err
	}
	fromRows := map[key]Counts{}
	sumFromRows := map[key]float64{}
	rows, err = b.QueryContext(ctx, `SELECT "domain", "level", "status", COUNT(*), COALESCE(SUM("score"), 0) FROM "run_results" WHERE "run_id" = ?
		GROUP BY "domain", "level", "status"`, runID)
	if err != nil {
		return err
	}
	var bad []string
	for rows.Next() {
		var k key
		var status string
		var n int
		var sum float64
		if err := rows.Scan(&k.domain, &k.level, &status, &n, &sum); err != nil {
			rows.Close()
			return err
		}
		c := fromRows[k]
		c.Done += n
		switch status {
		case "passed":
			c.Passed += n
			sumFromRows[k] += sum
		case "failed":
			c.Failed += n
			sumFromRows[k] += sum
		case "error":
			c.Errors += n
		default:
			bad = append(bad, fmt.Sprintf("%d results of %s/%d have status %q", n, k.domain, k.level, status))
		}
		fromRows[k] = c
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for k, want := range fromRows {
		if _, ok := stored[k]; !ok {
			bad = append(bad, fmt.Sprintf("%d results in %s/%d, a cell the run does not have", want.Done, k.domain, k.level))
		}
	}
	for k, got := range stored {
		if want := fromRows[k]; got != want {
			bad = append(bad, fmt.Sprintf("cell %s/%d counts %+v, its results %+v", k.domain, k.level, got, want))
		}
		// The sums are of the same scores in another order: equal up to
		// the rounding of float64 additions.
		if got, want := storedSum[k], sumFromRows[k]; math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			bad = append(bad, fmt.Sprintf("cell %s/%d sums its scores to %v, its results to %v", k.domain, k.level, got, want))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("run %s: the cells' counters are not the results' counts: %v", runID, bad)
	}
	return nil
}
