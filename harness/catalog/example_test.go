package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// Open a catalog, add a domain and a test, and see the file it wrote.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gauntlet-example")
	defer os.RemoveAll(dir)

	db, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "gauntlet.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	defs, _, err := catalog.Open(ctx, catalog.Options{Dir: filepath.Join(dir, "definitions"), DB: db})
	if err != nil {
		log.Fatal(err)
	}

	if _, err := defs.CreateDomain(ctx, harness.Domain{ID: "math", Name: "Math", Enabled: true}); err != nil {
		log.Fatal(err)
	}
	_, err = defs.CreateTest(ctx, harness.Test{
		ID: "add", DomainID: "math", Level: 1,
		Prompt:   "What is 2 + 3?",
		Expected: harness.Expected{Answer: "5", Type: "numeric"},
	})
	if err != nil {
		log.Fatal(err)
	}
	level1, _ := os.ReadFile(filepath.Join(dir, "definitions", "domains", "math", "level-1.yaml"))
	fmt.Print(string(level1))
	// Output:
	// tests:
	//   - id: add
	//     prompt: What is 2 + 3?
	//     expected:
	//       answer: '5'
	//       type: numeric
}

// Sync reports a hand-edited file that does not load, and loads the rest.
func ExampleCatalog_Sync() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gauntlet-example")
	defer os.RemoveAll(dir)
	defsDir := filepath.Join(dir, "definitions")

	db, _ := store.Open(ctx, filepath.Join(dir, "gauntlet.db"))
	defer db.Close()
	defs, _, _ := catalog.Open(ctx, catalog.Options{Dir: defsDir, DB: db})

	os.MkdirAll(filepath.Join(defsDir, "evaluators"), 0o755)
	os.WriteFile(filepath.Join(defsDir, "evaluators", "ok.yaml"), []byte("name: Fine\nextraction_regex: (\\d+)\n"), 0o644)
	os.WriteFile(filepath.Join(defsDir, "evaluators", "broken.yaml"), []byte("name: Broken\nextraction_regex: (\\d+\n"), 0o644)

	res, _ := defs.Sync(ctx)
	fmt.Println("evaluators loaded:", res.Loaded.Evaluators)
	for _, fe := range res.Errors {
		fmt.Println(fe.File)
	}
	// Output:
	// evaluators loaded: 1
	// evaluators/broken.yaml
}

// Load reads definitions from any fs.FS (an embed.FS, os.DirFS, a
// fstest.MapFS) into a read-only catalog that needs no database. Files
// are as strict as in a definitions directory: a file that does not load
// is reported with its line and key, and the others load.
func ExampleLoad() {
	ctx := context.Background()
	suite := fstest.MapFS{
		"domains/math/domain.yaml": {Data: []byte("name: Math\n")},
		"domains/math/level-1.yaml": {Data: []byte(`tests:
  - id: add
    prompt: What is 2 + 3?
    expected: {answer: "5", type: numeric}
`)},
		"domains/math/level-2.yaml": {Data: []byte(`tests:
  - id: mul
    prompt: What is 6 * 7?
    expected: {answer: "42", typo: numeric}
`)},
	}
	defs, res, err := catalog.Load(ctx, suite, catalog.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tests loaded:", res.Loaded.Tests)
	for _, fe := range res.Errors {
		fmt.Printf("%s:%d: key %q\n", fe.File, fe.Line, fe.Key)
	}

	_, err = defs.CreateDomain(ctx, harness.Domain{ID: "geo", Name: "Geography"})
	fmt.Println(errors.Is(err, catalog.ErrReadOnly), errors.Is(err, harness.ErrConflict))
	// Output:
	// tests loaded: 1
	// domains/math/level-2.yaml:4: key "typo"
	// true true
}
