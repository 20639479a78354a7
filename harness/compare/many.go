package compare

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// MatrixSource is what [Many] reads: a [Source] that also returns each
// run's stored cells. The run store is one.
type MatrixSource interface {
	Source
	Matrix(ctx context.Context, id string) (runs.Matrix, error)
}

var _ MatrixSource = (*runs.Store)(nil)

// ManyReport compares several runs with the first of them, the base: a
// model sweep, or a change measured against one reference run. Every run
// after the first is compared with the base exactly as [Load] compares two
// runs (same pairing, same statistics, same seed), so each of its figures
// is what "compare base that-run" says.
//
// Only runs are compared with the base, never with one another: with
// three runs, the report says how the second and the third differ from
// the first, not how the third differs from the second.
type ManyReport struct {
	// Base is the first run's id.
	Base string `json:"base"`
	// Runs are the runs in the order given, the base first.
	Runs []ManyRun `json:"runs"`
	// Cells holds, per domain and level, every cell any of the runs has,
	// with one entry per run in the order of Runs.
	Cells map[string]map[int][]RunCell `json:"cells"`
}

// ManyRun is one run of a [ManyReport] and, for a run after the first, its
// comparison with the base over every cell.
type ManyRun struct {
	RunID     string `json:"run_id"`     // The run's id.
	ModelName string `json:"model_name"` // The run's label.
	Model     string `json:"model"`      // The endpoint model the run used.
	Status    string `json:"status"`     // running, completed, stopped…
	// OverallScore is the run's stored overall score; nil when no test
	// was scored.
	OverallScore *float64 `json:"overall_score"`
	// Compared is true when the run was compared with the base: false for
	// the base itself, and for a run that shares no scored test with it
	// (the runs covered other domains, or every test of one of them ended
	// in error). When false, Flipped is empty and Summary zero.
	Compared bool `json:"compared"`
	// Flipped lists the tests whose pass/fail outcome differs from the
	// base, ordered as [Report.Flipped].
	Flipped []Flip `json:"flipped"`
	// Summary counts the tests that improved, regressed or stayed the same
	// against the base, and the cells that changed significantly.
	Summary Summary `json:"summary"`
	// Figures are the run's score interval, cost, cost per 1,000 tests,
	// median latency and tokens, side by side with the other runs'.
	Figures
}

// Regressed reports whether the run is significantly worse than the base
// in at least one cell.
func (r ManyRun) Regressed() bool { return r.Summary.SignificantRegressions > 0 }

// RunCell is one run's view of a cell: its stored score with the score's
// uncertainty, and, for a run after the first, the paired comparison with
// the base's cell.
type RunCell struct {
	// Status is the cell's status in the run (passed, failed, partial,
	// error, skipped…); "" when the run has no such cell.
	Status string `json:"status"`
	// Score, StdErr and CI95 are the run's figures for the cell, over all
	// its scored tests (see package stats): those the run stored when the
	// cell settled, else, for a cell not settled yet or a run stored
	// before intervals were kept, computed from its results in the same
	// way. nil when the cell has no scored test.
	Score  *float64        `json:"score"`
	StdErr *float64        `json:"stderr"`
	CI95   *stats.Interval `json:"ci95"`
	// VsBase is the paired comparison with the base's cell, over the
	// tests both runs scored (its BaseScore and HeadScore are over those
	// tests only, and may differ from Score when the runs' tests differ).
	// nil for the base itself and when the two runs share no scored test
	// in the cell.
	VsBase *Cell `json:"vs_base"`
}

// Regressed reports whether any run is significantly worse than the base
// in at least one cell.
func (r *ManyReport) Regressed() bool { return slices.ContainsFunc(r.Runs, ManyRun.Regressed) }

// Domains returns the domains of r's cells, sorted.
func (r *ManyReport) Domains() []string { return slices.Sorted(maps.Keys(r.Cells)) }

