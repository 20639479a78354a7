package retrieval_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/internal/kbtext"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// setupEmbedder embeds the knowledge base's batches in process, with the
// function the fake endpoint answers with (the same vectors, without a
// hundred thousand texts through JSON), and single texts (the queries)
// through the endpoint over loopback HTTP.
type setupEmbedder struct{ remote harness.Embedder }

func (s setupEmbedder) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	if len(texts) == 1 {
		return s.remote.Embed(ctx, model, texts)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = llmtest.Embedding(model, t, 0)
	}
	return out, nil
}

// BenchmarkHybridSearch measures one hybrid search over 100,000 chunks:
// embedding the query through the fake endpoint over loopback HTTP (each
// query new, so never cached), BM25 over the index, exact cosine over
// 100,000 vectors of 256 dimensions, and the fusion of the two rankings.
func BenchmarkHybridSearch(b *testing.B) {
	srv := llmtest.NewServer(llmtest.Options{})
	b.Cleanup(srv.Close)
	client, err := llm.New(llm.Options{BaseURL: srv.URL, Model: "m", MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	store := kb.New(kb.Options{Dir: b.TempDir()})
	ctx := context.Background()
	for i := range 8 {
		text := kbtext.Filler(9<<20, uint64(200+i))
		if i == 3 {
			text += "\n\n" + kbtext.Fact
		}
		if _, err := store.Write(ctx, "a", fmt.Sprintf("part%d.txt", i), strings.NewReader(text), true); err != nil {
			b.Fatal(err)
		}
	}
	r := retrieval.New(retrieval.Options{KB: store, EmbeddingModel: "embed", Embedder: setupEmbedder{client}, BatchSize: 4096})
	b.Cleanup(r.Close)
	deadline := time.Now().Add(10 * time.Minute)
	var st *retrieval.Status
	for {
		if st, err = r.Status("a"); err != nil {
			b.Fatal(err)
		}
		if st.Chunks > 0 && st.Embedded == st.Chunks && st.State == retrieval.StateIdle {
			break
		}
		if st.State == retrieval.StateFailed || time.Now().After(deadline) {
			b.Fatalf("status = %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Chunks < 100_000 {
		b.Fatalf("%d chunks, want 100,000", st.Chunks)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := r.Search(ctx, "a", fmt.Sprintf("What is the launch code of Project Zephyrine? (%d)", i), 10)
		if err != nil || res.Mode != retrieval.ModeHybrid || len(res.Results) != 10 {
			b.Fatalf("search = %s %q, %v", res.Mode, res.Fallback, err)
		}
		if !strings.Contains(res.Results[0].Text, "Zephyrine") {
			b.Fatalf("the best result is not the fact: %+v", res.Results[0])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(st.Chunks), "chunks")
}
