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

// KBStatus returns the progress of the embeddings of an agent's
// knowledge base (s.Retriever().Status), starting them when some chunks
// lack a vector, after checking that the agent exists (else
// harness.ErrNotFound). It is nil when no embedding model is configured.
func (s *Service) KBStatus(ctx context.Context, agentID string) (*retrieval.Status, error) {
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return nil, err
	}
	return s.retriever.Status(agentID)
}

// EmbedAll queues the embedding of every agent's knowledge base, to be
// done in the background one agent at a time (see retrieval.Retriever.Kick):
// after a change of embedding model, the new vectors are built without
// waiting for each agent's next chat. A server calls it at start-up;
// without an embedding model it does nothing.
func (s *Service) EmbedAll(ctx context.Context) error {
	if s.retriever.EmbeddingModel() == "" {
		return nil
	}
	agents, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, a := range agents {
		s.retriever.Kick(a.ID)
	}
	return nil
}

// RetrievalInfo says how a chat reply's sources were found.
type RetrievalInfo struct {
	// Mode is "bm25" or "hybrid".
	Mode string `json:"mode"`
	// Fallback says why retrieval meant to be hybrid was BM25 only; ""
	// when it was not.
	Fallback string `json:"fallback,omitempty"`
}

// Close stops every channel (s.Supervisor().Close), whose desired states
// are kept for Supervisor().Resume, and the background embedding of the
// knowledge bases. It does not close the database.
func (s *Service) Close() {
	s.channels.Close()
	s.retriever.Close()
}
