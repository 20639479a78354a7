package retrieval_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
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
	for i := range 6 {
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
	var cpu time.Duration
	for i := 0; b.Loop(); i++ {
		start := cpuTime()
		res, err := r.Search(ctx, "a", fmt.Sprintf("What is the launch code of Project Zephyrine? (%d)", i), 10)
		if err != nil || res.Mode != retrieval.ModeHybrid || len(res.Results) != 10 {
			b.Fatalf("search = %s %q, %v", res.Mode, res.Fallback, err)
		}
		if !slices.ContainsFunc(res.Results, func(r retrieval.Result) bool { return strings.Contains(r.Text, "Zephyrine") }) {
			b.Fatalf("the fact is not among the results: %+v", res.Results)
		}
		cpu += cpuTime() - start
	}
	b.StopTimer()
	b.ReportMetric(float64(st.Chunks), "chunks")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time the process used so far, user and system: on
// a shared machine, a figure of the work less sensitive to other loads
// than the wall time (the fake endpoint's share included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
