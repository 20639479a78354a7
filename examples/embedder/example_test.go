package embedder_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/gauntlet-eval/gauntlet/examples/embedder"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// Run the embedded suite against an OpenAI-compatible endpoint with the
// client of harness/llm. The endpoint here is llmtest's fake, on
// loopback: it does arithmetic but knows no geography (it echoes the
// question), so one domain passes and the other fails.
func Example() {
	ctx := context.Background()
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	client, err := llm.New(llm.Options{BaseURL: srv.URL, Model: llmtest.DefaultModel})
	if err != nil {
		log.Fatal(err)
	}

	rep, err := embedder.Evaluate(ctx, client, embedder.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rep.Print(os.Stdout)
	// Output:
	// arithmetic L1  passed  score 1.00  2/2 passed
	// arithmetic L2  passed  score 1.00  2/2 passed
	// geography  L1  failed  score 0.00  0/2 passed
	// completed: score 0.67 over 6 of 6 tests (4 passed, 2 failed, 0 errors), complete: true
}

// atlas is a model of the program's own: any harness.ChatModel will do,
// with no HTTP at all. It knows its capitals and its sums.
type atlas struct{}

func (atlas) Chat(_ context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	q := req.Messages[len(req.Messages)-1].Content
	answer := "I do not know."
	switch {
	case strings.Contains(q, "France"):
		answer = "Paris."
	case strings.Contains(q, "Japan"):
		answer = "Tokyo."
	default:
		if v, ok := llmtest.Arithmetic(q); ok {
			answer = "It is " + v + "."
		}
	}
	return &harness.ChatResponse{Message: harness.Message{Role: harness.RoleAssistant, Content: answer}}, nil
}

// An embedder may bring its own model: here one that answers in process.
// The request's OnEvent follows the run's progress.
func Example_ownModel() {
	var progress []string
	rep, err := embedder.Evaluate(context.Background(), atlas{}, embedder.Options{
		OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.EventCellFinished {
				progress = append(progress, fmt.Sprintf("%s L%d after %d/%d", ev.Domain, ev.Level, ev.Done, ev.Total))
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(progress), "cells finished")
	rep.Print(os.Stdout)
	// Output:
	// 3 cells finished
	// arithmetic L1  passed  score 1.00  2/2 passed
	// arithmetic L2  passed  score 1.00  2/2 passed
	// geography  L1  passed  score 1.00  2/2 passed
	// completed: score 1.00 over 6 of 6 tests (6 passed, 0 failed, 0 errors), complete: true
}
