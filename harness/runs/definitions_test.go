package runs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// defsSnap is a set of definitions with n tests over two domains and
// three levels.
func defsSnap(n int) *harness.Snapshot {
	s := &harness.Snapshot{
		Domains: []harness.Domain{{ID: "math", Name: "Math", Enabled: true, EvaluatorID: "num"}, {ID: "words", Name: "Words", Enabled: true}},
		Levels: []harness.LevelConfig{{DomainID: "math", Level: 1, SystemPrompt: "Be exact <b>&</b>", SystemPromptMode: harness.PromptAppend,
			PassThreshold: 0.5, Tools: []string{}}},
		Evaluators: []harness.EvaluatorConfig{{ID: "num", Name: "Number", Type: harness.EvaluatorTypeRegex, ExtractionRegex: `(?<answer>\d+)`}},
		Tools:      []harness.ToolDefinition{},
	}
	for i := range n {
		d, l := "math", 1+i%2
		if i >= n*2/3 {
			d, l = "words", 1
		}
		s.Tests = append(s.Tests, harness.Test{ID: fmt.Sprintf("t%04d", i), DomainID: d, Level: l, Name: fmt.Sprintf("Test %d", i),
			Prompt: fmt.Sprintf("What is %d + 1? <&>", i), Expected: harness.Expected{Answer: fmt.Sprint(i + 1), Type: "numeric"},
			Tools: []string{}})
	}
	return s
}

