package catalog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// The streaming sync keeps the rows of the level files it holds unchanged
// and decodes the others. These tests see which files were decoded by
// changing a cached row behind the catalog's back ("marking" it): a file
// decoded again puts its row back as the file says; a file kept leaves
// the mark.

// levelYAML is a level file of n tests "<prefix>-<i>" (ids taken from ids
// when given).
func levelYAML(prefix string, n int, ids ...string) string {
	var b strings.Builder
	b.WriteString("tests:\n")
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if i < len(ids) {
			id = ids[i]
		}
		fmt.Fprintf(&b, "  - id: %s\n    prompt: What is %d + 1?\n    expected: {answer: \"%d\", type: numeric}\n", id, i, i+1)
	}
	return b.String()
}

// streamDir writes a directory of two domains with two levels of three
// tests each, and an evaluator.
func streamDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "definitions")
	writeFile(t, dir, "evaluators/number.yaml", "name: Number\nextraction_regex: 'Answer:\\s*(?<answer>-?\\d+)'\n")
	for _, d := range []string{"alpha", "beta"} {
		writeFile(t, dir, "domains/"+d+"/domain.yaml", "name: "+d+"\nevaluator_id: number\n")
		for _, l := range []int{1, 2} {
			writeFile(t, dir, levelPath(d, l), levelYAML(fmt.Sprintf("%s-l%d", d, l), 3))
		}
	}
	return dir
}

// mark changes a test's cached prompt behind the catalog's back.
func mark(t *testing.T, c *Catalog, id string) {
	t.Helper()
	res, err := c.db.NewUpdate().Model((*testRow)(nil)).Set("prompt = ?", "MARK").Where("id = ?", id).Exec(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("mark %s: %d rows", id, n)
	}
}

// marked reports whether a test still has its mark: its file was not
// decoded since.
func marked(t *testing.T, c *Catalog, id string) bool {
	t.Helper()
	tt, err := c.Test(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tt.Prompt == "MARK"
}

func TestSyncKeepsUnchangedFiles(t *testing.T) {
	t.Parallel()
	dir := streamDir(t)
	c, res := openAt(t, dir)
	if len(res.Errors) != 0 || res.Loaded.Tests != 12 || res.Loaded.Levels != 4 {
		t.Fatalf("open: %+v", res)
	}
	for _, id := range []string{"alpha-l1-0", "alpha-l2-0", "beta-l1-0", "beta-l2-0"} {
		mark(t, c, id)
	}

	// Nothing changed: nothing decoded, the counts those of the files.
	res = doSync(t, c)
	if len(res.Errors) != 0 || res.Loaded != (Counts{Domains: 2, Levels: 4, Tests: 12, Evaluators: 1}) {
		t.Fatalf("sync: %+v", res)
	}
	for _, id := range []string{"alpha-l1-0", "alpha-l2-0", "beta-l1-0", "beta-l2-0"} {
		if !marked(t, c, id) {
			t.Errorf("%s: its unchanged file was decoded again", id)
		}
	}

	// One level file edited: that one is decoded, with its new test.
	writeFile(t, dir, levelPath("alpha", 2), levelYAML("alpha-l2", 4))
	res = doSync(t, c)
	if res.Loaded.Tests != 13 {
		t.Fatalf("after an edit: %+v", res)
	}
	if marked(t, c, "alpha-l2-0") {
		t.Error("the edited file was not decoded")
	}
	if _, err := c.Test(context.Background(), "alpha-l2-3"); err != nil {
		t.Errorf("the edit's new test: %v", err)
	}
	for _, id := range []string{"alpha-l1-0", "beta-l1-0", "beta-l2-0"} {
		if !marked(t, c, id) {
			t.Errorf("%s: decoded though its file did not change", id)
		}
	}

	// A level file removed: its tests leave the cache, the others stay.
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(levelPath("beta", 1)))); err != nil {
		t.Fatal(err)
	}
	res = doSync(t, c)
	if res.Loaded.Tests != 10 || res.Loaded.Levels != 3 {
		t.Fatalf("after a removal: %+v", res)
	}
	if _, err := c.Test(context.Background(), "beta-l1-0"); err == nil {
		t.Error("a removed file's test is still in the cache")
	}
	if !marked(t, c, "beta-l2-0") {
		t.Error("a removal made an unchanged file decode")
	}

	// An evaluator edited: every level file is checked again.
	writeFile(t, dir, "evaluators/number.yaml", "name: Number (edited)\nextraction_regex: 'Answer:\\s*(?<answer>-?\\d+)'\n")
	doSync(t, c)
	for _, id := range []string{"alpha-l1-0", "beta-l2-0"} {
		if marked(t, c, id) {
			t.Errorf("%s: an evaluator changed and its file was not checked again", id)
		}
	}
}

