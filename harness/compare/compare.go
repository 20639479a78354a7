// Package compare says what changed between two stored runs: for each
// domain × level cell both runs answered, the paired comparison of their
// scores (delta, 95 % interval, p-value, significance), the tests whose
// pass/fail outcome flipped, and a summary. The HTTP API and the gauntlet
// compare command both build their answer with [Load], so the two always
// agree. [Many] compares several runs with the first of them (a model
// sweep), each pair as Load would.
//
// Tests are paired by test id (and repeat) within a cell: a test counts
// only when both runs have it in the same domain and level. A result that
// ended in error says nothing about the model, so a pair with an error on
// either side is left out. The statistics are those of
// [github.com/gauntlet-eval/gauntlet/harness/stats.Compare], seeded from
// the two run ids: comparing the same two runs twice gives the same
// answer, bit for bit.
package compare

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/stats"
)

// Source is what Load reads: the run store, or a fake in tests.
type Source interface {
	Run(ctx context.Context, id string) (runs.Info, error)
	Results(ctx context.Context, id string) ([]runs.Result, error)
}

var _ Source = (*runs.Store)(nil)

// Cell is the comparison of one domain × level cell.
type Cell struct {
	// BaseScore and HeadScore are the mean scores of the paired tests in
	// each run; Delta is HeadScore − BaseScore.
	BaseScore float64 `json:"base_score"`
	HeadScore float64 `json:"head_score"`
	Delta     float64 `json:"delta"`
	// CI95 is the 95 % interval of the change, [low, high].
	CI95 stats.Interval `json:"ci95"`
	// PValue is the two-sided p-value of "both runs score the same".
	PValue float64 `json:"p_value"`
	// Significant is PValue below the significance level (0.05).
	Significant bool `json:"significant"`
	// Tests is the number of paired tests.
	Tests int `json:"tests"`
	// Improved, Regressed and Unchanged count the paired tests whose score
	// went up, went down or stayed the same.
	Improved  int `json:"improved"`
	Regressed int `json:"regressed"`
	Unchanged int `json:"unchanged"`
	// Retrieval is how an agent's retrieval changed in the cell, over the
	// paired tests that measured it in both runs; nil (absent) when none
	// did.
	Retrieval *RetrievalChange `json:"retrieval,omitempty"`
}

// RetrievalChange compares the retrieval of two runs that target agents
// (details.retrieval, see runs.Retrieval) over the cell's paired tests
// that measured it in both: scored in both, by test id and repeat. The
// same suite against two versions of a knowledge base thus says which
// retrieves the expected files better.
type RetrievalChange struct {
	// BaseRecallAtK and HeadRecallAtK are the mean recall@k of the tests
	// in each run; Delta is HeadRecallAtK − BaseRecallAtK.
	BaseRecallAtK float64 `json:"base_recall_at_k"`
	HeadRecallAtK float64 `json:"head_recall_at_k"`
	Delta         float64 `json:"delta"`
	// BaseHitRate and HeadHitRate are the shares of those tests that
	// retrieved at least one expected file.
	BaseHitRate float64 `json:"base_hit_rate"`
	HeadHitRate float64 `json:"head_hit_rate"`
	// Tests is the number of tests compared.
	Tests int `json:"tests"`
}

// SignificantRegression reports whether the cell got significantly worse.
func (c Cell) SignificantRegression() bool { return c.Significant && c.Delta < 0 }

// SignificantImprovement reports whether the cell got significantly better.
func (c Cell) SignificantImprovement() bool { return c.Significant && c.Delta > 0 }

// Flip is a test whose pass/fail outcome changed between the runs.
type Flip struct {
	TestID     string `json:"test_id"`
	Repeat     int    `json:"repeat"` // Which asking of the test, from 0: runs with repeats pair the same asking.
	Domain     string `json:"domain"`
	Level      int    `json:"level"`
	BaseStatus string `json:"base_status"` // passed or failed
	HeadStatus string `json:"head_status"` // passed or failed
}

