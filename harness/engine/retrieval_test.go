package engine_test

import (
	"context"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMain stops the PostgreSQL server the tests started, when they ran
// against one (GAUNTLET_TEST_DATABASE=postgres).
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// kbDefs is a suite whose tests name the knowledge-base files that should
// answer them. Level 1: refund (policy.md, found), warranty (warranty.md,
// found, and policy.md, not), miss (a file the base does not have), gate
// (shipping.md, found), plain (no expected sources). Level 2: broken,
// which the model refuses: an error. Domain grounded: two answers graded
// by a faithfulness judge, one the knowledge base supports and one it
// does not.
func kbDefs() *defs {
	d := newDefs()
	d.s.Evaluators = append(d.s.Evaluators, harness.EvaluatorConfig{ID: "faithful", Name: "Faithful", Type: judge.Type,
		Config: map[string]any{"faithfulness": true, "pass_score": 0.5}})
	d.domain("kb", "", true).level("kb", 1, "", harness.PromptAppend, 0.5).level("kb", 2, "", harness.PromptAppend, 0.5)
	d.test(harness.Test{ID: "refund", DomainID: "kb", Level: 1, Prompt: "[refund] How many days is the refund window?",
		Expected: harness.Expected{Type: "numeric", Answer: "30", Sources: []string{"policy.md"}}})
	d.test(harness.Test{ID: "warranty", DomainID: "kb", Level: 1, Prompt: "[warranty] Are manufacturing defects covered?",
		Expected: harness.Expected{Type: "contains", Answer: "defects", Sources: []string{"warranty.md", "policy.md"}}})
	d.test(harness.Test{ID: "miss", DomainID: "kb", Level: 1, Prompt: "[miss] Gift wrapping offered?",
		Expected: harness.Expected{Type: "contains", Answer: "no", Sources: []string{"giftwrap.md"}}})
	d.test(harness.Test{ID: "gate", DomainID: "kb", Level: 1, Prompt: "[gate] Which courier ships parcels?",
		Expected: harness.Expected{Type: "contains", Answer: "courier", Sources: []string{"shipping.md"}}})
	d.test(harness.Test{ID: "plain", DomainID: "kb", Level: 1, Prompt: "[plain] Say 4.",
		Expected: harness.Expected{Type: "numeric", Answer: "4"}})
	d.test(harness.Test{ID: "broken", DomainID: "kb", Level: 2, Prompt: "[broken] How many days is the refund window?",
		Expected: harness.Expected{Type: "numeric", Answer: "30", Sources: []string{"policy.md"}}})
	d.s.Domains = append(d.s.Domains, harness.Domain{ID: "grounded", Name: "Grounded", EvaluatorID: "faithful", Enabled: true})
	d.level("grounded", 1, "", harness.PromptAppend, 0.5)
	d.test(harness.Test{ID: "supported", DomainID: "grounded", Level: 1, Prompt: "[supported] How many days is the refund window?",
		Expected: harness.Expected{Type: judge.ExpectedType}})
	d.test(harness.Test{ID: "invented", DomainID: "grounded", Level: 1, Prompt: "[invented] How many days is the refund window?",
		Expected: harness.Expected{Type: judge.ExpectedType}})
	return d
}

// kbFixture is an engine with agent "kb" (three knowledge-base files) and
// the suite of kbDefs, on dbtest's database. gate, when not nil, holds
// the answer to the gate test until it is closed.
type kbFixture struct {
	*fixture
	svc  *agent.Service
	gate chan struct{}
	// fixed makes the model answer the broken test.
	fixed atomic.Bool
}

// kbAnswer answers as a model reading its system message would, and
// grades faithfulness as a careful judge would: 1 when the number of
// days the answer gives is in the retrieved text.
func kbAnswer(req *llmtest.Request) *llmtest.Reply {
	user := req.LastUser()
	if len(req.Messages) > 0 && req.Messages[0].Content == judge.FaithfulnessSystemPrompt {
		retrieved := between(user, "<retrieved>", "</retrieved>")
		response := between(user, "<response>", "</response>")
		for _, n := range []string{"30", "14"} {
			if strings.Contains(response, n+" days") {
				if strings.Contains(retrieved, n+" days") {
					return &llmtest.Reply{Content: "Supported.\nScore: 1"}
				}
				return &llmtest.Reply{Content: "Not in the retrieved text.\nScore: 0"}
			}
		}
		return &llmtest.Reply{Content: "Score: 0"}
	}
	switch {
	case strings.HasPrefix(user, "[broken]"):
		return &llmtest.Reply{Status: 400, Content: "refused"}
	case strings.HasPrefix(user, "[invented]"):
		return &llmtest.Reply{Content: "The refund window is 14 days."}
	case strings.HasPrefix(user, "[plain]"):
		return &llmtest.Reply{Content: "4"}
	}
	if rep := refundDays(req); rep != nil {
		return rep
	}
	return &llmtest.Reply{Content: "By courier; no gift wrapping; defects are covered."}
}

func between(s, open, close string) string {
	_, rest, _ := strings.Cut(s, open)
	in, _, _ := strings.Cut(rest, close)
	return in
}

func newKBFixture(t *testing.T, gated bool, queue ...engine.Queue) *kbFixture {
	t.Helper()
	kf := &kbFixture{}
	var q engine.Queue
	if len(queue) > 0 {
		q = queue[0]
	}
	if gated {
		kf.gate = make(chan struct{})
	}
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(judge.Type, judge.New(judge.Options{})); err != nil {
		t.Fatal(err)
	}
	if err := judge.RegisterExpectedType(reg); err != nil {
		t.Fatal(err)
	}
	kf.fixture = newFixture(t, fixtureOpts{snap: kbDefs().snap(), registry: reg, concurrency: 1, anyDB: true, queue: q,
		llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
			if kf.gate != nil && strings.HasPrefix(req.LastUser(), "[gate]") {
				<-kf.gate
			}
			if kf.fixed.Load() && strings.HasPrefix(req.LastUser(), "[broken]") {
				return &llmtest.Reply{Content: "The refund window is 30 days."}
			}
			return kbAnswer(req)
		}},
		agents: openAgents(t, reg, &kf.svc)})
	ctx := context.Background()
	if _, err := kf.svc.Create(ctx, harness.Agent{ID: "kb", Name: "Knowledge", SystemPrompt: "Answer from the knowledge base."}); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"policy.md":   "Our policy: refunds within 30 days of purchase.",
		"shipping.md": "Parcels ship by courier in two business days.",
		"warranty.md": "Warranty: manufacturing defects stay covered for two years.",
	} {
		if _, err := kf.svc.KB().Write(ctx, "kb", name, strings.NewReader(text), true); err != nil {
			t.Fatal(err)
		}
	}
	return kf
}

