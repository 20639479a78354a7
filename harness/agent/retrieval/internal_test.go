package retrieval

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc/kbdoctest"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

func TestChunkSpans(t *testing.T) {
	long := strings.Repeat("word ", 400)             // one line of 2,000 bytes
	noSpace := strings.Repeat("é", 1000)             // 2,000 bytes, no space
	lines := strings.Repeat("a line of text\n", 120) // one paragraph of many lines
	var paras []string
	for i := range 40 {
		paras = append(paras, fmt.Sprintf("Paragraph %d. %s", i, strings.Repeat("filler ", 10+i%30)))
	}
	for name, text := range map[string]string{
		"paragraphs": strings.Join(paras, "\n\n"), "long line": long, "no space": noSpace, "lines": lines,
		"mixed": "intro\n\n" + long + "\n\n" + lines + "\n\n" + noSpace + "\n\n\n\n  \n\nend",
		"short": "just this", "blank": " \n\n \n",
	} {
		t.Run(name, func(t *testing.T) {
			spans := chunkSpans(text, chunkSize, chunkOverlap)
			covered := make([]bool, len(text))
			prev := span{-1, -1}
			overlaps := 0
			for _, sp := range spans {
				if sp.end-sp.start > chunkSize || sp.end <= sp.start {
					t.Fatalf("chunk [%d,%d) of %d bytes", sp.start, sp.end, sp.end-sp.start)
				}
				if !utf8.ValidString(text[sp.start:sp.end]) {
					t.Fatalf("chunk [%d,%d) cuts a rune", sp.start, sp.end)
				}
				if sp.start <= prev.start || sp.end <= prev.end {
					t.Fatalf("chunk [%d,%d) does not move on from [%d,%d)", sp.start, sp.end, prev.start, prev.end)
				}
				if sp.start < prev.end {
					overlaps++
				}
				for i := sp.start; i < sp.end; i++ {
					covered[i] = true
				}
				prev = sp
			}
			for i, c := range covered {
				if !c && !isSpace(text[i]) {
					t.Fatalf("byte %d (%q) is in no chunk", i, text[i])
				}
			}
			if name == "paragraphs" || name == "lines" {
				if overlaps == 0 {
					t.Error("no chunk overlaps the previous one")
				}
				for _, sp := range spans {
					if sp.end-sp.start < chunkSize/3 && sp.end != len(strings.TrimRight(text, " \n")) {
						t.Errorf("chunk of only %d bytes", sp.end-sp.start)
					}
				}
			}
		})
	}
}

func TestBM25Ranks(t *testing.T) {
	b := newIndexBuilder()
	b.add("a.md", "The cat sat on the mat.\n\nDogs bark at night.\n\n"+strings.Repeat("Nothing to see here. ", 60))
	b.add("b.md", "Quantum chromodynamics describes the strong interaction.\n\nThe cat and the CAT and the Cat.")
	ix := b.finish()
	hits := ix.search("cat", 10)
	if len(hits) != 2 {
		t.Fatalf("hits = %v", hits)
	}
	if c := ix.chunks[hits[0].doc]; c.file != "b.md" {
		t.Errorf("best chunk for cat = %s %q", c.file, c.text)
	}
	if hits := ix.search("chromodynamics!", 10); len(hits) != 1 || ix.chunks[hits[0].doc].file != "b.md" {
		t.Errorf("hits for a rare word = %v", hits)
	}
	if hits := ix.search("", 10); len(hits) != 0 {
		t.Errorf("hits for nothing = %v", hits)
	}
}

func TestEachTerm(t *testing.T) {
	var got []string
	eachTerm("Hello, WORLD! Ünïcode 42x — naïve_café", nil, func(b []byte) { got = append(got, string(b)) })
	if want := "hello world ünïcode 42x naïve café"; strings.Join(got, " ") != want {
		t.Errorf("terms = %q, want %q", got, want)
	}
}

func TestTopK(t *testing.T) {
	scores := []float64{0, 3, 1, 3, 0, 5, 2, 0.5, 4}
	for k, want := range map[int]string{0: "", 1: "5", 3: "5 8 1", 20: "5 8 1 3 6 2 7"} {
		var got []string
		for _, h := range topK(scores, k) {
			got = append(got, fmt.Sprint(h.doc))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("topK(k=%d) = %v, want %s", k, got, want)
		}
	}
}

func TestCacheBounded(t *testing.T) {
	store := kb.New(kb.Options{Dir: t.TempDir()})
	r := New(Options{KB: store, BudgetTokens: 10, MaxCached: 4})
	ctx := t.Context()
	for i := range 4 + 5 {
		id := fmt.Sprint("a", i)
		if _, err := store.Write(ctx, id, "x.md", strings.NewReader(strings.Repeat("word ", 100)), true); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Context(ctx, id, "word"); err != nil {
			t.Fatal(err)
		}
		if i == 0 || i%3 == 0 {
			r.Context(ctx, "a0", "word") // kept in use: never the least recent
		}
	}
	if n := len(r.byID); n != 4 {
		t.Errorf("%d knowledge bases cached, want 4", n)
	}
	if r.byID["a0"] == nil {
		t.Error("the most used knowledge base was dropped")
	}
	r.Forget("a0")
	if r.byID["a0"] != nil {
		t.Error("Forget kept the knowledge base")
	}
}

