package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/internal/kbtext"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
)

// BenchmarkChatTurn measures one chat turn against llmtest with no
// latency, with a 50-message history (the default bound) sent each time:
// storing the user's message, loading and bounding the history, building
// the system message (a small knowledge base, whole), one model call over
// loopback HTTP, and storing the reply.
func BenchmarkChatTurn(b *testing.B) {
	e := newEnv(b)
	e.createAgent("a", "You are a helpful assistant.")
	e.writeKB("a", "faq.md", "Opening hours: 9 to 5.\n\nThe office is in Lyon.")
	for i := range 30 {
		e.chat("a", "u", fmt.Sprintf("earlier message %d with a few words in it", i))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := e.svc.Chat(e.ctx, "a", "u", fmt.Sprintf("message %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := len(e.lastRequest().Messages); n != 51 {
		b.Fatalf("the model got %d messages, want the system message and 50", n)
	}
}

// BenchmarkModelCallOnly is the model call of a chat turn alone: the same
// 51 messages to the same endpoint, through the same client. The
// difference from BenchmarkChatTurn is the service's overhead.
func BenchmarkModelCallOnly(b *testing.B) {
	e := newEnv(b)
	msgs := []harness.Message{{Role: harness.RoleSystem, Content: "You are a helpful assistant.\n\nKnowledge base:\n\n### faq.md\n\nOpening hours: 9 to 5.\n\nThe office is in Lyon."}}
	for i := range 25 {
		text := fmt.Sprintf("earlier message %d with a few words in it", i)
		msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: text}, harness.Message{Role: harness.RoleAssistant, Content: text})
	}
	msgs = append(msgs, harness.Message{Role: harness.RoleUser, Content: "message"})
	req := &harness.ChatRequest{Model: "test-model", Messages: msgs}
	for b.Loop() {
		if _, err := e.model.Chat(e.ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// kbEnv is an agent with 10 MiB of knowledge base in ten files, one
// paragraph of which holds a unique fact.
func kbEnv(b *testing.B) *env {
	e := newEnv(b)
	e.createAgent("a", "")
	for i := range 10 {
		text := kbtext.Filler(1<<20-64, uint64(100+i))
		if i == 6 {
			text += "\n\n" + kbtext.Fact
		}
		e.writeKB("a", fmt.Sprintf("part%02d.md", i), text)
	}
	return e
}

// BenchmarkKBIndexBuild measures building the BM25 index of a 10 MiB
// knowledge base: reading the files, chunking, indexing (plus the first
// query).
func BenchmarkKBIndexBuild(b *testing.B) {
	e := kbEnv(b)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		e.writeKB("a", "touch.md", fmt.Sprint("touch ", i)) // a change: the index is rebuilt
		b.StartTimer()
		got, err := e.svc.Retrieve(e.ctx, "a", "What is the launch code of Project Zephyrine?")
		if err != nil || !strings.Contains(got, kbtext.Fact) {
			b.Fatalf("retrieval missed the fact: %v", err)
		}
	}
}

// BenchmarkKBRetrieval measures one query of a built 10 MiB index: the
// freshness check of the files, BM25 scoring of every chunk matching a
// query word, and assembling the best chunks within the budget.
func BenchmarkKBRetrieval(b *testing.B) {
	e := kbEnv(b)
	start := time.Now()
	if _, err := e.svc.Retrieve(e.ctx, "a", "warm up"); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	for b.Loop() {
		got, err := e.svc.Retrieve(e.ctx, "a", "What is the launch code of Project Zephyrine?")
		if err != nil || !strings.Contains(got, kbtext.Fact) {
			b.Fatalf("retrieval missed the fact: %v", err)
		}
	}
	b.ReportMetric(float64(build.Milliseconds()), "build-ms")
}

// BenchmarkKBIndexHybrid measures indexing a 10 MiB knowledge base with
// embeddings: reading the files, chunking, BM25, and embedding every
// chunk through the fake endpoint over loopback HTTP (batches of 64, a
// new embedding model each time, so nothing is reused), storing the
// vectors in the database and removing the previous model's, until the
// search is hybrid.
func BenchmarkKBIndexHybrid(b *testing.B) {
	e := kbEnv(b)
	chunks := 0
	cpu := time.Duration(0)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		e.opts.EmbeddingModel = fmt.Sprint("embed-", i)
		e.opts.Embedder = e.model
		e.reopen()
		b.StartTimer()
		start := cpuTime()
		if _, err := e.svc.Retrieve(e.ctx, "a", "warm up"); err != nil {
			b.Fatal(err)
		}
		for {
			st, err := e.svc.KBStatus(e.ctx, "a")
			if err != nil {
				b.Fatal(err)
			}
			if st.State == "failed" {
				b.Fatalf("embedding failed: %+v", st)
			}
			if st.Chunks > 0 && st.Embedded == st.Chunks && st.State == "idle" {
				chunks = st.Chunks
				break
			}
			time.Sleep(time.Millisecond)
		}
		cpu += cpuTime() - start
	}
	b.StopTimer()
	res, err := e.svc.SearchKB(e.ctx, "a", "What is the launch code of Project Zephyrine?", 5)
	if err != nil || res.Mode != "hybrid" || !slices.ContainsFunc(res.Results, func(r retrieval.Result) bool {
		return strings.Contains(r.Text, "Zephyrine")
	}) {
		b.Fatalf("search after indexing = %+v, %v", res, err)
	}
	b.ReportMetric(float64(chunks), "chunks")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
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
