package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// streamEnv serves the history operations over a real SQLite file on
// loopback, through the server's gzip middleware.
type streamEnv struct {
	db   *store.DB
	runs *runs.Store
	srv  *httptest.Server
}

func newStreamEnv(t testing.TB, wrap func(*runs.Store, *store.DB) runStore) *streamEnv {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var s runStore = rs
	if wrap != nil {
		s = wrap(rs, db)
	}
	mux := http.NewServeMux()
	api := newAPI(mux)
	registerHistory(api, s, nil, slog.New(slog.DiscardHandler))
	finishAPI(api)
	srv := httptest.NewServer(compress(mux))
	t.Cleanup(srv.Close)
	return &streamEnv{db: db, runs: rs, srv: srv}
}

// seedStreamRun stores a completed run of n tests × repeats in three
// cells, stored out of cell order (as a concurrent run stores them):
// transcripts, calls, responses that are not UTF-8 or hold characters
// HTML escaping would change, results in error, details of every kind.
func seedStreamRun(t testing.TB, rs *runs.Store, id string, n, repeats int) {
	t.Helper()
	ctx := context.Background()
	cells := []runs.CellKey{{Domain: "b&c", Level: 2}, {Domain: "a<z>", Level: 1}, {Domain: "a<z>", Level: 3}}
	for i := range cells {
		cells[i].Tests = n / len(cells) * repeats
	}
	info := runs.Info{RunID: id, StartedAt: runs.Now(), ModelName: id + " <label>", Model: "m", Status: runs.StatusCompleted,
		TotalTests: n * repeats, Domains: []string{"a<z>", "b&c"},
		Config: &runs.Config{Model: "m", BaseURL: "http://127.0.0.1/v1?a=b&c=<d>", Concurrency: 4, Repeats: repeats,
			Params: map[string]any{"temperature": 0.7, "stop": []any{"<end>"}}, DefinitionsHash: "abc", GauntletVersion: "test"}}
	if err := rs.CreateRun(ctx, info, cells); err != nil {
		t.Fatal(err)
	}
	var batch []runs.Result
	for rep := range repeats {
		for i := range n {
			c := cells[i%len(cells)]
			status, score := runs.TestPassed, 1.0
			switch {
			case (i+rep)%7 == 0:
				status, score = runs.TestError, 0
			case (i+rep)%3 == 0:
				status, score = runs.TestFailed, 0.25
			}
			resp := fmt.Sprintf("The answer is <b>%d</b> & more.", i)
			if i%5 == 0 {
				resp = fmt.Sprintf("bytes \xff\xfe %d", i)
			}
			r := runs.Result{RunID: id, TestID: fmt.Sprintf("t-%04d", i), Repeat: rep, Domain: c.Domain, Level: c.Level,
				Name: fmt.Sprintf("test %d", i), Prompt: fmt.Sprintf("What is %d?\n<go>", i), Response: resp,
				Expected: harness.Expected{Answer: fmt.Sprint(i), Type: "numeric"}, Score: score, Status: status,
				Details:    map[string]any{"extracted_answer": fmt.Sprint(i), "pass2_used": i%2 == 0, "n": i},
				DurationMS: int64(i * 13 % 997), ModelName: id, SystemPrompt: "Be <brief>.", PromptTokens: i, CompletionTokens: 3,
				CreatedAt: runs.Now(),
				Transcript: []runs.Message{
					{Message: harness.Message{Role: "system", Content: "Be <brief>."}},
					{Message: harness.Message{Role: "user", Content: "q"}},
					{Message: harness.Message{Role: "assistant", Content: resp}},
				},
				Calls: []runs.Call{{Purpose: "test", Attempt: 1, DurationMS: 5, Status: "ok"}}}
			if status == runs.TestError {
				r.Details = map[string]any{"error": "model call failed: <503>"}
				r.Calls = append(r.Calls, runs.Call{Purpose: "test", Attempt: 2, Status: "http_error", HTTPStatus: 503, Error: "busy"})
			}
			batch = append(batch, r)
		}
	}
	if err := rs.SaveResults(ctx, batch); err != nil {
		t.Fatal(err)
	}
}

