package runs

import "github.com/gauntlet-eval/gauntlet/harness/stats"

// TestAggregate is one test of a run over its repeats: a run with
// repeats k asks each test k times, and this says how the test did
// across them. A result that ended in error is not one of the k: it says
// nothing about the model, so it is counted in Errors and left out of
// every figure (see package stats).
type TestAggregate struct {
	TestID string `json:"test_id"`
	Domain string `json:"domain"`
	Level  int    `json:"level"`
	Name   string `json:"name"`
	// Samples is the test's finished results: Passed + Failed + Errors.
	Samples int `json:"samples"`
	// K is the scored ones, Passed + Failed: the k of pass@k and pass^k.
	K      int `json:"k"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	Errors int `json:"errors"`
	// Score is the mean score of the scored results; nil when K is 0.
	Score *float64 `json:"score"`
	// PassRate is Passed / K; nil when K is 0.
	PassRate *float64 `json:"pass_rate"`
	// PassAtK is true when the test passed at least once of its K
	// scored results; nil when K is 0.
	PassAtK *bool `json:"pass_at_k"`
	// PassAllK (pass^k) is true when the test passed every one of its K
	// scored results; nil when K is 0.
	PassAllK *bool `json:"pass_all_k"`
}

// Aggregates summarises results test by test, in the order in which each
// test first appears in results (for a cell read from a [Store], the
// order in which its tests first finished). Results are grouped by
// domain, level and test id. The figures are those of [stats.Aggregate].
func Aggregates(results []Result) []TestAggregate {
	type key struct {
		domain string
		level  int
		id     string
	}
	index := make(map[key]int)
	var groups [][]stats.Sample
	out := []TestAggregate{}
	for _, r := range results {
		k := key{r.Domain, r.Level, r.TestID}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, TestAggregate{TestID: r.TestID, Domain: r.Domain, Level: r.Level, Name: r.Name})
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r.Sample())
	}
	for i, samples := range groups {
		a := &out[i]
		s := stats.Aggregate(samples)[0]
		a.Samples, a.K, a.Passed, a.Errors = len(samples), s.Scored, s.Passes, s.Errors
		a.Failed = s.Scored - s.Passes
		if s.Scored == 0 {
			continue
		}
		score, rate, atK, allK := s.Score, s.PassRate, s.PassAtK, s.PassAllK
		a.Score, a.PassRate, a.PassAtK, a.PassAllK = &score, &rate, &atK, &allK
	}
	return out
}

// Sample is the result as a sample of the statistics (harness/stats):
// its test, repeat and score, and whether it passed or was an error.
func (r *Result) Sample() stats.Sample {
	return stats.Sample{TestID: r.TestID, Repeat: r.Repeat, Score: r.Score,
		Passed: r.Status == TestPassed, Error: r.Status == TestError}
}
