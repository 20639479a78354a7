package agent

import (
	"context"
	"io"
	"path/filepath"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

// The names below keep the Service's earlier API working: each is the
// same thing as a name of the type or package that now owns it (Service.KB,
// Service.Retriever, Service.Supervisor, package kb), which new code
// should use.

// KBFile is a knowledge-base file: kb.File.
type KBFile = kb.File

// MaxKBFileBytes and MaxKBNameBytes are kb.MaxFileBytes and
// kb.MaxNameBytes.
const (
	MaxKBFileBytes = kb.MaxFileBytes
	MaxKBNameBytes = kb.MaxNameBytes
)

// ErrTooLarge and ErrUnsupported are kb.ErrTooLarge and kb.ErrUnsupported
// (the same values: errors.Is matches either name).
var (
	ErrTooLarge    = kb.ErrTooLarge
	ErrUnsupported = kb.ErrUnsupported
)

// ValidKBName is kb.ValidName.
func ValidKBName(name string) error { return kb.ValidName(name) }

// RemoveStaleKBTemp is kb.RemoveStaleTemp over dataDir/kb, the knowledge
// bases of a Service whose Options.DataDir is dataDir.
func RemoveStaleKBTemp(dataDir string) ([]string, error) {
	return kb.RemoveStaleTemp(filepath.Join(dataDir, "kb"))
}

// KBList is s.KB().List.
func (s *Service) KBList(ctx context.Context, agentID string) ([]KBFile, error) {
	return s.kb.List(ctx, agentID)
}

// KBRead is s.KB().Read.
func (s *Service) KBRead(ctx context.Context, agentID, name string) (KBFile, error) {
	return s.kb.Read(ctx, agentID, name)
}

// KBWrite is s.KB().Write.
func (s *Service) KBWrite(ctx context.Context, agentID, name string, r io.Reader, mustCreate bool) (KBFile, error) {
	return s.kb.Write(ctx, agentID, name, r, mustCreate)
}

// KBDelete is s.KB().Delete.
func (s *Service) KBDelete(ctx context.Context, agentID, name string) error {
	return s.kb.Delete(ctx, agentID, name)
}

// Retrieve returns the knowledge-base text an agent's system message
// would hold for a user's message (s.Retriever().Context), after checking
// that the agent exists (else harness.ErrNotFound).
func (s *Service) Retrieve(ctx context.Context, agentID, query string) (string, error) {
	if _, err := loadAgent(ctx, s.db, agentID); err != nil {
		return "", err
	}
	return s.retriever.Context(ctx, agentID, query)
}

// Channels is s.Supervisor().List.
func (s *Service) Channels(ctx context.Context, agentID string) ([]harness.ChannelConfig, error) {
	return s.channels.List(ctx, agentID)
}

// Channel is s.Supervisor().Get.
func (s *Service) Channel(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error) {
	return s.channels.Get(ctx, agentID, channelID)
}

// CreateChannel is s.Supervisor().Create.
func (s *Service) CreateChannel(ctx context.Context, agentID string, c harness.ChannelConfig) (harness.ChannelConfig, error) {
	return s.channels.Create(ctx, agentID, c)
}

// UpdateChannel is s.Supervisor().Update.
func (s *Service) UpdateChannel(ctx context.Context, agentID, channelID string, apply func(*harness.ChannelConfig) error) (harness.ChannelConfig, error) {
	return s.channels.Update(ctx, agentID, channelID, apply)
}

// DeleteChannel is s.Supervisor().Delete.
func (s *Service) DeleteChannel(ctx context.Context, agentID, channelID string) error {
	return s.channels.Delete(ctx, agentID, channelID)
}

// StartChannel is s.Supervisor().Start.
func (s *Service) StartChannel(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error) {
	return s.channels.Start(ctx, agentID, channelID)
}

// StopChannel is s.Supervisor().Stop.
func (s *Service) StopChannel(ctx context.Context, agentID, channelID string) (harness.ChannelConfig, error) {
	return s.channels.Stop(ctx, agentID, channelID)
}

// Inbound is s.Supervisor().Inbound.
func (s *Service) Inbound(ctx context.Context, channelID string, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	return s.channels.Inbound(ctx, channelID, req)
}

// Resume is s.Supervisor().Resume: it starts the channels that were
// running when the process stopped.
func (s *Service) Resume(ctx context.Context) error { return s.channels.Resume(ctx) }

// Close is s.Supervisor().Close: it stops every channel; their desired
// states are kept for Resume. It does not close the database.
func (s *Service) Close() { s.channels.Close() }
