package catalog

import (
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// TestEachTest: EachTest gives the tests Tests lists, in the same order,
// a page at a time (levels of more than one page included), for all
// domains or one; it stops at fn's first error; Outline is Export
// without the tests. A catalog made by Load streams the same.
func TestEachTest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	// Two domains of the benchmarks' snapshot: 2,000 tests in 20 level
	// files, many pages of EachTest's reads; the whole 10,000 proved no
	// more and cost a minute under the race detector.
	snap := benchSnapshot()
	snap.Domains = snap.Domains[:2]
	snap.Levels = slices.DeleteFunc(snap.Levels, func(l harness.LevelConfig) bool {
		return !slices.ContainsFunc(snap.Domains, func(d harness.Domain) bool { return d.ID == l.DomainID })
	})
	snap.Tests = slices.DeleteFunc(snap.Tests, func(x harness.Test) bool {
		return !slices.ContainsFunc(snap.Domains, func(d harness.Domain) bool { return d.ID == x.DomainID })
	})
	if _, err := c.Import(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	collect := func(c *Catalog, domain string) []harness.Test {
		var out []harness.Test
		if err := c.EachTest(ctx, domain, func(x harness.Test) error {
			out = append(out, x)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	all, err := c.Tests(ctx, TestFilter{})
	if err != nil || len(all) != 2000 {
		t.Fatalf("tests = %d, %v", len(all), err)
	}
	if got := collect(c, ""); !reflect.DeepEqual(got, all) {
		t.Fatalf("EachTest = %d tests; want Tests' %d in the same order", len(got), len(all))
	}
	d := all[1234].DomainID
	one, err := c.Tests(ctx, TestFilter{DomainID: d})
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(c, d); !reflect.DeepEqual(got, one) {
		t.Errorf("EachTest(%s) = %d tests; want %d", d, len(got), len(one))
	}
	if got := collect(c, "no-such-domain"); len(got) != 0 {
		t.Errorf("unknown domain = %d tests", len(got))
	}
	stop := errors.New("stop")
	n := 0
	if err := c.EachTest(ctx, "", func(harness.Test) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("stop = %v after %d tests", err, n)
	}

	whole, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outline, err := c.Outline(ctx)
	if err != nil || outline.Tests != nil {
		t.Fatalf("outline: %v", err)
	}
	whole.Tests = nil
	if !reflect.DeepEqual(outline, whole) {
		t.Errorf("Outline differs from Export without its tests")
	}

	mem, _, err := Load(ctx, os.DirFS(c.Dir()), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(mem, d); !reflect.DeepEqual(got, one) {
		t.Errorf("loaded catalog's EachTest(%s) = %d tests; want %d", d, len(got), len(one))
	}
}
