package agent

import (
	"context"
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

// Close stops every channel (s.Supervisor().Close); their desired states
// are kept for Supervisor().Resume. It does not close the database.
func (s *Service) Close() { s.channels.Close() }