// wholeHash is the hash a set has always had: the SHA-256 of its JSON.
func wholeHash(t *testing.T, s *harness.Snapshot) string {
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func createWithDefs(t *testing.T, s *runs.Store, id, hash string) {
	t.Helper()
	in := newInfo(id)
	in.Config = &runs.Config{Model: "m", DefinitionsHash: hash, Repeats: 1}
	if err := s.CreateRun(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
}

func eachTest(t *testing.T, s *runs.Store, hash, domain string) []harness.Test {
	t.Helper()
	var out []harness.Test
	if err := s.EachDefinitionTest(context.Background(), hash, domain, func(x harness.Test) error {
		out = append(out, x)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDefinitionsTestByTest: a set of more tests than one page is stored
// test by test under the hash of its whole JSON, read back whole, in
// outline with its counts, and test by test (all, one domain), and stored
// once however often it is saved.
func TestDefinitionsTestByTest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	snap := defsSnap(1234)
	hash, err := s.SaveDefinitions(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if want := wholeHash(t, snap); hash != want {
		t.Fatalf("hash = %s; want the SHA-256 of the set's JSON, %s", hash, want)
	}
	if again, err := s.SaveDefinitions(ctx, snap); err != nil || again != hash {
		t.Fatalf("second save = %s, %v", again, err)
	}
	createWithDefs(t, s, "r1", hash)
	got, err := s.Definitions(ctx, "r1")
	if err != nil || !reflect.DeepEqual(got, snap) {
		t.Fatalf("Definitions = %d tests, %v; want the set as saved", len(got.Tests), err)
	}
	outline, counts, err := s.DefinitionsOutline(ctx, hash)
	if err != nil || outline.Tests != nil || len(outline.Domains) != 2 || len(outline.Evaluators) != 1 {
		t.Fatalf("outline = %d domains, %d tests, %v", len(outline.Domains), len(outline.Tests), err)
	}
	if want := map[string]map[int]int{"math": {1: 411, 2: 411}, "words": {1: 412}}; !reflect.DeepEqual(counts, want) {
		t.Errorf("counts = %v; want %v", counts, want)
	}
	if all := eachTest(t, s, hash, ""); !reflect.DeepEqual(all, snap.Tests) {
		t.Errorf("EachDefinitionTest = %d tests; want the set's %d in order", len(all), len(snap.Tests))
	}
	if words := eachTest(t, s, hash, "words"); len(words) != 412 || words[0].ID != "t0822" || words[411].ID != "t1233" {
		t.Errorf("words = %d tests", len(words))
	}
	stop := errors.New("stop")
	n := 0
	if err := s.EachDefinitionTest(ctx, hash, "", func(harness.Test) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("stop = %v after %d", err, n)
	}
	if err := s.EachDefinitionTest(ctx, "nope", "", func(harness.Test) error { return nil }); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown set = %v", err)
	}
	if _, _, err := s.DefinitionsOutline(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("unknown outline = %v", err)
	}

	ids := []string{"t0001", "t1233", "nope"}
	for i := range 600 {
		ids = append(ids, fmt.Sprintf("t%04d", 600+i))
	}
	byID, err := s.DefinitionTests(ctx, hash, ids)
	if err != nil || len(byID) != 602 || !reflect.DeepEqual(byID["t1233"], snap.Tests[1233]) || !reflect.DeepEqual(byID["t0001"], snap.Tests[1]) {
		t.Errorf("DefinitionTests = %d tests, %v; want 602", len(byID), err)
	}
	if _, err := s.DefinitionTests(ctx, "nope", ids); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("DefinitionTests of an unknown set = %v", err)
	}

	// Deleting the last run of a set deletes the set, its tests too.
	createWithDefs(t, s, "r2", hash)
	if err := s.Delete(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if len(eachTest(t, s, hash, "")) != 1234 {
		t.Error("a set still used by r2 lost tests")
	}
	if err := s.Delete(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DefinitionsOutline(ctx, hash); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("set after its last run = %v", err)
	}
	if again, err := s.SaveDefinitions(ctx, snap); err != nil || again != hash || len(eachTest(t, s, hash, "")) != 1234 {
		t.Errorf("saved again = %s, %v", again, err)
	}
}

// TestDefinitionsChangedWhileSaving: tests that differ between the pass
// that hashes them and the pass that stores them store nothing, and say
// why.
func TestDefinitionsChangedWhileSaving(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	snap := defsSnap(700)
	calls := 0
	// Edited in the first batch of 500 and in the last, partial one.
	for _, at := range []int{100, 650} {
		calls = 0
		_, err := s.SaveDefinitionsFrom(ctx, snap, func(fn func(harness.Test) error) error {
			calls++
			for i, x := range snap.Tests {
				if calls == 2 && i == at {
					x.Prompt += " (edited)"
				}
				if err := fn(x); err != nil {
					return err
				}
			}
			return nil
		})
		if !errors.Is(err, harness.ErrConflict) || calls != 2 {
			t.Fatalf("edit at %d: save = %v after %d passes; want a conflict", at, err, calls)
		}
		if _, _, err := s.DefinitionsOutline(ctx, wholeHash(t, snap)); !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("edit at %d: a set changed while saving is stored: %v", at, err)
		}
	}
	// No edited test was kept under the set's hash: saved again, the set
	// reads back as it is.
	if hash, err := s.SaveDefinitions(ctx, snap); err != nil || !reflect.DeepEqual(eachTest(t, s, hash, ""), snap.Tests) {
		t.Errorf("saved after the conflicts: %v, or tests differ", err)
	}
	var err error
	// A failing source stores nothing either.
	snap = defsSnap(701)
	boom := errors.New("boom")
	if _, err := s.SaveDefinitionsFrom(ctx, snap, func(func(harness.Test) error) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("failing source = %v", err)
	}
	// A source failing half-way through storing leaves some of the set's
	// rows; saving it again completes it.
	calls = 0
	_, err = s.SaveDefinitionsFrom(ctx, snap, func(fn func(harness.Test) error) error {
		calls++
		for i, x := range snap.Tests {
			if calls == 2 && i == 600 {
				return boom
			}
			if err := fn(x); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("save failing half-way = %v", err)
	}
	hash, err := s.SaveDefinitions(ctx, snap)
	if err != nil || hash != wholeHash(t, snap) {
		t.Fatalf("save again = %s, %v", hash, err)
	}
	if all := eachTest(t, s, hash, ""); !reflect.DeepEqual(all, snap.Tests) {
		t.Errorf("the set saved again has %d tests; want %d", len(all), len(snap.Tests))
	}
}

// copyFixture copies the database made by 0.3.0 to a temporary file.
func copyFixture(t *testing.T) *store.DB {
	t.Helper()
	db, _ := dbtest.OpenFixture(t, "gauntlet-0.3.0.db")
	return db
}

// TestDefinitionsStoredWhole: the runs of a 0.3.0 database stored their
// definitions whole; every reader reads them as before, and saving the
// same set again stores it test by test under the same hash.
func TestDefinitionsStoredWhole(t *testing.T) {
	t.Parallel()
	dbtest.SkipOnPostgres(t, "the fixture is a SQLite file made by 0.3.0")
	ctx := context.Background()
	s, err := runs.Open(ctx, copyFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := s.List(ctx, 100, 0)
	if err != nil || len(list) == 0 {
		t.Fatalf("runs = %d, %v", len(list), err)
	}
	in := list[0]
	whole, err := s.Definitions(ctx, in.RunID)
	if err != nil || len(whole.Tests) == 0 {
		t.Fatalf("definitions of %s = %v", in.RunID, err)
	}
	hash := in.Config.DefinitionsHash
	if got := wholeHash(t, whole); got != hash {
		t.Fatalf("stored hash %s; the set's JSON hashes to %s", hash, got)
	}
	outline, counts, err := s.DefinitionsOutline(ctx, hash)
	if err != nil || outline.Tests != nil || len(outline.Domains) != len(whole.Domains) {
		t.Fatalf("outline = %d domains, %d tests, %v", len(outline.Domains), len(outline.Tests), err)
	}
	total := 0
	for _, byLevel := range counts {
		for _, n := range byLevel {
			total += n
		}
	}
	if total != len(whole.Tests) {
		t.Errorf("counts %v; want %d tests", counts, len(whole.Tests))
	}
	if all := eachTest(t, s, hash, ""); !reflect.DeepEqual(all, whole.Tests) {
		t.Errorf("EachDefinitionTest of a whole set = %d tests; want %d", len(all), len(whole.Tests))
	}
	d := whole.Tests[0].DomainID
	for _, x := range eachTest(t, s, hash, d) {
		if x.DomainID != d {
			t.Errorf("domain %s gave %s of %s", d, x.ID, x.DomainID)
		}
	}

	first := whole.Tests[0]
	if byID, err := s.DefinitionTests(ctx, hash, []string{first.ID, "nope"}); err != nil || len(byID) != 1 || !reflect.DeepEqual(byID[first.ID], first) {
		t.Errorf("DefinitionTests of a whole set = %v, %v", byID, err)
	}

	again, err := s.SaveDefinitions(ctx, whole)
	if err != nil || again != hash {
		t.Fatalf("saved again = %s, %v; want %s", again, err, hash)
	}
	if got, err := s.Definitions(ctx, in.RunID); err != nil || !reflect.DeepEqual(got, whole) {
		t.Errorf("definitions stored test by test = %v; want them as stored whole", err)
	}
}