// A file is checked against the types registered: a catalog opened with
// another registry decodes every file again.
func TestSyncChecksAgainWithAnotherRegistry(t *testing.T) {
	t.Parallel()
	dir := streamDir(t)
	db := openDB(t)
	ctx := context.Background()
	c, _, err := Open(ctx, Options{Dir: dir, DB: db, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	mark(t, c, "alpha-l1-0")
	same, _, err := Open(ctx, Options{Dir: dir, DB: db, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !marked(t, same, "alpha-l1-0") {
		t.Fatal("the same registry: the file was decoded again")
	}
	reg := testRegistry(t)
	if err := reg.RegisterExpectedType("vibes", nil); err != nil {
		t.Fatal(err)
	}
	other, _, err := Open(ctx, Options{Dir: dir, DB: db, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if marked(t, other, "alpha-l1-0") {
		t.Fatal("another registry: the file was not checked again")
	}
}

// Writes through the catalog record the files they write: the next sync
// decodes none of them.
func TestSyncAfterWritesDecodesNothing(t *testing.T) {
	t.Parallel()
	dir := streamDir(t)
	c, _ := openAt(t, dir)
	ctx := context.Background()
	if _, err := c.CreateTest(ctx, harness.Test{ID: "new-one", DomainID: "alpha", Level: 1, Prompt: "What is 9 + 1?",
		Expected: harness.Expected{Answer: "10", Type: "numeric"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateLevel(ctx, "beta", 3, func(l *harness.LevelConfig) error { l.PassThreshold = 0.8; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTest(ctx, "beta-l2-1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"alpha-l1-0", "new-one", "beta-l2-0"} {
		mark(t, c, id)
	}
	res := doSync(t, c)
	if len(res.Errors) != 0 || res.Loaded.Tests != 12 || res.Loaded.Levels != 5 {
		t.Fatalf("sync: %+v", res)
	}
	for _, id := range []string{"alpha-l1-0", "new-one", "beta-l2-0"} {
		if !marked(t, c, id) {
			t.Errorf("%s: its file, written by the catalog, was decoded again", id)
		}
	}

	// An import records its files too.
	snap := export(t, c)
	if _, err := c.Import(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	mark(t, c, "beta-l2-0")
	res = doSync(t, c)
	if res.Loaded.Tests != 12 || !marked(t, c, "beta-l2-0") {
		t.Fatalf("after an import, the sync decoded the files again: %+v", res)
	}
}

// A changed file that repeats an id of an unchanged file: the first file
// in the directory's order keeps it, as when everything is decoded.
func TestSyncRepeatedIDFollowsFileOrder(t *testing.T) {
	t.Parallel()
	dir := streamDir(t)
	c, _ := openAt(t, dir)

	// A later file takes an id of an earlier one: the later file fails.
	writeFile(t, dir, levelPath("beta", 2), levelYAML("beta-l2", 3, "alpha-l1-1"))
	res := doSync(t, c)
	wantErr := func(res *SyncResult, file, text string) {
		t.Helper()
		for _, e := range res.Errors {
			if e.File == file && strings.Contains(e.Error, text) {
				return
			}
		}
		t.Errorf("no error of %s saying %q: %+v", file, text, res.Errors)
	}
	wantErr(res, levelPath("beta", 2), `test "alpha-l1-1" is already defined in domains/alpha/level-1.yaml`)
	if res.Loaded.Tests != 9 {
		t.Errorf("loaded %d tests, want 9", res.Loaded.Tests)
	}
	sameAsFresh(t, c, dir, res)

	// An earlier file takes an id of a later, unchanged one: the earlier
	// keeps it and the later fails.
	writeFile(t, dir, levelPath("beta", 2), levelYAML("beta-l2", 3))
	doSync(t, c)
	mark(t, c, "beta-l1-0")
	writeFile(t, dir, levelPath("alpha", 2), levelYAML("alpha-l2", 3, "beta-l2-2"))
	res = doSync(t, c)
	wantErr(res, levelPath("beta", 2), `test "beta-l2-2" is already defined in domains/alpha/level-2.yaml`)
	if tt, err := c.Test(context.Background(), "beta-l2-2"); err != nil || tt.DomainID != "alpha" {
		t.Errorf("beta-l2-2 is %+v, %v; want the test of alpha's level 2", tt, err)
	}
	sameAsFresh(t, c, dir, res)

	// Fixed: the file that failed loads again.
	writeFile(t, dir, levelPath("alpha", 2), levelYAML("alpha-l2", 3))
	res = doSync(t, c)
	if len(res.Errors) != 0 || res.Loaded.Tests != 12 {
		t.Fatalf("after the fix: %+v", res)
	}
	sameAsFresh(t, c, dir, res)
}

// sameAsFresh checks that a catalog's cache and last sync are those of a
// catalog opened over the same directory with a fresh database.
func sameAsFresh(t *testing.T, c *Catalog, dir string, res *SyncResult) {
	t.Helper()
	fresh, want := openAt(t, dir)
	if got, w := mustJSON(t, res), mustJSON(t, want); got != w {
		t.Errorf("sync result:\n%s\nfresh:\n%s", got, w)
	}
	if got, w := exportJSON(t, c), exportJSON(t, fresh); got != w {
		t.Errorf("cache:\n%s\nfresh:\n%s", got, w)
	}
}

// TestSyncIncrementalMatchesFresh edits a directory at random, many
// times, syncing one catalog after each edit, and compares it each time
// with a catalog opened over the directory with a fresh database: the
// same definitions, counts and errors.
func TestSyncIncrementalMatchesFresh(t *testing.T) {
	t.Parallel()
	dir := streamDir(t)
	c, _ := openAt(t, dir)
	rng := rand.New(rand.NewPCG(1, 2))
	domains := []string{"alpha", "beta", "gamma"}
	edits := []func() string{
		func() string { // rewrite a level with fresh or borrowed ids
			d, l := domains[rng.IntN(3)], 1+rng.IntN(3)
			var ids []string
			if rng.IntN(2) == 0 {
				ids = []string{fmt.Sprintf("%s-l%d-%d", domains[rng.IntN(3)], 1+rng.IntN(3), rng.IntN(3))}
			}
			writeFile(t, dir, levelPath(d, l), levelYAML(fmt.Sprintf("%s-l%d", d, l), 1+rng.IntN(4), ids...))
			return "write " + levelPath(d, l) + fmt.Sprint(ids)
		},
		func() string { // break a level file
			d, l := domains[rng.IntN(3)], 1+rng.IntN(3)
			writeFile(t, dir, levelPath(d, l), "tests:\n  - id: [broken\n")
			return "break " + levelPath(d, l)
		},
		func() string { // remove a level file
			d, l := domains[rng.IntN(3)], 1+rng.IntN(3)
			os.Remove(filepath.Join(dir, filepath.FromSlash(levelPath(d, l))))
			return "remove " + levelPath(d, l)
		},
		func() string { // add, break or remove a domain file
			d := domains[rng.IntN(3)]
			rel := "domains/" + d + "/domain.yaml"
			switch rng.IntN(3) {
			case 0:
				writeFile(t, dir, rel, "name: "+d+"\nevaluator_id: number\n")
				return "write " + rel
			case 1:
				writeFile(t, dir, rel, "name: "+d+"\nevaluator_id: nobody\n")
				return "break " + rel
			}
			os.Remove(filepath.Join(dir, filepath.FromSlash(rel)))
			return "remove " + rel
		},
		func() string { // edit the evaluator
			writeFile(t, dir, "evaluators/number.yaml", fmt.Sprintf("name: Number %d\nextraction_regex: 'Answer:\\s*(?<answer>-?\\d+)'\n", rng.IntN(100)))
			return "edit the evaluator"
		},
		func() string { // a write through the catalog
			d, l := domains[rng.IntN(3)], 1+rng.IntN(3)
			id := fmt.Sprintf("api-%d", rng.IntN(1000))
			_, err := c.CreateTest(context.Background(), harness.Test{ID: id, DomainID: d, Level: l, Prompt: "What is 1 + 1?",
				Expected: harness.Expected{Answer: "2", Type: "numeric"}})
			return fmt.Sprintf("create %s in %s/%d: %v", id, d, l, err)
		},
	}
	// 120 random steps; 30 with -short (make test's race pass: each step
	// opens a fresh catalog), all of them in its exhaustive pass.
	steps := 120
	if testing.Short() {
		steps = 30
	}
	var done []string
	for i := range steps {
		what := edits[rng.IntN(len(edits))]()
		done = append(done, what)
		res, err := c.Sync(context.Background())
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, what, err)
		}
		fresh, want := openAt(t, dir)
		if got, w := mustJSON(t, res), mustJSON(t, want); got != w {
			t.Fatalf("step %d, after %s:\nsync result:\n%s\nfresh:\n%s", i, strings.Join(done, "; "), got, w)
		}
		if got, w := exportJSON(t, c), exportJSON(t, fresh); got != w {
			t.Fatalf("step %d, after %s:\ncache:\n%s\nfresh:\n%s", i, strings.Join(done, "; "), got, w)
		}
	}
}

// A database made before the cache recorded its files (an older
// version's) is synced whole, then incrementally.
func TestSyncWithoutRecordedFiles(t *testing.T) {
	t.Parallel()
	dir := streamDir(t)
	c, _ := openAt(t, dir)
	ctx := context.Background()
	if _, err := c.db.NewDelete().Model((*fileRow)(nil)).Where("1 = 1").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	mark(t, c, "alpha-l1-0")
	res := doSync(t, c)
	if res.Loaded.Tests != 12 || marked(t, c, "alpha-l1-0") {
		t.Fatalf("a cache without its files' hashes was not synced whole: %+v", res)
	}
	mark(t, c, "alpha-l1-0")
	doSync(t, c)
	if !marked(t, c, "alpha-l1-0") {
		t.Fatal("the next sync decoded the file again")
	}
}

// A failing database ends the sync with an error and changes nothing.
func TestSyncDatabaseFailure(t *testing.T) {
	t.Parallel()
	dir := streamDir(t)
	c, _ := openAt(t, dir)
	ctx := context.Background()
	before := exportJSON(t, c)
	writeFile(t, dir, levelPath("beta", 2), levelYAML("beta-l2", 5))
	if err := injectFailure(ctx, c.db, "BEFORE INSERT ON def_tests"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx); err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("sync: %v, want the injected failure", err)
	}
	if got := exportJSON(t, c); got != before {
		t.Fatalf("a failed sync changed the cache:\n%s\nwas:\n%s", got, before)
	}
	if err := removeFailure(ctx, c.db, "BEFORE INSERT ON def_tests"); err != nil {
		t.Fatal(err)
	}
	if res := doSync(t, c); res.Loaded.Tests != 14 {
		t.Fatalf("sync after the failure: %+v", res)
	}
}

// Files larger than the decoding budget are decoded one at a time; the
// result is the same, in the same order.
func TestSyncDecodeBudget(t *testing.T) {
	// Not parallel: it lowers the package's decode budget.
	dir := streamDir(t)
	for d := range 3 {
		for l := range 6 {
			id := fmt.Sprintf("extra%d", d)
			writeFile(t, dir, "domains/"+id+"/domain.yaml", "name: "+id+"\n")
			// Every third file repeats an id of the file before it.
			ids := []string{}
			if l%3 == 2 {
				ids = append(ids, fmt.Sprintf("%s-l%d-0", id, l-1))
			}
			writeFile(t, dir, levelPath(id, l), levelYAML(fmt.Sprintf("%s-l%d", id, l), 5, ids...))
		}
	}
	_, want := openAt(t, dir)
	if len(want.Errors) != 6 {
		t.Fatalf("want 6 errors, got %+v", want.Errors)
	}
	old := decodeBudget
	decodeBudget = 1
	t.Cleanup(func() { decodeBudget = old })
	_, got := openAt(t, dir)
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("with a budget of one byte:\n%s\nwant:\n%s", g, w)
	}
}
