package runs

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// Latency is how fast a cell's model answered: the 50th and 95th
// percentiles of its results' duration_ms and the median of their
// ttft_ms, each over the cell's answered results (passed and failed:
// an error says nothing about the model, as it says nothing about its
// score). Percentiles are nearest-rank: the value at rank ⌈p·n⌉ of the n
// values in ascending order, so each is one of the measured values. A
// figure is nil when it is over no value: TTFTP50MS is nil in runs that
// did not stream.
type Latency struct {
	P50MS     *int64
	P95MS     *int64
	TTFTP50MS *int64
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 1) of
// sorted, ascending values: nil when there is none.
func Percentile(sorted []int64, p float64) *int64 {
	if len(sorted) == 0 {
		return nil
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	v := sorted[i]
	return &v
}

// LatencyOf measures a cell's latency from the duration_ms and ttft_ms
// (those not nil) of its answered results. It sorts the slices it is
// given.
func LatencyOf(durations, ttfts []int64) Latency {
	slices.Sort(durations)
	slices.Sort(ttfts)
	return Latency{P50MS: Percentile(durations, 0.5), P95MS: Percentile(durations, 0.95), TTFTP50MS: Percentile(ttfts, 0.5)}
}

// SetSpeed sets a result's TTFTMS and OutputTokensPerS from its calls;
// streamed says the run asked for streams.
//
// TTFTMS is the time to the first token of the test's answer: that of
// the successful attempt of the test's first request (the call of
// purpose test), nil when it was not streamed (or answered from the
// response cache, or never succeeded).
//
// OutputTokensPerS is the completion tokens of the successful attempts
// of the test's requests (purposes test and tool_round; a second pass
// and a judge are the evaluator's) divided by their generation time in
// seconds: for a streamed attempt its duration less its time to first
// token, for another (or a streamed one whose whole answer came with its
// first token, in the same millisecond) its whole duration. Nil when they
// generated no token or took no measurable time.
func SetSpeed(r *Result, streamed bool) {
	r.TTFTMS, r.OutputTokensPerS = nil, nil
	var tokens, genMS int64
	for _, c := range r.Calls {
		if c.Status != harness.AttemptOK {
			continue
		}
		switch c.Purpose {
		case CallTest:
			if r.TTFTMS == nil && streamed {
				t := c.TTFTMS
				r.TTFTMS = &t
			}
		case CallToolRound:
		default:
			continue
		}
		tokens += int64(c.CompletionTokens)
		gen := c.DurationMS - c.TTFTMS
		if gen <= 0 {
			gen = c.DurationMS // the whole answer came with its first token
		}
		genMS += gen
	}
	if tokens > 0 && genMS > 0 {
		tps := float64(tokens) * 1000 / float64(genMS)
		r.OutputTokensPerS = &tps
	}
}

// latencyColumns are a cell's latency figures (Latency), stored when the
// cell settles or is left partial; NULL while it runs.
type latencyColumns struct {
	LatencyP50MS *int64 `bun:"latency_p50_ms"`
	LatencyP95MS *int64 `bun:"latency_p95_ms"`
	TTFTP50MS    *int64 `bun:"ttft_p50_ms"`
}

// migrateLatency adds the results' time to first token and output speed
// and the cells' and runs' latency percentiles. Results stored before
// have neither (null). Their cells that were settled or left partial, and
// the runs holding such cells, get their duration percentiles from their
// answered results, read once here a run at a time, and no time to first
// token (null): the results kept none.
func migrateLatency(ctx context.Context, tx bun.Tx, bigint string) error {
	if err := sqldb.ExecAll(ctx, tx,
		`ALTER TABLE "run_results" ADD COLUMN "ttft_ms" `+bigint,
		`ALTER TABLE "run_results" ADD COLUMN "output_tokens_per_s" DOUBLE PRECISION`,
		`ALTER TABLE "run_cells" ADD COLUMN "latency_p50_ms" `+bigint,
		`ALTER TABLE "run_cells" ADD COLUMN "latency_p95_ms" `+bigint,
		`ALTER TABLE "run_cells" ADD COLUMN "ttft_p50_ms" `+bigint,
		`ALTER TABLE "runs" ADD COLUMN "latency_p50_ms" `+bigint,
		`ALTER TABLE "runs" ADD COLUMN "latency_p95_ms" `+bigint,
		`ALTER TABLE "runs" ADD COLUMN "ttft_p50_ms" `+bigint,
	); err != nil {
		return err
	}
	var cells []struct {
		RunID  string `bun:"run_id"`
		Domain string `bun:"domain"`
		Level  int    `bun:"level"`
	}
	if err := tx.NewSelect().Table("run_cells").Column("run_id", "domain", "level").
		Where("status IN (?)", bun.List([]string{CellPassed, CellFailed, CellError, CellPartial})).
		Order("run_id", "domain", "level").Scan(ctx, &cells); err != nil {
		return fmt.Errorf("read settled cells: %w", err)
	}
	type key struct {
		domain string
		level  int
	}
	for i := 0; i < len(cells); {
		run := cells[i].RunID
		var rows []struct {
			Domain     string `bun:"domain"`
			Level      int    `bun:"level"`
			DurationMS int64  `bun:"duration_ms"`
		}
		if err := tx.NewSelect().Table("run_results").Column("domain", "level", "duration_ms").
			Where("run_id = ? AND status IN (?)", run, bun.List([]string{TestPassed, TestFailed})).
			Scan(ctx, &rows); err != nil {
			return fmt.Errorf("read durations of run %s: %w", run, err)
		}
		by := map[key][]int64{}
		all := make([]int64, 0, len(rows))
		for _, r := range rows {
			k := key{r.Domain, r.Level}
			by[k] = append(by[k], r.DurationMS)
			all = append(all, r.DurationMS)
		}
		if l := LatencyOf(all, nil); l.P50MS != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE "runs" SET "latency_p50_ms" = ?, "latency_p95_ms" = ? WHERE "run_id" = ?`,
				*l.P50MS, *l.P95MS, run); err != nil {
				return fmt.Errorf("measure run %s: %w", run, err)
			}
		}
		for ; i < len(cells) && cells[i].RunID == run; i++ {
			c := cells[i]
			l := LatencyOf(by[key{c.Domain, c.Level}], nil)
			if l.P50MS == nil {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE "run_cells" SET "latency_p50_ms" = ?, "latency_p95_ms" = ?
				WHERE "run_id" = ? AND "domain" = ? AND "level" = ?`, *l.P50MS, *l.P95MS, run, c.Domain, c.Level); err != nil {
				return fmt.Errorf("measure cell %s/%d of run %s: %w", c.Domain, c.Level, run, err)
			}
		}
	}
	return nil
}

