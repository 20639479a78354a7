package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// kbSearchBody is the answer of search-kb.
type kbSearchBody struct {
	Results []struct {
		File       string  `json:"file"`
		Chunk      int     `json:"chunk"`
		Text       string  `json:"text"`
		Score      float64 `json:"score"`
		BM25Rank   *int    `json:"bm25_rank"`
		VectorRank *int    `json:"vector_rank"`
	} `json:"results"`
	Mode     string `json:"mode"`
	Fallback string `json:"fallback"`
}

func (e *testEnv) searchKB(agentID, rawQuery string) kbSearchBody {
	e.t.Helper()
	var out kbSearchBody
	must(e.t, e.get("/api/agents/"+agentID+"/kb/search?"+rawQuery), http.StatusOK).decode(e.t, &out)
	return out
}

func TestKBSearch(t *testing.T) {
	t.Parallel()
	e := newAgentEnv(t, agentConfig{})
	e.createAgent("bot", "Answer from the knowledge base.")
	e.createAgent("empty", "No knowledge base.")
	must(t, e.post("/api/agents/bot/kb", map[string]any{"filename": "pets.md",
		"content": "# Pets\n\nThe office cat is called Biscuit. Biscuit sleeps on the printer."}), http.StatusCreated)
	must(t, e.post("/api/agents/bot/kb", map[string]any{"filename": "hours.md",
		"content": "# Opening hours\n\nThe shop opens at nine on weekdays and at ten on Saturdays."}), http.StatusCreated)
	must(t, e.post("/api/agents/bot/kb", map[string]any{"filename": "search",
		"content": "A file whose name is the search path: <b>never</b> markup."}), http.StatusCreated)

	t.Run("finds the matching chunk with its ranks", func(t *testing.T) {
		r := must(t, e.get("/api/agents/bot/kb/search?q="+url.QueryEscape("cat Biscuit")), http.StatusOK)
		m := r.object(t)
		for _, k := range []string{"results", "mode"} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %s in %s", k, r.body)
			}
		}
		hit := m["results"].([]any)[0].(map[string]any)
		for _, k := range []string{"file", "chunk", "text", "score", "bm25_rank", "vector_rank"} {
			if _, ok := hit[k]; !ok {
				t.Errorf("no %s in the first result %v", k, hit)
			}
		}
		var out kbSearchBody
		r.decode(t, &out)
		if out.Mode != "bm25" || out.Fallback != "" {
			t.Errorf("mode %q, fallback %q; want bm25 and none", out.Mode, out.Fallback)
		}
		if len(out.Results) == 0 {
			t.Fatal("no result")
		}
		h := out.Results[0]
		if h.File != "pets.md" || h.Chunk != 0 || !strings.Contains(h.Text, "Biscuit") || h.Score <= 0 {
			t.Errorf("result %+v", h)
		}
		if h.BM25Rank == nil || *h.BM25Rank != 1 || h.VectorRank != nil {
			t.Errorf("ranks bm25 %v, vector %v; want 1 and null (no embeddings)", h.BM25Rank, h.VectorRank)
		}
	})

	t.Run("k bounds the results, best first", func(t *testing.T) {
		q := "q=" + url.QueryEscape("the cat opens the shop")
		all := e.searchKB("bot", q+"&k=50")
		if len(all.Results) < 2 {
			t.Fatalf("%d results, want both files", len(all.Results))
		}
		for i, h := range all.Results {
			if h.BM25Rank == nil || *h.BM25Rank != i+1 {
				t.Errorf("result %d has bm25 rank %v", i, h.BM25Rank)
			}
			if i > 0 && h.Score > all.Results[i-1].Score {
				t.Errorf("result %d scores %v, above the one before (%v)", i, h.Score, all.Results[i-1].Score)
			}
		}
		if one := e.searchKB("bot", q+"&k=1"); len(one.Results) != 1 || one.Results[0].File != all.Results[0].File {
			t.Errorf("k=1 gave %+v, want the best of %+v", one.Results, all.Results)
		}
	})

	t.Run("text comes back as text", func(t *testing.T) {
		out := e.searchKB("bot", "q=markup")
		if len(out.Results) == 0 || out.Results[0].File != "search" || !strings.Contains(out.Results[0].Text, "<b>never</b>") {
			t.Errorf("results %+v", out.Results)
		}
	})

	t.Run("nothing matches: no result", func(t *testing.T) {
		if out := e.searchKB("bot", "q=zebra"); out.Results == nil || len(out.Results) != 0 || out.Mode != "bm25" {
			t.Errorf("answer %+v, want [] in mode bm25", out)
		}
	})

	t.Run("an agent without a knowledge base: no result", func(t *testing.T) {
		r := must(t, e.get("/api/agents/empty/kb/search?q=cat"), http.StatusOK)
		if !strings.Contains(string(r.body), `"results":[]`) {
			t.Errorf("answer %s, want an empty results array", r.body)
		}
	})

	t.Run("unknown agent is 404", func(t *testing.T) {
		mustProblem(t, e.get("/api/agents/ghost/kb/search?q=cat"), http.StatusNotFound)
	})

	t.Run("bad queries are 422", func(t *testing.T) {
		cases := []struct {
			name, query, location string
		}{
			{"q missing", "", "query.q"},
			{"q empty", "q=", "query.q"},
			{"q blank", "q=%20%20%09", "query.q"},
			{"q with NUL", "q=cat%00dog", "query.q"},
			{"q invalid UTF-8", "q=cat%FF", "query.q"},
			{"q too long", "q=" + strings.Repeat("a", 1001), "query.q"},
			{"k zero", "q=cat&k=0", "query.k"},
			{"k negative", "q=cat&k=-1", "query.k"},
			{"k too big", "q=cat&k=51", "query.k"},
			{"k not a number", "q=cat&k=two", "query.k"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				mustProblem(t, e.get("/api/agents/bot/kb/search?"+c.query), http.StatusUnprocessableEntity, c.location)
			})
		}
		// The longest query accepted.
		e.searchKB("bot", "q="+strings.Repeat("a", 1000))
		// A bad query is refused before the agent is looked up.
		mustProblem(t, e.get("/api/agents/ghost/kb/search?q="), http.StatusUnprocessableEntity, "query.q")
	})

	t.Run("the file named search is still listed", func(t *testing.T) {
		found := false
		for _, f := range e.kbList("bot") {
			found = found || f.Filename == "search"
		}
		if !found {
			t.Errorf("files %+v", e.kbList("bot"))
		}
	})
}
