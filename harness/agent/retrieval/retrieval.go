package retrieval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

// Defaults of the Options left at zero.
const (
	DefaultBudgetTokens = 4000
	DefaultMaxCached    = 32
	DefaultBatchSize    = 64
	DefaultConcurrency  = 4
	DefaultQueryTimeout = 10 * time.Second
	DefaultRetryAfter   = time.Minute
)

// rrfK is the constant of reciprocal rank fusion: a chunk placed r-th by
// a ranking gets 1/(rrfK + r) from it.
const rrfK = 60

// rankDepth is how many chunks each ranking contributes to the fusion,
// and Retrieve considers, at least.
const rankDepth = 100

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

	// EmbeddingModel, with Embedder, makes search hybrid: the chunks are
	// embedded in the background by this model, and once every chunk of
	// a base has its vector, the query's embedding ranks them too. Empty
	// means BM25 only.
	EmbeddingModel string
	// Embedder computes the embeddings; required with EmbeddingModel.
	Embedder harness.Embedder
	// Vectors stores the vectors; nil keeps them in memory (lost with the
	// Retriever).
	Vectors VectorStore
	// BatchSize is the number of texts of one embedding request (default
	// 64).
	BatchSize int
	// EmbedConcurrency bounds the embedding requests in flight for one
	// knowledge base (default 4).
	EmbedConcurrency int
	// QueryTimeout bounds the embedding of a query (default 10 s): past
	// it the search is BM25, saying why.
	QueryTimeout time.Duration
	// RetryAfter is how long a knowledge base whose embedding failed waits
	// before a use of it tries again (default 1 min); a change to its
	// files tries again at once.
	RetryAfter time.Duration
}

// Retriever gives a model the relevant part of an agent's knowledge base.
// It keeps a view of each base in use (the whole text when it fits the
// budget, and an index of its chunks), built on first use and built again
// when the store's [kb.Store.Version] changes. With an embedding model,
// it embeds the chunks in the background (see Kick) and fuses the two
// rankings. It is safe for concurrent use; Close stops the background
// work.
type Retriever struct {
	opts    Options
	log     *slog.Logger
	vectors VectorStore

	mu    sync.Mutex
	byID  map[string]*entry      // by agent id
	embed map[string]*embedState // by agent id
	uses  int64

	// The background embedding: a queue of agent ids, one worker.
	ctx    context.Context
	stop   context.CancelFunc
	qmu    sync.Mutex
	queue  []string
	queued map[string]bool
	closed bool
	wake   chan struct{}
	done   chan struct{}
	jobs   atomic.Int64 // jobs finished, for tests

	qcMu   sync.Mutex
	qcache map[string][]float32
}

// entry caches the view of one knowledge base.
type entry struct {
	mu   sync.Mutex // held while building
	snap *snapshot
	used int64 // the retriever's use counter when last used; guarded by Retriever.mu
}

// snapshot is a view of a knowledge base: immutable but for its vectors,
// set once when complete.
type snapshot struct {
	version string
	whole   string // the whole base, formatted, when it fits the budget
	index   *Index

	hashOnce sync.Once
	hashList []string
	vecs     atomic.Pointer[vectorSet]
	// storedOnce guards the one look at the stored vectors a search makes
	// before the background job has run (see fromStore).
	storedOnce sync.Once
}

