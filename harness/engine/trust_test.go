package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/runs/runstest"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// failPrompts answers 400 to prompts holding marker while on is set:
// tests whose model call fails end in error.
func failPrompts(marker string, on *atomic.Bool) func(*llmtest.Request) *llmtest.Reply {
	return func(req *llmtest.Request) *llmtest.Reply {
		for _, m := range req.Messages {
			if m.Role == harness.RoleUser && strings.Contains(m.Content, marker) && on.Load() {
				return &llmtest.Reply{Status: 400, Content: "bad request for " + marker}
			}
		}
		return nil
	}
}

func near(a *float64, b float64) bool { return a != nil && math.Abs(*a-b) < 1e-9 }

// checkStored asserts the invariant "stored results = matrix done", for
// every cell and for the run, and that the run is counted: its cells'
// counters are its results' counts by cell and status.
func checkStored(t *testing.T, f *fixture, id string) runs.Info {
	t.Helper()
	ctx := context.Background()
	info, err := f.runs.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.runs.Matrix(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for d, levels := range m {
		for l, c := range levels {
			rs, err := f.runs.CellResults(ctx, id, d, atoi(l))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != c.Done || c.Done != c.Passed+c.Failed+c.Errors {
				t.Errorf("cell %s/%s: %d stored, %+v", d, l, len(rs), c)
			}
			done += c.Done
		}
	}
	if n := f.count(t, "run_results", id); n != done || info.DoneTests != done ||
		info.DoneTests != info.Passed+info.Failed+info.Errors {
		t.Errorf("%d results stored, cells done %d, run %+v", n, done, info)
	}
	runstest.CheckCounters(t, f.db, id)
	return info
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// TestErrorsApartFromFailures: a test whose model call fails is an error,
// counted apart and never scored; a cell where every test errored is
// `error` with no score; the run is not complete.
func TestErrorsApartFromFailures(t *testing.T) {
	t.Parallel()
	var on atomic.Bool
	on.Store(true)
	d := newDefs().domain("d", "", true).sums("d", 1, 3, 1).sums("d", 2, 2, 0)
	d.s.Tests = append(d.s.Tests, harness.Test{ID: "boom", DomainID: "d", Level: 1, Prompt: "[boom] FAIL What is 1 + 1?",
		Expected: harness.Expected{Answer: "2", Type: "numeric"}})
	for i := range d.s.Tests {
		if d.s.Tests[i].Level == 2 {
			d.s.Tests[i].Prompt += " FAIL"
		}
	}
	f := newFixture(t, fixtureOpts{snap: d.snap(), maxRetries: -1, llm: llmtest.Options{Respond: failPrompts("FAIL", &on)}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.Complete || info.DoneTests != 6 || info.Passed != 2 ||
		info.Failed != 1 || info.Errors != 3 || !near(info.OverallScore, 2.0/3) {
		t.Fatalf("info = %+v, score %v", info, ptr(info.OverallScore))
	}
	stored := checkStored(t, f, id)
	if stored.Complete || stored.Errors != 3 || !near(stored.OverallScore, 2.0/3) {
		t.Errorf("stored info = %+v", stored)
	}
	m, _ := f.runs.Matrix(ctx, id)
	if c := m["d"]["1"]; c.Status != runs.CellPassed || c.Passed != 2 || c.Failed != 1 || c.Errors != 1 || !near(c.Score, 2.0/3) {
		t.Errorf("cell 1 = %+v score %v", c, ptr(c.Score))
	}
	if c := m["d"]["2"]; c.Status != runs.CellError || c.Score != nil || c.Errors != 2 || c.Done != 2 {
		t.Errorf("cell 2 = %+v", c)
	}
	st, _ := f.runs.Stats(ctx, id)
	if st.StatusCounts[runs.TestError] != 3 || math.Abs(st.AvgScore-2.0/3) > 1e-9 {
		t.Errorf("stats = %+v", st)
	}
	// Run-level log lines name a real domain and level: the first cell.
	lines, _ := f.eng.PollLogs()
	if !strings.HasPrefix(lines[0], "[d][L1] run "+id+" started") {
		t.Errorf("first line %q", lines[0])
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "[run]") || (l != engine.EvalComplete && !logLineRE.MatchString(l)) {
			t.Errorf("line %q", l)
		}
	}
}

// TestStoppedRunIsPartial: a stopped run is never complete; the cell it
// was in has status partial with the results it kept, the cells it never
// reached are skipped.
func TestStoppedRunIsPartial(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 20, 0).sums("d", 2, 20, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 2, llm: llmtest.Options{Latency: 30 * time.Millisecond}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	for n := 0; n < 3; {
		if ev := <-f.events; ev.Kind == engine.EventTestFinished {
			n++
		}
	}
	f.eng.Stop(10 * time.Second)
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusStopped || info.Complete || info.DoneTests < 3 || info.DoneTests >= 40 || info.Errors != 0 {
		t.Fatalf("info = %+v", info)
	}
	checkStored(t, f, id)
	m, _ := f.runs.Matrix(ctx, id)
	if c := m["d"]["1"]; c.Status != runs.CellPartial || c.Done == 0 || c.Done >= 20 || c.Score == nil {
		t.Errorf("cell 1 = %+v", c)
	}
	if c := m["d"]["2"]; c.Status != runs.CellSkipped || c.Done != 0 {
		t.Errorf("cell 2 = %+v", c)
	}
}

// TestModelOutputStoredExactly: answers with NUL, quotes, backslashes,
// 4-byte emoji and SQL-looking text are stored and read back byte for
// byte, and nothing is lost.
func TestModelOutputStoredExactly(t *testing.T) {
	t.Parallel()
	answers := map[string]string{
		"t-nul":    "The answer is 2\x00 and more\x00",
		"t-quote":  "it's 2 ' \" ''; DROP TABLE runs; --",
		"t-slash":  `2 \ \\ \n \x00 %s ? $1`,
		"t-emoji":  "2 😀🧪 \u2028",
		"t-bigger": strings.Repeat("2 \x00", 10000),
	}
	d := newDefs().domain("d", "", true).level("d", 1, "", harness.PromptAppend, 0.5)
	for id := range answers {
		d.test(harness.Test{ID: id, DomainID: "d", Level: 1, Prompt: "[" + id + "] What is 1 + 1?",
			Expected: harness.Expected{Answer: "2", Type: "numeric"}})
	}
	f := newFixture(t, fixtureOpts{snap: d.snap(), llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		return &llmtest.Reply{Content: answers[promptID(req.Messages[len(req.Messages)-1].Content)]}
	}}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.DoneTests != len(answers) || info.Errors != 0 {
		t.Fatalf("info = %+v", info)
	}
	checkStored(t, f, id)
	results, _ := f.runs.Results(ctx, id)
	for _, r := range results {
		if r.Response != answers[r.TestID] {
			t.Errorf("%s: stored %q, want %q", r.TestID, r.Response, answers[r.TestID])
		}
	}
}

// poison makes the database refuse result rows with a trigger: a real
// SQLite (or PostgreSQL) failure for exactly the rows the condition
// picks ("1" for every row).
func poison(t *testing.T, f *fixture, when string) {
	t.Helper()
	ctx := context.Background()
	var err error
	if dbtest.Postgres() {
		if when == "1" {
			when = "true"
		}
		_, err = sqldb.Bun(f.db).ExecContext(ctx, `CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'poisoned row'; END $$`)
		if err == nil {
			_, err = sqldb.Bun(f.db).ExecContext(ctx, "CREATE TRIGGER poison BEFORE INSERT ON run_results FOR EACH ROW WHEN ("+when+
				") EXECUTE FUNCTION poison()")
		}
	} else {
		_, err = sqldb.Bun(f.db).ExecContext(ctx, "CREATE TRIGGER poison BEFORE INSERT ON run_results WHEN "+when+
			" BEGIN SELECT RAISE(ABORT, 'poisoned row'); END")
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnstorableResultTakesNoOther: a batch holding one row the database
// refuses is stored row by row; the refused result is replaced by an
// error saying why (its response could not be kept), and no other result
// is lost.
func TestUnstorableResultTakesNoOther(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 40, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 8, llm: llmtest.Options{Respond: func(req *llmtest.Request) *llmtest.Reply {
		if promptID(req.Messages[len(req.Messages)-1].Content) == "d-l1-t7" {
			return &llmtest.Reply{Content: "POISON 8"}
		}
		return nil
	}}})
	poison(t, f, "NEW.response LIKE '%POISON%'")
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusCompleted || info.DoneTests != 40 || info.Passed != 39 || info.Errors != 1 {
		t.Fatalf("info = %+v", info)
	}
	checkStored(t, f, id)
	r := resultByID(t, f, id)["d-l1-t7"]
	if msg, _ := r.Details["error"].(string); r.Status != runs.TestError || !strings.Contains(msg, "could not be stored") {
		t.Errorf("poisoned result = %+v", r)
	}
}

// TestLostResultNotCounted: a result the database refuses even as an
// error is not counted as done: the matrix never claims what is not
// stored.
func TestLostResultNotCounted(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 10, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap()})
	poison(t, f, "NEW.test_id = 'd-l1-t3'")
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.DoneTests != 9 || info.Complete {
		t.Fatalf("info = %+v", info)
	}
	checkStored(t, f, id)
	m, _ := f.runs.Matrix(context.Background(), id)
	if c := m["d"]["1"]; c.Status != runs.CellPartial || c.Done != 9 {
		t.Errorf("cell = %+v", c)
	}
}

// TestStoreKeepsFailing: when the database refuses every result, the run
// stops and says why.
func TestStoreKeepsFailing(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 200, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 2, llm: llmtest.Options{Latency: 5 * time.Millisecond}})
	poison(t, f, "1")
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "database") || info.DoneTests != 0 {
		t.Fatalf("info = %+v", info)
	}
	stored := checkStored(t, f, id)
	if stored.Status != runs.StatusStopped || stored.Error != info.Error {
		t.Errorf("stored = %+v", stored)
	}
}

