package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
)

// Bounds of a knowledge-base search.
const (
	// MaxKBQueryBytes is the longest query search-kb accepts, in bytes.
	MaxKBQueryBytes = 1000
	// DefaultKBSearchK is how many chunks search-kb returns when k is
	// not given; MaxKBSearchK the most it returns.
	DefaultKBSearchK = 5
	MaxKBSearchK     = 50
)

// kbSearcher is what the knowledge-base search needs of the agent service.
type kbSearcher interface {
	SearchKB(ctx context.Context, agentID, query string, k int) (retrieval.SearchResult, error)
}

var _ kbSearcher = (*agent.Service)(nil)

type kbSearchHandler struct {
	problems
	kb kbSearcher
}

type kbSearchInput struct {
	AgentID string `path:"agent_id" doc:"Agent id."`
	Q       string `query:"q" doc:"The question or keywords, as a user would write them: not blank, at most 1000 bytes of UTF-8 without NUL."`
	K       int    `query:"k" default:"5" minimum:"1" maximum:"50" doc:"How many chunks to return."`
}

// apiKBSearchHit is a chunk a knowledge-base search found.
type apiKBSearchHit struct {
	File       string   `json:"file" doc:"The knowledge-base file the chunk is from."`
	Chunk      int      `json:"chunk" doc:"The chunk's number in that file, from 0 (the model sees it as part chunk+1)."`
	Headings   []string `json:"headings" doc:"The heading path of the chunk's section, outermost first; empty before a file's first heading."`
	Page       int      `json:"page,omitempty" doc:"The PDF page the chunk is on, from 1; absent for other formats."`
	Text       string   `json:"text" doc:"The chunk's text, as the model would be given it (plain text, never markup to render)."`
	Score      float64  `json:"score" doc:"The chunk's score, higher is better: its BM25 score, or its fused score when mode is hybrid."`
	BM25Rank   *int     `json:"bm25_rank" doc:"The chunk's place in the keyword (BM25) ranking, from 1; null when no word of the query is in it."`
	VectorRank *int     `json:"vector_rank" doc:"The chunk's place in the embeddings' ranking, from 1; null when the search used no embeddings (mode bm25)."`
}

// apiKBSearch is the answer of search-kb.
type apiKBSearch struct {
	Results  []apiKBSearchHit `json:"results" doc:"The best chunks, best first; empty when the agent has no knowledge base or nothing matches."`
	Mode     string           `json:"mode" enum:"bm25,hybrid" doc:"How the results were ranked: bm25 (keywords only) or hybrid (keywords and embeddings, fused by reciprocal rank)."`
	Fallback string           `json:"fallback,omitempty" doc:"Why a search meant to be hybrid was BM25 only (the embedding endpoint failed, say); absent when it was not."`
}

type kbSearchOutput struct {
	Body apiKBSearch
}

// registerKBSearch registers the knowledge-base search.
func registerKBSearch(api huma.API, kb kbSearcher, log *slog.Logger) {
	h := &kbSearchHandler{problems{log}, kb}
	register(api, huma.Operation{
		OperationID: "search-kb", Method: http.MethodGet, Path: "/api/agents/{agent_id}/kb/search",
		Summary: "Search an agent's knowledge base", Tags: []string{tagKB},
		Description: "What the agent would retrieve for a question: the k best chunks, best first, each with its text, " +
			"its score and its places in the keyword (BM25) and embeddings rankings, and how they were ranked (mode, " +
			"and fallback when embeddings were meant to be used but failed). An agent without a knowledge base gives no " +
			"result. 404 for an unknown agent; 422 for a q that is missing, blank, longer than 1000 bytes or holds a NUL " +
			"or invalid UTF-8, or a k out of 1..50. (This path takes the place of reading a knowledge-base file named " +
			"search: such a file is listed and used, but not read through read-kb-file.)",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
	}, h.search)
}

func (h *kbSearchHandler) search(ctx context.Context, in *kbSearchInput) (*kbSearchOutput, error) {
	ve := &harness.ValidationError{}
	switch {
	case strings.TrimSpace(in.Q) == "":
		ve.Add("q", "is required")
	case len(in.Q) > MaxKBQueryBytes:
		ve.Add("q", "is longer than %d bytes", MaxKBQueryBytes)
	default:
		harness.CheckText(ve, "q", in.Q)
	}
	if err := ve.Err(); err != nil {
		return nil, h.queryProblem(ctx, err)
	}
	res, err := h.kb.SearchKB(ctx, in.AgentID, in.Q, in.K)
	if err != nil {
		return nil, h.queryProblem(ctx, err)
	}
	out := &kbSearchOutput{Body: apiKBSearch{Results: make([]apiKBSearchHit, len(res.Results)), Mode: res.Mode, Fallback: res.Fallback}}
	if out.Body.Mode == "" {
		out.Body.Mode = retrieval.ModeBM25
	}
	for i, r := range res.Results {
		headings := r.Headings
		if headings == nil {
			headings = []string{}
		}
		out.Body.Results[i] = apiKBSearchHit{File: r.File, Chunk: r.Chunk, Headings: headings, Page: r.Page, Text: r.Text, Score: r.Score,
			BM25Rank: r.BM25Rank, VectorRank: r.VectorRank}
	}
	return out, nil
}
