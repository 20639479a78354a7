package shim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gauntlet-eval/gauntlet/harness"
	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

// ProtocolVersion is the plugin protocol version this code speaks.
const ProtocolVersion = 1

// MaxMessageSize bounds one protocol message (a long conversation, a large
// tool output) in either direction.
const MaxMessageSize = 64 << 20

// Kind is what a plugin implements.
type Kind string

// The plugin kinds; each is also the name under which its go-plugin Plugin
// is dispensed.
const (
	KindEvaluator Kind = "evaluator"
	KindChannel   Kind = "channel"
	KindTool      Kind = "tool"
)

func (k Kind) toPB() pb.Kind {
	switch k {
	case KindEvaluator:
		return pb.Kind_KIND_EVALUATOR
	case KindChannel:
		return pb.Kind_KIND_CHANNEL
	case KindTool:
		return pb.Kind_KIND_TOOL
	}
	return pb.Kind_KIND_UNSPECIFIED
}

func kindFromPB(k pb.Kind) Kind {
	switch k {
	case pb.Kind_KIND_EVALUATOR:
		return KindEvaluator
	case pb.Kind_KIND_CHANNEL:
		return KindChannel
	case pb.Kind_KIND_TOOL:
		return KindTool
	}
	return ""
}

// Capabilities a plugin's implementation may have besides its kind's
// required interface.
const (
	// CapValidateConfig: harness.ConfigValidator (evaluators) or
	// harness.ChannelConfigValidator (channels).
	CapValidateConfig = "validate_config"
	// CapReceive: harness.Receiver (channels).
	CapReceive = "receive"
)

// Info is what a plugin reports about itself.
type Info struct {
	Name            string
	Version         string
	Kind            Kind
	ProtocolVersion int
	// Capabilities lists the optional interfaces the implementation has
	// (CapValidateConfig, CapReceive).
	Capabilities []string
	// Tool is a tool plugin's definition.
	Tool *harness.FunctionDef
	// SecretFields are the config keys the plugin declares secret
	// (harness.ConfigSecrets); nil when it declares nothing, empty and
	// non-nil when it declares that none is.
	SecretFields []string
}

// Has reports whether the plugin has a capability.
func (i *Info) Has(capability string) bool {
	for _, c := range i.Capabilities {
		if c == capability {
			return true
		}
	}
	return false
}

// Meta is what a plugin process says about itself in Info.
type Meta struct {
	Name    string
	Version string
}

// ErrUnimplemented is returned by a client method whose call the plugin's
// implementation does not support (an optional interface it lacks).
var ErrUnimplemented = errors.New("not implemented by the plugin")

func unimplemented(err error) bool { return status.Code(err) == codes.Unimplemented }

// protect runs an implementation's method, turning a panic into an error so
// that one bad input does not take the plugin process down.
func protect[T any](what string, f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("plugin: "+what+" panicked", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
			err = fmt.Errorf("%s panicked: %v", what, p)
		}
	}()
	return f()
}

// pluginServer serves the Plugin service in a plugin process and holds the
// connection to the host's callback services once Attach has made it.
type pluginServer struct {
	pb.UnimplementedPluginServer
	broker *goplugin.GRPCBroker
	info   func() (*pb.InfoResponse, error)

	mu sync.Mutex
	cb *grpc.ClientConn
}

func newPluginServer(broker *goplugin.GRPCBroker, info func() (*pb.InfoResponse, error)) *pluginServer {
	return &pluginServer{broker: broker, info: info}
}

// baseInfo is the Info every plugin gives; impl is the implementation,
// whose declared secret config keys (harness.ConfigSecrets) it reports.
func baseInfo(meta Meta, kind Kind, caps []string, impl any) (*pb.InfoResponse, error) {
	info := &pb.InfoResponse{
		Name: meta.Name, Version: meta.Version, Kind: kind.toPB(),
		ProtocolVersion: ProtocolVersion, Capabilities: caps,
	}
	fields, err := protect("SecretFields", func() ([]string, error) {
		fields, _ := harness.DeclaredSecrets(impl)
		return fields, nil
	})
	if err != nil {
		return nil, err
	}
	if fields != nil {
		info.SecretFields = &pb.SecretFields{Fields: fields}
	}
	return info, nil
}

func (s *pluginServer) Info(ctx context.Context, _ *pb.InfoRequest) (*pb.InfoResponse, error) {
	resp, err := s.info()
	return resp, ToStatus(err)
}

func (s *pluginServer) Attach(ctx context.Context, req *pb.AttachRequest) (*pb.AttachResponse, error) {
	conn, err := s.broker.Dial(req.GetCallbackBrokerId())
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "dial the host's callback services: %v", err)
	}
	s.mu.Lock()
	old := s.cb
	s.cb = conn
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return &pb.AttachResponse{}, nil
}

func (s *pluginServer) callbacks() *grpc.ClientConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cb
}

// model returns the run's model named by ref, or nil for ref 0.
func (s *pluginServer) model(ref uint64) harness.ChatModel {
	if ref == 0 {
		return nil
	}
	cc := s.callbacks()
	if cc == nil {
		return detachedModel{}
	}
	return &remoteModel{client: pb.NewModelClient(cc), ref: ref}
}

// host returns the agent named by ref.
func (s *pluginServer) host(ref uint64) harness.ChannelHost {
	cc := s.callbacks()
	if cc == nil || ref == 0 {
		return detachedHost{}
	}
	return &remoteHost{client: pb.NewChannelHostClient(cc), ref: ref}
}

// Conn is the host's side of one plugin process: the Plugin service and
// the callback services it serves to the plugin.
type Conn struct {
	broker *goplugin.GRPCBroker
	plugin pb.PluginClient
	cb     *callbacks
}

func newConn(broker *goplugin.GRPCBroker, cc *grpc.ClientConn) *Conn {
	return &Conn{broker: broker, plugin: pb.NewPluginClient(cc), cb: newCallbacks()}
}

// Info asks the plugin what it is.
func (c *Conn) Info(ctx context.Context) (*Info, error) {
	resp, err := c.plugin.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return nil, FromStatus(err)
	}
	info := &Info{
		Name: resp.GetName(), Version: resp.GetVersion(), Kind: kindFromPB(resp.GetKind()),
		ProtocolVersion: int(resp.GetProtocolVersion()), Capabilities: resp.GetCapabilities(),
	}
	if sf := resp.GetSecretFields(); sf != nil {
		info.SecretFields = append([]string{}, sf.GetFields()...)
	}
	if resp.Tool != nil {
		def, err := functionFromPB(resp.Tool)
		if err != nil {
			return nil, err
		}
		info.Tool = &def
	}
	return info, nil
}

// Attach starts the host's callback services on the broker and tells the
// plugin where they are. They are served until the plugin's client is
// closed. A plugin that does not call back (one written without the SDK
// may leave Attach out) answers UNIMPLEMENTED: Attach returns
// ErrUnimplemented then.
func (c *Conn) Attach(ctx context.Context) error {
	id := c.broker.NextId()
	go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(MaxMessageSize))...)
		pb.RegisterModelServer(s, modelServer{cb: c.cb})
		pb.RegisterChannelHostServer(s, hostServer{cb: c.cb})
		return s
	})
	if _, err := c.plugin.Attach(ctx, &pb.AttachRequest{CallbackBrokerId: id}); err != nil {
		if unimplemented(err) {
			return ErrUnimplemented
		}
		return FromStatus(err)
	}
	return nil
}