// wholeRunDetails is get-run's body as the endpoint made it before it
// streamed: every result read at once, the whole value encoded by huma's
// JSON format.
func wholeRunDetails(t *testing.T, rs *runs.Store, id string, results bool) []byte {
	t.Helper()
	ctx := context.Background()
	info, err := rs.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var all []runs.Result
	if results {
		if all, err = rs.Results(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := rs.Stats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := huma.DefaultJSONFormat.Marshal(&buf, apiRunDetails{RunInfo: toAPIRunInfo(info), TestResults: toAPIResults(all),
		Stats: toAPIStats(stats), Aggregates: toAPIAggregates(all)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// getBody reads a whole answer, asking for gzip or not.
func getBody(t *testing.T, url string, gz bool) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	} else {
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return resp, nil, err
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	return resp, b, err
}

// TestRunDetailsStreamedSameJSON: the streamed get-run body is byte for
// byte what encoding the whole answer gave, with repeats, several cells
// stored out of order, aggregates, transcripts, calls, responses that are
// not UTF-8 and characters HTML escaping would change; with gzip and
// without; with results=false; for a run without results.
func TestRunDetailsStreamedSameJSON(t *testing.T) {
	t.Parallel()
	e := newStreamEnv(t, nil)
	// More than two pages of the store, of results and of aggregates; two
	// repeats of each test are as good as three for the aggregates, and a
	// third fewer results to encode under the race detector.
	seedStreamRun(t, e.runs, "rep", 1203, 2)
	seedStreamRun(t, e.runs, "empty", 0, 1)
	for _, tc := range []struct {
		id, query string
		results   bool
	}{{"rep", "", true}, {"rep", "?results=false", false}, {"empty", "", true}} {
		want := wholeRunDetails(t, e.runs, tc.id, tc.results)
		for _, gz := range []bool{false, true} {
			resp, got, err := getBody(t, e.srv.URL+"/api/run/"+tc.id+tc.query, gz)
			if err != nil {
				t.Fatalf("%s%s gzip %v: %v", tc.id, tc.query, gz, err)
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s%s: %d %q", tc.id, tc.query, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if gz && len(want) >= minGzipSize != (resp.Header.Get("Content-Encoding") == "gzip") {
				t.Errorf("%s%s: gzip asked %v, Content-Encoding %q", tc.id, tc.query, gz, resp.Header.Get("Content-Encoding"))
			}
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%s%s gzip %v: bodies differ at byte %d of %d/%d:\ngot  …%.200s\nwant …%.200s",
					tc.id, tc.query, gz, i, len(got), len(want), got[max(0, i-50):], want[max(0, i-50):])
			}
		}
	}
	// The run's results really are in the body (the comparison would pass
	// on two empty documents).
	var d apiRunDetails
	_, b, _ := getBody(t, e.srv.URL+"/api/run/rep", true)
	if err := json.Unmarshal(b, &d); err != nil || len(d.TestResults) != 1203*2 || len(d.Aggregates) != 1203 {
		t.Fatalf("%d results, %d aggregates (%v)", len(d.TestResults), len(d.Aggregates), err)
	}
	raw := 0
	for _, r := range d.TestResults {
		if r.ResponseBase64 != "" {
			raw++
		}
	}
	if a := d.Aggregates[0]; a.Samples != 2 || a.Domain != "a<z>" || a.Level != 1 || raw != 241*2 {
		t.Errorf("first aggregate %+v, %d responses in base64", a, raw)
	}
	// Errors before the first byte are still problems.
	resp, b, _ := getBody(t, e.srv.URL+"/api/run/nope", false)
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("unknown run: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}

// failingRuns closes the database after `after` results were read, as a
// database lost half way through a long answer.
type failingRuns struct {
	*runs.Store
	db    *store.DB
	after int
}

func (f failingRuns) EachResultByCell(ctx context.Context, runID string, fn func(runs.Result) error) error {
	n := 0
	return f.Store.EachResultByCell(ctx, runID, func(r runs.Result) error {
		if n++; n == f.after {
			f.db.Close()
		}
		return fn(r)
	})
}

// TestRunDetailsFailureCutsConnection: when the database fails once the
// body has begun, the client gets a broken connection, never a shorter
// document that parses, with gzip or without.
func TestRunDetailsFailureCutsConnection(t *testing.T) {
	t.Parallel()
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprint("gzip=", gz), func(t *testing.T) {
			e := newStreamEnv(t, func(rs *runs.Store, db *store.DB) runStore { return failingRuns{rs, db, 600} })
			seedStreamRun(t, e.runs, "r", 1500, 1)
			resp, b, err := getBody(t, e.srv.URL+"/api/run/r", gz)
			if resp == nil {
				t.Fatalf("no answer: %v", err)
			}
			if err == nil {
				t.Fatalf("the body of %d bytes was read whole (status %d)", len(b), resp.StatusCode)
			}
			if json.Valid(b) {
				t.Errorf("a cut body parses: %.200s", b)
			}
		})
	}
}
