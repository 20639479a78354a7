package runs

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// RetrievalK is the k of recall@k: how many of the best chunks an agent's
// retrieval gave the model are looked at for a test's expected sources.
// When retrieval gave fewer chunks, k is the number it gave.
const RetrievalK = 5

// Retrieval is a result's details.retrieval: how well an agent's
// knowledge-base retrieval found the files a test lists in
// expected.sources. Only results of runs that target an agent, of tests
// that list expected sources, carry it. It says nothing about the answer:
// the result's score and status are the evaluator's alone.
type Retrieval struct {
	// K is the number of chunks looked at: RetrievalK, or fewer when
	// retrieval gave fewer.
	K int `json:"k"`
	// Expected are the test's expected.sources, file names.
	Expected []string `json:"expected"`
	// Retrieved are the distinct files of the best K chunks, in rank
	// order. A chunk that matched nothing (score 0, given to the model
	// only because the whole knowledge base fits its budget) is not
	// counted as retrieved.
	Retrieved []string `json:"retrieved"`
	// RecallAtK is the share of Expected found in Retrieved, from 0 to 1.
	RecallAtK float64 `json:"recall_at_k"`
	// Hit is true when at least one expected file was retrieved.
	Hit bool `json:"hit"`
	// Mode is how the chunks were ranked, "bm25" or "hybrid"; "" when the
	// knowledge base was empty.
	Mode string `json:"mode"`
	// Fallback says why retrieval meant to be hybrid was BM25 only; absent
	// when it was not.
	Fallback string `json:"fallback,omitempty"`
}

// MeasureRetrieval measures what an agent's retrieval gave (r, nil when
// nothing was retrieved) against the files a test expects: see
// Retrieval. It returns nil when expected is empty: there is nothing to
// measure.
func MeasureRetrieval(expected []string, r *harness.Retrieval) *Retrieval {
	want := distinct(expected)
	if len(want) == 0 {
		return nil
	}
	out := &Retrieval{Expected: want, Retrieved: []string{}}
	var sources []harness.Source
	if r != nil {
		out.Mode, out.Fallback, sources = r.Mode, r.Fallback, r.Sources
	}
	out.K = min(RetrievalK, len(sources))
	for _, s := range sources[:out.K] {
		if s.Score > 0 && !slices.Contains(out.Retrieved, s.File) {
			out.Retrieved = append(out.Retrieved, s.File)
		}
	}
	return out.score()
}

// Remeasure is the retrieval figures of r against other expected files,
// from the files r retrieved: what a rescore records when the test's
// expected.sources changed. It returns nil when expected is empty.
func (r *Retrieval) Remeasure(expected []string) *Retrieval {
	want := distinct(expected)
	if len(want) == 0 {
		return nil
	}
	out := *r
	out.Expected = want
	out.Retrieved = slices.Clone(r.Retrieved)
	if out.Retrieved == nil {
		out.Retrieved = []string{}
	}
	return out.score()
}

// score sets RecallAtK and Hit from Expected and Retrieved.
func (r *Retrieval) score() *Retrieval {
	found := 0
	for _, f := range r.Expected {
		if slices.Contains(r.Retrieved, f) {
			found++
		}
	}
	r.RecallAtK = float64(found) / float64(len(r.Expected))
	r.Hit = found > 0
	return r
}

// Details is r as a value of a result's details (details.retrieval): the
// form a result read back from the store has, so that a result holds the
// same values live and stored.
func (r *Retrieval) Details() map[string]any {
	m := map[string]any{"k": r.K, "expected": toAny(r.Expected), "retrieved": toAny(r.Retrieved),
		"recall_at_k": r.RecallAtK, "hit": r.Hit, "mode": r.Mode}
	if r.Fallback != "" {
		m["fallback"] = r.Fallback
	}
	return m
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// RetrievalOf reads a result's details.retrieval; ok is false when the
// result has none (or one that does not read as a Retrieval).
func RetrievalOf(details map[string]any) (r *Retrieval, ok bool) {
	v, has := details["retrieval"]
	if !has || v == nil {
		return nil, false
	}
	if r, is := v.(*Retrieval); is {
		return r, r != nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	r = &Retrieval{}
	if err := json.Unmarshal(b, r); err != nil || len(r.Expected) == 0 {
		return nil, false
	}
	return r, true
}

// CellRetrieval is a cell's retrieval figures: the means over the cell's
// scored results (passed and failed) that carry details.retrieval. A
// result that ended in error is left out, as it is of the cell's score.
type CellRetrieval struct {
	// RecallAtK is the mean of the results' recall_at_k.
	RecallAtK float64 `json:"recall_at_k"`
	// HitRate is the share of the results whose hit is true.
	HitRate float64 `json:"hit_rate"`
	// Tests is how many results the means are over.
	Tests int `json:"tests"`
}

// RetrievalTally sums the retrieval figures of a cell's results.
type RetrievalTally struct {
	Tests     int     // results with details.retrieval
	RecallSum float64 // the sum of their recall_at_k
	Hits      int     // those whose hit is true
}

// Add counts a result: nothing when it ended in error or carries no
// details.retrieval.
func (t *RetrievalTally) Add(res *Result) {
	if res.Status == TestError {
		return
	}
	r, ok := RetrievalOf(res.Details)
	if !ok {
		return
	}
	t.Tests++
	t.RecallSum += r.RecallAtK
	if r.Hit {
		t.Hits++
	}
}

// Cell is the cell's figures, nil when no result was counted.
func (t RetrievalTally) Cell() *CellRetrieval {
	if t.Tests == 0 {
		return nil
	}
	n := float64(t.Tests)
	return &CellRetrieval{RecallAtK: t.RecallSum / n, HitRate: float64(t.Hits) / n, Tests: t.Tests}
}

// TallyOf is the sums behind a cell's retrieval figures (the zero tally
// for nil).
func TallyOf(c *CellRetrieval) RetrievalTally {
	if c == nil {
		return RetrievalTally{}
	}
	n := float64(c.Tests)
	return RetrievalTally{Tests: c.Tests, RecallSum: c.RecallAtK * n, Hits: int(math.Round(c.HitRate * n))}
}

// distinct returns the names of list without repeats, in order.
func distinct(list []string) []string {
	var out []string
	for _, s := range list {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