// Summary counts over every compared cell.
type Summary struct {
	// Improved, Regressed and Unchanged count paired tests, over all cells.
	Improved  int `json:"improved"`
	Regressed int `json:"regressed"`
	Unchanged int `json:"unchanged"`
	// SignificantRegressions and SignificantImprovements count cells.
	SignificantRegressions  int `json:"significant_regressions"`
	SignificantImprovements int `json:"significant_improvements"`
}

// Report is the comparison of a head run with a base run.
type Report struct {
	Base string `json:"base"` // The base run's id.
	Head string `json:"head"` // The head run's id.
	// Cells holds, per domain and level, every cell with at least one
	// paired test. Cells only one run has, or whose tests all ended in
	// error, are absent.
	Cells map[string]map[int]Cell `json:"cells"`
	// Flipped lists the flipped tests, ordered by domain, level and the
	// head run's order, a test's repeats together in their order.
	Flipped []Flip  `json:"flipped"`
	Summary Summary `json:"summary"`
}

// Regressed reports whether any cell regressed significantly.
func (r *Report) Regressed() bool { return r.Summary.SignificantRegressions > 0 }

// Domains returns the domains of r's cells, sorted.
func (r *Report) Domains() []string { return slices.Sorted(maps.Keys(r.Cells)) }

// Levels returns the levels of domain's cells, ascending.
func (r *Report) Levels(domain string) []int { return slices.Sorted(maps.Keys(r.Cells[domain])) }

// Load reads runs base and head from src and compares them. An unknown
// run is an error wrapping [harness.ErrNotFound]; two runs that share no
// scored test a [*NothingSharedError]. A run still running can
// be compared: the comparison covers what it finished so far.
func Load(ctx context.Context, src Source, base, head string) (*Report, error) {
	for _, id := range []string{base, head} {
		if _, err := src.Run(ctx, id); err != nil {
			return nil, err
		}
	}
	b, err := src.Results(ctx, base)
	if err != nil {
		return nil, err
	}
	h, err := src.Results(ctx, head)
	if err != nil {
		return nil, err
	}
	return Runs(base, head, b, h)
}

