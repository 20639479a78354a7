package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// seedResults stores a completed run "big" of n results straight into
// the run store: test-0000… in storage order, every 10th in error, every
// 4th (not in error) failed with score 0.25, durations cycling over 0–90
// ms; result 7's response holds "zebra", result 9's is not valid UTF-8.
func seedResults(t *testing.T, e *testEnv, id string, n int) []runs.Result {
	t.Helper()
	ctx := context.Background()
	if err := e.runs.CreateRun(ctx, runs.Info{RunID: id, StartedAt: "2026-01-02 03:04:05", ModelName: "seeded", Model: "m",
		Status: runs.StatusCompleted, TotalTests: n, Domains: []string{"arithmetic", "knowledge"}},
		[]runs.CellKey{{Domain: "arithmetic", Level: 1, Tests: n / 2}, {Domain: "knowledge", Level: 1, Tests: n - n/2}}); err != nil {
		t.Fatal(err)
	}
	var all []runs.Result
	for i := range n {
		status, score := runs.TestPassed, 1.0
		switch {
		case i%10 == 0:
			status, score = runs.TestError, 0
		case i%4 == 0:
			status, score = runs.TestFailed, 0.25
		}
		domain := "arithmetic"
		if i%2 == 1 {
			domain = "knowledge"
		}
		r := runs.Result{RunID: id, TestID: fmt.Sprintf("test-%04d", i), Domain: domain, Level: 1, Name: fmt.Sprintf("Test %d", i),
			Prompt: fmt.Sprintf("What is %d + 1?", i), Response: fmt.Sprintf("The answer is %d.", i+1),
			Expected: harness.Expected{Answer: fmt.Sprint(i + 1), Type: "numeric"}, Score: score, Status: status,
			Details: map[string]any{"extracted_answer": fmt.Sprint(i + 1), "pass2_used": false}, DurationMS: int64(10 * (i % 10)),
			ModelName: "seeded", SystemPrompt: "Be brief.", PromptTokens: 10, CompletionTokens: 5, CreatedAt: "2026-01-02 03:04:07"}
		if status == runs.TestError {
			r.Details["error"] = "model call failed: 503"
		}
		switch i {
		case 7:
			r.Response = "A Zebra, \"quoted\", with a comma\nand a newline"
		case 9:
			r.Response = "bad \xff\xfe bytes"
		}
		all = append(all, r)
	}
	if err := e.runs.SaveResults(ctx, all); err != nil {
		t.Fatal(err)
	}
	return all
}

type resultPage struct {
	Results []struct {
		TestID         string  `json:"test_id"`
		Status         string  `json:"status"`
		Score          float64 `json:"score"`
		DurationMS     int64   `json:"duration_ms"`
		Response       string  `json:"response"`
		ResponseBase64 string  `json:"response_base64"`
	} `json:"results"`
	Total       int     `json:"total"`
	NextCursor  *string `json:"next_cursor"`
	SearchIndex *struct {
		Pending int `json:"pending"`
	} `json:"search_index"`
}

func (p *resultPage) ids() []string {
	out := make([]string, len(p.Results))
	for i, r := range p.Results {
		out[i] = r.TestID
	}
	return out
}

