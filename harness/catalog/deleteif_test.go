package catalog

import (
	"context"
	"errors"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestDeleteIf checks the conditional deletes: a check that refuses keeps
// the record and every file, and its error comes back as it is; a check
// that accepts sees the stored record and the record is deleted.
func TestDeleteIf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refuse := errors.New("refused")
	cases := []struct {
		name    string
		del     func(c *Catalog, check func(id string) error) error
		exists  func(c *Catalog) error
		checkID string
	}{
		{"domain", func(c *Catalog, check func(string) error) error {
			return c.DeleteDomainIf(ctx, "geo", func(d harness.Domain) error { return check(d.ID) })
		}, func(c *Catalog) error { _, err := c.Domain(ctx, "geo"); return err }, "geo"},
		{"test", func(c *Catalog, check func(string) error) error {
			return c.DeleteTestIf(ctx, "add", func(t harness.Test) error { return check(t.ID) })
		}, func(c *Catalog) error { _, err := c.Test(ctx, "add"); return err }, "add"},
		{"evaluator", func(c *Catalog, check func(string) error) error {
			return c.DeleteEvaluatorIf(ctx, "unused", func(e harness.EvaluatorConfig) error { return check(e.ID) })
		}, func(c *Catalog) error { _, err := c.Evaluator(ctx, "unused"); return err }, "unused"},
		{"tool", func(c *Catalog, check func(string) error) error {
			return c.DeleteToolIf(ctx, "spare", func(t harness.ToolDefinition) error { return check(t.ID) })
		}, func(c *Catalog) error { _, err := c.Tool(ctx, "spare"); return err }, "spare"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCatalog(t)
			seed(t, c)
			if _, err := c.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "unused", Name: "Unused"}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreateTool(ctx, harness.ToolDefinition{ID: "spare",
				Function: harness.FunctionDef{Name: "spare"}}); err != nil {
				t.Fatal(err)
			}
			before := stateOf(t, c)
			var seen string
			err := tc.del(c, func(id string) error { seen = id; return refuse })
			if !errors.Is(err, refuse) {
				t.Fatalf("refused delete: %v, want the check's error", err)
			}
			if seen != tc.checkID {
				t.Errorf("check saw %q, want %q", seen, tc.checkID)
			}
			assertUnchanged(t, c, before)
			if err := tc.del(c, func(string) error { return nil }); err != nil {
				t.Fatalf("accepted delete: %v", err)
			}
			if err := tc.exists(c); !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("after the delete: %v, want not found", err)
			}
			if err := tc.del(c, func(string) error { t.Error("check called for a missing record"); return nil }); !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("delete again: %v, want not found", err)
			}
		})
	}
}
