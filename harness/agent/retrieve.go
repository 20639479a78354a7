package agent

import (
	"context"

	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
)

// Retrieve returns the knowledge-base text an agent's system message
// would hold for a user's message (s.Retriever().Context), after checking
// that the agent exists (else harness.ErrNotFound).
func (s *Service) Retrieve(ctx context.Context, agentID, query string) (string, error) {
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return "", err
	}
	return s.retriever.Context(ctx, agentID, query)
}

// SearchKB returns the k chunks of an agent's knowledge base that best
// match query, with their ranks (s.Retriever().Search), after checking
// that the agent exists (else harness.ErrNotFound).
func (s *Service) SearchKB(ctx context.Context, agentID, query string, k int) (retrieval.SearchResult, error) {
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return retrieval.SearchResult{}, err
	}
	return s.retriever.Search(ctx, agentID, query, k)
}

// RetrievalInfo says how a chat reply's sources were found.
type RetrievalInfo struct {
	// Mode is "bm25" or "hybrid".
	Mode string `json:"mode"`
	// Fallback says why retrieval meant to be hybrid was BM25 only; ""
	// when it was not.
	Fallback string `json:"fallback,omitempty"`
}

// Close stops every channel (s.Supervisor().Close); their desired states
// are kept for Supervisor().Resume. It does not close the database.
func (s *Service) Close() { s.channels.Close() }