// Levels returns the levels of domain's cells, ascending.
func (r *ManyReport) Levels(domain string) []int { return slices.Sorted(maps.Keys(r.Cells[domain])) }

// Many reads runs base and heads from src and compares every head with
// base, as [Load] does for two runs. With no head it reports the base's
// cells alone. An unknown run is an error wrapping [harness.ErrNotFound].
// A head that shares no scored test with the base is not an error: it is
// reported with Compared false (the base being a run whose every test
// ended in error, none is compared). The same run may appear more than
// once.
func Many(ctx context.Context, src MatrixSource, base string, heads ...string) (*ManyReport, error) {
	ids := append([]string{base}, heads...)
	rep := &ManyReport{Base: base, Runs: make([]ManyRun, len(ids)), Cells: map[string]map[int][]RunCell{}}
	matrices := make([]runs.Matrix, len(ids))
	results := make([][]runs.Result, len(ids))
	infos := make([]runs.Info, len(ids))
	for i, id := range ids {
		info, err := src.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		infos[i] = info
		rep.Runs[i] = ManyRun{RunID: id, ModelName: info.ModelName, Model: info.Model, Status: info.Status,
			OverallScore: info.OverallScore, Flipped: []Flip{}}
	}
	for i, id := range ids {
		var err error
		if matrices[i], err = src.Matrix(ctx, id); err != nil {
			return nil, err
		}
		if results[i], err = src.Results(ctx, id); err != nil {
			return nil, err
		}
		if rep.Runs[i].Figures, err = RunFigures(infos[i], sliceEach(results[i])); err != nil {
			return nil, err
		}
	}
	cell := func(domain string, level int) []RunCell {
		if rep.Cells[domain] == nil {
			rep.Cells[domain] = map[int][]RunCell{}
		}
		if rep.Cells[domain][level] == nil {
			rep.Cells[domain][level] = make([]RunCell, len(ids))
		}
		return rep.Cells[domain][level]
	}
	for i := range ids {
		for domain, levels := range matrices[i] {
			for key, c := range levels {
				level, err := strconv.Atoi(key)
				if err != nil {
					continue // not a level: no run store writes one
				}
				cell(domain, level)[i] = RunCell{Status: c.Status, Score: c.Score, StdErr: c.StdErr, CI95: c.CI95}
			}
		}
		measure(results[i], func(domain string, level int) *RunCell { return &cell(domain, level)[i] })
	}
	for i, head := range heads {
		pair, err := Runs(base, head, results[0], results[i+1])
		var nothing *NothingSharedError
		if errors.As(err, &nothing) {
			continue
		} else if err != nil {
			return nil, err
		}
		run := &rep.Runs[i+1]
		run.Compared, run.Flipped, run.Summary = true, pair.Flipped, pair.Summary
		for domain, levels := range pair.Cells {
			for level, c := range levels {
				cell(domain, level)[i+1].VsBase = &c
			}
		}
	}
	return rep, nil
}

// measure fills in the score, standard error and interval of the cells of
// one run that the store has none for (a cell not yet settled, a run
// stored before intervals were kept), from the run's results, the way the
// engine computes them when a cell settles. at returns a cell's entry.
func measure(results []runs.Result, at func(domain string, level int) *RunCell) {
	type key struct {
		domain string
		level  int
	}
	samples := map[key][]stats.Sample{}
	for _, r := range results {
		k := key{r.Domain, r.Level}
		samples[k] = append(samples[k], sample(r))
	}
	for k, ss := range samples {
		c := at(k.domain, k.level)
		if c.Score != nil && c.StdErr != nil && c.CI95 != nil {
			continue
		}
		sum := stats.Cell(ss, stats.Options{Seed: cellSeed})
		if sum.Tests == 0 {
			continue
		}
		c.Score, c.StdErr, c.CI95 = &sum.Score, &sum.StdErr, &sum.CI95
	}
}

// cellSeed seeds the bootstrap of a cell's interval: the engine's seed,
// so that a cell's interval depends on its results only.
const cellSeed = 1