// runLatency measures a run's latency (Latency) over all its answered
// results, once, when the run ends: each figure is the row at its rank
// in the results ordered by the figure, read by the database without
// bringing the results here.
func runLatency(ctx context.Context, db bun.IDB, runID string) (Latency, error) {
	var out Latency
	answeredOnly := func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("run_id = ? AND status IN (?)", runID, bun.List([]string{TestPassed, TestFailed}))
	}
	var n, streamed int
	if err := answeredOnly(db.NewSelect().Model((*resultRow)(nil))).ColumnExpr("COUNT(*)").ColumnExpr("COUNT(ttft_ms)").
		Scan(ctx, &n, &streamed); err != nil {
		return out, fmt.Errorf("measure run %s: %w", runID, err)
	}
	at := func(col string, count int, p float64) (*int64, error) {
		if count == 0 {
			return nil, nil
		}
		rank := max(1, int(math.Ceil(p*float64(count))))
		var v int64
		q := answeredOnly(db.NewSelect().Model((*resultRow)(nil))).Column(col).Where("? IS NOT NULL", bun.Ident(col)).
			Order(col).Offset(int64(rank - 1)).Limit(1)
		if err := q.Scan(ctx, &v); err != nil {
			return nil, fmt.Errorf("measure run %s: %w", runID, err)
		}
		return &v, nil
	}
	var err error
	if out.P50MS, err = at("duration_ms", n, 0.5); err != nil {
		return out, err
	}
	if out.P95MS, err = at("duration_ms", n, 0.95); err != nil {
		return out, err
	}
	out.TTFTP50MS, err = at("ttft_ms", streamed, 0.5)
	return out, err
}
