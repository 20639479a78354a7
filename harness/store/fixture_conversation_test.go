package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureConversationTests: the catalog's migration 5, from the 0.7.0
// database (catalog schema 4), adds the columns of conversation tests; a
// multi-turn test and a test with a simulated user go through the
// migrated cache whole, and the tests with a prompt are as they were.
func TestFixtureConversationTests(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.7.0.db")
	if v, err := store.Version(ctx, db, "catalog"); v != 4 || err != nil {
		t.Fatalf("the fixture's catalog schema version = %d, %v; want 4", v, err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"domains/chat/domain.yaml": "id: chat\nname: Chat\nenabled: true\n",
		"domains/chat/level-1.yaml": `tests:
  - id: plain
    prompt: What is 1 + 1?
    expected:
      answer: "2"
  - id: multi
    turns:
      - user: My name is Ada.
      - user: What is my name?
        expected:
          answer: Ada
          type: contains
  - id: sim
    simulated_user:
      persona: A hurried customer.
      goal: Get a refund.
      max_turns: 3
      model: sim-model
`,
	}
	for rel, text := range files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: dir, DB: db})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("catalog on the 0.7.0 database: %v %+v", err, res)
	}
	if v, err := store.Version(ctx, db, "catalog"); v != currentVersions["catalog"] || err != nil {
		t.Errorf("catalog schema version after opening = %d, %v; want %d", v, err, currentVersions["catalog"])
	}
	multi, err := cat.Test(ctx, "multi")
	if err != nil || multi.Prompt != "" || len(multi.Turns) != 2 || multi.Turns[0].User != "My name is Ada." || multi.Turns[0].Expected != nil ||
		multi.Turns[1].Expected == nil || multi.Turns[1].Expected.Answer != "Ada" || multi.Turns[1].Expected.Type != "contains" {
		t.Errorf("multi = %+v, %v", multi, err)
	}
	sim, err := cat.Test(ctx, "sim")
	if err != nil || sim.SimulatedUser == nil || sim.SimulatedUser.Goal != "Get a refund." || sim.SimulatedUser.MaxTurns != 3 ||
		sim.SimulatedUser.Model != "sim-model" || sim.Turns != nil {
		t.Errorf("sim = %+v, %v", sim, err)
	}
	plain, err := cat.Test(ctx, "plain")
	if err != nil || plain.Prompt != "What is 1 + 1?" || plain.Turns != nil || plain.SimulatedUser != nil {
		t.Errorf("plain = %+v, %v", plain, err)
	}
}
