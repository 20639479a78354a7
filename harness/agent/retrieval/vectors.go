package retrieval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"
)

// VectorStore keeps the embeddings of knowledge-base chunks, by agent,
// model and the hash of the chunk's indexed text (hex SHA-256, see
// Hash): a chunk whose text is unchanged keeps its vector whatever else
// changes in its file. Vectors are stored normalised to length 1.
// harness/agent implements it over the database; with none, a Retriever
// keeps them in memory.
type VectorStore interface {
	// Vectors returns the stored vectors of an agent for a model, by
	// hash.
	Vectors(ctx context.Context, agentID, model string) (map[string][]float32, error)
	// SaveVectors stores vectors of an agent for a model, by hash; a hash
	// already stored keeps its vector.
	SaveVectors(ctx context.Context, agentID, model string, vecs map[string][]float32) error
	// PruneVectors removes an agent's vectors of every other model, and
	// those of model whose hash is not in keep.
	PruneVectors(ctx context.Context, agentID, model string, keep map[string]bool) error
	// RemoveVectors removes every vector of an agent.
	RemoveVectors(ctx context.Context, agentID string) error
}

// Hash is the key of a chunk's vector: the hex SHA-256 of the text that
// is embedded (its heading path, a blank line, its text).
func Hash(indexed string) string {
	sum := sha256.Sum256([]byte(indexed))
	return hex.EncodeToString(sum[:])
}

// Embedding states, as Status.State says them.
const (
	// StateIdle: nothing to do; every chunk has its vector, unless the
	// last attempt failed and no retry is due yet (see StateFailed).
	StateIdle = "idle"
	// StateEmbedding: the chunks without a vector are being embedded (or
	// are queued to be).
	StateEmbedding = "embedding"
	// StateFailed: the last attempt to embed the chunks failed
	// (Status.LastError says why); it is tried again on the next use of
	// the knowledge base after Options.RetryAfter, or after a change.
	StateFailed = "failed"
)

// Status is the progress of the embeddings of an agent's knowledge base
// for the configured model.
type Status struct {
	// Model is the embedding model.
	Model string `json:"model"`
	// Chunks is the number of chunks of the knowledge base, Embedded the
	// number that have a vector of Model: search is hybrid once they are
	// equal.
	Chunks   int `json:"chunks"`
	Embedded int `json:"embedded"`
	// State is StateIdle, StateEmbedding or StateFailed.
	State string `json:"state"`
	// LastError is why the last attempt failed; "" when it did not.
	LastError string `json:"last_error,omitempty"`
}

// vectorSet holds the vectors of every chunk of a snapshot, in chunk
// order: chunk i's vector is data[i*dims : (i+1)*dims].
type vectorSet struct {
	model string
	dims  int
	data  []float32
}

// embedState is what the embedding job knows of an agent.
type embedState struct {
	version  string // the snapshot's version the counts are of
	chunks   int
	embedded int
	state    string
	lastErr  string
	failedAt time.Time
	cancel   context.CancelFunc // of the job in progress for the agent
	// wantDims is the length of the model's vectors as a query found it,
	// when it differed from the stored ones' (see resized): the next job
	// drops stored vectors of another length.
	wantDims int
}

// dimsError is a query vector whose length is not the stored vectors'.
type dimsError struct{ query, base int }

func (e *dimsError) Error() string {
	return fmt.Sprintf("the query's vector has %d dimensions, the knowledge base's %d", e.query, e.base)
}

// resized handles a query whose vector has another length than the
// snapshot's vectors: the model behind the configured name changed. The
// snapshot's vectors are dropped and the base embedded again (the job
// removes the stored vectors of the old length); searches are BM25 until
// it is done.
func (r *Retriever) resized(agentID string, snap *snapshot, vs *vectorSet, dims int) {
	if !snap.vecs.CompareAndSwap(vs, nil) {
		return
	}
	r.mu.Lock()
	r.embedStateLocked(agentID).wantDims = dims
	r.mu.Unlock()
	r.log.Warn("the embedding model's vectors changed length; embedding the knowledge base again",
		slog.String("agent", agentID), slog.String("model", r.opts.EmbeddingModel), slog.Int("stored", vs.dims), slog.Int("now", dims))
	r.Kick(agentID)
}

