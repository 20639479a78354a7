// Command minimal is a plugin written without the SDK, as one in another
// language would be: go-plugin's handshake and health service, the Plugin
// service without Attach (it never calls back), and an Evaluator whose
// Evaluate scores 1 when the response equals the expected answer and
// whose ValidateConfig is left out. Its errors carry no ErrorDetail.
package main

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

type plugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (plugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterPluginServer(s, info{})
	pb.RegisterEvaluatorServer(s, evaluator{})
	return nil
}

func (plugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

type info struct{ pb.UnimplementedPluginServer }

func (info) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	return &pb.InfoResponse{Name: "minimal", Version: "0.1.0", Kind: pb.Kind_KIND_EVALUATOR, ProtocolVersion: 1}, nil
}

type evaluator struct {
	pb.UnimplementedEvaluatorServer
}

func (evaluator) Evaluate(_ context.Context, req *pb.EvaluateRequest) (*pb.EvaluateResponse, error) {
	if req.GetResponse() == "bad" {
		return nil, status.Error(codes.InvalidArgument, "the response is bad")
	}
	if req.GetResponse() == req.GetTest().GetExpected().GetAnswer() {
		return &pb.EvaluateResponse{Score: 1, Passed: true}, nil
	}
	return &pb.EvaluateResponse{}, nil
}

func main() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion: 1, MagicCookieKey: "GAUNTLET_PLUGIN", MagicCookieValue: "5e6b2f0c8d4a4e1f9b7a3c2d1e0f6a5b",
		},
		VersionedPlugins: map[int]goplugin.PluginSet{1: {"evaluator": plugin{}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
	})
}
