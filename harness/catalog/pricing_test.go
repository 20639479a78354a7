package catalog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestPricingFile: pricing.yaml is strict like every definitions file
// (an unknown key, a value that is not a number or is negative, each at
// its line, and the file loads no price); a good one loads with its
// defaults, is counted by validate, and goes out with an export and in
// with an import.
func TestPricingFile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		line       int
		msg        string
	}{
		{"typo", "models:\n  openai/gpt-4o:\n    input: 2.5\n    ouput: 10\n", 4, `unknown key "ouput" (did you mean "output"?)`},
		{"typo at the top", "model:\n  m: {input: 1, output: 2}\n", 1, `unknown key "model" (did you mean "models"?)`},
		{"not a number", "models:\n  m:\n    input: cheap\n    output: 2\n", 3, "cannot unmarshal string"},
		{"negative", "models:\n  gpt-4.1:\n    input: 1\n    output: 2\n  anthropic/claude-sonnet-4.5:\n    input: 3\n    output: -15\n", 5, "output must be"},
		{"discount above 1", "models:\n  m: {input: 1, output: 2, batch_discount: 2}\n", 2, "batch_discount"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "pricing.yaml"), []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := Check(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) != 1 || res.Errors[0].File != "pricing.yaml" || res.Errors[0].Line != c.line || !strings.Contains(res.Errors[0].Error, c.msg) {
				t.Fatalf("errors %+v; want pricing.yaml line %d: %s", res.Errors, c.line, c.msg)
			}
			cat, sync, err := Open(context.Background(), Options{Dir: dir, DB: openDB(t)})
			if err != nil {
				t.Fatal(err)
			}
			if len(sync.Errors) != 1 || cat.Pricing() != nil {
				t.Errorf("sync %+v, pricing %+v; want the error and no price", sync.Errors, cat.Pricing())
			}
		})
	}

	ctx := context.Background()
	dir := t.TempDir()
	body := "models:\n  openai/gpt-4o: {input: 2.5, output: 10, cached_input: 1.25, batch_discount: 0.5}\n  llama3.2: {input: 0, output: 0}\n"
	if err := os.WriteFile(filepath.Join(dir, "pricing.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := Check(dir, nil); err != nil || len(res.Errors) != 0 || res.Files != 1 {
		t.Fatalf("check %+v, %v; want one good file", res, err)
	}
	cat, _, err := Open(ctx, Options{Dir: dir, DB: openDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Pricing().Price("llama3.2")
	if !ok || *p.CachedInput != 0 || *p.BatchDiscount != 1 {
		t.Errorf("llama3.2 = %+v, %v; want free with the defaults", p, ok)
	}
	snap, err := cat.Export(ctx)
	if err != nil || snap.Pricing == nil || len(snap.Pricing.Models) != 2 {
		t.Fatalf("export pricing %+v, %v", snap.Pricing, err)
	}

	// An import carries its prices to a directory of its own; a replace
	// without prices keeps the file.
	dir2 := t.TempDir()
	cat2, _, err := Open(ctx, Options{Dir: dir2, DB: openDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat2.Import(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	if got, ok := cat2.Pricing().Cost("openai/gpt-4o", harness.Usage{PromptTokens: 1e6, CachedTokens: 1e6}, true); !ok || got != 0.625 {
		t.Errorf("imported cost %v, %v; want 0.625", got, ok)
	}
	if _, err := cat2.Import(ctx, &harness.Snapshot{}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir2, "pricing.yaml")); err != nil || cat2.Pricing() == nil {
		t.Errorf("a replace without prices removed them: %v", err)
	}
	if _, err := cat2.Import(ctx, &harness.Snapshot{Pricing: &harness.Pricing{Models: map[string]harness.Price{"m": {Input: -1}}}}, true); err == nil ||
		!strings.Contains(err.Error(), "pricing.models.m") {
		t.Errorf("a negative imported price: %v", err)
	}
	if res, err := cat2.Sync(ctx); err != nil || len(res.Errors) != 0 || cat2.Pricing() == nil || len(cat2.Pricing().Models) != 2 {
		t.Errorf("sync after import %+v, %v", res, err)
	}
}