// normalise scales v to length 1 in place; false for a zero vector or
// one with a value that is not finite.
func normalise(v []float32) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return true
}

// dot is the dot product of two vectors of one length.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// nearest returns up to k chunks by cosine similarity to q (normalised),
// best first; only chunks of positive similarity.
func (vs *vectorSet) nearest(q []float32, k int) []hit {
	n := len(vs.data) / vs.dims
	scores := make([]float64, n)
	for i := range n {
		scores[i] = float64(dot(q, vs.data[i*vs.dims:(i+1)*vs.dims]))
	}
	return topK(scores, k)
}

// Kick queues the embedding of an agent's knowledge base for the
// configured model, in the background: the chunks without a stored
// vector are embedded, the others loaded. It returns at once; nothing
// happens without an embedding model. One agent is embedded at a time,
// in the order asked.
func (r *Retriever) Kick(agentID string) {
	if r.opts.EmbeddingModel == "" {
		return
	}
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if r.closed || r.queued[agentID] {
		return
	}
	r.queued[agentID] = true
	r.queue = append(r.queue, agentID)
	r.mu.Lock()
	st := r.embedStateLocked(agentID)
	if st.state != StateEmbedding {
		st.state = StateEmbedding
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// embedStateLocked returns the agent's embedding state, made when
// missing. Callers hold r.mu.
func (r *Retriever) embedStateLocked(agentID string) *embedState {
	st := r.embed[agentID]
	if st == nil {
		st = &embedState{state: StateIdle}
		r.embed[agentID] = st
	}
	return st
}

// worker embeds the queued agents' knowledge bases, one at a time, until
// Close.
func (r *Retriever) worker() {
	defer close(r.done)
	for {
		r.qmu.Lock()
		for len(r.queue) == 0 && !r.closed {
			r.qmu.Unlock()
			select {
			case <-r.wake:
			case <-r.ctx.Done():
			}
			r.qmu.Lock()
		}
		if r.closed {
			r.qmu.Unlock()
			return
		}
		agentID := r.queue[0]
		r.queue = r.queue[1:]
		delete(r.queued, agentID)
		ctx, cancel := context.WithCancel(r.ctx)
		r.mu.Lock()
		r.embedStateLocked(agentID).cancel = cancel
		r.mu.Unlock()
		r.qmu.Unlock()

		err := r.embedAgent(ctx, agentID)
		cancelled := ctx.Err() != nil
		cancel()
		r.mu.Lock()
		st := r.embedStateLocked(agentID)
		st.cancel = nil
		switch {
		case err != nil && cancelled:
			// Cancelled: the agent was removed, or the retriever closed.
			if st.state == StateEmbedding {
				st.state = StateIdle
			}
		case err != nil:
			st.state, st.lastErr, st.failedAt = StateFailed, err.Error(), time.Now()
		default:
			st.state, st.lastErr = StateIdle, ""
		}
		r.mu.Unlock()
		if err != nil && !cancelled {
			r.log.Warn("knowledge base embedding failed; search stays BM25 until it succeeds",
				slog.String("agent", agentID), slog.String("model", r.opts.EmbeddingModel), slog.String("error", err.Error()))
		}
		r.jobs.Add(1)
	}
}

// setProgress records the counts of the job in progress.
func (r *Retriever) setProgress(agentID, version string, chunks, embedded int) {
	r.mu.Lock()
	st := r.embedStateLocked(agentID)
	st.version, st.chunks, st.embedded, st.state = version, chunks, embedded, StateEmbedding
	r.mu.Unlock()
}

// embedAgent gives every chunk of an agent's current knowledge base a
// vector of the configured model: stored ones are loaded, the others
// embedded in batches and stored as they come. Once the set is complete,
// the search uses it and the agent's vectors of other models (and of
// chunks that are gone) are removed. A change to the files meanwhile
// starts over with the new chunks, keeping what was stored.
func (r *Retriever) embedAgent(ctx context.Context, agentID string) error {
	model := r.opts.EmbeddingModel
	for {
		snap, err := r.view(agentID)
		if err != nil {
			return err
		}
		if snap == nil {
			// An empty base: no vector is needed.
			r.mu.Lock()
			st := r.embedStateLocked(agentID)
			st.version, st.chunks, st.embedded = "", 0, 0
			r.mu.Unlock()
			return r.vectors.PruneVectors(ctx, agentID, model, nil)
		}
		if snap.vecs.Load() != nil {
			r.setProgress(agentID, snap.version, snap.index.Len(), snap.index.Len())
			return nil
		}
		hashes := snap.hashes()
		stored, err := r.vectors.Vectors(ctx, agentID, model)
		if err != nil {
			return err
		}
		dims := 0
		for _, v := range stored {
			dims = len(v)
			break
		}
		r.mu.Lock()
		want := r.embedStateLocked(agentID).wantDims
		r.mu.Unlock()
		if want != 0 && dims != 0 && dims != want {
			// A query found the model's vectors have another length now.
			if err := r.vectors.PruneVectors(ctx, agentID, model, nil); err != nil {
				return err
			}
			stored, dims = map[string][]float32{}, 0
		}
		// storedDims: dims came from vectors stored earlier, not from an
		// answer of this pass (see the length check below).
		storedDims := dims != 0
		// Which hashes lack a vector (each once, with its first chunk and
		// its number of chunks), and how many chunks have one.
		var missing []string
		first := map[string]int{}
		counts := map[string]int{}
		embedded := 0
		for i, h := range hashes {
			if v, ok := stored[h]; ok && len(v) == dims {
				embedded++
				continue
			}
			if counts[h] == 0 {
				missing = append(missing, h)
				first[h] = i
			}
			counts[h]++
		}
		n := len(hashes)
		r.setProgress(agentID, snap.version, n, embedded)
		changed, resized := false, false
		// Vectors are stored a few thousand at a time (a transaction each),
		// not batch by batch: a commit can cost a disk sync.
		save := map[string][]float32{}
		flush := func() error {
			if len(save) == 0 {
				return nil
			}
			err := r.vectors.SaveVectors(ctx, agentID, model, save)
			save = map[string][]float32{}
			return err
		}
		// Requests go EmbedConcurrency at a time; their answers are taken
		// in order.
		var batches [][]string
		for start := 0; start < len(missing); start += r.opts.BatchSize {
			batches = append(batches, missing[start:min(start+r.opts.BatchSize, len(missing))])
		}
		for g := 0; g < len(batches) && !changed; g += r.opts.EmbedConcurrency {
			if err := ctx.Err(); err != nil {
				return err
			}
			group := batches[g:min(g+r.opts.EmbedConcurrency, len(batches))]
			answers := make([][][]float32, len(group))
			errs := make([]error, len(group))
			var wg sync.WaitGroup
			for j, batch := range group {
				texts := make([]string, len(batch))
				for i, h := range batch {
					texts[i] = snap.index.chunks[first[h]].indexed()
				}
				wg.Go(func() { answers[j], errs[j] = r.opts.Embedder.Embed(ctx, model, texts) })
			}
			wg.Wait()
			for j, batch := range group {
				vecs, err := answers[j], errs[j]
				if err != nil {
					return fmt.Errorf("embedding endpoint failed: %w", err)
				}
				if len(vecs) != len(batch) {
					return fmt.Errorf("embedding endpoint failed: %d vectors for %d texts", len(vecs), len(batch))
				}
				for i, v := range vecs {
					if dims == 0 {
						dims = len(v)
					}
					if storedDims && len(v) != dims && len(v) > 0 {
						// The model's first answer of this pass has another
						// length than the vectors stored under its name: the
						// model behind the name changed. Those vectors are
						// of no use with it: they go, and the whole base is
						// embedded again.
						r.log.Warn("the embedding model's vectors changed length; embedding the knowledge base again",
							slog.String("agent", agentID), slog.String("model", model), slog.Int("stored", dims), slog.Int("now", len(v)))
						resized = true
						break
					}
					storedDims = false
					if len(v) != dims || dims == 0 {
						return fmt.Errorf("embedding endpoint failed: a vector of %d dimensions, the others have %d", len(v), dims)
					}
					if !normalise(v) {
						// A text with no word: a zero vector, similar to nothing.
						clear(v)
					}
					save[batch[i]] = v
					stored[batch[i]] = v
					embedded += counts[batch[i]]
				}
				if resized {
					break
				}
			}
			if resized {
				if err := r.vectors.PruneVectors(ctx, agentID, model, nil); err != nil {
					return err
				}
				break
			}
			if len(save) >= saveVectors {
				if err := flush(); err != nil {
					return err
				}
			}
			r.setProgress(agentID, snap.version, n, embedded)
			if v, err := r.opts.KB.Version(agentID); err == nil && v != snap.version {
				changed = true
			}
		}
		if resized {
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if changed {
			continue
		}
		set := &vectorSet{model: model, dims: dims, data: make([]float32, n*dims)}
		keep := make(map[string]bool, n)
		for i, h := range hashes {
			copy(set.data[i*dims:(i+1)*dims], stored[h])
			keep[h] = true
		}
		if err := r.vectors.PruneVectors(ctx, agentID, model, keep); err != nil {
			r.log.Warn("cannot remove the knowledge base's outdated vectors", slog.String("agent", agentID), slog.String("error", err.Error()))
		}
		snap.vecs.Store(set)
		r.mu.Lock()
		r.embedStateLocked(agentID).wantDims = 0
		r.mu.Unlock()
		r.setProgress(agentID, snap.version, n, n)
		r.log.Info("knowledge base embedded", slog.String("agent", agentID), slog.String("model", model),
			slog.Int("chunks", n), slog.Int("embedded_now", len(missing)))
		return nil
	}
}

// fromStore gives a snapshot its vectors from the store when every chunk
// has one there already, as in a process that just started (a server, or
// a "gauntlet run --agent") over a knowledge base embedded before, or
// after a file was removed: the search is hybrid at once instead of
// waiting for the background job to load them. It looks once per
// snapshot; nil when some chunk lacks a vector (the background job then
// embeds it) or the store cannot be read.
func (r *Retriever) fromStore(ctx context.Context, agentID string, snap *snapshot) *vectorSet {
	snap.storedOnce.Do(func() {
		model := r.opts.EmbeddingModel
		stored, err := r.vectors.Vectors(ctx, agentID, model)
		if err != nil || len(stored) == 0 {
			return
		}
		hashes := snap.hashes()
		dims := 0
		for _, h := range hashes {
			v, ok := stored[h]
			if !ok || dims != 0 && len(v) != dims {
				return
			}
			dims = len(v)
		}
		r.mu.Lock()
		want := r.embedStateLocked(agentID).wantDims
		r.mu.Unlock()
		if dims == 0 || want != 0 && dims != want {
			return // none, or of a length the model no longer gives
		}
		set := &vectorSet{model: model, dims: dims, data: make([]float32, len(hashes)*dims)}
		for i, h := range hashes {
			copy(set.data[i*dims:(i+1)*dims], stored[h])
		}
		snap.vecs.CompareAndSwap(nil, set)
		r.setProgress(agentID, snap.version, len(hashes), len(hashes))
		r.mu.Lock()
		if st := r.embedStateLocked(agentID); st.state == StateEmbedding && st.cancel == nil {
			st.state = StateIdle // queued only: the job will find nothing to do
		}
		r.mu.Unlock()
	})
	return snap.vecs.Load()
}

// hashes returns the hash of each chunk's indexed text, in chunk order;
// computed once per snapshot.
func (s *snapshot) hashes() []string {
	s.hashOnce.Do(func() {
		s.hashList = make([]string, len(s.index.chunks))
		for i := range s.index.chunks {
			s.hashList[i] = Hash(s.index.chunks[i].indexed())
		}
	})
	return s.hashList
}

// Status returns the progress of the embeddings of an agent's knowledge
// base, and starts them when some chunks lack a vector and none is in
// progress; nil when no embedding model is configured. The agent is not
// looked up.
func (r *Retriever) Status(agentID string) (*Status, error) {
	if r.opts.EmbeddingModel == "" {
		return nil, nil
	}
	snap, err := r.view(agentID)
	if err != nil {
		return nil, err
	}
	st := r.status(agentID, snap)
	return &st, nil
}

// status is the embedding status of a snapshot (nil: an empty base),
// kicking the embedding when it is incomplete and due.
func (r *Retriever) status(agentID string, snap *snapshot) Status {
	out := Status{Model: r.opts.EmbeddingModel, State: StateIdle}
	if snap == nil {
		return out
	}
	out.Chunks = snap.index.Len()
	if snap.vecs.Load() != nil {
		out.Embedded = out.Chunks
		return out
	}
	r.mu.Lock()
	st := *r.embedStateLocked(agentID)
	r.mu.Unlock()
	if st.version == snap.version {
		out.Embedded = st.embedded
	}
	out.State, out.LastError = st.state, st.lastErr
	due := st.state == StateIdle || st.state == StateFailed && (st.version != snap.version || time.Since(st.failedAt) >= r.opts.RetryAfter)
	if due {
		r.Kick(agentID)
		out.State = StateEmbedding
	}
	return out
}

// queryVector returns the normalised embedding of a query, from a small
// cache or one request bounded by Options.QueryTimeout.
func (r *Retriever) queryVector(ctx context.Context, query string, dims int) ([]float32, error) {
	r.qcMu.Lock()
	v, ok := r.qcache[query]
	r.qcMu.Unlock()
	if !ok {
		ctx, cancel := context.WithTimeout(ctx, r.opts.QueryTimeout)
		defer cancel()
		vecs, err := r.opts.Embedder.Embed(ctx, r.opts.EmbeddingModel, []string{query})
		if err != nil {
			return nil, err
		}
		if len(vecs) != 1 {
			return nil, fmt.Errorf("%d vectors for one text", len(vecs))
		}
		v = vecs[0]
		if !normalise(v) {
			clear(v)
		}
		r.qcMu.Lock()
		if len(r.qcache) >= queryCacheSize {
			clear(r.qcache)
		}
		r.qcache[query] = v
		r.qcMu.Unlock()
	}
	if len(v) != dims {
		return nil, &dimsError{query: len(v), base: dims}
	}
	return v, nil
}

// saveVectors is how many new vectors the embedding job gathers before
// storing them.
const saveVectors = 4096

// queryCacheSize bounds the query vectors kept: past it, the cache starts
// afresh.
const queryCacheSize = 256

// memVectors is the VectorStore of a Retriever given none: in memory.
type memVectors struct {
	mu sync.Mutex
	m  map[string]map[string]map[string][]float32 // agent → model → hash
}

func (m *memVectors) Vectors(_ context.Context, agentID, model string) (map[string][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]float32{}
	for h, v := range m.m[agentID][model] {
		out[h] = v
	}
	return out, nil
}

func (m *memVectors) SaveVectors(_ context.Context, agentID, model string, vecs map[string][]float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m[agentID] == nil {
		m.m[agentID] = map[string]map[string][]float32{}
	}
	if m.m[agentID][model] == nil {
		m.m[agentID][model] = map[string][]float32{}
	}
	for h, v := range vecs {
		if _, ok := m.m[agentID][model][h]; !ok {
			m.m[agentID][model][h] = v
		}
	}
	return nil
}

func (m *memVectors) PruneVectors(_ context.Context, agentID, model string, keep map[string]bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for mod, vs := range m.m[agentID] {
		if mod != model {
			delete(m.m[agentID], mod)
			continue
		}
		for h := range vs {
			if !keep[h] {
				delete(vs, h)
			}
		}
	}
	return nil
}

func (m *memVectors) RemoveVectors(_ context.Context, agentID string) error {
	m.mu.Lock()
	delete(m.m, agentID)
	m.mu.Unlock()
	return nil
}
