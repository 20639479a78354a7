package shim

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gauntlet-eval/gauntlet/harness"
	pb "github.com/gauntlet-eval/gauntlet/harness/plugin/proto"
)

// encodeMap encodes a free-form object as JSON; nil stays empty.
func encodeMap(m map[string]any) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return json.Marshal(m)
}

func decodeMap(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func usageToPB(u harness.Usage) *pb.Usage {
	return &pb.Usage{PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens), TotalTokens: int64(u.TotalTokens)}
}

func usageFromPB(u *pb.Usage) harness.Usage {
	return harness.Usage{PromptTokens: int(u.GetPromptTokens()), CompletionTokens: int(u.GetCompletionTokens()), TotalTokens: int(u.GetTotalTokens())}
}

func toolCallsToPB(calls []harness.ToolCall) []*pb.ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]*pb.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = &pb.ToolCall{Id: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	return out
}

func toolCallsFromPB(calls []*pb.ToolCall) []harness.ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]harness.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = harness.ToolCall{ID: c.GetId(), Name: c.GetName(), Arguments: c.GetArguments()}
	}
	return out
}

func messageToPB(m harness.Message) *pb.Message {
	return &pb.Message{Role: m.Role, Content: m.Content, ToolCalls: toolCallsToPB(m.ToolCalls), ToolCallId: m.ToolCallID}
}

func messageFromPB(m *pb.Message) harness.Message {
	return harness.Message{Role: m.GetRole(), Content: m.GetContent(), ToolCalls: toolCallsFromPB(m.GetToolCalls()), ToolCallID: m.GetToolCallId()}
}

func messagesToPB(msgs []harness.Message) []*pb.Message {
	if msgs == nil {
		return nil
	}
	out := make([]*pb.Message, len(msgs))
	for i, m := range msgs {
		out[i] = messageToPB(m)
	}
	return out
}

func messagesFromPB(msgs []*pb.Message) []harness.Message {
	if msgs == nil {
		return nil
	}
	out := make([]harness.Message, len(msgs))
	for i, m := range msgs {
		out[i] = messageFromPB(m)
	}
	return out
}

func functionToPB(f harness.FunctionDef) (*pb.FunctionDef, error) {
	params, err := encodeMap(f.Parameters)
	if err != nil {
		return nil, fmt.Errorf("function %s: parameters: %w", f.Name, err)
	}
	return &pb.FunctionDef{Name: f.Name, Description: f.Description, ParametersJson: params}, nil
}

func functionFromPB(f *pb.FunctionDef) (harness.FunctionDef, error) {
	params, err := decodeMap(f.GetParametersJson())
	if err != nil {
		return harness.FunctionDef{}, fmt.Errorf("function %s: parameters: %w", f.GetName(), err)
	}
	return harness.FunctionDef{Name: f.GetName(), Description: f.GetDescription(), Parameters: params}, nil
}

func testToPB(t harness.Test) (*pb.Test, error) {
	args, err := encodeMap(t.Expected.Arguments)
	if err != nil {
		return nil, fmt.Errorf("test %s: expected.arguments: %w", t.ID, err)
	}
	trajectory, err := encodeTrajectory(t.Expected.Trajectory)
	if err != nil {
		return nil, fmt.Errorf("test %s: expected.trajectory: %w", t.ID, err)
	}
	return &pb.Test{
		Id: t.ID, DomainId: t.DomainID, Level: int64(t.Level), Name: t.Name, Prompt: t.Prompt,
		Expected: &pb.Expected{
			Answer: t.Expected.Answer, Type: t.Expected.Type, Tolerance: t.Expected.Tolerance, ArgumentsJson: args,
			Sources: t.Expected.Sources, TrajectoryJson: trajectory,
		},
		EvaluatorId: t.EvaluatorID, Tools: t.Tools,
	}, nil
}

func testFromPB(t *pb.Test) (harness.Test, error) {
	args, err := decodeMap(t.GetExpected().GetArgumentsJson())
	if err != nil {
		return harness.Test{}, fmt.Errorf("test %s: expected.arguments: %w", t.GetId(), err)
	}
	trajectory, err := decodeTrajectory(t.GetExpected().GetTrajectoryJson())
	if err != nil {
		return harness.Test{}, fmt.Errorf("test %s: expected.trajectory: %w", t.GetId(), err)
	}
	return harness.Test{
		ID: t.GetId(), DomainID: t.GetDomainId(), Level: int(t.GetLevel()), Name: t.GetName(), Prompt: t.GetPrompt(),
		Expected: harness.Expected{
			Answer: t.GetExpected().GetAnswer(), Type: t.GetExpected().GetType(),
			Tolerance: t.GetExpected().Tolerance, Arguments: args, Sources: t.GetExpected().GetSources(),
			Trajectory: trajectory,
		},
		EvaluatorID: t.GetEvaluatorId(), Tools: t.GetTools(),
	}, nil
}

// encodeTrajectory encodes an expected trajectory as JSON; nil stays
// empty.
func encodeTrajectory(tr *harness.Trajectory) ([]byte, error) {
	if tr == nil {
		return nil, nil
	}
	return json.Marshal(tr)
}

func decodeTrajectory(b []byte) (*harness.Trajectory, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var tr harness.Trajectory
	if err := json.Unmarshal(b, &tr); err != nil {
		return nil, err
	}
	return &tr, nil
}

