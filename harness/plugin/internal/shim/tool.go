package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/gauntlet-eval/gauntlet/harness"
	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

// ToolPlugin is the go-plugin Plugin of tool plugins. Impl and Meta are
// set in the plugin process; the host leaves them empty.
type ToolPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl harness.Tool
	Meta Meta
}

var _ goplugin.GRPCPlugin = (*ToolPlugin)(nil)

// GRPCServer registers the Plugin and Tool services.
func (p *ToolPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	ts := &toolServer{impl: p.Impl}
	ps := newPluginServer(broker, func() (*pb.InfoResponse, error) {
		info, err := baseInfo(p.Meta, KindTool, nil, p.Impl)
		if err != nil {
			return nil, err
		}
		def, err := ts.definition()
		if err != nil {
			return nil, err
		}
		info.Tool = def
		return info, nil
	})
	pb.RegisterPluginServer(s, ps)
	pb.RegisterToolServer(s, ts)
	return nil
}

// GRPCClient returns a *ToolClient.
func (p *ToolPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &ToolClient{Conn: newConn(broker, cc), client: pb.NewToolClient(cc)}, nil
}

type toolServer struct {
	pb.UnimplementedToolServer
	impl harness.Tool
}

func (s *toolServer) definition() (*pb.FunctionDef, error) {
	def, err := protect("Definition", func() (harness.FunctionDef, error) { return s.impl.Definition(), nil })
	if err != nil {
		return nil, err
	}
	return functionToPB(def)
}

func (s *toolServer) Definition(ctx context.Context, _ *pb.DefinitionRequest) (*pb.FunctionDef, error) {
	def, err := s.definition()
	return def, ToStatus(err)
}

func (s *toolServer) Call(ctx context.Context, req *pb.CallRequest) (*pb.CallResponse, error) {
	treq := &harness.ToolCallRequest{CallID: req.GetCallId(), AgentID: req.GetAgentId(), UserID: req.GetUserId()}
	if req.GetArguments() != nil {
		treq.Arguments = json.RawMessage(req.GetArguments())
	}
	res, err := protect("Call", func() (*harness.ToolResult, error) { return s.impl.Call(ctx, treq) })
	if err != nil {
		return nil, ToStatus(err)
	}
	if res == nil {
		return nil, ToStatus(errors.New("tool returned neither a result nor an error"))
	}
	return &pb.CallResponse{Output: res.Output}, nil
}

// ToolClient is, in the host, a tool plugin's Tool service.
type ToolClient struct {
	*Conn
	client pb.ToolClient
}

// Definition asks the plugin for its tool's definition.
func (c *ToolClient) Definition(ctx context.Context) (harness.FunctionDef, error) {
	def, err := c.client.Definition(ctx, &pb.DefinitionRequest{})
	if err != nil {
		return harness.FunctionDef{}, FromStatus(err)
	}
	return functionFromPB(def)
}

// Call calls the tool in the plugin.
func (c *ToolClient) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, fmt.Errorf("call: nil request: %w", harness.ErrInvalid)
	}
	resp, err := c.client.Call(ctx, &pb.CallRequest{Arguments: req.Arguments, AgentId: req.AgentID, UserId: req.UserID, CallId: req.CallID})
	if err != nil {
		return nil, FromStatus(err)
	}
	out := &harness.ToolResult{}
	if len(resp.GetOutput()) > 0 {
		out.Output = json.RawMessage(resp.GetOutput())
	}
	return out, nil
}
