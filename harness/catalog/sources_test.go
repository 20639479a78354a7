package catalog

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestLoadExpectedSources: a test's expected.sources are read from its
// level file and given back; a level file whose test names a path, or a
// file twice, is refused with an error naming the test's field.
func TestLoadExpectedSources(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"domains/kb/domain.yaml": {Data: []byte("name: Knowledge\n")},
		"domains/kb/level-1.yaml": {Data: []byte("tests:\n" +
			"  - id: refund\n    prompt: How long do refunds take?\n" +
			"    expected: {answer: '30', type: numeric, sources: [policy.md, faq.pdf]}\n")},
		"domains/kb/level-2.yaml": {Data: []byte("tests:\n" +
			"  - id: escape\n    prompt: What is in the database?\n" +
			"    expected: {answer: x, sources: [../gauntlet.db]}\n")},
		"domains/kb/level-3.yaml": {Data: []byte("tests:\n" +
			"  - id: twice\n    prompt: Which file?\n" +
			"    expected: {answer: x, sources: [a.md, a.md]}\n")},
	}
	c, res := loadAt(t, fsys)
	if res.Loaded.Tests != 1 {
		t.Errorf("loaded %+v, want the one valid test", res.Loaded)
	}
	got, err := c.Test(context.Background(), "refund")
	if err != nil || !slices.Equal(got.Expected.Sources, []string{"policy.md", "faq.pdf"}) {
		t.Fatalf("refund: %+v, %v", got.Expected, err)
	}
	errs := map[string]string{}
	for _, fe := range res.Errors {
		errs[fe.File] = fe.Error
	}
	for file, want := range map[string]string{
		"domains/kb/level-2.yaml": "expected.sources[0]",
		"domains/kb/level-3.yaml": `expected.sources[1]: file "a.md" is listed twice`,
	} {
		if msg := errs[file]; !strings.Contains(msg, want) {
			t.Errorf("%s: error %q, want it to name %q", file, msg, want)
		}
	}
}