// downModel is an endpoint that cannot be reached.
type downModel struct{ calls atomic.Int64 }

func (m *downModel) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	m.calls.Add(1)
	time.Sleep(5 * time.Millisecond)
	return nil, fmt.Errorf("dial tcp 127.0.0.1:1: connect: connection refused: %w", harness.ErrUnreachable)
}

// TestEndpointDownStopsRun: when tests in a row find the endpoint
// unreachable and none was answered, the run stops at once with the
// reason instead of trying every test.
func TestEndpointDownStopsRun(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 500, 0)
	down := &downModel{}
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 4, model: func(harness.ChatModel) harness.ChatModel { return down }})
	id := f.start(t, engine.StartRequest{})
	info, _ := f.wait(t, id)
	if info.Status != runs.StatusStopped || !strings.Contains(info.Error, "unreachable") || info.Complete {
		t.Fatalf("info = %+v", info)
	}
	if n := down.calls.Load(); n > 50 || info.DoneTests > 50 || info.DoneTests < 10 || info.Errors != info.DoneTests {
		t.Errorf("%d calls, info %+v: the run did not stop early", n, info)
	}
	checkStored(t, f, id)
}

// TestProvenance: a run records what it ran with, and the definitions it
// used, stored once for runs of the same definitions.
func TestProvenance(t *testing.T) {
	t.Parallel()
	d := newDefs().domain("d", "", true).sums("d", 1, 3, 0)
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 3})
	ctx := context.Background()
	retries := 1
	id := f.start(t, engine.StartRequest{Timeout: 7 * time.Second, Retries: &retries, Model: "other-model"})
	info, _ := f.wait(t, id)
	c := info.Config
	if c == nil || c.Model != "other-model" || c.BaseURL != f.mock.URL || c.Concurrency != 3 || c.TimeoutS != 7 ||
		c.Retries != 1 || c.Repeats != 1 || len(c.DefinitionsHash) != 64 || c.GauntletVersion != "test" {
		t.Fatalf("config = %+v", c)
	}
	stored, _ := f.runs.Run(ctx, id)
	if stored.Config == nil || stored.Config.DefinitionsHash != c.DefinitionsHash || stored.Config.TimeoutS != 7 {
		t.Errorf("stored config = %+v", stored.Config)
	}
	snap, err := f.runs.Definitions(ctx, id)
	if err != nil || len(snap.Tests) != 3 || len(snap.Domains) != 1 {
		t.Fatalf("definitions: %v %+v", err, snap)
	}
	id2 := f.start(t, engine.StartRequest{})
	info2, _ := f.wait(t, id2)
	if info2.Config.DefinitionsHash != c.DefinitionsHash || info2.Config.TimeoutS != 5 || info2.Config.Retries != 2 {
		t.Errorf("second config = %+v", info2.Config)
	}
	n, _ := sqldb.Bun(f.db).NewSelect().Table("run_definitions").Count(ctx)
	if n != 1 {
		t.Errorf("%d stored snapshots, want 1", n)
	}
	for _, bad := range []engine.StartRequest{{Timeout: -time.Second}, {Timeout: 2 * time.Hour}, {Retries: ptrTo(-1)}, {Retries: ptrTo(11)}} {
		if _, err := f.eng.Start(ctx, bad); !errors.Is(err, harness.ErrInvalid) {
			t.Errorf("start %+v: %v", bad, err)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestResume: a stopped run and a run with errors are resumed into the
// same run with their own definitions; errors are replaced, finished
// results kept and never duplicated.
func TestResume(t *testing.T) {
	t.Parallel()
	var on atomic.Bool
	on.Store(true)
	d := newDefs().domain("d", "", true).sums("d", 1, 30, 0).sums("d", 2, 4, 0)
	for i := range d.s.Tests {
		if d.s.Tests[i].Level == 2 {
			d.s.Tests[i].Prompt += " FAIL"
		}
	}
	f := newFixture(t, fixtureOpts{snap: d.snap(), concurrency: 2, maxRetries: -1,
		llm: llmtest.Options{Latency: 20 * time.Millisecond, Respond: failPrompts("FAIL", &on)}})
	ctx := context.Background()
	id := f.start(t, engine.StartRequest{})
	for n := 0; n < 4; {
		if ev := <-f.events; ev.Kind == engine.EventTestFinished {
			n++
		}
	}
	f.eng.Stop(10 * time.Second)
	first, _ := f.wait(t, id)
	if first.Status != runs.StatusStopped || first.DoneTests >= 34 {
		t.Fatalf("first = %+v", first)
	}
	// The definitions change on disk: the resume uses the run's own.
	if err := f.cat.DeleteTest(ctx, "d-l1-t29"); err != nil {
		t.Fatal(err)
	}

	if err := f.eng.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Resume(ctx, id); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("resume while running: %v", err)
	}
	second, _ := f.wait(t, id)
	if second.Status != runs.StatusCompleted || second.DoneTests != 34 || second.Errors != 4 || second.Complete {
		t.Fatalf("second = %+v", second)
	}
	checkStored(t, f, id)
	if _, ok := resultByID(t, f, id)["d-l1-t29"]; !ok {
		t.Error("the test deleted from the files after the run was not run")
	}

	// The endpoint is fixed: resuming runs the 4 errors again.
	on.Store(false)
	if err := f.eng.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	third, _ := f.wait(t, id)
	if third.Status != runs.StatusCompleted || !third.Complete || third.DoneTests != 34 || third.Errors != 0 || !near(third.OverallScore, 1) {
		t.Fatalf("third = %+v", third)
	}
	checkStored(t, f, id)
	if n := f.count(t, "run_results", id); n != 34 {
		t.Errorf("%d results, want 34", n)
	}
	m, _ := f.runs.Matrix(ctx, id)
	if c := m["d"]["2"]; c.Status != runs.CellPassed || c.Errors != 0 || c.Passed != 4 {
		t.Errorf("cell 2 = %+v", c)
	}
	if third.TotalDurationMS < first.TotalDurationMS {
		t.Errorf("duration went back: %d < %d", third.TotalDurationMS, first.TotalDurationMS)
	}

	if err := f.eng.Resume(ctx, id); !errors.Is(err, harness.ErrInvalid) {
		t.Errorf("resume with nothing left: %v", err)
	}
	if err := f.eng.Resume(ctx, "nope"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("resume unknown: %v", err)
	}
}
