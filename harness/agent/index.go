package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Knowledge-base retrieval: the files of an agent are cut into chunks of
// about chunkSize bytes on paragraph, then line, then word boundaries, with
// up to chunkOverlap bytes of the previous chunk repeated, and ranked with
// BM25 against the user's message.
const (
	chunkSize    = 800
	chunkOverlap = 160
	bm25K1       = 1.2
	bm25B        = 0.75
)

// tokensOf estimates the tokens of a text: a token per four bytes, rounded
// up.
func tokensOf(s string) int { return (len(s) + 3) / 4 }

// kbEntry caches the knowledge base of one agent. It is rebuilt when the
// files' names, sizes or modification times change, and dropped by the
// service's own writes.
type kbEntry struct {
	mu   sync.Mutex // held while building
	snap *kbSnapshot
	used int64 // the service's use counter when last used; guarded by indexMu
}

// maxCachedKB bounds the knowledge bases kept in memory: past it, the
// least recently used is dropped, to be rebuilt when next needed.
const maxCachedKB = 32

// kbSnapshot is an immutable view of a knowledge base.
type kbSnapshot struct {
	sig   string
	whole string // the whole base, formatted, when it fits the budget
	index *bm25Index
}

type kbFile struct {
	name    string
	size    int64
	modNano int64
}

func (s *Service) dropIndex(agentID string) {
	s.indexMu.Lock()
	delete(s.indexes, agentID)
	s.indexMu.Unlock()
}

// kbFiles lists the usable files of a knowledge base and a signature of
// them.
func (s *Service) kbFiles(agentID string) ([]kbFile, string, error) {
	dir, ok := s.kbDir(agentID)
	if !ok {
		return nil, "", nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var files []kbFile
	var sig strings.Builder
	for _, e := range entries {
		if !e.Type().IsRegular() || ValidKBName(e.Name()) != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		f := kbFile{name: e.Name(), size: fi.Size(), modNano: fi.ModTime().UnixNano()}
		files = append(files, f)
		sig.WriteString(f.name)
		sig.WriteByte(0)
		sig.WriteString(strconv.FormatInt(f.size, 10))
		sig.WriteByte(0)
		sig.WriteString(strconv.FormatInt(f.modNano, 10))
		sig.WriteByte(0)
	}
	return files, sig.String(), nil
}

// snapshot returns the current view of an agent's knowledge base, building
// it when the files changed; nil when the base is empty.
func (s *Service) snapshot(agentID string) (*kbSnapshot, error) {
	files, sig, err := s.kbFiles(agentID)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	s.indexMu.Lock()
	e := s.indexes[agentID]
	if e == nil {
		if len(s.indexes) >= maxCachedKB {
			var oldest string
			for id, x := range s.indexes {
				if oldest == "" || x.used < s.indexes[oldest].used {
					oldest = id
				}
			}
			delete(s.indexes, oldest)
		}
		e = &kbEntry{}
		s.indexes[agentID] = e
	}
	s.indexUses++
	e.used = s.indexUses
	s.indexMu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snap != nil && e.snap.sig == sig {
		return e.snap, nil
	}
	snap, err := s.build(agentID, files, sig)
	if err != nil {
		return nil, err
	}
	e.snap = snap
	return snap, nil
}

// build reads the files of a knowledge base and keeps them whole when they
// fit the budget, else indexes them.
func (s *Service) build(agentID string, files []kbFile, sig string) (*kbSnapshot, error) {
	root, err := s.kbRoot(agentID, false)
	if err != nil || root == nil {
		return nil, err
	}
	defer root.Close()
	type doc struct{ name, text string }
	docs := make([]doc, 0, len(files))
	for _, f := range files {
		data, err := root.ReadFile(f.name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted meanwhile: the next chat rebuilds
		}
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(data) || slices.Contains(data, 0) {
			s.log.Warn("knowledge base file is not text; skipped", slog.String("agent", agentID), slog.String("file", f.name))
			continue
		}
		docs = append(docs, doc{f.name, string(data)})
	}
	snap := &kbSnapshot{sig: sig}
	var whole strings.Builder
	for _, d := range docs {
		whole.WriteString("### ")
		whole.WriteString(d.name)
		whole.WriteString("\n\n")
		whole.WriteString(strings.TrimSpace(d.text))
		whole.WriteString("\n\n")
	}
	if tokensOf(whole.String()) <= s.opts.KBBudgetTokens {
		snap.whole = strings.TrimSpace(whole.String())
		return snap, nil
	}
	b := newIndexBuilder()
	for _, d := range docs {
		b.add(d.name, d.text)
	}
	snap.index = b.finish()
	return snap, nil
}

// kbContext is the knowledge-base part of an agent's system message for a
// user's message: the whole base when it fits the budget, else the chunks
// that best match the message, best first, as many as fit. "" when the
// base is empty or nothing matches.
func (s *Service) kbContext(_ context.Context, agentID, query string) (string, error) {
	snap, err := s.snapshot(agentID)
	if err != nil || snap == nil {
		return "", err
	}
	if snap.index == nil {
		if snap.whole == "" {
			return "", nil
		}
		return "Knowledge base:\n\n" + snap.whole, nil
	}
	hits := snap.index.search(query, 64)
	budget := s.opts.KBBudgetTokens * 4
	var b strings.Builder
	b.WriteString("Knowledge base excerpts (the parts most relevant to the user's message):")
	used := 0
	for _, h := range hits {
		c := snap.index.chunks[h.doc]
		text := strings.TrimSpace(c.text)
		head := fmt.Sprintf("\n\n### %s (part %d)\n\n", c.file, c.part+1)
		if used+len(head)+len(text) > budget {
			continue
		}
		used += len(head) + len(text)
		b.WriteString(head)
		b.WriteString(text)
	}
	if used == 0 {
		return "", nil
	}
	return b.String(), nil
}

// Retrieve returns the knowledge-base text an agent's system message would
// hold for a user's message: the whole base when it fits KBBudgetTokens,
// else the best-matching chunks. It serves tests and tools that want to
// see what the model is given.
func (s *Service) Retrieve(ctx context.Context, agentID, query string) (string, error) {
	if _, err := s.agent(ctx, s.db, agentID); err != nil {
		return "", err
	}
	return s.kbContext(ctx, agentID, query)
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

// bm25Index is an inverted index of chunks.
type bm25Index struct {
	chunks   []chunk
	lens     []float32 // tokens per chunk
	avgLen   float64
	terms    map[string]int32
	postings [][]posting // by term id
}

type indexBuilder struct {
	ix     *bm25Index
	counts map[int32]int32
	buf    []byte
	total  int64
}

func newIndexBuilder() *indexBuilder {
	return &indexBuilder{ix: &bm25Index{terms: map[string]int32{}}, counts: map[int32]int32{}}
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

func (b *indexBuilder) finish() *bm25Index {
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
func (ix *bm25Index) search(query string, k int) []hit {
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
