package runs_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

func openStore(t *testing.T) *runs.Store {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// Opening again over existing tables works.
	if _, err := runs.Open(ctx, db); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	return s
}

func newInfo(id string) runs.Info {
	return runs.Info{RunID: id, StartedAt: "2026-01-02 03:04:05", ModelName: "label", Model: "m",
		Status: runs.StatusRunning, TotalTests: 3, Domains: []string{"math", "words"}}
}

var cells = []runs.CellKey{{Domain: "math", Level: 1, Tests: 2}, {Domain: "words", Level: 1, Tests: 1}, {Domain: "words", Level: 2, Tests: 0}}

func result(runID, domain string, level int, test string, score float64, status string) runs.Result {
	tol := 0.01
	return runs.Result{RunID: runID, TestID: test, Domain: domain, Level: level, Name: "Test " + test,
		Prompt: "What?", Response: "That.", Expected: harness.Expected{Answer: "42", Type: "numeric", Tolerance: &tol},
		Score: score, Status: status, Details: map[string]any{"extracted_answer": "42", "pass2_used": false, "n": 1.5},
		DurationMS: 12, ModelName: "label", SystemPrompt: "Be brief.", PromptTokens: 10, CompletionTokens: 5,
		CreatedAt: "2026-01-02 03:04:07", Transcript: rebuilt("Be brief.", "What?", "That."),
		Calls: []runs.Call{{Purpose: runs.CallTest, Attempt: 1, DurationMS: 11, PromptTokens: 10, CompletionTokens: 5, Status: harness.AttemptOK}}}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	in := newInfo("r1")
	if err := s.CreateRun(ctx, in, cells); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, in, cells); err == nil {
		t.Error("a second run with the same id was stored")
	}
	got, err := s.Run(ctx, "r1")
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("run = %+v %v, want %+v", got, err, in)
	}

	// A new run's matrix: every cell pending, in order.
	m, err := s.Matrix(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	want := runs.Matrix{
		"math":  {"1": {Status: runs.CellPending, Tests: 2}},
		"words": {"1": {Status: runs.CellPending, Tests: 1}, "2": {Status: runs.CellPending}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("matrix = %+v", m)
	}

	// Results round trip, in one call or several.
	r1 := result("r1", "math", 1, "a", 1, runs.TestPassed)
	r2 := result("r1", "math", 1, "b", 0, runs.TestFailed)
	r3 := result("r1", "words", 1, "c", 0, runs.TestError)
	r3.Details = nil
	if err := s.SaveResults(ctx, []runs.Result{r1, r2}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveResults(ctx, []runs.Result{r3}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveResults(ctx, nil); err != nil {
		t.Errorf("saving no results: %v", err)
	}
	all, err := s.Results(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	r3.Details = map[string]any{}
	if !reflect.DeepEqual(all, []runs.Result{r1, r2, r3}) {
		t.Errorf("results =\n%+v\nwant\n%+v", all, []runs.Result{r1, r2, r3})
	}
	cell, err := s.CellResults(ctx, "r1", "math", 1)
	if err != nil || !reflect.DeepEqual(cell, []runs.Result{r1, r2}) {
		t.Errorf("cell results = %+v %v", cell, err)
	}
	if empty, err := s.CellResults(ctx, "r1", "words", 2); err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("results of a cell not reached = %#v %v, want an empty list", empty, err)
	}
	if none, err := s.CellResults(ctx, "r1", "math", 9); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("results of a cell the run did not cover = %v %v, want ErrNotFound", none, err)
	}

	st, err := s.Stats(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	wantStats := runs.Stats{StatusCounts: map[string]int{runs.TestPassed: 1, runs.TestFailed: 1, runs.TestError: 1}, AvgScore: 0.5, TotalTests: 3}
	if !reflect.DeepEqual(st, wantStats) {
		t.Errorf("stats = %+v", st)
	}

	// Cells.
	half, ms := 0.5, int64(30)
	if err := s.SaveCell(ctx, "r1", "math", 1, runs.Cell{Status: runs.CellFailed, Score: &half, DurationMS: &ms, Tests: 2, Done: 2, Passed: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveCell(ctx, "r1", "words", 1, runs.Cell{Status: runs.CellRunning, Tests: 1}); err != nil {
		t.Fatal(err)
	}

	// Finish: totals stored, cells left pending or running are partial
	// when they hold results, skipped otherwise. The cells' counts are
	// their results' (the run is counted), not those SaveCell was given.
	done := "2026-01-02 03:05:00"
	score := 1.0 / 3
	in.Status, in.CompletedAt, in.OverallScore, in.TotalTokens, in.TotalDurationMS = runs.StatusStopped, &done, &score, 45, 55000
	if _, err := s.FinishRun(ctx, in); err != nil {
		t.Fatal(err)
	}
	// The four token counts are the store's, moved with each result; the
	// latency is measured over the answered results when the run ends.
	in.Tokens = runs.Tokens{Prompt: 30, Completion: 15}
	stored, _ := s.Results(ctx, "r1")
	var durations []int64
	for _, r := range stored {
		if r.Status != runs.TestError {
			durations = append(durations, r.DurationMS)
		}
	}
	lat := runs.LatencyOf(durations, nil)
	in.LatencyP50MS, in.LatencyP95MS = lat.P50MS, lat.P95MS
	if got, _ := s.Run(ctx, "r1"); !reflect.DeepEqual(got, in) {
		t.Errorf("finished run = %+v, want %+v", got, in)
	}
	m, _ = s.Matrix(ctx, "r1")
	want = runs.Matrix{
		"math": {"1": {Status: runs.CellFailed, Score: &half, DurationMS: &ms, Tests: 2, Done: 2, Passed: 1, Failed: 1,
			Tokens: runs.Tokens{Prompt: 20, Completion: 10}}},
		"words": {"1": {Status: runs.CellPartial, Tests: 1, Done: 1, Errors: 1, Tokens: runs.Tokens{Prompt: 10, Completion: 5}},
			"2": {Status: runs.CellSkipped}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("finished matrix = %+v", m)
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("run: %v", err)
	}
	if _, err := s.Matrix(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("matrix: %v", err)
	}
	if _, err := s.Results(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("results: %v", err)
	}
	if _, err := s.CellResults(ctx, "nope", "d", 1); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("cell results: %v", err)
	}
	if _, err := s.Last(ctx); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("last with no run: %v", err)
	}
	if err := s.Delete(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("delete: %v", err)
	}
	if list, total, err := s.List(ctx, 10, 0); err != nil || total != 0 || len(list) != 0 {
		t.Errorf("list: %v %d %v", list, total, err)
	}
	if st, err := s.Stats(ctx, "nope"); err != nil || st.TotalTests != 0 {
		t.Errorf("stats: %+v %v", st, err)
	}
}

func TestListLastDelete(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	// Ids that sort against creation order: the order is by creation.
	ids := []string{"r-c", "r-a", "r-d", "r-b", "r-e"}
	for _, id := range ids {
		if err := s.CreateRun(ctx, newInfo(id), cells); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveResults(ctx, []runs.Result{result(id, "math", 1, "a", 1, runs.TestPassed)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		limit, offset int
		want          []string
	}{
		{10, 0, []string{"r-e", "r-b", "r-d", "r-a", "r-c"}},
		{2, 0, []string{"r-e", "r-b"}},
		{2, 2, []string{"r-d", "r-a"}},
		{2, 4, []string{"r-c"}},
		{2, 9, nil},
	} {
		t.Run(fmt.Sprintf("limit=%d,offset=%d", tc.limit, tc.offset), func(t *testing.T) {
			list, total, err := s.List(ctx, tc.limit, tc.offset)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range list {
				got = append(got, r.RunID)
				if len(r.Domains) != 2 {
					t.Errorf("%s: domains %v", r.RunID, r.Domains)
				}
			}
			if total != len(ids) || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("list = %v (total %d), want %v (total %d)", got, total, tc.want, len(ids))
			}
		})
	}
	if last, err := s.Last(ctx); err != nil || last.RunID != "r-e" {
		t.Errorf("last = %+v %v", last, err)
	}

	if err := s.Delete(ctx, "r-e"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, "r-e"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("run after delete: %v", err)
	}
	if _, err := s.Results(ctx, "r-e"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("results after delete: %v", err)
	}
	if st, _ := s.Stats(ctx, "r-e"); st.TotalTests != 0 {
		t.Errorf("results left after delete: %+v", st)
	}
	if err := s.Delete(ctx, "r-e"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if last, err := s.Last(ctx); err != nil || last.RunID != "r-b" {
		t.Errorf("last after delete = %+v %v", last, err)
	}
	// The other runs keep their results.
	if st, _ := s.Stats(ctx, "r-b"); st.TotalTests != 1 {
		t.Errorf("r-b lost its results: %+v", st)
	}
	// A run created after a delete is still the newest.
	if err := s.CreateRun(ctx, newInfo("r-0"), nil); err != nil {
		t.Fatal(err)
	}
	if last, _ := s.Last(ctx); last.RunID != "r-0" {
		t.Errorf("last = %s, want r-0", last.RunID)
	}
}

func TestMarkInterrupted(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	// A run that died with two results, one that died with none, and a
	// finished one that must stay as it is.
	died := newInfo("died")
	if err := s.CreateRun(ctx, died, cells); err != nil {
		t.Fatal(err)
	}
	r1 := result("died", "math", 1, "a", 1, runs.TestPassed)
	r2 := result("died", "math", 1, "b", 0, runs.TestFailed)
	r2.CreatedAt = "2026-01-02 03:04:15"
	if err := s.SaveResults(ctx, []runs.Result{r1, r2}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveCell(ctx, "died", "math", 1, runs.Cell{Status: runs.CellRunning, Tests: 2, Done: 2, Passed: 1}); err != nil {
		t.Fatal(err)
	}
	empty := newInfo("empty")
	if err := s.CreateRun(ctx, empty, cells); err != nil {
		t.Fatal(err)
	}
	fine := newInfo("fine")
	if err := s.CreateRun(ctx, fine, cells); err != nil {
		t.Fatal(err)
	}
	done := "2026-01-02 03:05:00"
	fine.Status, fine.CompletedAt = runs.StatusCompleted, &done
	if _, err := s.FinishRun(ctx, fine); err != nil {
		t.Fatal(err)
	}

	n, err := s.MarkInterrupted(ctx)
	if err != nil || n != 2 {
		t.Fatalf("marked %d, %v; want 2", n, err)
	}
	got, _ := s.Run(ctx, "died")
	if got.Status != runs.StatusInterrupted || got.OverallScore == nil || *got.OverallScore != 0.5 || got.TotalTokens != 30 ||
		got.DoneTests != 2 || got.Passed != 1 || got.Failed != 1 || got.Complete || got.Error == "" {
		t.Errorf("died = %+v", got)
	}
	if got.CompletedAt == nil || *got.CompletedAt != r2.CreatedAt || got.TotalDurationMS != 10000 {
		t.Errorf("died: completed_at %v, duration %d ms; want the last result's time, 10 s after the start", ptr(got.CompletedAt), got.TotalDurationMS)
	}
	if results, _ := s.Results(ctx, "died"); len(results) != 2 {
		t.Errorf("died kept %d results", len(results))
	}
	m, _ := s.Matrix(ctx, "died")
	// A cell the run was working on is partial, one it never reached
	// skipped.
	if m["math"]["1"].Status != runs.CellPartial || m["math"]["1"].Done != 2 || m["math"]["1"].Failed != 1 ||
		m["words"]["1"].Status != runs.CellSkipped {
		t.Errorf("died matrix = %+v", m)
	}
	got, _ = s.Run(ctx, "empty")
	if got.Status != runs.StatusInterrupted || got.OverallScore != nil || got.TotalTokens != 0 || got.CompletedAt == nil || *got.CompletedAt != got.StartedAt {
		t.Errorf("empty = %+v", got)
	}
	if got, _ := s.Run(ctx, "fine"); !reflect.DeepEqual(got, fine) {
		t.Errorf("fine = %+v, want %+v", got, fine)
	}
	if n, err := s.MarkInterrupted(ctx); err != nil || n != 0 {
		t.Errorf("second MarkInterrupted: %d %v", n, err)
	}
}

func TestNow(t *testing.T) {
	t.Parallel()
	now := runs.Now()
	ts, err := time.Parse(harness.TimeLayout, now)
	if err != nil || time.Since(ts) > time.Minute || time.Since(ts) < -time.Second {
		t.Errorf("Now() = %q", now)
	}
}

func ptr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestConcurrentCreateRunNumbersRunsOnce: runs created at once each get a
// number of their own (PostgreSQL has no single writer to serialise them).
func TestConcurrentCreateRunNumbersRunsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = s.CreateRun(ctx, newInfo(fmt.Sprintf("r%d", i)), cells) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seqs, err := runs.RunSeqs(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for i, seq := range seqs {
		if seq != int64(i+1) {
			t.Fatalf("run numbers = %v, want 1..%d", seqs, n)
		}
	}
}
