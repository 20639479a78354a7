package retrieval

import (
	"cmp"
	"math"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

type posting struct {
	doc int32
	tf  int32
}

// Index is a BM25 index of the chunks of a set of documents. It is
// immutable once built, so safe for concurrent searches.
type Index struct {
	chunks   []chunk
	lens     []float32 // tokens per chunk
	avgLen   float64
	terms    map[string]int32
	postings [][]posting // by term id
}

// Hit is a chunk that matches a query.
type Hit struct {
	doc int // the chunk's index in the Index
	// File names the document the chunk is from; Chunk is its number in
	// that document, from 0.
	File  string
	Chunk int
	// Headings is the heading path of the chunk's section, outermost
	// first; nil before a file's first heading.
	Headings []string
	// Page is the PDF page the chunk is on, from 1; 0 for other formats.
	Page int
	// Offset is the byte offset of Text in the document's text.
	Offset int
	// Text is the chunk's text, a part of the document's (without the
	// heading path).
	Text string
	// Score is the chunk's BM25 score for the query: higher is better.
	Score float64
}

// NewIndex cuts documents into chunks and indexes them: each section
// (the text under one heading; the whole text of a Document whose Doc is
// nil) into chunks of about 800 bytes on paragraph, then line, then
// sentence, then word boundaries, each repeating up to 160 bytes of the
// previous one of its section. A chunk's heading path is indexed with
// its text.
func NewIndex(docs []kb.Document) *Index {
	b := newIndexBuilder()
	for _, d := range docs {
		b.addDocument(d)
	}
	return b.finish()
}

// Len returns the number of chunks indexed.
func (ix *Index) Len() int { return len(ix.chunks) }

// Search returns up to k chunks that match the query (any of its words,
// case-insensitive), best first; ties in document order.
func (ix *Index) Search(query string, k int) []Hit {
	hits := ix.search(query, k)
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = ix.hit(int(h.doc), h.score)
	}
	return out
}

func (ix *Index) hit(doc int, score float64) Hit {
	c := &ix.chunks[doc]
	return Hit{doc: doc, File: c.file, Chunk: c.part, Headings: c.headings, Page: c.page, Offset: c.offset,
		Text: c.text, Score: score}
}

type indexBuilder struct {
	ix     *Index
	counts map[int32]int32
	buf    []byte
	total  int64
}

func newIndexBuilder() *indexBuilder {
	return &indexBuilder{ix: &Index{terms: map[string]int32{}}, counts: map[int32]int32{}}
}

// add indexes a text as one section without headings (for tests).
func (b *indexBuilder) add(file, text string) {
	b.addDocument(kb.Document{Name: file, Text: text})
}

func (b *indexBuilder) addDocument(d kb.Document) {
	first := len(b.ix.chunks)
	b.ix.chunks = chunksOf(b.ix.chunks, d)
	for i := first; i < len(b.ix.chunks); i++ {
		c := &b.ix.chunks[i]
		doc := int32(i)
		clear(b.counts)
		n := 0
		term := func(term []byte) {
			id, ok := b.ix.terms[string(term)]
			if !ok {
				id = int32(len(b.ix.postings))
				b.ix.terms[string(term)] = id
				b.ix.postings = append(b.ix.postings, nil)
			}
			b.counts[id]++
			n++
		}
		for _, h := range c.headings {
			b.buf = eachTerm(h, b.buf, term)
		}
		b.buf = eachTerm(c.text, b.buf, term)
		for id, tf := range b.counts {
			b.ix.postings[id] = append(b.ix.postings[id], posting{doc: doc, tf: tf})
		}
		b.ix.lens = append(b.ix.lens, float32(n))
		b.total += int64(n)
	}
}

func (b *indexBuilder) finish() *Index {
	if len(b.ix.chunks) > 0 {
		b.ix.avgLen = float64(b.total) / float64(len(b.ix.chunks))
	}
	if b.ix.avgLen == 0 {
		b.ix.avgLen = 1
	}
	return b.ix
}

type hit struct {
	doc   int32
	score float64
}

// search returns up to k chunks that match the query, best first (ties in
// document order).
func (ix *Index) search(query string, k int) []hit {
	n := float64(len(ix.chunks))
	if n == 0 {
		return nil
	}
	seen := map[int32]bool{}
	scores := make([]float64, len(ix.chunks))
	eachTerm(query, nil, func(term []byte) {
		id, ok := ix.terms[string(term)]
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		ps := ix.postings[id]
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := 1 - bm25B + bm25B*float64(ix.lens[p.doc])/ix.avgLen
			scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*norm)
		}
	})
	return topK(scores, k)
}

// better orders hits: higher score first, then earlier document.
func better(a, b hit) bool {
	return a.score > b.score || a.score == b.score && a.doc < b.doc
}

// topK returns the k best positive scores, best first, keeping a min-heap
// of the best so far: O(n log k) rather than sorting every match.
func topK(scores []float64, k int) []hit {
	h := make([]hit, 0, k)
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(h) && better(h[m], h[l]) {
				m = l
			}
			if r := l + 1; r < len(h) && better(h[m], h[r]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for d, sc := range scores {
		if sc <= 0 {
			continue
		}
		x := hit{int32(d), sc}
		if len(h) < k {
			h = append(h, x)
			for i := len(h) - 1; i > 0; { // up
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		if k > 0 && better(x, h[0]) {
			h[0] = x
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.doc, b.doc)
	})
	return h
}

// eachTerm calls fn with each term of text: a run of letters and digits,
// lower-cased. The slice fn gets is only valid during the call; buf is
// reused and returned.
func eachTerm(text string, buf []byte, fn func([]byte)) []byte {
	buf = buf[:0]
	flush := func() {
		if len(buf) > 0 {
			fn(buf)
			buf = buf[:0]
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				buf = append(buf, c)
			case 'A' <= c && c <= 'Z':
				buf = append(buf, c+'a'-'A')
			default:
				flush()
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		} else {
			flush()
		}
		i += size
	}
	flush()
	return buf
}
