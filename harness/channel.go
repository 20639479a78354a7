package harness

import (
	"context"
	"errors"
	"net/http"
)

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
	// Sources are the knowledge-base chunks the agent was given with the
	// message, best first; empty when its knowledge base gave nothing. A
	// channel may show them with the reply (a plugin channel's host
	// reports them too).
	Sources []Source
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
	// AgentName is the name of the agent the channel speaks for, for the
	// channel's own messages (a greeting); empty when unknown.
	AgentName string
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

// InboundRequest is an HTTP request pushed to a channel, such as a
// webhook delivery to POST /api/channels/{channel_id}/webhook.
type InboundRequest struct {
	Body   []byte
	Header http.Header
}

// InboundResponse is what the HTTP caller of an inbound request gets:
// Status (default 200) and a JSON body.
type InboundResponse struct {
	Status int
	Body   any
}

// Receiver is an optional Channel capability: the channel receives
// messages pushed to it over HTTP instead of (or as well as) fetching them
// in Run. The server calls Receive for POST /api/channels/{id}/webhook
// while the channel is running. An error wrapping ErrInvalid is answered
// 422, ErrUnauthorized 401.
type Receiver interface {
	Receive(ctx context.Context, run *ChannelRun, req *InboundRequest) (*InboundResponse, error)
}

// ErrUnauthorized reports an inbound request whose signature or credentials
// are missing or wrong.
var ErrUnauthorized = errors.New("unauthorized")