func sourcesToPB(in []harness.Source) []*pb.Source {
	if len(in) == 0 {
		return nil
	}
	out := make([]*pb.Source, len(in))
	for i, s := range in {
		out[i] = &pb.Source{File: s.File, Chunk: int64(s.Chunk), Score: s.Score}
	}
	return out
}

func sourcesFromPB(in []*pb.Source) []harness.Source {
	if len(in) == 0 {
		return nil
	}
	out := make([]harness.Source, len(in))
	for i, s := range in {
		out[i] = harness.Source{File: s.GetFile(), Chunk: int(s.GetChunk()), Score: s.GetScore()}
	}
	return out
}

func retrievalToPB(r *harness.Retrieval) *pb.Retrieval {
	if r == nil {
		return nil
	}
	return &pb.Retrieval{Sources: sourcesToPB(r.Sources), Text: r.Text, Mode: r.Mode, Fallback: r.Fallback}
}

func retrievalFromPB(r *pb.Retrieval) *harness.Retrieval {
	if r == nil {
		return nil
	}
	return &harness.Retrieval{Sources: sourcesFromPB(r.GetSources()), Text: r.GetText(), Mode: r.GetMode(), Fallback: r.GetFallback()}
}

func evaluatorToPB(e harness.EvaluatorConfig) (*pb.EvaluatorConfig, error) {
	cfg, err := encodeMap(e.Config)
	if err != nil {
		return nil, fmt.Errorf("evaluator %s: config: %w", e.ID, err)
	}
	return &pb.EvaluatorConfig{
		Id: e.ID, Name: e.Name, Description: e.Description, Type: e.Type,
		ExtractionRegex: e.ExtractionRegex, UsesPass2: e.UsesPass2, ConfigJson: cfg,
	}, nil
}

func evaluatorFromPB(e *pb.EvaluatorConfig) (harness.EvaluatorConfig, error) {
	cfg, err := decodeMap(e.GetConfigJson())
	if err != nil {
		return harness.EvaluatorConfig{}, fmt.Errorf("evaluator %s: config: %w", e.GetId(), err)
	}
	return harness.EvaluatorConfig{
		ID: e.GetId(), Name: e.GetName(), Description: e.GetDescription(), Type: e.GetType(),
		ExtractionRegex: e.GetExtractionRegex(), UsesPass2: e.GetUsesPass2(), Config: cfg,
	}, nil
}

func channelToPB(c harness.ChannelConfig) (*pb.ChannelConfig, error) {
	cfg, err := encodeMap(c.Config)
	if err != nil {
		return nil, fmt.Errorf("channel %s: config: %w", c.ID, err)
	}
	return &pb.ChannelConfig{
		Id: c.ID, AgentId: c.AgentID, Type: c.Type, Name: c.Name, ConfigJson: cfg,
		Status: string(c.Status), LastError: c.LastError, CreatedAt: c.CreatedAt,
	}, nil
}

func channelFromPB(c *pb.ChannelConfig) (harness.ChannelConfig, error) {
	cfg, err := decodeMap(c.GetConfigJson())
	if err != nil {
		return harness.ChannelConfig{}, fmt.Errorf("channel %s: config: %w", c.GetId(), err)
	}
	return harness.ChannelConfig{
		ID: c.GetId(), AgentID: c.GetAgentId(), Type: c.GetType(), Name: c.GetName(), Config: cfg,
		Status: harness.ChannelStatus(c.GetStatus()), LastError: c.GetLastError(), CreatedAt: c.GetCreatedAt(),
	}, nil
}

func headerToPB(h http.Header) map[string]*pb.HeaderValues {
	if h == nil {
		return nil
	}
	out := make(map[string]*pb.HeaderValues, len(h))
	for k, v := range h {
		out[k] = &pb.HeaderValues{Values: v}
	}
	return out
}

func headerFromPB(h map[string]*pb.HeaderValues) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, v := range h {
		out[k] = v.GetValues()
	}
	return out
}

func chatRequestToPB(ref uint64, r *harness.ChatRequest) (*pb.ChatRequest, error) {
	out := &pb.ChatRequest{
		ModelRef: ref, Model: r.Model, Messages: messagesToPB(r.Messages),
		Temperature: r.Temperature, MaxTokens: int64(r.MaxTokens),
	}
	for _, t := range r.Tools {
		f, err := functionToPB(t)
		if err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, f)
	}
	return out, nil
}

func chatRequestFromPB(r *pb.ChatRequest) (*harness.ChatRequest, error) {
	out := &harness.ChatRequest{
		Model: r.GetModel(), Messages: messagesFromPB(r.GetMessages()),
		Temperature: r.Temperature, MaxTokens: int(r.GetMaxTokens()),
	}
	for _, t := range r.GetTools() {
		f, err := functionFromPB(t)
		if err != nil {
			return nil, err
		}
		out.Tools = append(out.Tools, f)
	}
	return out, nil
}

func chatResponseToPB(r *harness.ChatResponse) *pb.ChatResponse {
	return &pb.ChatResponse{Message: messageToPB(r.Message), Usage: usageToPB(r.Usage), Model: r.Model, FinishReason: r.FinishReason}
}

func chatResponseFromPB(r *pb.ChatResponse) *harness.ChatResponse {
	return &harness.ChatResponse{
		Message: messageFromPB(r.GetMessage()), Usage: usageFromPB(r.GetUsage()),
		Model: r.GetModel(), FinishReason: r.GetFinishReason(),
	}
}