// TestChunksFollowSections: no chunk crosses a heading; a long section is
// cut on its paragraphs and sentences; each chunk keeps its heading path,
// offset (its text is the document's at that offset) and number; the
// heading path is indexed.
func TestChunksFollowSections(t *testing.T) {
	long := strings.Repeat("The daemon reads its configuration at start. It then listens on the port. ", 30) // one line of 2,220 bytes
	md := "Intro text before any heading.\n\n# Install\n\nRead this first.\n\n## Linux\n\n" + long +
		"\n\n## Windows\n\nRun the installer.\n\n# Usage\n\nStart it."
	doc, err := kbdoc.Extract("guide.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	d := kb.Document{Name: "guide.md", Text: doc.Text(), Doc: doc}
	ix := NewIndex([]kb.Document{d})
	type want struct {
		path string
		n    int
	}
	var got []want
	for i, c := range ix.chunks {
		if c.part != i || c.file != "guide.md" {
			t.Errorf("chunk %d is numbered %d of %s", i, c.part, c.file)
		}
		if d.Text[c.offset:c.offset+len(c.text)] != c.text {
			t.Errorf("chunk %d: offset %d does not locate its text", i, c.offset)
		}
		if len(c.text) > chunkSize {
			t.Errorf("chunk %d has %d bytes", i, len(c.text))
		}
		if strings.Contains(c.text, "Run the installer") && strings.Contains(c.text, "listens") {
			t.Errorf("chunk %d crosses a heading: %q", i, c.text)
		}
		if n := len(got); n > 0 && got[n-1].path == c.path() {
			got[n-1].n++
		} else {
			got = append(got, want{c.path(), 1})
		}
		if c.path() == "Install > Linux" && (!strings.HasPrefix(c.text, "The daemon") && !strings.HasPrefix(c.text, "It then") || !strings.HasSuffix(c.text, ".")) {
			t.Errorf("a chunk of the long section is not cut on a sentence: %q…%q", c.text[:20], c.text[len(c.text)-20:])
		}
	}
	if fmt.Sprint(got) != "[{ 1} {Install 1} {Install > Linux 4} {Install > Windows 1} {Usage 1}]" {
		t.Errorf("chunks by heading path = %v", got)
	}
	// "linux" is only in the heading: BM25 finds that section's chunks.
	hits := ix.Search("linux", 10)
	if len(hits) != 4 {
		t.Fatalf("hits for a heading word = %+v", hits)
	}
	for _, h := range hits {
		if strings.Join(h.Headings, headingSep) != "Install > Linux" || h.Page != 0 {
			t.Errorf("hit %+v", h)
		}
	}
	// A Document made by hand is one section.
	plain := NewIndex([]kb.Document{{Name: "p.txt", Text: "# Not a heading\n\nJust text."}})
	if plain.Len() != 1 || plain.chunks[0].headings != nil || plain.chunks[0].text != "# Not a heading\n\nJust text." {
		t.Errorf("hand-made document chunks = %+v", plain.chunks)
	}
}

// TestChunksKeepPDFPages: a PDF's chunks say their page, and its heading.
func TestChunksKeepPDFPages(t *testing.T) {
	pdf := kbdoctest.PDF(
		kbdoctest.Page{Heading: "Warranty", Paragraphs: []string{"The warranty lasts two years."}},
		kbdoctest.Page{Paragraphs: []string{"Returns are accepted within thirty days."}},
		kbdoctest.Page{Heading: "Contact", Paragraphs: []string{"Write to the service desk."}},
	)
	doc, err := kbdoc.Extract("terms.pdf", pdf)
	if err != nil {
		t.Fatal(err)
	}
	ix := NewIndex([]kb.Document{{Name: "terms.pdf", Text: doc.Text(), Doc: doc}})
	for q, page := range map[string]int{"warranty years": 1, "returns thirty": 2, "service desk": 3} {
		hits := ix.Search(q, 1)
		if len(hits) != 1 || hits[0].Page != page || hits[0].File != "terms.pdf" {
			t.Errorf("%q: hits = %+v, want page %d", q, hits, page)
		}
	}
}

// TestVectorNearest: exact cosine ranking over normalised vectors.
func TestVectorNearest(t *testing.T) {
	vs := &vectorSet{dims: 3, data: []float32{
		1, 0, 0,
		0, 1, 0,
		0.6, 0.8, 0,
		-1, 0, 0,
	}}
	q := []float32{0.8, 0.6, 0}
	var got []string
	for _, h := range vs.nearest(q, 10) {
		got = append(got, fmt.Sprintf("%d:%.2f", h.doc, h.score))
	}
	if want := "0:0.80 2:0.96 1:0.60"; strings.Join(got, " ") != "2:0.96 0:0.80 1:0.60" {
		t.Errorf("nearest = %v, not %s order", got, want)
	}
	v := []float32{3, 4}
	if !normalise(v) || v[0] != 0.6 || v[1] != 0.8 {
		t.Errorf("normalise = %v", v)
	}
	if normalise([]float32{0, 0}) {
		t.Error("a zero vector was normalised")
	}
}
