package harness

import "context"

// InboundMessage is a message a channel received from a user.
type InboundMessage struct {
	// UserID identifies the sender, prefixed with the channel kind, such as
	// "telegram:12345".
	UserID string
	Text   string
}

// Reply is an agent's answer to an InboundMessage.
type Reply struct {
	Text string
}

// ChannelHost is what a running channel calls back into: the agent it
// serves.
type ChannelHost interface {
	// Chat sends a user's message to the agent and returns its reply.
	Chat(ctx context.Context, msg *InboundMessage) (*Reply, error)
	// Clear forgets a user's conversation with the agent.
	Clear(ctx context.Context, userID string) error
}

// ChannelRun is the channel record a Channel runs for, and its host.
type ChannelRun struct {
	Channel ChannelConfig
	Host    ChannelHost
}

// Channel connects an agent to a messaging service. Run blocks until ctx
// is cancelled or the channel fails for good; it returns nil on
// cancellation.
type Channel interface {
	Run(ctx context.Context, run *ChannelRun) error
}

// ChannelConfigValidator is an optional Channel capability: it checks a
// channel record's config before the record is stored.
type ChannelConfigValidator interface {
	ValidateChannelConfig(config map[string]any) error
}