func TestListRunResults(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	all := seedResults(t, e, "big", 250)
	base := "/api/run/big/results"
	read := func(query string) *resultPage {
		t.Helper()
		var p resultPage
		must(t, e.get(base+"?"+query), http.StatusOK).decode(t, &p)
		return &p
	}

	// The default: 100 in storage order, the total, a cursor.
	p := read("")
	if len(p.Results) != 100 || p.Total != 250 || p.NextCursor == nil || p.Results[0].TestID != "test-0000" || p.Results[99].TestID != "test-0099" {
		t.Fatalf("first page: %d results from %v, total %d, cursor %v", len(p.Results), p.ids()[:1], p.Total, p.NextCursor)
	}

	// Errors, by score descending, paged by 7 to the end: every error once.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p := read("status=error&sort=-score&limit=7" + cursor)
		if p.Total != 25 {
			t.Fatalf("errors total %d, want 25", p.Total)
		}
		for _, r := range p.Results {
			if r.Status != "error" {
				t.Fatalf("a %s result among the errors", r.Status)
			}
		}
		got = append(got, p.ids()...)
		if p.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + url.QueryEscape(*p.NextCursor)
	}
	var want []string
	for i := len(all) - 1; i >= 0; i-- { // all errors score 0: ties in storage order, reversed
		if all[i].Status == runs.TestError {
			want = append(want, all[i].TestID)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors by -score: %v\nwant %v", got, want)
	}

	// Sorted by score: failed (0.25) come after errors (0) and before passed.
	p = read("sort=score&limit=1000")
	if len(p.Results) != 250 || p.NextCursor != nil {
		t.Fatalf("limit 1000: %d results, cursor %v", len(p.Results), p.NextCursor)
	}
	if !slices.IsSortedFunc(p.Results, func(a, b struct {
		TestID         string  `json:"test_id"`
		Status         string  `json:"status"`
		Score          float64 `json:"score"`
		DurationMS     int64   `json:"duration_ms"`
		Response       string  `json:"response"`
		ResponseBase64 string  `json:"response_base64"`
	}) int {
		return int((a.Score - b.Score) * 100)
	}) {
		t.Error("sort=score is not ascending")
	}
	p = read("sort=-duration_ms&domain=knowledge&level=1&limit=3")
	if p.Total != 125 || len(p.Results) != 3 || p.Results[0].DurationMS != 90 {
		t.Errorf("knowledge by -duration: total %d, %v", p.Total, p.Results)
	}

	// Search: any case, in responses and ids; the bytes that are not UTF-8
	// come back in base64. Found before the search index holds the run's
	// results (on SQLite they are pending: the server's indexer is not
	// running here) and after.
	if p.SearchIndex != nil {
		t.Errorf("search_index without q: %+v", p.SearchIndex)
	}
	pending := 250
	if dbtest.Postgres() {
		pending = 0
	}
	if p = read("q=ZEBRA"); !slices.Equal(p.ids(), []string{"test-0007"}) || p.Total != 1 || p.SearchIndex == nil || p.SearchIndex.Pending != pending {
		t.Errorf("q=ZEBRA before indexing: %v total %d, index %+v", p.ids(), p.Total, p.SearchIndex)
	}
	if _, err := e.runs.IndexSearch(context.Background(), 1000); err != nil {
		t.Fatal(err)
	}
	if p = read("q=ZEBRA"); !slices.Equal(p.ids(), []string{"test-0007"}) || p.Total != 1 || p.SearchIndex == nil || p.SearchIndex.Pending != 0 {
		t.Errorf("q=ZEBRA: %v total %d, index %+v", p.ids(), p.Total, p.SearchIndex)
	}
	if p = read("q=" + url.QueryEscape("test-024")); p.Total != 10 {
		t.Errorf("q=test-024: total %d, want 10", p.Total)
	}
	if p = read("q=" + url.QueryEscape("%")); p.Total != 0 {
		t.Errorf("q=%%: total %d, want none (no wildcard)", p.Total)
	}
	if p = read("q=bytes"); len(p.Results) != 1 || p.Results[0].ResponseBase64 != base64.StdEncoding.EncodeToString([]byte("bad \xff\xfe bytes")) {
		t.Errorf("q=bytes: %+v", p.Results)
	}

	// A run with nothing to show, and a live one.
	if err := e.runs.CreateRun(context.Background(), runs.Info{RunID: "live", StartedAt: "2026-01-02 03:04:05", Status: runs.StatusRunning, TotalTests: 5}, nil); err != nil {
		t.Fatal(err)
	}
	var empty resultPage
	must(t, e.get("/api/run/live/results"), http.StatusOK).decode(t, &empty)
	if empty.Total != 0 || empty.Results == nil || len(empty.Results) != 0 || empty.NextCursor != nil {
		t.Errorf("empty run: %s", must(t, e.get("/api/run/live/results"), http.StatusOK).body)
	}
}

