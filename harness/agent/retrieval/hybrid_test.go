package retrieval_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// endpoint is a fake embedding endpoint on loopback and a client of it.
func endpoint(t *testing.T, dims int) (*llmtest.Server, *llm.Client) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Options{EmbeddingDims: dims})
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// switchEmbedder forwards to the client it currently holds: an endpoint
// replaced by another behind the same address, as when a deployment
// changes the model it serves.
type switchEmbedder struct{ cur atomic.Pointer[llm.Client] }

func (s *switchEmbedder) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	return s.cur.Load().Embed(ctx, model, texts)
}

func waitComplete(t *testing.T, r *retrieval.Retriever, agentID string) *retrieval.Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := r.Status(agentID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Chunks > 0 && st.Embedded == st.Chunks && st.State == retrieval.StateIdle {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("status = %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQueryVectorOfAnotherLength: a query embedded with a length other
// than the stored vectors' falls back to BM25, saying so.
// switched is agent "a"'s knowledge base embedded by a model of 256
// dimensions, whose endpoint a test can replace by one of 64 (c64).
type switched struct {
	emb   *switchEmbedder
	c64   *llm.Client
	store *kb.Store
	r     *retrieval.Retriever
}

func newSwitched(t *testing.T) *switched {
	t.Helper()
	_, c256 := endpoint(t, 256)
	_, c64 := endpoint(t, 64)
	s := &switched{emb: &switchEmbedder{}, c64: c64, store: kb.New(kb.Options{Dir: t.TempDir()})}
	s.emb.cur.Store(c256)
	if _, err := s.store.Write(t.Context(), "a", "faq.md", strings.NewReader("# Hours\n\nOpen from nine to five.\n\n# Place\n\nThe office is in Lyon."), true); err != nil {
		t.Fatal(err)
	}
	s.r = retrieval.New(retrieval.Options{KB: s.store, EmbeddingModel: "e", Embedder: s.emb})
	t.Cleanup(s.r.Close)
	waitComplete(t, s.r, "a")
	return s
}

func TestQueryVectorOfAnotherLength(t *testing.T) {
	s := newSwitched(t)
	r, ctx := s.r, t.Context()
	if res, err := r.Search(ctx, "a", "office", 2); err != nil || res.Mode != retrieval.ModeHybrid {
		t.Fatalf("search = %+v, %v", res, err)
	}
	s.emb.cur.Store(s.c64)
	res, err := r.Search(ctx, "a", "where is the office", 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != retrieval.ModeBM25 || res.Fallback != "embedding endpoint failed: the query's vector has 64 dimensions, the knowledge base's 256" ||
		len(res.Results) == 0 || res.Results[0].BM25Rank == nil || res.Results[0].VectorRank != nil {
		t.Errorf("search = %+v", res)
	}
	// The model behind the name changed: the base is embedded again with
	// it, and search is hybrid again.
	waitHybrid(t, r, "a", "where is the office")
}

// waitHybrid waits until a search of the agent's base is hybrid, without
// a fallback.
func waitHybrid(t *testing.T, r *retrieval.Retriever, agentID, query string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := r.Search(t.Context(), agentID, query, 2)
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode == retrieval.ModeHybrid && res.Fallback == "" && len(res.Results) > 0 && res.Results[0].VectorRank != nil {
			return
		}
		if time.Now().After(deadline) {
			st, _ := r.Status(agentID)
			t.Fatalf("search = %+v; status %+v", res, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestModelChangesLengthMidBase: the base was embedded with vectors of
// one length; a file is added and the model behind the same name now
// gives another length. The old vectors are dropped and the whole base
// embedded again, instead of failing on the mix.
func TestModelChangesLengthMidBase(t *testing.T) {
	s := newSwitched(t)
	r := s.r
	s.emb.cur.Store(s.c64)
	if _, err := s.store.Write(t.Context(), "a", "more.md", strings.NewReader("# Parking\n\nThe car park is behind the office."), true); err != nil {
		t.Fatal(err)
	}
	waitHybrid(t, r, "a", "where can I park")
	st, err := r.Status("a")
	if err != nil || st.State != retrieval.StateIdle || st.LastError != "" || st.Embedded != st.Chunks {
		t.Fatalf("status = %+v, %v", st, err)
	}
}

// gatedEmbedder holds every request until the gate opens or the request
// is cancelled.
type gatedEmbedder struct {
	inner   *llm.Client
	gate    chan struct{}
	waiting chan struct{}
}

func (g *gatedEmbedder) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	select {
	case g.waiting <- struct{}{}:
	default:
	}
	select {
	case <-g.gate:
		return g.inner.Embed(ctx, model, texts)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestCloseCancelsEmbedding: Close cancels the embedding in flight and
// returns; search still answers, BM25, saying the vectors are missing.
func TestCloseCancelsEmbedding(t *testing.T) {
	_, c := endpoint(t, 0)
	g := &gatedEmbedder{inner: c, gate: make(chan struct{}), waiting: make(chan struct{}, 1)}
	store := kb.New(kb.Options{Dir: t.TempDir()})
	ctx := t.Context()
	if _, err := store.Write(ctx, "a", "faq.md", strings.NewReader("Open from nine to five."), true); err != nil {
		t.Fatal(err)
	}
	r := retrieval.New(retrieval.Options{KB: store, EmbeddingModel: "e", Embedder: g})
	st, err := r.Status("a")
	if err != nil || st.State != retrieval.StateEmbedding || st.Chunks != 1 {
		t.Fatalf("status = %+v, %v", st, err)
	}
	select {
	case <-g.waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("no embedding request was made")
	}
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return while a request was in flight")
	}
	r.Close() // a second call does nothing
	res, err := r.Search(ctx, "a", "open", 3)
	if err != nil || res.Mode != retrieval.ModeBM25 || !strings.HasPrefix(res.Fallback, "embeddings being built: 0 of 1 chunks") || len(res.Results) != 1 {
		t.Errorf("search after Close = %+v, %v", res, err)
	}
}
