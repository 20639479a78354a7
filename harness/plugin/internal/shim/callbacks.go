package shim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gauntlet-eval/gauntlet/harness"
	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

// callbacks are the host-side objects a plugin may call back into while a
// call is in progress: the run's model during an Evaluate, the agent during
// a channel's Run or Receive. Each is registered under a reference number
// that travels in the request, and removed when the call returns, so one
// long-lived broker connection serves every call.
type callbacks struct {
	mu     sync.Mutex
	next   uint64
	models map[uint64]harness.ChatModel
	hosts  map[uint64]harness.ChannelHost
}

func newCallbacks() *callbacks {
	return &callbacks{models: map[uint64]harness.ChatModel{}, hosts: map[uint64]harness.ChannelHost{}}
}

func add[T any](c *callbacks, m map[uint64]T, v T) (uint64, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	ref := c.next
	m[ref] = v
	return ref, func() {
		c.mu.Lock()
		delete(m, ref)
		c.mu.Unlock()
	}
}

func get[T any](c *callbacks, m map[uint64]T, ref uint64) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := m[ref]
	return v, ok
}

func (c *callbacks) addModel(m harness.ChatModel) (uint64, func()) { return add(c, c.models, m) }

func (c *callbacks) addHost(h harness.ChannelHost) (uint64, func()) { return add(c, c.hosts, h) }

// modelServer is the host's Model service.
type modelServer struct {
	pb.UnimplementedModelServer
	cb *callbacks
}

func (s modelServer) Chat(ctx context.Context, req *pb.ChatRequest) (*pb.ChatResponse, error) {
	m, ok := get(s.cb, s.cb.models, req.GetModelRef())
	if !ok {
		return nil, ToStatus(fmt.Errorf("model reference %d: the evaluation it belonged to has ended: %w", req.GetModelRef(), harness.ErrNotFound))
	}
	creq, err := chatRequestFromPB(req)
	if err != nil {
		return nil, ToStatus(fmt.Errorf("chat request: %v: %w", err, harness.ErrInvalid))
	}
	resp, err := m.Chat(ctx, creq)
	if err != nil {
		return nil, ToStatus(err)
	}
	if resp == nil {
		return nil, ToStatus(errors.New("model returned no response"))
	}
	return chatResponseToPB(resp), nil
}

// hostServer is the host's ChannelHost service.
type hostServer struct {
	pb.UnimplementedChannelHostServer
	cb *callbacks
}

func (s hostServer) lookup(ref uint64) (harness.ChannelHost, error) {
	h, ok := get(s.cb, s.cb.hosts, ref)
	if !ok || h == nil {
		return nil, ToStatus(fmt.Errorf("host reference %d: the channel run it belonged to has ended: %w", ref, harness.ErrNotFound))
	}
	return h, nil
}

func (s hostServer) Chat(ctx context.Context, req *pb.HostChatRequest) (*pb.HostChatResponse, error) {
	h, err := s.lookup(req.GetHostRef())
	if err != nil {
		return nil, err
	}
	reply, err := h.Chat(ctx, &harness.InboundMessage{UserID: req.GetUserId(), Text: req.GetText()})
	if err != nil {
		return nil, ToStatus(err)
	}
	if reply == nil {
		return &pb.HostChatResponse{}, nil
	}
	return &pb.HostChatResponse{Text: reply.Text, Sources: sourcesToPB(reply.Sources)}, nil
}

func (s hostServer) Clear(ctx context.Context, req *pb.HostClearRequest) (*pb.HostClearResponse, error) {
	h, err := s.lookup(req.GetHostRef())
	if err != nil {
		return nil, err
	}
	if err := h.Clear(ctx, req.GetUserId()); err != nil {
		return nil, ToStatus(err)
	}
	return &pb.HostClearResponse{}, nil
}

// remoteModel is, in a plugin process, the run's model served by the host.
type remoteModel struct {
	client pb.ModelClient
	ref    uint64
}

func (m *remoteModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("chat: nil request: %w", harness.ErrInvalid)
	}
	preq, err := chatRequestToPB(m.ref, req)
	if err != nil {
		return nil, fmt.Errorf("chat: %v: %w", err, harness.ErrInvalid)
	}
	resp, err := m.client.Chat(ctx, preq)
	if err != nil {
		return nil, FromStatus(err)
	}
	return chatResponseFromPB(resp), nil
}

// remoteHost is, in a plugin process, the agent a channel serves.
type remoteHost struct {
	client pb.ChannelHostClient
	ref    uint64
}

func (h *remoteHost) Chat(ctx context.Context, msg *harness.InboundMessage) (*harness.Reply, error) {
	if msg == nil {
		return nil, fmt.Errorf("chat: nil message: %w", harness.ErrInvalid)
	}
	resp, err := h.client.Chat(ctx, &pb.HostChatRequest{HostRef: h.ref, UserId: msg.UserID, Text: msg.Text})
	if err != nil {
		return nil, FromStatus(err)
	}
	return &harness.Reply{Text: resp.GetText(), Sources: sourcesFromPB(resp.GetSources())}, nil
}

func (h *remoteHost) Clear(ctx context.Context, userID string) error {
	_, err := h.client.Clear(ctx, &pb.HostClearRequest{HostRef: h.ref, UserId: userID})
	return FromStatus(err)
}

// errDetached stands in for the host's callback services when the host
// never attached them (a host that does not speak the protocol fully).
var errDetached = fmt.Errorf("the host's callback services are not attached: %w", ErrUnavailable)

type detachedModel struct{}

func (detachedModel) Chat(context.Context, *harness.ChatRequest) (*harness.ChatResponse, error) {
	return nil, errDetached
}

type detachedHost struct{}

func (detachedHost) Chat(context.Context, *harness.InboundMessage) (*harness.Reply, error) {
	return nil, errDetached
}

func (detachedHost) Clear(context.Context, string) error { return errDetached }
