package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gauntlet-eval/gauntlet/harness"
	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

// EvaluatorPlugin is the go-plugin Plugin of evaluator plugins. Impl and
// Meta are set in the plugin process; the host leaves them empty.
type EvaluatorPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	Impl harness.Evaluator
	Meta Meta
}

var _ goplugin.GRPCPlugin = (*EvaluatorPlugin)(nil)

// GRPCServer registers the Plugin and Evaluator services.
func (p *EvaluatorPlugin) GRPCServer(broker *goplugin.GRPCBroker, s *grpc.Server) error {
	var caps []string
	if _, ok := p.Impl.(harness.ConfigValidator); ok {
		caps = append(caps, CapValidateConfig)
	}
	ps := newPluginServer(broker, func() (*pb.InfoResponse, error) {
		return baseInfo(p.Meta, KindEvaluator, caps, p.Impl)
	})
	pb.RegisterPluginServer(s, ps)
	pb.RegisterEvaluatorServer(s, &evaluatorServer{impl: p.Impl, ps: ps})
	return nil
}

// GRPCClient returns an *EvaluatorClient.
func (p *EvaluatorPlugin) GRPCClient(_ context.Context, broker *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &EvaluatorClient{Conn: newConn(broker, cc), client: pb.NewEvaluatorClient(cc)}, nil
}

type evaluatorServer struct {
	pb.UnimplementedEvaluatorServer
	impl harness.Evaluator
	ps   *pluginServer
}

func (s *evaluatorServer) Evaluate(ctx context.Context, req *pb.EvaluateRequest) (*pb.EvaluateResponse, error) {
	test, err := testFromPB(req.GetTest())
	if err != nil {
		return nil, ToStatus(fmt.Errorf("%v: %w", err, harness.ErrInvalid))
	}
	cfg, err := evaluatorFromPB(req.GetEvaluator())
	if err != nil {
		return nil, ToStatus(fmt.Errorf("%v: %w", err, harness.ErrInvalid))
	}
	ereq := &harness.EvalRequest{
		Test: test, Evaluator: cfg, SystemPrompt: req.GetSystemPrompt(), Response: req.GetResponse(),
		Messages: messagesFromPB(req.GetMessages()), ToolCalls: toolCallsFromPB(req.GetToolCalls()),
		Client: s.ps.model(req.GetModelRef()), Model: req.GetModelName(), Retrieval: retrievalFromPB(req.GetRetrieval()),
	}
	res, err := protect("Evaluate", func() (*harness.EvalResult, error) { return s.impl.Evaluate(ctx, ereq) })
	if err != nil {
		return nil, ToStatus(err)
	}
	if res == nil {
		return nil, ToStatus(errors.New("evaluator returned neither a result nor an error"))
	}
	details, err := encodeMap(res.Details)
	if err != nil {
		return nil, ToStatus(fmt.Errorf("evaluator details are not JSON: %w", err))
	}
	return &pb.EvaluateResponse{Score: res.Score, Passed: res.Passed, DetailsJson: details, Usage: usageToPB(res.Usage)}, nil
}

func (s *evaluatorServer) ValidateConfig(ctx context.Context, req *pb.ValidateConfigRequest) (*pb.ValidateConfigResponse, error) {
	cv, ok := s.impl.(harness.ConfigValidator)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "the evaluator does not validate its config")
	}
	cfg, err := evaluatorFromPB(req.GetEvaluator())
	if err != nil {
		return nil, ToStatus(fmt.Errorf("%v: %w", err, harness.ErrInvalid))
	}
	_, err = protect("ValidateConfig", func() (struct{}, error) { return struct{}{}, cv.ValidateConfig(cfg) })
	if err != nil {
		return nil, ToStatus(err)
	}
	return &pb.ValidateConfigResponse{}, nil
}

// EvaluatorClient is, in the host, an evaluator plugin's Evaluator service.
type EvaluatorClient struct {
	*Conn
	client pb.EvaluatorClient
}

// Evaluate scores a response in the plugin. req.Model, when set, is
// served to the plugin for the duration of the call.
func (c *EvaluatorClient) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("evaluate: nil request: %w", harness.ErrInvalid)
	}
	test, err := testToPB(req.Test)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %v: %w", err, harness.ErrInvalid)
	}
	cfg, err := evaluatorToPB(req.Evaluator)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %v: %w", err, harness.ErrInvalid)
	}
	preq := &pb.EvaluateRequest{
		Test: test, Evaluator: cfg, SystemPrompt: req.SystemPrompt, Response: req.Response,
		Messages: messagesToPB(req.Messages), ToolCalls: toolCallsToPB(req.ToolCalls), ModelName: req.Model,
		Retrieval: retrievalToPB(req.Retrieval),
	}
	if req.Client != nil {
		ref, release := c.cb.addModel(req.Client)
		defer release()
		preq.ModelRef = ref
	}
	resp, err := c.client.Evaluate(ctx, preq)
	if err != nil {
		return nil, FromStatus(err)
	}
	res := &harness.EvalResult{Score: resp.GetScore(), Passed: resp.GetPassed(), Usage: usageFromPB(resp.GetUsage())}
	if len(resp.GetDetailsJson()) > 0 {
		if err := json.Unmarshal(resp.GetDetailsJson(), &res.Details); err != nil {
			return nil, fmt.Errorf("evaluate: details from the plugin: %w", err)
		}
	}
	return res, nil
}

// ValidateConfig checks an evaluator record in the plugin. It returns
// ErrUnimplemented when the plugin's evaluator has no such check.
func (c *EvaluatorClient) ValidateConfig(ctx context.Context, cfg harness.EvaluatorConfig) error {
	pcfg, err := evaluatorToPB(cfg)
	if err != nil {
		return harness.Invalid("config", "is not JSON: %v", err)
	}
	_, err = c.client.ValidateConfig(ctx, &pb.ValidateConfigRequest{Evaluator: pcfg})
	if unimplemented(err) {
		return ErrUnimplemented
	}
	return FromStatus(err)
}
