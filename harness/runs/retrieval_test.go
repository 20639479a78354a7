package runs_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

func TestMeasureRetrieval(t *testing.T) {
	t.Parallel()
	src := func(file string, score float64) harness.Source { return harness.Source{File: file, Score: score} }
	ranked := &harness.Retrieval{Mode: "bm25", Sources: []harness.Source{
		src("a.md", 9), src("b.md", 8), src("a.md", 7), src("c.md", 6), src("d.md", 5), src("e.md", 4), src("f.md", 3)}}
	for _, tc := range []struct {
		name      string
		expected  []string
		r         *harness.Retrieval
		k         int
		retrieved []string
		recall    float64
		hit       bool
	}{
		{"every expected file in the top k", []string{"a.md", "c.md"}, ranked, 5, []string{"a.md", "b.md", "c.md", "d.md"}, 1, true},
		{"one of two", []string{"b.md", "f.md"}, ranked, 5, []string{"a.md", "b.md", "c.md", "d.md"}, 0.5, true},
		{"ranked below k", []string{"e.md"}, ranked, 5, []string{"a.md", "b.md", "c.md", "d.md"}, 0, false},
		{"fewer sources than k", []string{"b.md", "z.md"}, &harness.Retrieval{Mode: "hybrid", Fallback: "down",
			Sources: []harness.Source{src("b.md", 0.3)}}, 1, []string{"b.md"}, 0.5, true},
		{"an empty knowledge base", []string{"a.md"}, &harness.Retrieval{Sources: []harness.Source{}}, 0, []string{}, 0, false},
		{"no retrieval", []string{"a.md"}, nil, 0, []string{}, 0, false},
		// The whole base fits the budget: chunks that matched nothing
		// (score 0) follow and are not retrieved.
		{"chunks that matched nothing", []string{"b.md"}, &harness.Retrieval{Mode: "bm25",
			Sources: []harness.Source{src("a.md", 2), src("b.md", 0), src("c.md", 0)}}, 3, []string{"a.md"}, 0, false},
		{"an expected file listed twice counts once", []string{"a.md", "a.md", "z.md"}, ranked, 5, []string{"a.md", "b.md", "c.md", "d.md"}, 0.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := runs.MeasureRetrieval(tc.expected, tc.r)
			if m == nil {
				t.Fatal("nil")
			}
			if m.K != tc.k || !reflect.DeepEqual(m.Retrieved, tc.retrieved) || m.RecallAtK != tc.recall || m.Hit != tc.hit {
				t.Errorf("got k %d, retrieved %q, recall %v, hit %v; want %d, %q, %v, %v",
					m.K, m.Retrieved, m.RecallAtK, m.Hit, tc.k, tc.retrieved, tc.recall, tc.hit)
			}
			if tc.r != nil && (m.Mode != tc.r.Mode || m.Fallback != tc.r.Fallback) {
				t.Errorf("mode %q fallback %q", m.Mode, m.Fallback)
			}
		})
	}
	if m := runs.MeasureRetrieval(nil, ranked); m != nil {
		t.Errorf("no expected sources measured %+v", m)
	}
}

// TestRetrievalDetails: details.retrieval reads the same from the value
// the engine sets and from the JSON the store gives back, and a rescore's
// remeasure against other files keeps what was retrieved.
func TestRetrievalDetails(t *testing.T) {
	t.Parallel()
	m := runs.MeasureRetrieval([]string{"a.md", "z.md"}, &harness.Retrieval{Mode: "hybrid", Fallback: "embeddings down",
		Sources: []harness.Source{{File: "a.md", Score: 1}, {File: "b.md", Score: 0.5}}})
	live := m.Details()
	b, err := json.Marshal(live)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	const want = `{"expected":["a.md","z.md"],"fallback":"embeddings down","hit":true,"k":2,"mode":"hybrid","recall_at_k":0.5,"retrieved":["a.md","b.md"]}`
	if string(b) != want {
		t.Errorf("details.retrieval = %s, want %s", b, want)
	}
	for name, d := range map[string]any{"live": live, "stored": stored} {
		got, ok := runs.RetrievalOf(map[string]any{"retrieval": d})
		if !ok || !reflect.DeepEqual(got, m) {
			t.Errorf("%s: read %+v, %v; want %+v", name, got, ok, m)
		}
	}
	for _, bad := range []map[string]any{nil, {}, {"retrieval": nil}, {"retrieval": "x"}, {"retrieval": map[string]any{"k": 1}}} {
		if got, ok := runs.RetrievalOf(bad); ok {
			t.Errorf("RetrievalOf(%v) = %+v", bad, got)
		}
	}
	again := m.Remeasure([]string{"b.md"})
	if again.RecallAtK != 1 || !again.Hit || !reflect.DeepEqual(again.Retrieved, m.Retrieved) || again.Mode != "hybrid" {
		t.Errorf("remeasured %+v", again)
	}
	if m.RecallAtK != 0.5 || m.Expected[0] != "a.md" {
		t.Errorf("remeasure changed the original: %+v", m)
	}
	if again := m.Remeasure(nil); again != nil {
		t.Errorf("remeasured against nothing: %+v", again)
	}
}

