package compare_test

import (
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// measured returns a scored result of test id that measured retrieval:
// expected files, of which those in found were retrieved.
func measured(run, id, status string, expected, found []string) runs.Result {
	var sources []harness.Source
	for _, f := range found {
		sources = append(sources, harness.Source{File: f, Score: 1})
	}
	m := runs.MeasureRetrieval(expected, &harness.Retrieval{Mode: "bm25", Sources: sources})
	score := 0.0
	if status == runs.TestPassed {
		score = 1
	}
	return runs.Result{RunID: run, TestID: id, Domain: "kb", Level: 1, Score: score, Status: status,
		Details: map[string]any{"retrieval": m.Details()}}
}

// TestRunsRetrieval: the cell compares the recall@k and hit rate of the
// tests that measured retrieval in both runs, scored in both; a cell
// without any has no retrieval.
func TestRunsRetrieval(t *testing.T) {
	two := []string{"a.md", "b.md"}
	base := []runs.Result{
		measured("v1", "t1", runs.TestPassed, two, []string{"a.md"}),
		measured("v1", "t2", runs.TestFailed, []string{"c.md"}, nil),
		measured("v1", "t3", runs.TestPassed, []string{"c.md"}, nil),                           // in error in head: left out
		measured("v1", "t4", runs.TestPassed, []string{"c.md"}, nil),                           // measured nothing in head: left out
		{RunID: "v1", TestID: "t5", Domain: "kb", Level: 1, Score: 1, Status: runs.TestPassed}, // measured nothing
	}
	head := []runs.Result{
		measured("v2", "t1", runs.TestPassed, two, two),
		measured("v2", "t2", runs.TestPassed, []string{"c.md"}, []string{"c.md"}),
		measured("v2", "t3", runs.TestError, []string{"c.md"}, []string{"c.md"}),
		{RunID: "v2", TestID: "t4", Domain: "kb", Level: 1, Score: 1, Status: runs.TestPassed},
		measured("v2", "t5", runs.TestPassed, []string{"c.md"}, []string{"c.md"}),
	}
	rep, err := compare.Runs("v1", "v2", base, head)
	if err != nil {
		t.Fatal(err)
	}
	want := &compare.RetrievalChange{BaseRecallAtK: 0.25, HeadRecallAtK: 1, Delta: 0.75, BaseHitRate: 0.5, HeadHitRate: 1, Tests: 2}
	if got := rep.Cells["kb"][1].Retrieval; !reflect.DeepEqual(got, want) {
		t.Errorf("retrieval change %+v, want %+v", got, want)
	}

	plain := func(run, status string) []runs.Result {
		return []runs.Result{{RunID: run, TestID: "m1", Domain: "math", Level: 1, Status: status}}
	}
	rep, err = compare.Runs("v1", "v2", plain("v1", runs.TestPassed), plain("v2", runs.TestFailed))
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Cells["math"][1].Retrieval; got != nil {
		t.Errorf("a cell without retrieval compares %+v", got)
	}
}
