package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/agent/retrieval"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// withEmbeddings configures the embedding model (the fake endpoint's
// embeddings) and a knowledge-base budget small enough that retrieval
// picks chunks rather than giving the whole base.
func withEmbeddings(model string) envOption {
	return withOptions(func(o *agent.Options) {
		o.EmbeddingModel = model
		o.KBBudgetTokens = 60
	})
}

// waitEmbedded polls the agent's embedding status until every chunk has
// its vector and nothing is in progress, and returns it.
func (e *env) waitEmbedded(agentID string) *retrieval.Status {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := e.svc.KBStatus(e.ctx, agentID)
		if err != nil {
			e.t.Fatal(err)
		}
		if st == nil {
			e.t.Fatal("no embedding status with an embedding model configured")
		}
		if st.State == retrieval.StateIdle && st.Chunks > 0 && st.Embedded == st.Chunks {
			return st
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("embedding not complete: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// vectorModels counts the stored vectors of an agent by model.
func (e *env) vectorModels(agentID string) map[string]int {
	e.t.Helper()
	rows, err := sqldb.Bun(e.db).QueryContext(e.ctx, `SELECT model, COUNT(*) FROM kb_vectors WHERE agent_id = ? GROUP BY model`, agentID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var m string
		var n int
		if err := rows.Scan(&m, &n); err != nil {
			e.t.Fatal(err)
		}
		out[m] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// writeManual writes a small knowledge base whose sections are chunks of
// their own.
func (e *env) writeManual(agentID string) {
	e.writeKB(agentID, "setup.md", "# Setup\n\nThe installation takes ten minutes on a fresh machine.\n\n"+
		"# Accounts\n\nEach colleague gets a personal login after the first week.")
	e.writeKB(agentID, "billing.md", "# Billing\n\nInvoices are sent monthly by email.\n\n"+
		"# Refunds\n\nMoney is returned within thirty days of a complaint.")
	e.writeKB(agentID, "support.md", "# Support\n\nOur helpdesk answers tickets within a day.")
}

// TestHybridFindsAParaphrase: a question sharing no word with the
// passage that answers it ("installing" where the text says
// "installation") gets nothing from BM25, and the passage from the
// embeddings; the chat's sources say hybrid.
func TestHybridFindsAParaphrase(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmbeddings("embed-a"))
	e.createAgent("a", "Answer from the manual.")
	e.writeManual("a")
	st := e.waitEmbedded("a")
	if st.Model != "embed-a" || st.Chunks != 5 || st.LastError != "" {
		t.Errorf("status = %+v", st)
	}
	res, err := e.svc.SearchKB(e.ctx, "a", "installing", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != retrieval.ModeHybrid || res.Fallback != "" || len(res.Results) == 0 {
		t.Fatalf("search = %+v", res)
	}
	top := res.Results[0]
	if top.File != "setup.md" || top.Chunk != 0 || top.BM25Rank != nil || top.VectorRank == nil || *top.VectorRank != 1 ||
		!slices.Equal(top.Headings, []string{"Setup"}) || top.Score <= 0 {
		t.Errorf("best result = %+v", top)
	}
	// A query word in the text: both ranks, fused above a single one.
	res, err = e.svc.SearchKB(e.ctx, "a", "monthly invoices", 5)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Results[0]; r.File != "billing.md" || r.BM25Rank == nil || *r.BM25Rank != 1 || r.VectorRank == nil || *r.VectorRank != 1 {
		t.Errorf("best result for a literal query = %+v", r)
	}
	want := 1/float64(60+1) + 1/float64(60+1)
	if got := res.Results[0].Score; got < want-1e-12 || got > want+1e-12 {
		t.Errorf("fused score = %v, want %v", got, want)
	}

	reply := e.chat("a", "u", "installing")
	if reply.Retrieval == nil || reply.Retrieval.Mode != retrieval.ModeHybrid || reply.Retrieval.Fallback != "" {
		t.Fatalf("retrieval = %+v", reply.Retrieval)
	}
	if len(reply.Sources) == 0 || reply.Sources[0].File != "setup.md" || reply.Sources[0].Score != top.Score {
		t.Errorf("sources = %+v, want setup.md first with the fused score %v", reply.Sources, top.Score)
	}
	if sys := systemOf(e.lastRequest()); !strings.Contains(sys, "### setup.md (part 1)\n\nSetup\n\nThe installation takes") {
		t.Errorf("the system message lacks the chunk with its heading path:\n%s", sys)
	}

	// Without an embedding model, the same question finds nothing.
	plain := newEnv(t)
	plain.createAgent("a", "")
	plain.writeManual("a")
	res, err = plain.svc.SearchKB(plain.ctx, "a", "installing", 3)
	if err != nil || res.Mode != retrieval.ModeBM25 || res.Fallback != "" || len(res.Results) != 0 {
		t.Errorf("BM25 search = %+v, %v", res, err)
	}
	if st, err := plain.svc.KBStatus(plain.ctx, "a"); st != nil || err != nil {
		t.Errorf("status without a model = %+v, %v", st, err)
	}
}

// TestEmbeddingEndpointDown: with the endpoint down, search and chat fall
// back to BM25, say why, and log it; the chat does not fail. When it
// comes back, the embedding completes and search is hybrid again.
func TestEmbeddingEndpointDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmbeddings("embed-a"), withOptions(func(o *agent.Options) {}))
	e.createAgent("a", "")
	e.writeManual("a")
	e.waitEmbedded("a")

	e.srv.SetEmbeddingsDown(true)
	res, err := e.svc.SearchKB(e.ctx, "a", "monthly invoices", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != retrieval.ModeBM25 || !strings.HasPrefix(res.Fallback, "embedding endpoint failed: ") ||
		len(res.Results) == 0 || res.Results[0].File != "billing.md" || res.Results[0].VectorRank != nil {
		t.Errorf("search with the endpoint down = %+v", res)
	}
	reply := e.chat("a", "u", "when are refunds paid")
	if reply.Retrieval == nil || reply.Retrieval.Mode != retrieval.ModeBM25 ||
		!strings.HasPrefix(reply.Retrieval.Fallback, "embedding endpoint failed: ") {
		t.Errorf("chat retrieval = %+v", reply.Retrieval)
	}
	if reply.Response == "" {
		t.Error("the chat got no reply")
	}
	if !strings.Contains(e.logs.String(), "fell back to BM25") {
		t.Errorf("no log line says so:\n%s", e.logs.String())
	}

	// A new file while the endpoint is down: the embedding fails, and
	// search says the vectors are incomplete and why.
	e.writeKB("a", "new.md", "# Parking\n\nVisitors park behind the warehouse.")
	deadline := time.Now().Add(20 * time.Second)
	var st *retrieval.Status
	for {
		if st, err = e.svc.KBStatus(e.ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if st.State == retrieval.StateFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never failed: %+v\n%s", st, e.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Chunks != 6 || st.Embedded != 5 || !strings.Contains(st.LastError, "embedding endpoint failed") {
		t.Errorf("status = %+v", st)
	}
	res, err = e.svc.SearchKB(e.ctx, "a", "parking", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != retrieval.ModeBM25 || !strings.HasPrefix(res.Fallback, "embeddings incomplete (5 of 6 chunks), the last attempt failed: ") ||
		len(res.Results) != 1 || res.Results[0].File != "new.md" {
		t.Errorf("search = %+v", res)
	}

	// Back up: a change retries at once.
	e.srv.SetEmbeddingsDown(false)
	e.writeKB("a", "new.md", "# Parking\n\nVisitors park behind the warehouse, by the gate.")
	e.waitEmbedded("a")
	if res, err := e.svc.SearchKB(e.ctx, "a", "parking", 3); err != nil || res.Mode != retrieval.ModeHybrid {
		t.Errorf("search once back = %+v, %v", res, err)
	}
}

// TestReembedOnModelChange: a restart with another embedding model
// builds the new vectors in the background (EmbedAll, as the server does
// at start-up), searches meanwhile falling back with the progress, and
// removes the old model's vectors once the new set is complete. A
// restart with the same model embeds nothing.
func TestReembedOnModelChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmbeddings("embed-a"))
	e.createAgent("a", "")
	e.writeManual("a")
	e.waitEmbedded("a")
	if got := e.vectorModels("a"); got["embed-a"] != 5 || len(got) != 1 {
		t.Fatalf("stored vectors = %v", got)
	}

	// A process that just started over the embedded base (a server, a
	// "gauntlet run --agent"): its first search is hybrid already, from
	// the stored vectors, before any background job ran.
	e.reopen()
	if res, err := e.svc.SearchKB(e.ctx, "a", "installing", 3); err != nil || res.Mode != retrieval.ModeHybrid || res.Fallback != "" {
		t.Errorf("first search after a restart = %+v, %v; want hybrid from the stored vectors", res, err)
	}
	// So is the first after a file is removed: every remaining chunk has
	// its vector.
	if err := e.svc.KB().Delete(e.ctx, "a", "support.md"); err != nil {
		t.Fatal(err)
	}
	if res, err := e.svc.SearchKB(e.ctx, "a", "installing", 3); err != nil || res.Mode != retrieval.ModeHybrid {
		t.Errorf("first search after a removal = %+v, %v; want hybrid", res, err)
	}
	e.writeKB("a", "support.md", "# Support\n\nOur helpdesk answers tickets within a day.")
	e.waitEmbedded("a")
	before := e.srv.Stats().EmbeddedTexts

	// The same model after a restart: the vectors are loaded, not made.
	e.reopen()
	if err := e.svc.EmbedAll(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.waitEmbedded("a")
	if n := e.srv.Stats().EmbeddedTexts - before; n != 0 {
		t.Errorf("a restart with the same model embedded %d texts", n)
	}

	// Another model: the endpoint is slow, so progress can be seen.
	e.opts.EmbeddingModel = "embed-b"
	e.srv.SetEmbeddingsDown(true)
	e.reopen()
	res, err := e.svc.SearchKB(e.ctx, "a", "installing", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != retrieval.ModeBM25 || !strings.Contains(res.Fallback, "of 5 chunks") {
		t.Errorf("search while the new vectors are missing = %+v", res)
	}
	if got := e.vectorModels("a"); got["embed-a"] != 5 {
		t.Errorf("the old vectors were removed before the new set was complete: %v", got)
	}
	e.srv.SetEmbeddingsDown(false)
	if err := e.svc.EmbedAll(e.ctx); err != nil {
		t.Fatal(err)
	}
	// A failed attempt waits for RetryAfter before a use retries, but
	// EmbedAll and changes retry at once.
	st := e.waitEmbedded("a")
	if st.Model != "embed-b" {
		t.Errorf("status = %+v", st)
	}
	if got := e.vectorModels("a"); got["embed-b"] != 5 || len(got) != 1 {
		t.Errorf("stored vectors after the change = %v", got)
	}
	if res, err := e.svc.SearchKB(e.ctx, "a", "installing", 3); err != nil || res.Mode != retrieval.ModeHybrid ||
		len(res.Results) == 0 || res.Results[0].File != "setup.md" {
		t.Errorf("search with the new model = %+v, %v", res, err)
	}
}

// TestOnlyChangedChunksReembedded: editing one section of a file embeds
// that section's chunk alone; the vectors of the chunk that is gone are
// removed.
func TestOnlyChangedChunksReembedded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmbeddings("embed-a"))
	e.createAgent("a", "")
	var sections []string
	for i := range 40 {
		sections = append(sections, fmt.Sprintf("## Topic %d\n\nParagraph number %d speaks of subject%d at some length.", i, i, i))
	}
	e.writeKB("a", "big.md", strings.Join(sections, "\n\n"))
	st := e.waitEmbedded("a")
	if st.Chunks != 40 {
		t.Fatalf("chunks = %d, want one per section", st.Chunks)
	}
	if n := e.srv.Stats().EmbeddedTexts; n != 40 {
		t.Errorf("embedded %d texts, want 40", n)
	}
	if calls := e.srv.Stats().Embeddings; calls != 1 {
		t.Errorf("%d embedding requests for 40 chunks, want one batch", calls)
	}
	before := e.srv.Stats().EmbeddedTexts
	sections[17] = "## Topic 17\n\nThis paragraph was rewritten."
	e.writeKB("a", "big.md", strings.Join(sections, "\n\n"))
	e.waitEmbedded("a")
	if n := e.srv.Stats().EmbeddedTexts - before; n != 1 {
		t.Errorf("an edit of one section embedded %d texts, want 1", n)
	}
	if got := e.vectorModels("a"); got["embed-a"] != 40 {
		t.Errorf("stored vectors = %v, want 40 (the old chunk's removed)", got)
	}
}

// TestAgentRemovalRemovesVectors: deleting an agent removes its vectors
// and leaves the others'.
func TestAgentRemovalRemovesVectors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmbeddings("embed-a"))
	for _, id := range []string{"a", "b"} {
		e.createAgent(id, "")
		e.writeManual(id)
		e.waitEmbedded(id)
	}
	if err := e.svc.Delete(e.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := e.vectorModels("a"); len(got) != 0 {
		t.Errorf("vectors of the deleted agent = %v", got)
	}
	if got := e.vectorModels("b"); got["embed-a"] != 5 {
		t.Errorf("vectors of the other agent = %v", got)
	}
	if _, err := e.svc.KBStatus(e.ctx, "a"); err == nil {
		t.Error("status of a deleted agent succeeded")
	}
}
