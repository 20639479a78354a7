package examples

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// knowledgeFiles are the sample knowledge base's files, with the headings
// each must yield (in order, among others) and its format.
var knowledgeFiles = []struct {
	name     string
	format   kbdoc.Format
	headings []string
}{
	{"kestrel-user-guide.pdf", kbdoc.PDF, []string{"Kestrel User Guide", "System requirements", "Working with files",
		"Sharing links", "Settings and shortcuts", "Teams", "Mobile apps and integrations"}},
	{"kestrel-plans-and-billing.docx", kbdoc.DOCX, []string{"Kestrel Plans and Billing", "Plans at a glance", "Paying",
		"Refunds", "Discounts", "How discounts combine", "Trial"}},
	{"kestrel-troubleshooting.html", kbdoc.HTML, []string{"Troubleshooting Kestrel", "Error codes", "Sync conflicts",
		"Logs", "Contacting support"}},
	{"kestrel-security.md", kbdoc.Markdown, []string{"Kestrel security and privacy", "How are files encrypted?",
		"Where is my data stored?", "Are deleted files really gone?"}},
}

// knowledgeTexts extracts every file of examples/knowledge/kb as the
// knowledge base stores it, by file name.
func knowledgeTexts(t *testing.T) map[string]*kbdoc.Document {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("knowledge", "kb"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*kbdoc.Document{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("knowledge", "kb", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		d, err := kbdoc.Extract(e.Name(), b)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out[e.Name()] = d
	}
	return out
}

// TestKnowledgeBaseExtracts checks that each file of the sample knowledge
// base reads as its format with its headings, lists and table, and that
// the HTML page's scripts are left out.
func TestKnowledgeBaseExtracts(t *testing.T) {
	docs := knowledgeTexts(t)
	if len(docs) != len(knowledgeFiles) {
		t.Errorf("examples/knowledge/kb holds %d files, want %d", len(docs), len(knowledgeFiles))
	}
	total := 0
	for _, f := range knowledgeFiles {
		d := docs[f.name]
		if d == nil {
			t.Errorf("%s is missing", f.name)
			continue
		}
		if d.Format != f.format {
			t.Errorf("%s reads as %s, want %s", f.name, d.Format, f.format)
		}
		var headings []string
		for _, s := range d.Sections {
			for _, h := range s.Headings {
				if !slices.Contains(headings, h) {
					headings = append(headings, h)
				}
			}
		}
		i := 0
		for _, h := range headings {
			if i < len(f.headings) && h == f.headings[i] {
				i++
			}
		}
		if i < len(f.headings) {
			t.Errorf("%s: headings %q, want %q among them in order", f.name, headings, f.headings)
		}
		total += len(d.Text())
	}
	if d := docs["kestrel-user-guide.pdf"]; d != nil && (d.Pages != 5 || len(d.EmptyPages) != 0) {
		t.Errorf("the PDF has %d pages, %v without text; want 5, all with text", d.Pages, d.EmptyPages)
	}
	if d := docs["kestrel-plans-and-billing.docx"]; d != nil {
		text := d.Text()
		for _, want := range []string{"Team | $15 per user per month | 3 TB per user | Unlimited devices | 180 days",
			"- Bank transfer, for yearly Team and Enterprise plans only."} {
			if !strings.Contains(text, want) {
				t.Errorf("the DOCX's text lacks %q:\n%s", want, text)
			}
		}
	}
	if d := docs["kestrel-troubleshooting.html"]; d != nil {
		text := d.Text()
		for _, bad := range []string{"SCRIPT-RAN", "tracker.example", "document.cookie", "<", "font-family"} {
			if strings.Contains(text, bad) {
				t.Errorf("the HTML's text holds %q, from a script, a style or markup", bad)
			}
		}
		if !strings.Contains(text, "- K-309: The disk is nearly full.") {
			t.Errorf("the HTML's list items are not kept as lines:\n%s", text)
		}
	}
	// Larger than what an agent puts in its system message whole, so that
	// retrieval chooses what the model sees.
	if budget := retrieval.DefaultBudgetTokens * 4; total <= budget {
		t.Errorf("the knowledge base has %d bytes of text, not more than the retrieval budget of %d", total, budget)
	}
}

// TestKnowledgeSuite checks the suite that goes with the sample knowledge
// base: it loads without a refused file and in canonical form, each test
// names an existing file as its expected source, and each expected answer
// is in that file and in no other, where the demo's model finds it.
func TestKnowledgeSuite(t *testing.T) {
	ctx := context.Background()
	defs, c, _ := openCopy(t, filepath.Join("knowledge", "definitions"))
	before := readTree(t, defs)
	snap, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Import(ctx, snap, false); err != nil {
		t.Fatal(err)
	}
	for name, b := range readTree(t, defs) {
		if before[name] != b {
			t.Errorf("%s is not in canonical form:\n--- file\n%s\n--- rewritten\n%s", name, before[name], b)
		}
	}

	tests, err := c.Tests(ctx, catalog.TestFilter{DomainID: "kestrel_support"})
	if err != nil {
		t.Fatal(err)
	}
	docs := knowledgeTexts(t)
	perLevel := map[int]int{}
	perFile := map[string]int{}
	for _, tc := range tests {
		perLevel[tc.Level]++
		checkKnowledgeTest(t, tc, docs)
		for _, s := range tc.Expected.Sources {
			perFile[s]++
		}
	}
	if len(perLevel) != 2 || perLevel[1] < 5 || perLevel[2] < 5 {
		t.Errorf("tests per level %v, want two levels of at least 5", perLevel)
	}
	for _, f := range knowledgeFiles {
		if perFile[f.name] < 2 {
			t.Errorf("%s is the expected source of %d tests, want at least 2", f.name, perFile[f.name])
		}
	}
}

// checkKnowledgeTest checks one test of the suite against the knowledge
// base.
func checkKnowledgeTest(t *testing.T, tc harness.Test, docs map[string]*kbdoc.Document) {
	t.Helper()
	exp := tc.Expected
	if exp.Type != "contains" || len(exp.Sources) != 1 {
		t.Errorf("%s: expected %+v, want a contains answer and one source", tc.ID, exp)
		return
	}
	src := exp.Sources[0]
	d := docs[src]
	if d == nil {
		t.Errorf("%s: expected source %q is not a file of the knowledge base", tc.ID, src)
		return
	}
	answer := strings.ToLower(exp.Answer)
	for name, other := range docs {
		n := strings.Count(strings.ToLower(other.Text()), answer)
		switch {
		case name == src && n != 1:
			t.Errorf("%s: %q is %d times in %s, want once", tc.ID, exp.Answer, n, name)
		case name != src && n != 0:
			t.Errorf("%s: %q is in %s too, not only in %s", tc.ID, exp.Answer, name, src)
		}
	}
	// Given its source alone, the demo's model answers right.
	got, ok := llmtest.BestSentence(d.Text(), tc.Prompt)
	if !ok || !strings.Contains(strings.ToLower(got), answer) {
		t.Errorf("%s: from %s the demo's model answers %q, which lacks %q", tc.ID, src, got, exp.Answer)
	}
}
