package llm

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestKindsStream: a streamed answer is the answer a request without
// streaming gets (text, tool calls, usage), with the time to its first
// token.
func TestKindsStream(t *testing.T) {
	weather := harness.FunctionDef{Name: "get_weather", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}
	eachKind(t, llmtest.Options{Answers: map[string]string{"capital": "The capital of France is Paris, a city on the Seine."}}, Options{},
		func(t *testing.T, c *Client, srv *llmtest.Server) {
			for _, req := range []*harness.ChatRequest{
				ask("What is the capital of France?"),
				{Messages: []harness.Message{userMsg("What's the weather in Lisbon?")}, Tools: []harness.FunctionDef{weather}},
			} {
				plain, err := c.Chat(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				sreq := *req
				sreq.Stream = true
				streamed, err := c.Chat(context.Background(), &sreq)
				if err != nil {
					t.Fatal(err)
				}
				if streamed.TTFT <= 0 || plain.TTFT != 0 {
					t.Errorf("TTFT streamed %v, plain %v", streamed.TTFT, plain.TTFT)
				}
				streamed.TTFT = 0
				// Call ids are the fake's per request.
				for i := range streamed.Message.ToolCalls {
					if streamed.Message.ToolCalls[i].ID == "" {
						t.Errorf("a streamed tool call has no id")
					}
					streamed.Message.ToolCalls[i].ID, plain.Message.ToolCalls[i].ID = "", ""
				}
				if !reflect.DeepEqual(streamed, plain) {
					t.Errorf("streamed %+v\nplain    %+v", streamed, plain)
				}
			}
		})
}

// TestKindsBrokenStreams: a stream whose event does not parse, or that
// stops before its end, is a malformed answer, retried, never half an
// answer taken for the whole.
func TestKindsBrokenStreams(t *testing.T) {
	for name, opts := range map[string]llmtest.Options{
		"malformed event": {Garbage: llmtest.Schedule{Every: 1}},
		"cut short":       {CutStreams: llmtest.Schedule{Every: 1}},
	} {
		t.Run(name, func(t *testing.T) {
			eachKind(t, opts, Options{MaxRetries: 1}, func(t *testing.T, c *Client, srv *llmtest.Server) {
				req := ask("What is the capital of France? Answer in a few words please.")
				req.Stream = true
				resp, err := c.Chat(context.Background(), req)
				var e *Error
				if !errors.As(err, &e) || e.Attempts != 2 {
					t.Fatalf("got %+v, %v; want an error after 2 attempts", resp, err)
				}
				if !errors.Is(err, ErrMalformedResponse) && name == "malformed event" {
					t.Fatalf("err %v; want ErrMalformedResponse", err)
				}
				t.Logf("%v", err)
			})
		})
	}
}
