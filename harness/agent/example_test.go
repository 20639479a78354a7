package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// A program creates an agent, gives it a knowledge-base file and a tool,
// and chats with it, without the HTTP server. The model here is llmtest's
// fake endpoint; any OpenAI-compatible one works the same.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gauntlet-agent-example")
	defer os.RemoveAll(dir)
	db, err := store.Open(ctx, filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	model, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "demo-model"})
	if err != nil {
		log.Fatal(err)
	}
	tools := agent.ToolList{{
		ID: "weather", Name: "Weather",
		Function:     harness.FunctionDef{Name: "get_weather", Description: "Current weather of a city."},
		MockResponse: map[string]any{"temperature": 21},
	}}
	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: dir, Tools: tools, Client: model, Model: "demo-model"})
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()

	if _, err := svc.Create(ctx, harness.Agent{ID: "helper", Name: "Helper", SystemPrompt: "Answer briefly."}); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.KB().Write(ctx, "helper", "office.md", strings.NewReader("The office opens at 9."), true); err != nil {
		log.Fatal(err)
	}
	if _, err := svc.SetTools(ctx, "helper", []string{"weather"}); err != nil {
		log.Fatal(err)
	}

	res, err := svc.Chat(ctx, "helper", "user-1", "What is 19 + 23?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Response)
	res, err = svc.Chat(ctx, "helper", "user-1", "Call get_weather for Paris.")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Response)
	fmt.Println(len(res.ToolCalls), "tool call")
	history, _ := svc.History(ctx, "helper", "user-1")
	fmt.Println(len(history), "messages stored")
	// Output:
	// The answer is 42.
	// The result of get_weather is {"temperature":21}.
	// 1 tool call
	// 6 messages stored
}
