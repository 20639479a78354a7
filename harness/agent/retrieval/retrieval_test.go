package retrieval_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/agent/internal/kbtext"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
)

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
	filler := kbtext.Filler(2<<20, 1)
	mid := strings.Index(filler[len(filler)/2:], "\n\n") + len(filler)/2 + 2
	e.write(t, "handbook.md", filler[:mid]+kbtext.Fact+"\n\n"+filler[mid:])
	e.write(t, "more.txt", kbtext.Filler(512<<10, 2))

	got := e.context(t, "What is the launch code of Project Zephyrine?")
	if !strings.Contains(got, kbtext.Fact) {
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
	filler := kbtext.Filler(300<<10, 3)
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
		{Name: "x.md", Text: kbtext.Filler(200<<10, 4) + "\n\n" + kbtext.Fact + "\n\n" + kbtext.Filler(200<<10, 5)},
		{Name: "y.md", Text: "Zephyrine is a project.\n\nNothing else."},
	})
	if ix.Len() < 400 {
		t.Errorf("%d chunks for 400 KB, want about one per 800 bytes", ix.Len())
	}
	hits := ix.Search("7741-ALPHA: Zephyrine LAUNCH code", 5)
	if len(hits) != 5 || hits[0].File != "x.md" || !strings.Contains(hits[0].Text, kbtext.Fact) || hits[0].Score <= 0 {
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
