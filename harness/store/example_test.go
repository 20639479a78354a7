package store_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// A database in memory holds a program's runs for as long as it needs
// them, with no file: open the stores on it as on any other.
func ExampleOpenMemory() {
	ctx := context.Background()
	db, err := store.OpenMemory(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	history, err := runs.Open(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	run := runs.Info{RunID: "r1", StartedAt: runs.Now(), ModelName: "demo", Status: runs.StatusRunning, TotalTests: 1}
	if err := history.CreateRun(ctx, run, []runs.CellKey{{Domain: "math", Level: 1, Tests: 1}}); err != nil {
		log.Fatal(err)
	}
	list, total, err := history.List(ctx, 10, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total, list[0].RunID, list[0].Status)
	// Output:
	// 1 r1 running
}
