package examples

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestDefinitionsLoad checks that examples/definitions loads without a
// single refused file and has what the README promises.
func TestDefinitionsLoad(t *testing.T) {
	ctx := context.Background()
	defs, c, res := openCopy(t, "definitions")
	if res.Loaded.Domains < 2 || res.Loaded.Evaluators < 1 || res.Loaded.Tools < 1 {
		t.Errorf("loaded %+v, want at least 2 domains, 1 evaluator, 1 tool", res.Loaded)
	}
	levels, err := c.Levels(ctx, "arithmetic")
	if err != nil {
		t.Fatal(err)
	}
	if len(levels) < 3 {
		t.Errorf("arithmetic has %d levels, want 3", len(levels))
	}
	evs, err := c.Evaluators(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hasRegex := false
	for _, e := range evs {
		hasRegex = hasRegex || (e.Type == "regex" && e.ExtractionRegex != "")
	}
	if !hasRegex {
		t.Error("no regex evaluator with an extraction_regex")
	}

	// The files are already in canonical form: a full rewrite (import of
	// the export) leaves every byte as it was.
	before := readTree(t, defs)
	snap, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Import(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	after := readTree(t, defs)
	for name, b := range before {
		if after[name] != b {
			t.Errorf("%s is not in canonical form:\n--- file\n%s\n--- rewritten\n%s", name, b, after[name])
		}
	}
	if len(after) != len(before) {
		t.Errorf("rewrite changed the file set: %d files, was %d", len(after), len(before))
	}
}

func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openCopy copies a directory of definitions to a temporary directory
// and opens a catalog over the copy (in a fresh database), failing the
// test on any file the catalog cannot load. It returns the copy's path.
func openCopy(t *testing.T, src string) (string, *catalog.Catalog, *catalog.SyncResult) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	defs := filepath.Join(dir, "definitions")
	if err := os.CopyFS(defs, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(dir, "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, res, err := catalog.Open(ctx, catalog.Options{Dir: defs, DB: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, fe := range res.Errors {
		t.Errorf("%s: %s", fe.File, fe.Error)
	}
	return defs, c, res
}
