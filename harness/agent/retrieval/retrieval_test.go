package retrieval_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
)

// fillerText returns about size bytes of text in paragraphs, made of a
// fixed vocabulary that includes the common words of the questions asked
// of it ("what", "launch", "code", "project"...), so that only rare words
// single a passage out.
func fillerText(size int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	common := strings.Fields(`the a of and to in is was for on with as by at from that this it be are
		what which launch code project team report system data value plan harbour market river city`)
	vocab := make([]string, 0, 3000)
	vocab = append(vocab, common...)
	syll := strings.Fields("ka lo mi ne ru sa te vo pri stel dan gor fen bal cor")
	for len(vocab) < cap(vocab) {
		n := 2 + r.IntN(3)
		var w strings.Builder
		for range n {
			w.WriteString(syll[r.IntN(len(syll))])
		}
		vocab = append(vocab, w.String())
	}
	var b strings.Builder
	b.Grow(size + 1024)
	for b.Len() < size {
		sentences := 3 + r.IntN(4)
		for s := range sentences {
			words := 8 + r.IntN(12)
			for i := range words {
				var w string
				if r.IntN(3) == 0 {
					w = common[r.IntN(len(common))]
				} else {
					w = vocab[r.IntN(len(vocab))]
				}
				if i == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				} else {
					b.WriteByte(' ')
				}
				b.WriteString(w)
			}
			b.WriteByte('.')
			if s < sentences-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

const factParagraph = "Project Zephyrine's launch code is 7741-ALPHA; the harbour pilots chose it in the spring."

// env is a Retriever over a Store in a fresh directory.
type env struct {
	ctx   context.Context
	dir   string
	store *kb.Store
	r     *retrieval.Retriever
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	store := kb.New(kb.Options{Dir: dir})
	return &env{ctx: t.Context(), dir: dir, store: store, r: retrieval.New(retrieval.Options{KB: store})}
}

func (e *env) write(t *testing.T, name, content string) {
	t.Helper()
	if _, err := e.store.Write(e.ctx, "a", name, strings.NewReader(content), true); err != nil {
		if _, err := e.store.Write(e.ctx, "a", name, strings.NewReader(content), false); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) context(t *testing.T, query string) string {
	t.Helper()
	got, err := e.r.Context(e.ctx, "a", query)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestWholeWhenItFits(t *testing.T) {
	e := newEnv(t)
	if got := e.context(t, "anything"); got != "" {
		t.Errorf("context of an empty base = %q", got)
	}
	e.write(t, "b.md", "Opening hours: 9 to 5.")
	e.write(t, "a.txt", "The office is in Lyon.")
	got := e.context(t, "unrelated question")
	if want := "Knowledge base:\n\n### a.txt\n\nThe office is in Lyon.\n\n### b.md\n\nOpening hours: 9 to 5."; got != want {
		t.Errorf("context = %q, want %q", got, want)
	}
}

func TestPicksTheRightChunk(t *testing.T) {
	e := newEnv(t)
	filler := fillerText(2<<20, 1)
	mid := strings.Index(filler[len(filler)/2:], "\n\n") + len(filler)/2 + 2
	e.write(t, "handbook.md", filler[:mid]+factParagraph+"\n\n"+filler[mid:])
	e.write(t, "more.txt", fillerText(512<<10, 2))

	got := e.context(t, "What is the launch code of Project Zephyrine?")
	if !strings.Contains(got, factParagraph) {
		t.Fatalf("the context (%d bytes) lacks the paragraph with the fact", len(got))
	}
	if budget := retrieval.DefaultBudgetTokens * 4; len(got) > budget+200 {
		t.Errorf("context is %d bytes, over the budget of about %d", len(got), budget)
	}
	if first := strings.Index(got, "### "); !strings.HasPrefix(got[first:], "### handbook.md (part ") {
		t.Errorf("the best chunk is not first:\n%.200s", got[first:])
	}
	if got := e.context(t, "qwertyuiop"); got != "" {
		t.Errorf("context with no matching word = %.200q, want nothing", got)
	}
}

func TestFollowsChanges(t *testing.T) {
	e := newEnv(t)
	filler := fillerText(300<<10, 3)
	e.write(t, "base.md", filler+"\n\nThe vault password hint is BLUEFINCH.\n")
	if !strings.Contains(e.context(t, "vault password hint?"), "BLUEFINCH") {
		t.Fatal("first fact not retrieved")
	}
	// A write through the store.
	e.write(t, "base.md", filler+"\n\nThe vault password hint is REDROBIN.\n")
	if got := e.context(t, "vault password hint?"); !strings.Contains(got, "REDROBIN") || strings.Contains(got, "BLUEFINCH") {
		t.Fatal("the index did not follow a write")
	}
	// A change made behind the store's back (size and mtime).
	path := filepath.Join(e.dir, "a", "base.md")
	if err := os.WriteFile(path, []byte(filler+"\n\nThe vault password hint is GREYHERON, changed by hand.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(path, later, later)
	if !strings.Contains(e.context(t, "vault password hint?"), "GREYHERON") {
		t.Fatal("the index did not follow a change on disk")
	}
	// Deleting the file empties the knowledge base.
	if err := e.store.Delete(e.ctx, "a", "base.md"); err != nil {
		t.Fatal(err)
	}
	if got := e.context(t, "vault password hint?"); got != "" {
		t.Errorf("context after delete = %.200q", got)
	}
}

func TestIndexSearch(t *testing.T) {
	ix := retrieval.NewIndex([]kb.Document{
		{Name: "x.md", Text: fillerText(200<<10, 4) + "\n\n" + factParagraph + "\n\n" + fillerText(200<<10, 5)},
		{Name: "y.md", Text: "Zephyrine is a project.\n\nNothing else."},
	})
	if ix.Len() < 400 {
		t.Errorf("%d chunks for 400 KB, want about one per 800 bytes", ix.Len())
	}
	hits := ix.Search("7741-ALPHA: Zephyrine LAUNCH code", 5)
	if len(hits) != 5 || hits[0].File != "x.md" || !strings.Contains(hits[0].Text, factParagraph) || hits[0].Score <= 0 {
		t.Fatalf("hits = %+v", hits)
	}
	if !slices.IsSortedFunc(hits, func(a, b retrieval.Hit) int { return -cmpFloat(a.Score, b.Score) }) {
		t.Errorf("hits not best first: %+v", hits)
	}
	if !slices.ContainsFunc(hits, func(h retrieval.Hit) bool { return h.File == "y.md" && h.Chunk == 0 }) {
		t.Errorf("the other file's matching chunk is missing: %+v", hits)
	}
	if hits := ix.Search("qwertyuiop", 5); len(hits) != 0 {
		t.Errorf("hits for an unknown word = %+v", hits)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
