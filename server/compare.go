package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness/compare"
)

// compareHandler serves compare-runs from the run store.
type compareHandler struct {
	problems
	runs compare.Source
}

// apiCompareCell is the comparison of one domain × level cell.
type apiCompareCell struct {
	BaseScore   float64    `json:"base_score" doc:"Mean score of the paired tests in the base run."`
	HeadScore   float64    `json:"head_score" doc:"Mean score of the paired tests in the head run."`
	Delta       float64    `json:"delta" doc:"head_score − base_score."`
	CI95        [2]float64 `json:"ci95" doc:"95 % interval of the change, [low, high]; it contains delta."`
	PValue      float64    `json:"p_value" doc:"Two-sided p-value of \"both runs score the same\" (paired sign-flip test; exact McNemar for pass/fail scores)."`
	Significant bool       `json:"significant" doc:"p_value below 0.05."`
	Tests       int        `json:"tests" doc:"Tests paired: present in both runs in this domain and level, in error in neither."`
	// Retrieval: absent when no paired test measured retrieval in both
	// runs (schemaDocs describes it).
	Retrieval *apiCompareRetrieval `json:"retrieval,omitempty"`
}

// apiCompareRetrieval is how an agent's retrieval changed in a cell.
type apiCompareRetrieval struct {
	BaseRecallAtK float64 `json:"base_recall_at_k" doc:"Mean recall@k of those tests in the base run."`
	HeadRecallAtK float64 `json:"head_recall_at_k" doc:"Mean recall@k of those tests in the head run."`
	Delta         float64 `json:"delta" doc:"head_recall_at_k − base_recall_at_k."`
	BaseHitRate   float64 `json:"base_hit_rate" doc:"Share of those tests that retrieved an expected file in the base run."`
	HeadHitRate   float64 `json:"head_hit_rate" doc:"Share of those tests that retrieved an expected file in the head run."`
	Tests         int     `json:"tests" doc:"Paired tests (by test id and repeat) that measured retrieval in both runs, scored in both."`
}

// apiFlip is a test whose pass/fail outcome changed.
type apiFlip struct {
	TestID     string `json:"test_id"`
	Repeat     int    `json:"repeat" minimum:"0" doc:"Which asking of the test, from 0: runs with repeats pair the same asking of a test."`
	Domain     string `json:"domain"`
	Level      int    `json:"level"`
	BaseStatus string `json:"base_status" enum:"passed,failed"`
	HeadStatus string `json:"head_status" enum:"passed,failed"`
}

// apiCompareSummary counts over every compared cell.
type apiCompareSummary struct {
	Improved                int `json:"improved" doc:"Paired tests whose score went up, over all cells."`
	Regressed               int `json:"regressed" doc:"Paired tests whose score went down, over all cells."`
	Unchanged               int `json:"unchanged" doc:"Paired tests whose score stayed the same, over all cells."`
	SignificantRegressions  int `json:"significant_regressions" doc:"Cells whose score went down significantly."`
	SignificantImprovements int `json:"significant_improvements" doc:"Cells whose score went up significantly."`
}

// apiComparison is the answer of compare-runs.
type apiComparison struct {
	Base    string                               `json:"base" doc:"The base run's id."`
	Head    string                               `json:"head" doc:"The head run's id."`
	Cells   map[string]map[string]apiCompareCell `json:"cells" doc:"Domain id → level (a string of digits) → comparison, for every cell with at least one paired test."`
	Flipped []apiFlip                            `json:"flipped" doc:"Tests that passed in one run and failed in the other, ordered by domain, level and the head run's order."`
	Summary apiCompareSummary                    `json:"summary"`
}

func toAPIComparison(r *compare.Report) apiComparison {
	out := apiComparison{Base: r.Base, Head: r.Head, Cells: make(map[string]map[string]apiCompareCell, len(r.Cells)),
		Flipped: make([]apiFlip, len(r.Flipped)), Summary: apiCompareSummary(r.Summary)}
	for d, levels := range r.Cells {
		m := make(map[string]apiCompareCell, len(levels))
		for l, c := range levels {
			m[strconv.Itoa(l)] = apiCompareCell{BaseScore: c.BaseScore, HeadScore: c.HeadScore, Delta: c.Delta,
				CI95: [2]float64{c.CI95.Low, c.CI95.High}, PValue: c.PValue, Significant: c.Significant, Tests: c.Tests}
			if r := c.Retrieval; r != nil {
				cell := m[strconv.Itoa(l)]
				cell.Retrieval = (*apiCompareRetrieval)(r)
				m[strconv.Itoa(l)] = cell
			}
		}
		out.Cells[d] = m
	}
	for i, f := range r.Flipped {
		out.Flipped[i] = apiFlip(f)
	}
	return out
}

type compareInput struct {
	Base string `query:"base" required:"true" minLength:"1" doc:"The run compared against (before)."`
	Head string `query:"head" required:"true" minLength:"1" doc:"The run compared (after)."`
}

type compareOutput struct {
	Body apiComparison
}

// registerCompare registers compare-runs.
func registerCompare(api huma.API, store compare.Source, log *slog.Logger) {
	h := &compareHandler{problems{log}, store}
	register(api, huma.Operation{
		OperationID: "compare-runs", Method: http.MethodGet, Path: "/api/compare",
		Summary: "Compare two runs, test by test", Tags: []string{tagResults},
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
		Description: "Pairs the tests both runs answered (same test id, domain and level; a result in error on either side is left out) " +
			"and, per domain and level, says how the score changed: delta, its 95 % interval, the p-value and whether the change is significant. " +
			"Also lists the tests whose pass/fail outcome flipped. The answer is deterministic: the same two runs always give the same figures. " +
			"A run still running can be compared; the comparison then covers the tests it finished so far (partial). " +
			"404 for an unknown run; 422 when base or head is missing, or when the runs share no scored test.",
	}, h.compare)
}

func (h *compareHandler) compare(ctx context.Context, in *compareInput) (*compareOutput, error) {
	rep, err := compare.Load(ctx, h.runs, in.Base, in.Head)
	if err != nil {
		return nil, h.problem(ctx, err)
	}
	return &compareOutput{Body: toAPIComparison(rep)}, nil
}