// retrievalOf returns a result's details.retrieval, failing the test when
// it has none.
func retrievalOf(t *testing.T, r runs.Result) *runs.Retrieval {
	t.Helper()
	got, ok := runs.RetrievalOf(r.Details)
	if !ok {
		t.Fatalf("%s: no details.retrieval in %v", r.TestID, r.Details)
	}
	return got
}

// TestRetrievalMeasured: in a run that targets an agent, each result of a
// test that lists expected sources records the retrieval's recall@k and
// hit (and what was retrieved) without changing its score; the cell
// carries the means over its scored results, live while the run goes and
// when read back; an error is recorded but not counted; a run of the bare
// model records none. On SQLite, and on PostgreSQL with
// GAUNTLET_TEST_DATABASE=postgres.
func TestRetrievalMeasured(t *testing.T) {
	t.Parallel()
	kf := newKBFixture(t, true)
	ctx := context.Background()
	id := kf.start(t, engine.StartRequest{AgentID: "kb", Domains: []string{"kb"}})

	// While the gate test waits, the live matrix already has the figures
	// of the three results stored before it.
	live := &runs.CellRetrieval{RecallAtK: 0.5, HitRate: 2.0 / 3, Tests: 3}
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := kf.eng.Matrix(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := m.Domains["kb"]["1"]
		if c.Retrieval != nil && c.Retrieval.Tests == 3 {
			if c.Status != runs.CellRunning || !reflect.DeepEqual(c.Retrieval, live) {
				t.Errorf("live cell %s, retrieval %+v; want running with %+v", c.Status, c.Retrieval, live)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live cell never counted three results' retrieval: %+v", c.Retrieval)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(kf.gate)
	info, _ := kf.wait(t, id)
	if info.Status != runs.StatusCompleted || info.Errors != 1 {
		t.Fatalf("run: %+v", info)
	}

	results := resultByID(t, kf.fixture, id)
	for _, tc := range []struct {
		id        string
		recall    float64
		hit       bool
		expected  []string
		retrieved []string
	}{
		// "days" also matches shipping.md, below policy.md.
		{"refund", 1, true, []string{"policy.md"}, []string{"policy.md", "shipping.md"}},
		{"warranty", 0.5, true, []string{"warranty.md", "policy.md"}, []string{"warranty.md"}},
		{"miss", 0, false, []string{"giftwrap.md"}, []string{}},
		{"gate", 1, true, []string{"shipping.md"}, []string{"shipping.md"}},
		// An error after retrieval still says what was retrieved.
		{"broken", 1, true, []string{"policy.md"}, []string{"policy.md", "shipping.md"}},
	} {
		r := results[tc.id]
		got := retrievalOf(t, r)
		if got.RecallAtK != tc.recall || got.Hit != tc.hit || !reflect.DeepEqual(got.Expected, tc.expected) ||
			!reflect.DeepEqual(got.Retrieved, tc.retrieved) || got.Mode != "bm25" || got.K != 3 || got.Fallback != "" {
			t.Errorf("%s: retrieval %+v; want recall %v, hit %v, retrieved %q of k 3 (bm25)", tc.id, got, tc.recall, tc.hit, tc.retrieved)
		}
	}
	if r := results["refund"]; r.Status != runs.TestPassed || r.Score != 1 {
		t.Errorf("refund scored %s %v: retrieval must not change the score", r.Status, r.Score)
	}
	if r := results["broken"]; r.Status != runs.TestError {
		t.Errorf("broken: %s", r.Status)
	}
	if _, ok := results["plain"].Details["retrieval"]; ok {
		t.Errorf("plain lists no sources but has details.retrieval: %v", results["plain"].Details)
	}

	m, err := kf.runs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	final := &runs.CellRetrieval{RecallAtK: 0.625, HitRate: 0.75, Tests: 4}
	if got := m["kb"]["1"].Retrieval; !reflect.DeepEqual(got, final) {
		t.Errorf("stored cell retrieval %+v, want %+v", got, final)
	}
	if got := m["kb"]["2"].Retrieval; got != nil {
		t.Errorf("a cell whose only result is an error has retrieval %+v", got)
	}

	// The same suite against the bare model: expected sources are
	// ignored, nothing is recorded.
	bare, _ := kf.wait(t, kf.start(t, engine.StartRequest{Domains: []string{"kb"}}))
	for _, r := range resultByID(t, kf.fixture, bare.RunID) {
		if _, ok := r.Details["retrieval"]; ok {
			t.Errorf("bare-model run: %s has details.retrieval", r.TestID)
		}
	}
	if m, _ := kf.runs.Matrix(ctx, bare.RunID); m["kb"]["1"].Retrieval != nil {
		t.Errorf("bare-model cell has retrieval %+v", m["kb"]["1"].Retrieval)
	}
}

// TestRetrievalRescoreAndResume: a rescore does not retrieve again: it
// measures the files the source retrieved against today's expected
// sources; a resumed run counts the results it kept and the ones it runs
// again.
func TestRetrievalRescoreAndResume(t *testing.T) {
	t.Parallel()
	kf := newKBFixture(t, false)
	ctx := context.Background()
	src, _ := kf.wait(t, kf.start(t, engine.StartRequest{AgentID: "kb", Domains: []string{"kb"}}))

	// Today warranty expects warranty.md only, and refund none.
	if _, err := kf.cat.UpdateTest(ctx, "warranty", func(x *harness.Test) error {
		x.Expected.Sources = []string{"warranty.md"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := kf.cat.UpdateTest(ctx, "refund", func(x *harness.Test) error {
		x.Expected.Sources = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	id, err := kf.eng.Rescore(ctx, src.RunID)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := kf.wait(t, id)
	if info.RescoredFrom != src.RunID {
		t.Fatalf("rescore: %+v", info)
	}
	results := resultByID(t, kf.fixture, id)
	if got := retrievalOf(t, results["warranty"]); got.RecallAtK != 1 || !got.Hit || !reflect.DeepEqual(got.Retrieved, []string{"warranty.md"}) {
		t.Errorf("rescored warranty: %+v", got)
	}
	if _, ok := results["refund"].Details["retrieval"]; ok {
		t.Errorf("refund expects no sources today, yet has %v", results["refund"].Details["retrieval"])
	}
	if got := retrievalOf(t, results["miss"]); got.RecallAtK != 0 || got.Hit {
		t.Errorf("rescored miss: %+v", got)
	}
	m, err := kf.runs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// warranty 1, miss 0, gate 1; refund no longer counted, broken an error.
	if got, want := m["kb"]["1"].Retrieval, (&runs.CellRetrieval{RecallAtK: 2.0 / 3, HitRate: 2.0 / 3, Tests: 3}); !reflect.DeepEqual(got, want) {
		t.Errorf("rescored cell retrieval %+v, want %+v", got, want)
	}

	// Resume the source run with the model answering broken now: the
	// cell counts the result it kept and the one run again.
	kf.fixed.Store(true)
	if err := kf.eng.Resume(ctx, src.RunID); err != nil {
		t.Fatal(err)
	}
	info, _ = kf.wait(t, src.RunID)
	if !info.Complete {
		t.Fatalf("resumed: %+v", info)
	}
	m, _ = kf.runs.Matrix(ctx, src.RunID)
	if got, want := m["kb"]["2"].Retrieval, (&runs.CellRetrieval{RecallAtK: 1, HitRate: 1, Tests: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("resumed cell retrieval %+v, want %+v", got, want)
	}
	if got, want := m["kb"]["1"].Retrieval, (&runs.CellRetrieval{RecallAtK: 0.625, HitRate: 0.75, Tests: 4}); !reflect.DeepEqual(got, want) {
		t.Errorf("kept cell retrieval %+v, want %+v", got, want)
	}
}

// TestFaithfulnessJudged: a faithfulness judge grades an agent's answers
// against the text its retrieval gave, through the engine; in a run of
// the bare model there is no retrieved text, and every such test is an
// error saying so, never a pass. A rescore grades against the text the
// source's system message held.
func TestFaithfulnessJudged(t *testing.T) {
	t.Parallel()
	kf := newKBFixture(t, false)
	ctx := context.Background()
	id := kf.start(t, engine.StartRequest{AgentID: "kb", Domains: []string{"grounded"}})
	info, _ := kf.wait(t, id)
	if info.Passed != 1 || info.Failed != 1 {
		t.Fatalf("agent run: %+v", info)
	}
	results := resultByID(t, kf.fixture, id)
	if r := results["supported"]; r.Status != runs.TestPassed || r.Score != 1 || r.Details["faithfulness"] != true {
		t.Errorf("supported: %s %v %v", r.Status, r.Score, r.Details)
	}
	if r := results["invented"]; r.Status != runs.TestFailed || r.Score != 0 || r.Details["faithfulness"] != true {
		t.Errorf("invented: %s %v %v", r.Status, r.Score, r.Details)
	}

	re, err := kf.eng.Rescore(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := kf.wait(t, re); info.Passed != 1 || info.Failed != 1 {
		t.Errorf("rescore of the agent run: %+v", info)
	}

	bare, _ := kf.wait(t, kf.start(t, engine.StartRequest{Domains: []string{"grounded"}}))
	if bare.Errors != 2 || bare.Passed != 0 {
		t.Fatalf("bare-model run: %+v", bare)
	}
	for _, r := range resultByID(t, kf.fixture, bare.RunID) {
		msg, _ := r.Details["error"].(string)
		if !strings.Contains(msg, "the run does not target an agent") {
			t.Errorf("%s: error %q", r.TestID, msg)
		}
	}
}

// inlineQueue is an engine.Queue whose jobs a goroutine of the test hands
// to Engine.Work in order, as a worker would: the queued path of a run.
type inlineQueue struct {
	mu   sync.Mutex
	jobs []engine.QueuedJob
	open int
}

func (q *inlineQueue) Enqueue(_ context.Context, _ bun.Tx, jobs []engine.QueuedJob) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, jobs...)
	q.open += len(jobs)
	return nil
}

func (q *inlineQueue) Cancel(context.Context, string) error { return nil }

func (q *inlineQueue) State(context.Context, string) (engine.QueueState, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return engine.QueueState{Open: q.open}, nil
}

// work executes every job enqueued so far.
func (q *inlineQueue) work(t *testing.T, eng *engine.Engine) {
	q.mu.Lock()
	jobs := slices.Clone(q.jobs)
	q.jobs = nil
	q.mu.Unlock()
	for _, j := range jobs {
		if err := eng.Work(context.Background(), j); err != nil {
			t.Errorf("work %s: %v", j.TestID, err)
		}
		q.mu.Lock()
		q.open--
		q.mu.Unlock()
	}
}

// TestRetrievalQueued: a queued run's results are stored by the worker
// that executes them, with the cell's retrieval sums; the run that
// follows them shows the figures, and the settled cell keeps them.
func TestRetrievalQueued(t *testing.T) {
	t.Parallel()
	q := &inlineQueue{}
	kf := newKBFixture(t, false, q)
	ctx := context.Background()
	id := kf.start(t, engine.StartRequest{AgentID: "kb", Domains: []string{"kb"}})
	// The run's jobs are enqueued once it is prepared.
	harnesstest.Eventually(t, 30*time.Second, "the run prepared", func() bool { return !kf.eng.Status().Preparing })
	go q.work(t, kf.eng)
	info, _ := kf.wait(t, id)
	if info.Status != runs.StatusCompleted || info.DoneTests != 6 {
		t.Fatalf("queued run: %+v", info)
	}
	m, err := kf.runs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := &runs.CellRetrieval{RecallAtK: 0.625, HitRate: 0.75, Tests: 4}
	if c := m["kb"]["1"]; c.Status != runs.CellPassed && c.Status != runs.CellFailed || !reflect.DeepEqual(c.Retrieval, want) {
		t.Errorf("queued cell %s, retrieval %+v; want settled with %+v", c.Status, c.Retrieval, want)
	}
	if got := retrievalOf(t, resultByID(t, kf.fixture, id)["warranty"]); got.RecallAtK != 0.5 {
		t.Errorf("queued warranty: %+v", got)
	}
}

// TestRetrievalCached: with the response cache, retrieval still runs for
// every test (only the model's answer comes from the cache), so a cached
// run measures what its own retrieval gave.
func TestRetrievalCached(t *testing.T) {
	t.Parallel()
	kf := newKBFixture(t, false)
	ctx := context.Background()
	first, _ := kf.wait(t, kf.start(t, engine.StartRequest{AgentID: "kb", Domains: []string{"kb"}, Cache: true}))
	second, _ := kf.wait(t, kf.start(t, engine.StartRequest{AgentID: "kb", Domains: []string{"kb"}, Cache: true}))
	if second.CacheHits == 0 {
		t.Fatalf("the second run used no cache: %+v", second)
	}
	a, b := resultByID(t, kf.fixture, first.RunID), resultByID(t, kf.fixture, second.RunID)
	for _, id := range []string{"refund", "warranty", "miss", "gate"} {
		if got, want := retrievalOf(t, b[id]), retrievalOf(t, a[id]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: cached run's retrieval %+v, first run's %+v", id, got, want)
		}
	}
	m1, _ := kf.runs.Matrix(ctx, first.RunID)
	m2, _ := kf.runs.Matrix(ctx, second.RunID)
	if !reflect.DeepEqual(m1["kb"]["1"].Retrieval, m2["kb"]["1"].Retrieval) || m2["kb"]["1"].Retrieval == nil {
		t.Errorf("cells: %+v, then %+v", m1["kb"]["1"].Retrieval, m2["kb"]["1"].Retrieval)
	}
}
