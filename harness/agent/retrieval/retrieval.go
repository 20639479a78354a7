package retrieval

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

// Chunking and ranking: files are cut into chunks of about chunkSize bytes
// on paragraph, then line, then word boundaries, with up to chunkOverlap
// bytes of the previous chunk repeated, and ranked with BM25.
const (
	chunkSize    = 800
	chunkOverlap = 160
	bm25K1       = 1.2
	bm25B        = 0.75
)

// Defaults of the Options left at zero.
const (
	DefaultBudgetTokens = 4000
	DefaultMaxCached    = 32
)

// Tokens estimates the tokens of a text: a token per four bytes, rounded
// up.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// Options configure a Retriever. KB is required.
type Options struct {
	// KB is the store of the knowledge bases.
	KB *kb.Store
	// BudgetTokens bounds the knowledge-base text Context returns
	// (default 4000, tokens estimated by Tokens): the whole base when it
	// fits, else the chunks that best match the query.
	BudgetTokens int
	// MaxCached bounds the knowledge bases kept in memory (default 32): past
	// it, the least recently used is dropped, to be rebuilt when next
	// needed.
	MaxCached int
	// Logger receives the retriever's log lines; nil discards them.
	Logger *slog.Logger
}

// Retriever gives a model the relevant part of an agent's knowledge base.
// It keeps a view of each base in use (the whole text when it fits the
// budget, else a BM25 index of its chunks), built on first use and built
// again when the store's [kb.Store.Version] changes. It is safe for
// concurrent use.
type Retriever struct {
	opts Options
	log  *slog.Logger

	mu   sync.Mutex
	byID map[string]*entry // by agent id
	uses int64
}

// entry caches the view of one knowledge base.
type entry struct {
	mu   sync.Mutex // held while building
	snap *snapshot
	used int64 // the retriever's use counter when last used; guarded by Retriever.mu
}

// snapshot is an immutable view of a knowledge base.
type snapshot struct {
	version string
	whole   string // the whole base, formatted, when it fits the budget
	index   *Index
}

