package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// writeSuite writes a definitions directory with one domain, id, holding
// one test.
func writeSuite(t *testing.T, dir, id, testID string) {
	t.Helper()
	files := map[string]string{
		"domains/" + id + "/domain.yaml":  "id: " + id + "\nname: " + id + "\nenabled: true\n",
		"domains/" + id + "/level-1.yaml": "tests:\n  - id: " + testID + "\n    prompt: What is 1 + 1?\n    expected:\n      answer: \"2\"\n",
	}
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCatalogsShareDatabase: two processes with different definitions
// directories on one database (a server and a CLI run on the same data
// directory) each keep their own definitions: opening, syncing and writing
// one leaves the other's cache as it was, and writes to the other's
// domains are not refused as unknown.
func TestCatalogsShareDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	writeSuite(t, dirA, "alpha", "a1")
	writeSuite(t, dirB, "beta", "b1")

	b, _, err := Open(ctx, Options{Dir: dirB, DB: db, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	// The second process opens (and syncs) the other directory.
	a, _, err := Open(ctx, Options{Dir: dirA, DB: db, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	domainsOf := func(c *Catalog) []string {
		t.Helper()
		ds, err := c.Domains(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		return ids
	}
	if got := domainsOf(b); len(got) != 1 || got[0] != "beta" {
		t.Fatalf("b's domains after a opened = %v; want [beta]", got)
	}
	if got := domainsOf(a); len(got) != 1 || got[0] != "alpha" {
		t.Fatalf("a's domains = %v; want [alpha]", got)
	}
	if tests, err := b.Tests(ctx, TestFilter{}); err != nil || len(tests) != 1 || tests[0].ID != "b1" {
		t.Fatalf("b's tests = %+v, %v; want b1", tests, err)
	}
	var streamed []string
	if err := b.EachTest(ctx, "", func(tt harness.Test) error { streamed = append(streamed, tt.ID); return nil }); err != nil ||
		len(streamed) != 1 || streamed[0] != "b1" {
		t.Fatalf("b's streamed tests = %v, %v; want [b1]", streamed, err)
	}
	if _, err := b.Test(ctx, "a1"); !errors.Is(err, harness.ErrNotFound) {
		t.Fatalf("b.Test(a1) = %v; want not found", err)
	}

	// A write to b's domain is accepted; one to a's domain through b is not.
	if _, err := b.CreateTest(ctx, harness.Test{ID: "b2", DomainID: "beta", Level: 1, Prompt: "What is 2 + 2?",
		Expected: harness.Expected{Answer: "4"}}); err != nil {
		t.Fatalf("a write to b's domain after a opened: %v", err)
	}
	if _, err := b.CreateTest(ctx, harness.Test{DomainID: "alpha", Level: 1, Prompt: "x", Expected: harness.Expected{Answer: "1"}}); err == nil {
		t.Fatal("b accepted a test in a's domain")
	}
	// The same test id in both directories is no conflict.
	if _, err := a.CreateTest(ctx, harness.Test{ID: "b2", DomainID: "alpha", Level: 1, Prompt: "What is 3 + 3?",
		Expected: harness.Expected{Answer: "6"}}); err != nil {
		t.Fatalf("a test id of b's in a: %v", err)
	}

	// b opened again (a restart) keeps only its own.
	b2, res, err := Open(ctx, Options{Dir: dirB, DB: db, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Loaded.Domains != 1 || res.Loaded.Tests != 2 {
		t.Errorf("b reopened loaded %+v; want beta's 2 tests", res.Loaded)
	}
	if got := domainsOf(b2); len(got) != 1 || got[0] != "beta" {
		t.Errorf("b reopened: domains %v", got)
	}
	if tests, err := a.Tests(ctx, TestFilter{}); err != nil || len(tests) != 2 {
		t.Errorf("a's tests after b reopened = %+v, %v; want a1 and b2", tests, err)
	}

	// Two spellings of one directory share its cache.
	rel, err := filepath.Rel(mustGetwd(t), dirB)
	if err != nil {
		t.Skip("no relative path to the temporary directory")
	}
	b3, _, err := Open(ctx, Options{Dir: rel, DB: db, Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	if b3.key != b.key {
		t.Errorf("key of %s = %q; of %s = %q", rel, b3.key, dirB, b.key)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
