package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestReportRetrieval: a cell that measured an agent's retrieval shows
// its recall@5 in the text table, with a line saying what it is, and its
// figures in the JSON report's matrix; a run without any shows neither.
func TestReportRetrieval(t *testing.T) {
	info := runs.Info{RunID: "r", Status: runs.StatusCompleted, Domains: []string{"kb", "plain"}, TotalTests: 4, DoneTests: 4,
		Passed: 4, OverallScore: score(1), Complete: true}
	m := runs.Matrix{
		"kb":    {"1": {Status: runs.CellPassed, Score: score(1), Tests: 3, Done: 3, Passed: 3, Retrieval: &runs.CellRetrieval{RecallAtK: 0.5, HitRate: 2.0 / 3, Tests: 3}}},
		"plain": {"1": {Status: runs.CellPassed, Score: score(1), Tests: 1, Done: 1, Passed: 1}},
	}
	var text strings.Builder
	if err := newReport(info, m, nil, 0).writeText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	if !strings.Contains(out, "1.00 pass R@5 0.50") || !strings.Contains(out, "R@5: mean recall@5 of the agent's retrieval") {
		t.Errorf("text report without the cell's recall:\n%s", out)
	}
	if strings.Count(out, "R@5 ") != 1 {
		t.Errorf("recall shown for a cell without it:\n%s", out)
	}

	var js strings.Builder
	if err := newReport(info, m, nil, 0).writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Matrix map[string]map[string]map[string]json.RawMessage `json:"matrix"`
	}
	if err := json.Unmarshal([]byte(js.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js.String())
	}
	var got runs.CellRetrieval
	if err := json.Unmarshal(doc.Matrix["kb"]["1"]["retrieval"], &got); err != nil || got != *m["kb"]["1"].Retrieval {
		t.Errorf("JSON cell retrieval %s (%v)", doc.Matrix["kb"]["1"]["retrieval"], err)
	}
	if _, ok := doc.Matrix["plain"]["1"]["retrieval"]; ok {
		t.Errorf("a cell without retrieval has the key: %s", js.String())
	}

	text.Reset()
	delete(m, "kb")
	info.Domains = []string{"plain"}
	if err := newReport(info, m, nil, 0).writeText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "R@5") {
		t.Errorf("a run without retrieval mentions it:\n%s", text.String())
	}
}