// New returns a Retriever over opts.KB.
func New(opts Options) *Retriever {
	if opts.BudgetTokens <= 0 {
		opts.BudgetTokens = DefaultBudgetTokens
	}
	if opts.MaxCached <= 0 {
		opts.MaxCached = DefaultMaxCached
	}
	r := &Retriever{opts: opts, log: opts.Logger, byID: map[string]*entry{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r
}

// Forget drops the cached view of an agent's knowledge base, as when the
// agent is deleted. (Changes to the files need no Forget: the next use
// sees them.)
func (r *Retriever) Forget(agentID string) {
	r.mu.Lock()
	delete(r.byID, agentID)
	r.mu.Unlock()
}

// view returns the current view of an agent's knowledge base, building it
// when the files changed; nil when the base is empty.
func (r *Retriever) view(agentID string) (*snapshot, error) {
	version, err := r.opts.KB.Version(agentID)
	if err != nil || version == "" {
		return nil, err
	}
	r.mu.Lock()
	e := r.byID[agentID]
	if e == nil {
		if len(r.byID) >= r.opts.MaxCached {
			var oldest string
			for id, x := range r.byID {
				if oldest == "" || x.used < r.byID[oldest].used {
					oldest = id
				}
			}
			delete(r.byID, oldest)
		}
		e = &entry{}
		r.byID[agentID] = e
	}
	r.uses++
	e.used = r.uses
	r.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snap != nil && e.snap.version == version {
		return e.snap, nil
	}
	docs, err := r.opts.KB.Documents(agentID)
	if err != nil {
		return nil, err
	}
	e.snap = r.build(docs, version)
	return e.snap, nil
}

// build indexes the documents, and keeps them whole too when they fit
// the budget.
func (r *Retriever) build(docs []kb.Document, version string) *snapshot {
	snap := &snapshot{version: version, index: NewIndex(docs)}
	var whole strings.Builder
	for _, d := range docs {
		whole.WriteString("### ")
		whole.WriteString(d.Name)
		whole.WriteString("\n\n")
		whole.WriteString(strings.TrimSpace(d.Text))
		whole.WriteString("\n\n")
	}
	if Tokens(whole.String()) <= r.opts.BudgetTokens {
		snap.whole = strings.TrimSpace(whole.String())
	}
	r.log.Debug("knowledge base indexed", slog.Int("files", len(docs)), slog.Int("chunks", snap.index.Len()))
	return snap
}

// Retrieval modes, as Retrieved.Mode and SearchResult.Mode say them.
const (
	// ModeBM25 ranks chunks by BM25 alone.
	ModeBM25 = "bm25"
	// ModeHybrid fuses the BM25 ranking with the embeddings' by
	// reciprocal rank.
	ModeHybrid = "hybrid"
)

// Result is a chunk found by Search.
type Result struct {
	// File names the document the chunk is from; Chunk is its number in
	// that document, from 0.
	File  string `json:"file"`
	Chunk int    `json:"chunk"`
	// Text is the chunk's text.
	Text string `json:"text"`
	// Score is the chunk's score for the query, higher is better: its
	// BM25 score, or its fused score when the search is hybrid.
	Score float64 `json:"score"`
	// BM25Rank and VectorRank are the chunk's places, from 1, in the BM25
	// ranking and in the embeddings' ranking; nil when that ranking did
	// not place it (no query word in the chunk; no embeddings).
	BM25Rank   *int `json:"bm25_rank"`
	VectorRank *int `json:"vector_rank"`
}

// SearchResult is what Search found.
type SearchResult struct {
	Results []Result `json:"results"`
	// Mode is ModeBM25 or ModeHybrid: how the results were ranked.
	Mode string `json:"mode"`
	// Fallback says why a search meant to be hybrid was BM25 only (the
	// embedding endpoint failed, say); "" when it was not.
	Fallback string `json:"fallback,omitempty"`
}

// Search returns the k chunks of an agent's knowledge base that best
// match query, best first, with their ranks. An empty base, or a query
// that matches nothing, gives no result. The agent is not looked up.
func (r *Retriever) Search(_ context.Context, agentID, query string, k int) (SearchResult, error) {
	res := SearchResult{Results: []Result{}, Mode: ModeBM25}
	snap, err := r.view(agentID)
	if err != nil || snap == nil {
		return res, err
	}
	for i, h := range snap.index.Search(query, k) {
		rank := i + 1
		res.Results = append(res.Results, Result{File: h.File, Chunk: h.Chunk, Text: h.Text, Score: h.Score, BM25Rank: &rank})
	}
	return res, nil
}

// Retrieved is what an agent's knowledge base gives a model for one user
// message.
type Retrieved struct {
	// Text is the knowledge-base part of the system message; "" when the
	// base is empty or nothing matches.
	Text string
	// Sources are the chunks Text holds, best first: when the whole base
	// fits the budget, every chunk (those that match the message first,
	// by score, then the others with score 0, in file order).
	Sources []harness.Source
	// Mode and Fallback are those of the search (see SearchResult); Mode
	// is "" when the base is empty.
	Mode     string
	Fallback string
}

// Retrieve returns what a model is given of an agent's knowledge base for
// a user's message (query): the whole base when it fits the budget, else
// the chunks that best match the query, best first, as many as fit, each
// headed by its file name and part number; and which chunks those are.
// The agent is not looked up: its id only names a directory of the store.
func (r *Retriever) Retrieve(ctx context.Context, agentID, query string) (Retrieved, error) {
	snap, err := r.view(agentID)
	if err != nil || snap == nil {
		return Retrieved{}, err
	}
	out := Retrieved{Sources: []harness.Source{}, Mode: ModeBM25}
	hits := snap.index.Search(query, 64)
	if snap.whole != "" {
		out.Text = "Knowledge base:\n\n" + snap.whole
		seen := make(map[int]bool, len(hits))
		for _, h := range hits {
			out.Sources = append(out.Sources, harness.Source{File: h.File, Chunk: h.Chunk, Score: h.Score})
			seen[h.doc] = true
		}
		for i, c := range snap.index.chunks {
			if !seen[i] {
				out.Sources = append(out.Sources, harness.Source{File: c.file, Chunk: c.part})
			}
		}
		return out, nil
	}
	budget := r.opts.BudgetTokens * 4
	var b strings.Builder
	b.WriteString("Knowledge base excerpts (the parts most relevant to the user's message):")
	used := 0
	for _, h := range hits {
		text := strings.TrimSpace(h.Text)
		head := fmt.Sprintf("\n\n### %s (part %d)\n\n", h.File, h.Chunk+1)
		if used+len(head)+len(text) > budget {
			continue
		}
		used += len(head) + len(text)
		b.WriteString(head)
		b.WriteString(text)
		out.Sources = append(out.Sources, harness.Source{File: h.File, Chunk: h.Chunk, Score: h.Score})
	}
	if used > 0 {
		out.Text = b.String()
	}
	return out, nil
}

// Context returns Retrieve's Text: the knowledge-base part of an agent's
// system message for a user's message.
func (r *Retriever) Context(ctx context.Context, agentID, query string) (string, error) {
	got, err := r.Retrieve(ctx, agentID, query)
	return got.Text, err
}

// chunk is a part of a knowledge-base file.
type chunk struct {
	file string
	part int
	text string // a substring of the file's content
}

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
	// Text is the chunk's text, a part of the document's.
	Text string
	// Score is the chunk's BM25 score for the query: higher is better.
	Score float64
}

// NewIndex cuts documents into chunks (about 800 bytes each, on paragraph,
// then line, then word boundaries, each repeating up to 160 bytes of the
// previous one) and indexes them.
func NewIndex(docs []kb.Document) *Index {
	b := newIndexBuilder()
	for _, d := range docs {
		b.add(d.Name, d.Text)
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
		c := ix.chunks[h.doc]
		out[i] = Hit{doc: int(h.doc), File: c.file, Chunk: c.part, Text: c.text, Score: h.score}
	}
	return out
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

func (b *indexBuilder) add(file, text string) {
	for i, sp := range chunkSpans(text, chunkSize, chunkOverlap) {
		doc := int32(len(b.ix.chunks))
		b.ix.chunks = append(b.ix.chunks, chunk{file: file, part: i, text: text[sp.start:sp.end]})
		clear(b.counts)
		n := 0
		b.buf = eachTerm(text[sp.start:sp.end], b.buf, func(term []byte) {
			id, ok := b.ix.terms[string(term)]
			if !ok {
				id = int32(len(b.ix.postings))
				b.ix.terms[string(term)] = id
				b.ix.postings = append(b.ix.postings, nil)
			}
			b.counts[id]++
			n++
		})
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

type span struct{ start, end int }

// chunkSpans cuts text into chunks of at most size bytes, made of whole
// segments (paragraphs; lines of a paragraph too long; words of a line too
// long; bytes of a word too long, on rune boundaries), each chunk
// repeating the last segments of the previous one up to overlap bytes.
func chunkSpans(text string, size, overlap int) []span {
	segs := segments(text, size)
	var out []span
	for i := 0; i < len(segs); {
		first, last := i, i
		for last+1 < len(segs) && segs[last+1].end-segs[first].start <= size {
			last++
		}
		out = append(out, span{segs[first].start, segs[last].end})
		if last+1 >= len(segs) {
			break
		}
		next := last + 1
		for next-1 > first && segs[last].end-segs[next-1].start <= overlap &&
			segs[last+1].end-segs[next-1].start <= size {
			next--
		}
		i = next
	}
	return out
}

// segments splits text into non-blank pieces of at most size bytes.
func segments(text string, size int) []span {
	var out []span
	for _, p := range splitOn(text, 0, len(text), "\n\n") {
		if p.end-p.start <= size {
			out = append(out, p)
			continue
		}
		for _, l := range splitOn(text, p.start, p.end, "\n") {
			if l.end-l.start <= size {
				out = append(out, l)
				continue
			}
			out = append(out, splitLong(text, l, size)...)
		}
	}
	return out
}

// splitOn splits text[start:end] on sep, trimming blank space around the
// pieces and dropping blank ones.
func splitOn(text string, start, end int, sep string) []span {
	var out []span
	for start < end {
		i := strings.Index(text[start:end], sep)
		stop := end
		if i >= 0 {
			stop = start + i
		}
		if sp, ok := trimSpan(text, start, stop); ok {
			out = append(out, sp)
		}
		if i < 0 {
			break
		}
		start = stop + len(sep)
	}
	return out
}

func trimSpan(text string, start, end int) (span, bool) {
	for start < end && isSpace(text[start]) {
		start++
	}
	for end > start && isSpace(text[end-1]) {
		end--
	}
	return span{start, end}, start < end
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// splitLong cuts a line longer than size at the last space before the
// limit, else at a rune boundary.
func splitLong(text string, l span, size int) []span {
	var out []span
	for l.end-l.start > size {
		cut := l.start + size
		if sp := strings.LastIndexByte(text[l.start:cut], ' '); sp > 0 {
			cut = l.start + sp
		} else {
			for cut > l.start && !utf8.RuneStart(text[cut]) {
				cut--
			}
			if cut == l.start {
				cut = l.start + size
			}
		}
		if sp, ok := trimSpan(text, l.start, cut); ok {
			out = append(out, sp)
		}
		l.start = cut
		for l.start < l.end && isSpace(text[l.start]) {
			l.start++
		}
	}
	if sp, ok := trimSpan(text, l.start, l.end); ok {
		out = append(out, sp)
	}
	return out
}
