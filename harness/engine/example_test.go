package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// A program runs an evaluation with the library alone: definitions in a
// catalog, runs in the database, a model client (here against a fake
// endpoint), and the engine, watched through OnEvent.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gauntlet-example")
	defer os.RemoveAll(dir)

	db, err := store.Open(ctx, filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	defs, _, err := catalog.Open(ctx, catalog.Options{Dir: filepath.Join(dir, "definitions"), DB: db})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := defs.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "number", Name: "Last number",
		Type: harness.EvaluatorTypeRegex, ExtractionRegex: `(?<answer>-?\d+)`}); err != nil {
		log.Fatal(err)
	}
	if _, err := defs.CreateDomain(ctx, harness.Domain{ID: "math", Name: "Math", Enabled: true,
		EvaluatorID: "number", SystemPrompt: "Answer with the number."}); err != nil {
		log.Fatal(err)
	}
	for i, q := range []struct{ prompt, answer string }{
		{"What is 2 + 3?", "5"}, {"What is 6 * 7?", "42"}, {"What is 10 - 4?", "7"},
	} {
		_, err := defs.CreateTest(ctx, harness.Test{ID: fmt.Sprintf("q%d", i+1), DomainID: "math", Level: 1,
			Prompt: q.prompt, Expected: harness.Expected{Answer: q.answer, Type: "numeric"}})
		if err != nil {
			log.Fatal(err)
		}
	}
	history, err := runs.Open(ctx, db)
	if err != nil {
		log.Fatal(err)
	}

	// The model: any OpenAI-compatible endpoint; llmtest answers sums.
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	model, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "demo-model"})
	if err != nil {
		log.Fatal(err)
	}

	finished := make(chan runs.Info, 1)
	var lines []string
	eng, err := engine.New(ctx, engine.Options{
		Definitions: defs, Runs: history, Client: model, Model: "demo-model", Concurrency: 4,
		OnEvent: func(ev engine.Event) {
			switch ev.Kind {
			case engine.EventTestFinished:
				lines = append(lines, fmt.Sprintf("%s %s", ev.Result.TestID, ev.Result.Status))
			case engine.EventRunFinished:
				finished <- *ev.Info
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := eng.Start(ctx, engine.StartRequest{ModelName: "example"}); err != nil {
		log.Fatal(err)
	}
	info := <-finished

	sort.Strings(lines) // tests finish in any order
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Printf("run %s: score %.2f over %d tests\n", info.Status, *info.OverallScore, info.TotalTests)
	m, _ := history.Matrix(ctx, info.RunID)
	fmt.Printf("math level 1: %s, %d/%d passed\n", m["math"]["1"].Status, m["math"]["1"].Passed, m["math"]["1"].Tests)
	// Output:
	// q1 passed
	// q2 passed
	// q3 failed
	// run completed: score 0.67 over 3 tests
	// math level 1: passed, 2/3 passed
}