// New returns a Retriever over opts.KB. With an embedding model it starts
// the background worker, which Close stops.
func New(opts Options) *Retriever {
	if opts.BudgetTokens <= 0 {
		opts.BudgetTokens = DefaultBudgetTokens
	}
	if opts.MaxCached <= 0 {
		opts.MaxCached = DefaultMaxCached
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.EmbedConcurrency <= 0 {
		opts.EmbedConcurrency = DefaultConcurrency
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = DefaultQueryTimeout
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	if opts.Embedder == nil {
		opts.EmbeddingModel = ""
	}
	r := &Retriever{opts: opts, log: opts.Logger, vectors: opts.Vectors, byID: map[string]*entry{},
		embed: map[string]*embedState{}, queued: map[string]bool{}, wake: make(chan struct{}, 1),
		done: make(chan struct{}), qcache: map[string][]float32{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.vectors == nil {
		r.vectors = &memVectors{m: map[string]map[string]map[string][]float32{}}
	}
	r.ctx, r.stop = context.WithCancel(context.Background())
	if opts.EmbeddingModel != "" {
		go r.worker()
	} else {
		close(r.done)
	}
	return r
}

// EmbeddingModel returns the configured embedding model; "" when search
// is BM25 only.
func (r *Retriever) EmbeddingModel() string { return r.opts.EmbeddingModel }

// Close stops the background embedding, cancelling the request in
// flight, and waits for it. Searches still work afterwards, on the
// vectors complete by then. A second call does nothing.
func (r *Retriever) Close() {
	r.qmu.Lock()
	r.closed = true
	r.queue = nil
	clear(r.queued)
	r.qmu.Unlock()
	r.stop()
	<-r.done
}

// Forget drops the cached view of an agent's knowledge base and its
// embedding state, cancelling its embedding in progress, as when the
// agent is deleted. (Changes to the files need no Forget: the next use
// sees them.) Its stored vectors are the caller's to remove
// (VectorStore.RemoveVectors).
func (r *Retriever) Forget(agentID string) {
	r.qmu.Lock()
	if r.queued[agentID] {
		delete(r.queued, agentID)
		r.queue = slices.DeleteFunc(r.queue, func(id string) bool { return id == agentID })
	}
	r.qmu.Unlock()
	r.mu.Lock()
	delete(r.byID, agentID)
	if st := r.embed[agentID]; st != nil && st.cancel != nil {
		st.cancel()
	}
	delete(r.embed, agentID)
	r.mu.Unlock()
}

// view returns the current view of an agent's knowledge base, building it
// when the files changed; nil when the base is empty. With an embedding
// model, a view just built starts the embedding of its chunks.
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
	// The whole base's length, known before it is assembled: a base that
	// cannot fit is never copied.
	size := -2
	for _, d := range docs {
		size += len("### ") + len(d.Name) + len("\n\n") + len(strings.TrimSpace(d.Text)) + len("\n\n")
	}
	if len(docs) > 0 && (size+3)/4 <= r.opts.BudgetTokens {
		var whole strings.Builder
		whole.Grow(size + 2)
		for _, d := range docs {
			whole.WriteString("### ")
			whole.WriteString(d.Name)
			whole.WriteString("\n\n")
			whole.WriteString(strings.TrimSpace(d.Text))
			whole.WriteString("\n\n")
		}
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
	// Headings is the heading path of the chunk's section, outermost
	// first; empty before a file's first heading.
	Headings []string `json:"headings,omitempty"`
	// Page is the PDF page the chunk is on, from 1; 0 for other formats.
	Page int `json:"page,omitempty"`
	// Offset is the byte offset of Text in the file's (extracted) text.
	Offset int `json:"offset"`
	// Text is the chunk's text (without its heading path).
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

// ranked is a chunk of a ranking, with its places in the rankings fused.
type ranked struct {
	hit
	bm25, vector int // places from 1; 0 when not placed
}

// rank ranks the chunks of a snapshot for a query, up to depth of them:
// by BM25, fused with the embeddings' ranking when every chunk has a
// vector and the query could be embedded. fallback says why a search
// meant to be hybrid is not.
func (r *Retriever) rank(ctx context.Context, agentID string, snap *snapshot, query string, depth int) (out []ranked, mode, fallback string) {
	bm := snap.index.search(query, depth)
	bm25Only := func() []ranked {
		out := make([]ranked, len(bm))
		for i, h := range bm {
			out[i] = ranked{hit: h, bm25: i + 1}
		}
		return out
	}
	if r.opts.EmbeddingModel == "" {
		return bm25Only(), ModeBM25, ""
	}
	vs := snap.vecs.Load()
	if vs == nil {
		vs = r.fromStore(ctx, agentID, snap)
	}
	if vs == nil {
		st := r.status(agentID, snap)
		fallback = fmt.Sprintf("embeddings being built: %d of %d chunks", st.Embedded, st.Chunks)
		if st.LastError != "" {
			fallback = fmt.Sprintf("embeddings incomplete (%d of %d chunks), the last attempt failed: %s", st.Embedded, st.Chunks, st.LastError)
		}
		r.log.Info("knowledge base search is BM25 only", slog.String("agent", agentID), slog.String("reason", fallback))
		return bm25Only(), ModeBM25, fallback
	}
	q, err := r.queryVector(ctx, query, vs.dims)
	if err != nil {
		var de *dimsError
		if errors.As(err, &de) {
			r.resized(agentID, snap, vs, de.query)
		}
		fallback = "embedding endpoint failed: " + err.Error()
		r.log.Warn("knowledge base search fell back to BM25", slog.String("agent", agentID), slog.String("reason", fallback))
		return bm25Only(), ModeBM25, fallback
	}
	vec := vs.nearest(q, depth)
	byDoc := make(map[int32]*ranked, len(bm)+len(vec))
	out = make([]ranked, 0, len(bm)+len(vec))
	get := func(doc int32) *ranked {
		if x := byDoc[doc]; x != nil {
			return x
		}
		out = append(out, ranked{hit: hit{doc: doc}})
		return &out[len(out)-1]
	}
	// Pointers into out stay valid: it never grows past its capacity.
	for i, h := range bm {
		x := get(h.doc)
		x.bm25 = i + 1
		x.score += 1 / float64(rrfK+i+1)
		byDoc[h.doc] = x
	}
	for i, h := range vec {
		x := get(h.doc)
		x.vector = i + 1
		x.score += 1 / float64(rrfK+i+1)
		byDoc[h.doc] = x
	}
	slices.SortFunc(out, func(a, b ranked) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.doc, b.doc)
	})
	if len(out) > depth {
		out = out[:depth]
	}
	return out, ModeHybrid, ""
}

// Search returns the k chunks of an agent's knowledge base that best
// match query, best first, with their ranks: by BM25, or hybrid when an
// embedding model is configured and every chunk has its vector (else
// BM25 with Fallback saying why). An empty base, or a query that matches
// nothing, gives no result. The agent is not looked up.
func (r *Retriever) Search(ctx context.Context, agentID, query string, k int) (SearchResult, error) {
	res := SearchResult{Results: []Result{}, Mode: ModeBM25}
	snap, err := r.view(agentID)
	if err != nil || snap == nil {
		return res, err
	}
	hits, mode, fallback := r.rank(ctx, agentID, snap, query, max(k, 0))
	res.Mode, res.Fallback = mode, fallback
	for _, h := range hits {
		c := &snap.index.chunks[h.doc]
		x := Result{File: c.file, Chunk: c.part, Headings: c.headings, Page: c.page, Offset: c.offset,
			Text: c.text, Score: h.score}
		if h.bm25 > 0 {
			x.BM25Rank = &h.bm25
		}
		if h.vector > 0 {
			x.VectorRank = &h.vector
		}
		res.Results = append(res.Results, x)
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
// the chunks that rank best for the query (as Search ranks them), best
// first, as many as fit, each headed by its file name and part number
// and starting with its heading path; and which chunks those are, with
// their scores (fused scores when the search is hybrid). The agent is not
// looked up: its id only names a directory of the store.
func (r *Retriever) Retrieve(ctx context.Context, agentID, query string) (Retrieved, error) {
	snap, err := r.view(agentID)
	if err != nil || snap == nil {
		return Retrieved{}, err
	}
	hits, mode, fallback := r.rank(ctx, agentID, snap, query, rankDepth)
	out := Retrieved{Sources: []harness.Source{}, Mode: mode, Fallback: fallback}
	if snap.whole != "" {
		out.Text = "Knowledge base:\n\n" + snap.whole
		seen := make(map[int32]bool, len(hits))
		for _, h := range hits {
			c := &snap.index.chunks[h.doc]
			out.Sources = append(out.Sources, harness.Source{File: c.file, Chunk: c.part, Score: h.score})
			seen[h.doc] = true
		}
		for i, c := range snap.index.chunks {
			if !seen[int32(i)] {
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
		c := &snap.index.chunks[h.doc]
		text := strings.TrimSpace(c.indexed())
		head := fmt.Sprintf("\n\n### %s (part %d)\n\n", c.file, c.part+1)
		if used+len(head)+len(text) > budget {
			continue
		}
		used += len(head) + len(text)
		b.WriteString(head)
		b.WriteString(text)
		out.Sources = append(out.Sources, harness.Source{File: c.file, Chunk: c.part, Score: h.score})
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