func TestListRunResultsErrors(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	seedResults(t, e, "big", 30)
	var p resultPage
	must(t, e.get("/api/run/big/results?sort=score&limit=5"), http.StatusOK).decode(t, &p)
	for _, tc := range []struct {
		query    string
		status   int
		location string
	}{
		{"status=passing", 422, "query.status"},
		{"sort=name", 422, "query.sort"},
		{"sort=--id", 422, "query.sort"},
		{"limit=0", 422, "query.limit"},
		{"limit=1001", 422, "query.limit"},
		{"limit=ten", 422, "query.limit"},
		{"level=-1", 422, "query.level"},
		{"level=x", 422, "query.level"},
		{"cursor=!!", 422, "query.cursor"},
		{"cursor=" + url.QueryEscape(*p.NextCursor), 422, "query.cursor"}, // made for sort=score
	} {
		t.Run(tc.query, func(t *testing.T) {
			mustProblem(t, e.get("/api/run/big/results?"+tc.query), tc.status, tc.location)
		})
	}
	mustProblem(t, e.get("/api/run/nope/results"), http.StatusNotFound)
	mustProblem(t, e.get("/api/run/nope/export?format=csv"), http.StatusNotFound)
	mustProblem(t, e.get("/api/run/big/export?format=xml"), 422, "query.format")
	mustProblem(t, e.get("/api/run/big/export?status=nope"), 422, "query.status")
}

func TestRunExport(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	all := seedResults(t, e, "big", 1234)

	r := must(t, e.get("/api/run/big/export?format=csv"), http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="big.csv"` {
		t.Errorf("Content-Disposition %q", cd)
	}
	rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v", err)
	}
	if len(rows) != len(all)+1 {
		t.Fatalf("%d rows, want a header and %d", len(rows), len(all))
	}
	header := strings.Join(rows[0], ",")
	if header != "run_id,test_id,repeat,domain,level,name,status,score,duration_ms,prompt,response,response_base64,expected_answer,expected_type,extracted_answer,error,prompt_tokens,completion_tokens,created_at,cached_tokens,reasoning_tokens,cost_usd,judge_cost_usd,ttft_ms,output_tokens_per_s" {
		t.Errorf("header %s", header)
	}
	col := func(row []string, name string) string { return row[slices.Index(rows[0], name)] }
	for i, row := range rows[1:] {
		if col(row, "test_id") != all[i].TestID {
			t.Fatalf("row %d is %s, want %s in storage order", i, col(row, "test_id"), all[i].TestID)
		}
	}
	if got := col(rows[8], "response"); got != all[7].Response {
		t.Errorf("quoted response %q, want %q", got, all[7].Response)
	}
	if got := col(rows[10], "response"); got != "bad \uFFFD bytes" || col(rows[10], "response_base64") != base64.StdEncoding.EncodeToString([]byte(all[9].Response)) {
		t.Errorf("invalid UTF-8: response %q, base64 %q", got, col(rows[10], "response_base64"))
	}
	if col(rows[1], "error") != "model call failed: 503" || col(rows[1], "status") != "error" || col(rows[5], "score") != "0.25" ||
		col(rows[2], "extracted_answer") != "2" || col(rows[2], "expected_type") != "numeric" || col(rows[2], "created_at") != "2026-01-02 03:04:07" {
		t.Errorf("rows %v / %v / %v", rows[1], rows[2], rows[5])
	}

	// JSON Lines, filtered and sorted, in the API's result shape.
	r = must(t, e.get("/api/run/big/export?format=jsonl&status=failed&sort=-duration_ms"), http.StatusOK)
	if cd := r.header.Get("Content-Disposition"); cd != `attachment; filename="big.jsonl"` {
		t.Errorf("Content-Disposition %q", cd)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	wantFailed := 0
	for _, res := range all {
		if res.Status == runs.TestFailed {
			wantFailed++
		}
	}
	if len(lines) != wantFailed {
		t.Fatalf("%d lines, want %d failed results", len(lines), wantFailed)
	}
	for i, m := range lines {
		if m["status"] != "failed" || (i > 0 && m["duration_ms"].(float64) > lines[i-1]["duration_ms"].(float64)) {
			t.Fatalf("line %d: %v", i, m)
		}
	}
	for _, k := range []string{"run_id", "test_id", "repeat", "prompt", "response", "expected", "details", "system_prompt", "created_at"} {
		if _, ok := lines[0][k]; !ok {
			t.Errorf("a line lacks %s: %v", k, lines[0])
		}
	}
	// Invalid UTF-8 comes with its exact bytes.
	r = must(t, e.get("/api/run/big/export?format=jsonl&q=bytes"), http.StatusOK)
	var bad map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(r.body), &bad); err != nil || bad["response_base64"] != base64.StdEncoding.EncodeToString([]byte(all[9].Response)) {
		t.Errorf("the invalid response: %v %v", bad, err)
	}
}
