package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gauntlet-eval/gauntlet/harness"
	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

// ChannelPlugin is the go-plugin Plugin of channel plugins. Impl and Meta
// are set in the plugin process; the host leaves them empty.
type ChannelPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl harness.Channel
	Meta Meta
}

var _ goplugin.GRPCPlugin = (*ChannelPlugin)(nil)

// GRPCServer registers the Plugin and Channel services.
func (p *ChannelPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	var caps []string
	if _, ok := p.Impl.(harness.ChannelConfigValidator); ok {
		caps = append(caps, CapValidateConfig)
	}
	if _, ok := p.Impl.(harness.Receiver); ok {
		caps = append(caps, CapReceive)
	}
	ps := newPluginServer(broker, func() (*pb.InfoResponse, error) {
		return baseInfo(p.Meta, KindChannel, caps, p.Impl)
	})
	pb.RegisterPluginServer(s, ps)
	pb.RegisterChannelServer(s, &channelServer{impl: p.Impl, ps: ps})
	return nil
}

// GRPCClient returns a *ChannelClient.
func (p *ChannelPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &ChannelClient{Conn: newConn(broker, cc), client: pb.NewChannelClient(cc)}, nil
}

type channelServer struct {
	pb.UnimplementedChannelServer
	impl harness.Channel
	ps   *pluginServer
}

func (s *channelServer) Run(stream grpc.BidiStreamingServer[pb.RunRequest, pb.RunEvent]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return ToStatus(fmt.Errorf("run: the first message must be start: %w", harness.ErrInvalid))
	}
	cfg, err := channelFromPB(start.GetChannel())
	if err != nil {
		return ToStatus(fmt.Errorf("run: %v: %w", err, harness.ErrInvalid))
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	// The host stops the channel by sending stop or half-closing the
	// stream; either (or the call's end) cancels Run's context.
	go func() {
		defer cancel()
		for {
			msg, err := stream.Recv()
			if err != nil || msg.GetStop() != nil {
				return
			}
		}
	}()
	run := &harness.ChannelRun{Channel: cfg, Host: s.ps.host(start.GetHostRef())}
	_, err = protect("Run", func() (struct{}, error) { return struct{}{}, s.impl.Run(ctx, run) })
	return ToStatus(err)
}

func (s *channelServer) ValidateConfig(ctx context.Context, req *pb.ValidateChannelConfigRequest) (*pb.ValidateChannelConfigResponse, error) {
	v, ok := s.impl.(harness.ChannelConfigValidator)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the channel does not validate its config")
	}
	cfg, err := decodeMap(req.GetConfigJson())
	if err != nil {
		return nil, ToStatus(harness.Invalid("", "is not a JSON object: %v", err))
	}
	_, err = protect("ValidateChannelConfig", func() (struct{}, error) { return struct{}{}, v.ValidateChannelConfig(cfg) })
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.ValidateChannelConfigResponse{}, nil
}

func (s *channelServer) Receive(ctx context.Context, req *pb.ReceiveRequest) (*pb.ReceiveResponse, error) {
	recv, ok := s.impl.(harness.Receiver)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the channel does not receive pushed requests")
	}
	cfg, err := channelFromPB(req.GetChannel())
	if err != nil {
		return nil, ToStatus(fmt.Errorf("receive: %v: %w", err, harness.ErrInvalid))
	}
	run := &harness.ChannelRun{Channel: cfg, Host: s.ps.host(req.GetHostRef())}
	in := &harness.InboundRequest{Body: req.GetBody(), Header: headerFromPB(req.GetHeader())}
	resp, err := protect("Receive", func() (*harness.InboundResponse, error) { return recv.Receive(ctx, run, in) })
	if err != nil {
		return nil, ToStatus(err)
	}
	out := &pb.ReceiveResponse{}
	if resp == nil {
		return out, nil
	}
	out.Status = int32(resp.Status)
	if resp.Body != nil {
		if out.BodyJson, err = json.Marshal(resp.Body); err != nil {
			return nil, ToStatus(fmt.Errorf("receive: response body is not JSON: %w", err))
		}
	}
	return out, nil
}

// ChannelClient is, in the host, a channel plugin's Channel service.
type ChannelClient struct {
	*Conn
	client pb.ChannelClient
}

// Run runs the channel in the plugin until ctx is done or the plugin's
// Run returns. run.Host is served to the plugin while the call lasts. On
// cancellation the plugin is asked to stop and given up to grace to
// return before its call is cancelled; Run then returns nil.
func (c *ChannelClient) Run(ctx context.Context, run *harness.ChannelRun, grace time.Duration) error {
	cfg, err := channelToPB(run.Channel)
	if err != nil {
		return fmt.Errorf("run: %v: %w", err, harness.ErrInvalid)
	}
	ref, release := c.cb.addHost(run.Host)
	defer release()
	// The stream outlives ctx by the stop grace, so that the plugin's Run
	// can wind down (and still reach the host) before the call ends.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stream, err := c.client.Run(sctx)
	if err != nil {
		return FromStatus(err)
	}
	done := make(chan error, 1)
	if err := stream.Send(&pb.RunRequest{Msg: &pb.RunRequest_Start{Start: &pb.RunStart{Channel: cfg, HostRef: ref}}}); err != nil {
		// The call has ended already: its status is the real error.
		_, err = stream.Recv()
		return endOfRun(err)
	}
	go func() {
		for {
			if _, err := stream.Recv(); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if ctx.Err() != nil {
			return nil
		}
		return endOfRun(err)
	case <-ctx.Done():
	}
	_ = stream.Send(&pb.RunRequest{Msg: &pb.RunRequest_Stop{Stop: &pb.RunStop{}}})
	_ = stream.CloseSend()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		cancel()
		<-done
	}
	return nil
}

// endOfRun is the error a Run stream ended with: nil for a clean end.
func endOfRun(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return FromStatus(err)
}

// ValidateConfig checks a channel record's config in the plugin. It
// returns ErrUnimplemented when the plugin's channel has no such check.
func (c *ChannelClient) ValidateConfig(ctx context.Context, config map[string]any) error {
	b, err := encodeMap(config)
	if err != nil {
		return harness.Invalid("", "is not JSON: %v", err)
	}
	_, err = c.client.ValidateConfig(ctx, &pb.ValidateChannelConfigRequest{ConfigJson: b})
	if unimplemented(err) {
		return ErrUnimplemented
	}
	return FromStatus(err)
}

// Receive delivers a pushed request to the channel in the plugin; run.Host
// is served to the plugin while the call lasts. It returns
// ErrUnimplemented when the plugin's channel is not a receiver.
func (c *ChannelClient) Receive(ctx context.Context, run *harness.ChannelRun, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	cfg, err := channelToPB(run.Channel)
	if err != nil {
		return nil, fmt.Errorf("receive: %v: %w", err, harness.ErrInvalid)
	}
	ref, release := c.cb.addHost(run.Host)
	defer release()
	resp, err := c.client.Receive(ctx, &pb.ReceiveRequest{Channel: cfg, HostRef: ref, Body: req.Body, Header: headerToPB(req.Header)})
	if unimplemented(err) {
		return nil, ErrUnimplemented
	}
	if err != nil {
		return nil, FromStatus(err)
	}
	out := &harness.InboundResponse{Status: int(resp.GetStatus())}
	if len(resp.GetBodyJson()) > 0 {
		out.Body = json.RawMessage(resp.GetBodyJson())
	}
	return out, nil
}
