package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// EvalTarget returns an agent as an evaluation runs it (see
// harness.AgentTarget): its definition now (record, tool ids, and a hash
// of each knowledge-base file), its model, its tools, and the builder of
// its system message, the one Chat uses. Nothing an evaluation does
// through the target is stored in the agent's conversations. An unknown
// agent gives an error wrapping harness.ErrNotFound.
//
// The system prompt, model and tools are those of now; the knowledge base
// is read when each system message is built, so it should not change
// while a run uses the target.
func (s *Service) EvalTarget(ctx context.Context, agentID string) (*harness.AgentTarget, error) {
	a, err := loadAgent(ctx, s.db, agentID)
	if err != nil {
		return nil, err
	}
	ids, err := s.toolIDs(ctx, s.db, agentID)
	if err != nil {
		return nil, err
	}
	tools, err := s.agentTools(ctx, agentID)
	if err != nil {
		return nil, fmt.Errorf("evaluate agent %s: %w", agentID, err)
	}
	docs, err := s.kb.Documents(agentID)
	if err != nil {
		return nil, fmt.Errorf("evaluate agent %s: %w", agentID, err)
	}
	def := harness.AgentDefinition{ID: a.ID, Name: a.Name, SystemPrompt: a.SystemPrompt, Model: a.Model, Tools: ids,
		KnowledgeBase: make([]harness.KBDocument, len(docs))}
	for i, d := range docs {
		sum := sha256.Sum256([]byte(d.Text))
		def.KnowledgeBase[i] = harness.KBDocument{File: d.Name, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(d.Text))}
	}
	return &harness.AgentTarget{
		Definition: def,
		Model:      s.modelOf(a),
		Tools:      tools,
		System: func(ctx context.Context, message string) (string, harness.Retrieval) {
			return s.systemMessage(ctx, a, message)
		},
	}, nil
}
