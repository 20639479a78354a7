package llmtest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

func Example() {
	// A fake endpoint whose first request fails with a 500.
	srv := llmtest.NewServer(llmtest.Options{
		Latency:      5 * time.Millisecond,
		ServerErrors: llmtest.Schedule{First: 1},
	})
	defer srv.Close()

	client, err := llm.New(llm.Options{BaseURL: srv.URL, Model: llmtest.DefaultModel, RetryBaseDelay: time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := client.Chat(context.Background(), &harness.ChatRequest{
		Messages: []harness.Message{{Role: harness.RoleUser, Content: "What is 19 + 23?"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Content)
	fmt.Println("retries:", client.Stats().Retries)
	st := srv.Stats()
	fmt.Println("answers:", st.Statuses[500], "× 500,", st.Statuses[200], "× 200")
	// Output:
	// The answer is 42.
	// retries: 1
	// answers: 1 × 500, 1 × 200
}

func ExampleOptions_respond() {
	// A scripted model: it calls a tool for any prompt mentioning an order,
	// and leaves the rest to the default behaviour.
	srv := llmtest.NewServer(llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		if len(req.Tools) > 0 && req.Messages[len(req.Messages)-1].Role == harness.RoleUser {
			return llmtest.CallTool("find_order", map[string]any{"id": 1234})
		}
		return nil
	}})
	defer srv.Close()

	client, _ := llm.New(llm.Options{BaseURL: srv.URL})
	req := &harness.ChatRequest{
		Messages: []harness.Message{{Role: harness.RoleUser, Content: "Where is my parcel?"}},
		Tools:    []harness.FunctionDef{{Name: "find_order", Description: "Looks an order up"}},
	}
	resp, _ := client.Chat(context.Background(), req)
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.Name, call.Arguments)

	req.Messages = append(req.Messages, resp.Message,
		harness.Message{Role: harness.RoleTool, ToolCallID: call.ID, Content: "shipped on Monday"})
	resp, _ = client.Chat(context.Background(), req)
	fmt.Println(resp.Message.Content)
	// Output:
	// tool_calls find_order {"id":1234}
	// The result of find_order is shipped on Monday.
}