// Runs compares the results of two runs, base and head being their ids.
// It fails with a [*NothingSharedError] when the runs share no scored
// test.
func Runs(base, head string, baseResults, headResults []runs.Result) (*Report, error) {
	type key struct {
		domain string
		level  int
	}
	group := func(rs []runs.Result) (map[key][]stats.Sample, []key) {
		m := map[key][]stats.Sample{}
		var order []key
		for _, r := range rs {
			k := key{r.Domain, r.Level}
			if _, ok := m[k]; !ok {
				order = append(order, k)
			}
			m[k] = append(m[k], sample(r))
		}
		return m, order
	}
	bs, _ := group(baseResults)
	hs, order := group(headResults)
	type sampleKey struct {
		key
		test   string
		repeat int
	}
	// The retrieval measured by each scored base result, for pairing.
	baseRet := map[sampleKey]*runs.Retrieval{}
	for _, r := range baseResults {
		if m, ok := runs.RetrievalOf(r.Details); ok && r.Status != runs.TestError {
			baseRet[sampleKey{key{r.Domain, r.Level}, r.TestID, r.Repeat}] = m
		}
	}
	retOf := map[key]*RetrievalChange{}
	for _, r := range headResults {
		hm, ok := runs.RetrievalOf(r.Details)
		if !ok || r.Status == runs.TestError {
			continue
		}
		k := key{r.Domain, r.Level}
		bm, ok := baseRet[sampleKey{k, r.TestID, r.Repeat}]
		if !ok {
			continue
		}
		c := retOf[k]
		if c == nil {
			c = &RetrievalChange{}
			retOf[k] = c
		}
		c.Tests++
		c.BaseRecallAtK += bm.RecallAtK
		c.HeadRecallAtK += hm.RecallAtK
		if bm.Hit {
			c.BaseHitRate++
		}
		if hm.Hit {
			c.HeadHitRate++
		}
	}
	for _, c := range retOf {
		n := float64(c.Tests)
		c.BaseRecallAtK, c.HeadRecallAtK = c.BaseRecallAtK/n, c.HeadRecallAtK/n
		c.BaseHitRate, c.HeadHitRate = c.BaseHitRate/n, c.HeadHitRate/n
		c.Delta = c.HeadRecallAtK - c.BaseRecallAtK
	}
	slices.SortFunc(order, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.domain, b.domain), cmp.Compare(a.level, b.level))
	})
	opt := stats.Options{Seed: Seed(base, head)}
	rep := &Report{Base: base, Head: head, Cells: map[string]map[int]Cell{}, Flipped: []Flip{}}
	for _, k := range order {
		pairs := stats.Pairs(bs[k], hs[k])
		if len(pairs) == 0 {
			continue
		}
		c := stats.Compare(pairs, opt)
		cell := Cell{
			BaseScore: c.BaseScore, HeadScore: c.HeadScore, Delta: c.Delta, CI95: c.CI95,
			PValue: c.PValue, Significant: c.Significant, Tests: c.Tests,
			Improved: c.Improved, Regressed: c.Regressed, Unchanged: c.Unchanged, Retrieval: retOf[k],
		}
		if rep.Cells[k.domain] == nil {
			rep.Cells[k.domain] = map[int]Cell{}
		}
		rep.Cells[k.domain][k.level] = cell
		// A test's askings side by side, tests in the head run's order.
		first := map[string]int{}
		for i, f := range c.Flipped {
			if _, ok := first[f.TestID]; !ok {
				first[f.TestID] = i
			}
		}
		slices.SortStableFunc(c.Flipped, func(a, b stats.Flip) int {
			return cmp.Or(cmp.Compare(first[a.TestID], first[b.TestID]), cmp.Compare(a.Repeat, b.Repeat))
		})
		for _, f := range c.Flipped {
			rep.Flipped = append(rep.Flipped, Flip{TestID: f.TestID, Repeat: f.Repeat, Domain: k.domain, Level: k.level,
				BaseStatus: status(f.BasePassed), HeadStatus: status(f.HeadPassed)})
		}
		s := &rep.Summary
		s.Improved += c.Improved
		s.Regressed += c.Regressed
		s.Unchanged += c.Unchanged
		if cell.SignificantRegression() {
			s.SignificantRegressions++
		}
		if cell.SignificantImprovement() {
			s.SignificantImprovements++
		}
	}
	if len(rep.Cells) == 0 {
		return nil, &NothingSharedError{Base: base, Head: head}
	}
	return rep, nil
}

// NothingSharedError is the error of comparing two runs that share no
// scored test. It wraps [harness.ErrInvalid].
type NothingSharedError struct {
	Base, Head string // The run ids.
}

func (e *NothingSharedError) Error() string {
	return fmt.Sprintf("runs %s and %s share no test: nothing to compare", e.Base, e.Head)
}

// Unwrap returns [harness.ErrInvalid].
func (e *NothingSharedError) Unwrap() error { return harness.ErrInvalid }

// Seed is the seed of the comparison of base and head: a hash of the two
// ids, so that the same comparison always draws the same random numbers.
func Seed(base, head string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(base))
	h.Write([]byte{0})
	h.Write([]byte(head))
	return h.Sum64()
}

// sample is the statistics' view of a result.
func sample(r runs.Result) stats.Sample {
	return stats.Sample{TestID: r.TestID, Repeat: r.Repeat, Score: r.Score,
		Passed: r.Status == runs.TestPassed, Error: r.Status == runs.TestError}
}

func status(passed bool) string {
	if passed {
		return runs.TestPassed
	}
	return runs.TestFailed
}
