package agent_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestKBWholeWhenItFits(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "You answer from the notes.")
	e.writeKB("a", "b.md", "Opening hours: 9 to 5.")
	e.writeKB("a", "a.txt", "The office is in Lyon.")
	e.chat("a", "u", "unrelated question")
	sys := systemOf(e.lastRequest())
	for _, want := range []string{"You answer from the notes.", "### a.txt", "The office is in Lyon.", "### b.md", "Opening hours: 9 to 5."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system message lacks %q:\n%s", want, sys)
		}
	}
	if strings.Index(sys, "a.txt") > strings.Index(sys, "b.md") {
		t.Error("files are not in name order")
	}
}

func TestKBRetrievalPicksTheRightChunk(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "Answer from the knowledge base.")
	filler := fillerText(2<<20, 1)
	mid := strings.Index(filler[len(filler)/2:], "\n\n") + len(filler)/2 + 2
	e.writeKB("a", "handbook.md", filler[:mid]+factParagraph+"\n\n"+filler[mid:])
	e.writeKB("a", "more.txt", fillerText(512<<10, 2))

	e.chat("a", "u", "What is the launch code of Project Zephyrine?")
	sys := systemOf(e.lastRequest())
	if !strings.Contains(sys, factParagraph) {
		t.Fatalf("the system message (%d bytes) lacks the paragraph with the fact", len(sys))
	}
	if !strings.HasPrefix(sys, "Answer from the knowledge base.") {
		t.Error("the system prompt does not come first")
	}
	if budget := 4000 * 4; len(sys) > budget+2000 {
		t.Errorf("system message is %d bytes, over the budget of about %d", len(sys), budget)
	}
	if first := strings.Index(sys, "### "); !strings.Contains(sys[first:first+200], "handbook.md") {
		t.Errorf("the best chunk is not first:\n%s", sys[first:first+200])
	}
}

func TestKBIndexFollowsChanges(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	filler := fillerText(300<<10, 3)
	e.writeKB("a", "base.md", filler+"\n\nThe vault password hint is BLUEFINCH.\n")
	e.chat("a", "u", "vault password hint?")
	if !strings.Contains(systemOf(e.lastRequest()), "BLUEFINCH") {
		t.Fatal("first fact not retrieved")
	}
	// A write through the service drops the cached index.
	e.writeKB("a", "base.md", filler+"\n\nThe vault password hint is REDROBIN.\n")
	e.chat("a", "u", "vault password hint?")
	if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "REDROBIN") || strings.Contains(sys, "BLUEFINCH") {
		t.Fatal("the index did not follow a KBWrite")
	}
	// So does a change made behind the service's back (size and mtime).
	path := filepath.Join(e.opts.DataDir, "kb", "a", "base.md")
	if err := os.WriteFile(path, []byte(filler+"\n\nThe vault password hint is GREYHERON, changed by hand.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(path, later, later)
	e.chat("a", "u", "vault password hint?")
	if !strings.Contains(systemOf(e.lastRequest()), "GREYHERON") {
		t.Fatal("the index did not follow a change on disk")
	}
	// Deleting the file empties the knowledge base.
	if err := e.svc.KBDelete(e.ctx, "a", "base.md"); err != nil {
		t.Fatal(err)
	}
	e.chat("a", "u", "vault password hint?")
	if sys := systemOf(e.lastRequest()); sys != "" {
		t.Errorf("system message after delete = %.200q", sys)
	}
}

func TestRetrieve(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	e.writeKB("a", "x.md", fillerText(200<<10, 4)+"\n\n"+factParagraph+"\n\n"+fillerText(200<<10, 5))
	got, err := e.svc.Retrieve(e.ctx, "a", "zephyrine launch code")
	if err != nil || !strings.Contains(got, factParagraph) {
		t.Errorf("Retrieve = %.300q, %v", got, err)
	}
	if got, _ := e.svc.Retrieve(e.ctx, "a", "qwertyuiop"); got != "" {
		t.Errorf("Retrieve with no matching word = %.200q, want nothing", got)
	}
}
