package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"testing/fstest"

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

// Run blocks until the run ends and returns its final info; here the
// definitions come from a file system (catalog.Load: no database for
// them) and the runs go to a database in memory, so the program touches
// no disk. The request's OnEvent shows progress as tests finish.
func ExampleEngine_Run() {
	ctx := context.Background()
	suite := fstest.MapFS{
		"evaluators/number.yaml":   {Data: []byte("name: Last number\nextraction_regex: '(?<answer>-?\\d+)'\n")},
		"domains/math/domain.yaml": {Data: []byte("name: Math\nevaluator_id: number\n")},
		"domains/math/level-1.yaml": {Data: []byte(`tests:
  - {id: add, prompt: What is 2 + 3?, expected: {answer: "5", type: numeric}}
  - {id: mul, prompt: What is 6 * 7?, expected: {answer: "42", type: numeric}}
`)},
	}
	defs, res, err := catalog.Load(ctx, suite, catalog.LoadOptions{})
	if err != nil || len(res.Errors) > 0 {
		log.Fatal(err, res.Errors)
	}
	db, err := store.OpenMemory(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	history, err := runs.Open(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	model, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "demo-model"})
	if err != nil {
		log.Fatal(err)
	}
	eng, err := engine.New(ctx, engine.Options{Definitions: defs, Runs: history, Client: model, Model: "demo-model"})
	if err != nil {
		log.Fatal(err)
	}

	var progress []string
	info, err := eng.Run(ctx, engine.StartRequest{ModelName: "example", OnEvent: func(ev engine.Event) {
		if ev.Kind == engine.EventTestFinished {
			progress = append(progress, fmt.Sprintf("%d/%d", ev.Done, ev.Total))
		}
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("progress:", progress)
	fmt.Printf("%s, complete %v, score %.2f\n", info.Status, info.Complete, *info.OverallScore)
	// Output:
	// progress: [1/2 2/2]
	// completed, complete true, score 1.00
}

// Subscribe watches every run without a callback fixed at New; a
// subscription ends when its context does.
func ExampleEngine_Subscribe() {
	ctx := context.Background()
	suite := fstest.MapFS{
		"domains/math/domain.yaml": {Data: []byte("name: Math\n")},
		"domains/math/level-1.yaml": {Data: []byte(`tests:
  - {id: add, prompt: What is 2 + 3?, expected: {answer: "5", type: numeric}}
`)},
	}
	defs, _, _ := catalog.Load(ctx, suite, catalog.LoadOptions{})
	db, _ := store.OpenMemory(ctx)
	defer db.Close()
	history, _ := runs.Open(ctx, db)
	srv := llmtest.NewServer(llmtest.Options{})
	defer srv.Close()
	model, _ := llm.New(llm.Options{BaseURL: srv.URL})
	eng, err := engine.New(ctx, engine.Options{Definitions: defs, Runs: history, Client: model})
	if err != nil {
		log.Fatal(err)
	}

	watch, stop := context.WithCancel(ctx)
	defer stop()
	events := eng.Subscribe(watch, engine.SubscribeOptions{})
	if _, err := eng.Start(ctx, engine.StartRequest{}); err != nil {
		log.Fatal(err)
	}
	for ev := range events {
		switch ev.Kind {
		case engine.EventRunStarted:
			fmt.Println("started:", ev.Total, "test")
		case engine.EventTestFinished:
			fmt.Println(ev.Result.TestID, ev.Result.Status)
		case engine.EventCellFinished:
			fmt.Printf("%s level %d: %s\n", ev.Domain, ev.Level, ev.Cell.Status)
		case engine.EventRunFinished:
			fmt.Println("finished:", ev.Info.Status)
			stop()
		}
	}
	// Output:
	// started: 1 test
	// add passed
	// math level 1: passed
	// finished: completed
}