// withRetrieval returns r with details.retrieval of the given recall and
// hit.
func withRetrieval(r runs.Result, expected, retrieved []string) runs.Result {
	m := runs.MeasureRetrieval(expected, &harness.Retrieval{Mode: "bm25"})
	m.Retrieved = retrieved
	m = m.Remeasure(expected)
	r.Details["retrieval"] = m.Details()
	return r
}

func TestRetrievalTally(t *testing.T) {
	t.Parallel()
	var tally runs.RetrievalTally
	if tally.Cell() != nil {
		t.Error("an empty tally has figures")
	}
	for _, r := range []runs.Result{
		withRetrieval(result("r", "kb", 1, "a", 1, runs.TestPassed), []string{"a.md", "b.md"}, []string{"a.md"}),
		withRetrieval(result("r", "kb", 1, "b", 0, runs.TestFailed), []string{"a.md"}, []string{"a.md"}),
		withRetrieval(result("r", "kb", 1, "c", 0, runs.TestFailed), []string{"c.md"}, []string{}),
		// Errors and results without retrieval are not counted.
		withRetrieval(result("r", "kb", 1, "d", 0, runs.TestError), []string{"a.md"}, []string{"a.md"}),
		result("r", "kb", 1, "e", 1, runs.TestPassed),
	} {
		tally.Add(&r)
	}
	got := tally.Cell()
	if got == nil || got.Tests != 3 || got.RecallAtK != 0.5 || got.HitRate != 2.0/3 {
		t.Errorf("cell figures %+v, want 3 tests, recall 0.5, hit rate 2/3", got)
	}
	if back := runs.TallyOf(got); back != tally {
		t.Errorf("TallyOf %+v, want %+v", back, tally)
	}
}

// TestCellRetrievalStored: a cell's retrieval figures are stored with
// it, read back by Matrix, and absent from cells without them; a queued
// result's figures are counted by RecordResult, into the cell's final
// state too.
func TestCellRetrievalStored(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.CreateRun(ctx, newInfo("r1"), cells); err != nil {
		t.Fatal(err)
	}
	fig := &runs.CellRetrieval{RecallAtK: 0.75, HitRate: 0.5, Tests: 2}
	score := 0.5
	err := s.SaveBatch(ctx, nil, []runs.CellUpdate{
		{RunID: "r1", Domain: "math", Level: 1, Cell: runs.Cell{Status: runs.CellRunning, Tests: 2, Done: 2, Passed: 1, Failed: 1, Score: &score, Retrieval: fig}},
		{RunID: "r1", Domain: "words", Level: 1, Cell: runs.Cell{Status: runs.CellRunning, Tests: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Matrix(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got := m["math"]["1"].Retrieval; !reflect.DeepEqual(got, fig) {
		t.Errorf("math/1 retrieval %+v, want %+v", got, fig)
	}
	if got := m["words"]["1"].Retrieval; got != nil {
		t.Errorf("words/1 retrieval %+v, want none", got)
	}
	b, _ := json.Marshal(m["words"]["1"])
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["retrieval"]; ok {
		t.Errorf("a cell without figures has a retrieval key: %s", b)
	}

	// Queued results: counted one by one, and the settled cell keeps the
	// sums although its samples carry no details.
	if err := s.CreateRun(ctx, newInfo("q1"), cells); err != nil {
		t.Fatal(err)
	}
	settle := func(samples []runs.Sample) runs.Cell {
		return runs.Cell{Status: runs.CellPassed, Tests: 2, Done: len(samples)}
	}
	for _, r := range []runs.Result{
		withRetrieval(result("q1", "math", 1, "a", 1, runs.TestPassed), []string{"a.md", "b.md"}, []string{"b.md"}),
		withRetrieval(result("q1", "math", 1, "b", 1, runs.TestPassed), []string{"a.md"}, []string{"c.md"}),
		withRetrieval(result("q1", "words", 1, "c", 0, runs.TestError), []string{"a.md"}, []string{"a.md"}),
	} {
		if ok, err := s.RecordResult(ctx, r, settle); !ok || err != nil {
			t.Fatalf("record %s: %v, %v", r.TestID, ok, err)
		}
	}
	m, err = s.Matrix(ctx, "q1")
	if err != nil {
		t.Fatal(err)
	}
	want := &runs.CellRetrieval{RecallAtK: 0.25, HitRate: 0.5, Tests: 2}
	if got := m["math"]["1"]; got.Status != runs.CellPassed || !reflect.DeepEqual(got.Retrieval, want) {
		t.Errorf("settled queued cell %+v (retrieval %+v), want retrieval %+v", got, got.Retrieval, want)
	}
	if got := m["words"]["1"].Retrieval; got != nil {
		t.Errorf("a cell whose only result is an error has retrieval %+v", got)
	}
}
