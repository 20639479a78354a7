package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
)

// fakeSearcher answers SearchKB with a fixed result or error, and records
// what it was asked.
type fakeSearcher struct {
	res      retrieval.SearchResult
	err      error
	gotQuery string
	gotK     int
}

func (f *fakeSearcher) SearchKB(_ context.Context, agentID, query string, k int) (retrieval.SearchResult, error) {
	f.gotQuery, f.gotK = query, k
	if agentID != "bot" {
		return retrieval.SearchResult{}, fmt.Errorf("agent %q: %w", agentID, harness.ErrNotFound)
	}
	return f.res, f.err
}

// TestKBSearchHandler checks what the end-to-end tests cannot reach while
// retrieval is BM25 only: a hybrid answer with both ranks (one of them
// null), a fallback, and the service's own errors.
func TestKBSearchHandler(t *testing.T) {
	t.Parallel()
	one, two := 1, 2
	f := &fakeSearcher{res: retrieval.SearchResult{Mode: retrieval.ModeHybrid, Results: []retrieval.Result{
		{File: "a.md", Chunk: 3, Text: "alpha", Score: 0.03, BM25Rank: &two, VectorRank: &one},
		{File: "b.pdf", Chunk: 0, Headings: []string{"Guide", "Setup"}, Page: 4, Text: "beta", Score: 0.02, VectorRank: &two},
	}}}
	api := newTestAPI(t)
	registerKBSearch(api, f, slog.New(slog.DiscardHandler))
	finishAPI(api)

	t.Run("a hybrid answer keeps both ranks, null when unranked", func(t *testing.T) {
		r := api.Get("/api/agents/bot/kb/search?q=alpha")
		if r.Code != http.StatusOK {
			t.Fatalf("status %d: %s", r.Code, r.Body)
		}
		var got map[string]any
		if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		want := `{"mode":"hybrid","results":[` +
			`{"bm25_rank":2,"chunk":3,"file":"a.md","headings":[],"score":0.03,"text":"alpha","vector_rank":1},` +
			`{"bm25_rank":null,"chunk":0,"file":"b.pdf","headings":["Guide","Setup"],"page":4,"score":0.02,"text":"beta","vector_rank":2}]}`
		delete(got, "$schema")
		if b, _ := json.Marshal(got); string(b) != want {
			t.Errorf("answer\n%s\nwant\n%s", b, want)
		}
		if f.gotQuery != "alpha" || f.gotK != 5 {
			t.Errorf("asked for %q, k %d; want alpha and the default 5", f.gotQuery, f.gotK)
		}
	})

	t.Run("a fallback is reported", func(t *testing.T) {
		f.res = retrieval.SearchResult{Mode: retrieval.ModeBM25, Fallback: "embedding endpoint: 503", Results: []retrieval.Result{}}
		r := api.Get("/api/agents/bot/kb/search?q=alpha&k=7")
		var got apiKBSearch
		if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil || r.Code != http.StatusOK {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if got.Mode != "bm25" || got.Fallback != "embedding endpoint: 503" || got.Results == nil || f.gotK != 7 {
			t.Errorf("answer %s (k %d)", r.Body, f.gotK)
		}
	})

	t.Run("the service's errors", func(t *testing.T) {
		decodeProblem(t, api.Get("/api/agents/ghost/kb/search?q=alpha"), http.StatusNotFound)
		f.err = harness.Invalid("q", "has no word to search for")
		p := decodeProblem(t, api.Get("/api/agents/bot/kb/search?q=alpha"), http.StatusUnprocessableEntity)
		if len(p.Errors) != 1 || p.Errors[0].Location != "query.q" {
			t.Errorf("problem %+v", p)
		}
		f.err = errors.New("disk on fire")
		decodeProblem(t, api.Get("/api/agents/bot/kb/search?q=alpha"), http.StatusInternalServerError)
	})
}
