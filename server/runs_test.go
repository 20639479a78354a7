package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// hangForever is a schedule that picks every request: with it as
// llmtest's Timeouts, the model never answers.
var hangForever = llmtest.Schedule{First: 1 << 30}

// knowledgeAnswers make the fake model answer the example knowledge
// domain right, so that a run over the examples passes most cells.
var knowledgeAnswers = map[string]string{
	"capital of France":       "Answer: B",
	"largest":                 "Answer: C",
	"boil at 100 degrees":     "yes",
	"chemical symbol of gold": "Au",
}

// logLine is the form of every log line but EVAL_COMPLETE.
var logLine = regexp.MustCompile(`^\[[^\]]+\]\[L\d+\] `)

// TestStatusIdle checks the idle shape of GET /api/status and of the
// live matrix before any run.
func TestStatusIdle(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	r := must(t, e.get("/api/status"), http.StatusOK)
	m := r.object(t)
	want := map[string]any{
		"status": "idle", "run_id": nil, "current_domain": nil, "current_level": nil,
		"progress": float64(0), "total_tests": float64(0), "last_run_id": nil, "preparing": false,
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			t.Errorf("no %q in %s", k, r.body)
			continue
		}
		if got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}

	mx := must(t, e.get("/api/test_matrix"), http.StatusOK).object(t)
	if d, ok := mx["domains"].(map[string]any); !ok || len(d) != 0 {
		t.Errorf("domains %v, want {}", mx["domains"])
	}
	if mx["run_id"] != nil || mx["status"] != "idle" {
		t.Errorf("matrix before any run: %v", mx)
	}
	if _, ok := mx["model_name"]; !ok {
		t.Errorf("no model_name in %v", mx)
	}

	id := e.runToEnd(map[string]any{"model_name": "first"})
	st := e.status()
	if st.Status != "idle" || st.RunID != nil || st.CurrentDomain != nil || st.CurrentLevel != nil ||
		st.Progress != 0 || st.TotalTests != 0 {
		t.Errorf("idle after a run: %+v", st)
	}
	if st.LastRunID == nil || *st.LastRunID != id {
		t.Errorf("last_run_id %v, want %s", st.LastRunID, id)
	}
}

// TestRunLive follows a run through GET /api/status, GET /api/test_matrix
// and GET /api/run/{id}/matrix while it runs, and after.
func TestRunLive(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{
		llm:         llmtest.Options{Latency: 150 * time.Millisecond, Answers: knowledgeAnswers},
		concurrency: 1,
	})
	id := e.start(map[string]any{"model_name": "live-label"})

	t.Run("status while running", func(t *testing.T) {
		var st statusBody
		harnesstest.Eventually(t, runWait, "a running status naming the current cell", func() bool {
			st = e.status()
			return st.Status == "running" && st.CurrentDomain != nil
		})
		if st.RunID == nil || *st.RunID != id {
			t.Errorf("run_id %v, want %s", st.RunID, id)
		}
		if st.CurrentLevel == nil || *st.CurrentLevel < 1 {
			t.Errorf("current_level %v", st.CurrentLevel)
		}
		if !slices.Contains([]string{"arithmetic", "knowledge", "tool_use"}, *st.CurrentDomain) {
			t.Errorf("current_domain %q", *st.CurrentDomain)
		}
		if st.TotalTests != exampleTests || st.Progress < 0 || st.Progress > st.TotalTests {
			t.Errorf("progress %d of %d, want of %d", st.Progress, st.TotalTests, exampleTests)
		}
		// The raw body has the keys of the spec.
		m := must(t, e.get("/api/status"), http.StatusOK).object(t)
		for _, k := range []string{"status", "run_id", "current_domain", "current_level", "progress", "total_tests"} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %q in %v", k, m)
			}
		}
	})

	t.Run("matrix while running", func(t *testing.T) {
		var m matrixBody
		harnesstest.Eventually(t, runWait, "a live matrix with a running and a pending cell", func() bool {
			m = e.matrix("/api/test_matrix")
			var running, pending bool
			for _, levels := range m.Domains {
				for _, c := range levels {
					running = running || c.Status == "running"
					pending = pending || c.Status == "pending"
				}
			}
			return running && pending
		})
		checkMatrix(t, m, id, "live-label", "running")
		for d, levels := range m.Domains {
			for l, c := range levels {
				if _, err := strconv.Atoi(l); err != nil {
					t.Errorf("level key %q of %s is not a number", l, d)
				}
				switch c.Status {
				case "pending", "running":
					if c.Score != nil {
						t.Errorf("%s/%s is %s with score %v, want null", d, l, c.Status, *c.Score)
					}
				case "passed", "failed":
					if c.Score == nil || c.DurationMS == nil {
						t.Errorf("%s/%s is %s without score or duration_ms", d, l, c.Status)
					}
				default:
					t.Errorf("%s/%s has status %q", d, l, c.Status)
				}
			}
		}
		// The run's own matrix is the live one while it runs.
		if rm := e.matrix("/api/run/" + id + "/matrix"); rm.Status != "running" || rm.RunID == nil || *rm.RunID != id {
			t.Errorf("GET /api/run/%s/matrix while running: status %q run_id %v", id, rm.Status, rm.RunID)
		}
	})

	t.Run("matrix after the run", func(t *testing.T) {
		e.waitIdle()
		m := e.matrix("/api/test_matrix")
		checkMatrix(t, m, id, "live-label", "completed")
		var passed, failed int
		for d, levels := range m.Domains {
			for l, c := range levels {
				switch c.Status {
				case "passed":
					passed++
				case "failed":
					failed++
				default:
					t.Errorf("%s/%s is %q after the run", d, l, c.Status)
				}
				if c.Score == nil || *c.Score < 0 || *c.Score > 1 {
					t.Errorf("%s/%s score %v", d, l, c.Score)
				}
				if c.DurationMS == nil || *c.DurationMS < 0 {
					t.Errorf("%s/%s duration_ms %v", d, l, c.DurationMS)
				}
			}
		}
		if passed == 0 {
			t.Errorf("no cell passed: %v", m.cells())
		}
		if stored := e.matrix("/api/run/" + id + "/matrix"); !slices.Equal(stored.cells(), m.cells()) {
			t.Errorf("stored matrix %v, live %v", stored.cells(), m.cells())
		}
	})
}

// checkMatrix checks a matrix's run, label, status and cells.
func checkMatrix(t *testing.T, m matrixBody, id, label, status string) {
	t.Helper()
	if m.RunID == nil || *m.RunID != id {
		t.Errorf("run_id %v, want %s", m.RunID, id)
	}
	if m.ModelName == nil || *m.ModelName != label {
		t.Errorf("model_name %v, want %s", m.ModelName, label)
	}
	if m.Status != status {
		t.Errorf("status %q, want %q", m.Status, status)
	}
	var got []string
	for _, c := range m.cells() {
		got = append(got, strings.Fields(c)[0])
	}
	if !slices.Equal(got, exampleCells) {
		t.Errorf("cells %v, want %v", got, exampleCells)
	}
}

// TestStartFailures checks the start requests that start nothing.
func TestStartFailures(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Timeouts: hangForever}})
	must(t, e.post("/api/settings/domains", map[string]any{"id": "empty", "name": "Empty"}), http.StatusCreated)

	t.Run("unknown domain", func(t *testing.T) {
		p := mustProblem(t, e.post("/api/start", map[string]any{"domains": []string{"arithmetic", "nope", "knowledge", "gone"}}),
			http.StatusUnprocessableEntity, "body.domains[1]", "body.domains[3]")
		if len(p.Errors) != 2 || !strings.Contains(p.Detail, "nope") {
			t.Errorf("errors %v, detail %q", p.locations(), p.Detail)
		}
	})
	t.Run("a selection without tests", func(t *testing.T) {
		mustProblem(t, e.post("/api/start", map[string]any{"domains": []string{"empty"}}), http.StatusUnprocessableEntity)
		mustProblem(t, e.post("/api/start", map[string]any{"domains": []string{}}), http.StatusUnprocessableEntity)
	})
	t.Run("malformed JSON", func(t *testing.T) {
		mustProblem(t, e.post("/api/start", rawBody(`{"model_name": "x", "domains": [`)), http.StatusBadRequest)
	})
	t.Run("wrong types", func(t *testing.T) {
		mustProblem(t, e.post("/api/start", map[string]any{"domains": "arithmetic"}), http.StatusUnprocessableEntity)
	})
	if st := e.status(); st.Status != "idle" || st.LastRunID != nil {
		t.Fatalf("a failed start started something: %+v", st)
	}
	if r := must(t, e.get("/api/history"), http.StatusOK).object(t); r["total"] != float64(0) {
		t.Fatalf("a failed start stored a run: %v", r)
	}

	t.Run("while running", func(t *testing.T) {
		id := e.start(map[string]any{"model_name": "busy"})
		p := mustProblem(t, e.post("/api/start", map[string]any{"model_name": "second"}), http.StatusConflict)
		if !strings.Contains(p.Detail, id) {
			t.Errorf("detail %q does not name the active run %s", p.Detail, id)
		}
		if st := e.status(); st.Status != "running" || st.RunID == nil || *st.RunID != id {
			t.Errorf("status after the refused start: %+v", st)
		}
		must(t, e.post("/api/stop", nil), http.StatusOK)
	})
}

// TestStartSelection checks which domains a run covers, the default
// label, and the optional endpoint model.
func TestStartSelection(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	models := map[string]int{}
	e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
		mu.Lock()
		models[r.Model]++
		mu.Unlock()
		return nil
	}}})
	seen := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range models {
			out[k] = v
		}
		clear(models)
		return out
	}
	domainsOf := func(m matrixBody) []string {
		var out []string
		for d := range m.Domains {
			out = append(out, d)
		}
		slices.Sort(out)
		return out
	}

	t.Run("no body at all", func(t *testing.T) {
		id := e.runToEnd(nil)
		m := e.matrix("/api/run/" + id + "/matrix")
		if got := domainsOf(m); !slices.Equal(got, []string{"arithmetic", "knowledge", "tool_use"}) {
			t.Errorf("domains %v", got)
		}
		if m.ModelName == nil || *m.ModelName != "default" {
			t.Errorf("model_name %v, want default", m.ModelName)
		}
		seen()
	})
	t.Run("absent domains and label", func(t *testing.T) {
		id := e.runToEnd(map[string]any{})
		m := e.matrix("/api/run/" + id + "/matrix")
		if got := domainsOf(m); !slices.Equal(got, []string{"arithmetic", "knowledge", "tool_use"}) {
			t.Errorf("domains %v", got)
		}
		if m.ModelName == nil || *m.ModelName != "default" {
			t.Errorf("model_name %v, want default", m.ModelName)
		}
		if got := seen(); len(got) != 1 || got[llmtest.DefaultModel] == 0 {
			t.Errorf("models asked %v, want only %s", got, llmtest.DefaultModel)
		}
	})
	t.Run("null domains skip a disabled domain", func(t *testing.T) {
		must(t, e.put("/api/settings/domains/knowledge", map[string]any{"enabled": false}), http.StatusOK)
		defer func() {
			must(t, e.put("/api/settings/domains/knowledge", map[string]any{"enabled": true}), http.StatusOK)
		}()
		id := e.runToEnd(rawBody(`{"model_name": "nulls", "domains": null}`))
		m := e.matrix("/api/run/" + id + "/matrix")
		if got := domainsOf(m); !slices.Equal(got, []string{"arithmetic", "tool_use"}) {
			t.Errorf("domains %v, want arithmetic and tool_use", got)
		}
		var run struct {
			RunInfo struct {
				TotalTests int `json:"total_tests"`
			} `json:"run_info"`
			TestResults []testResult `json:"test_results"`
		}
		must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &run)
		if len(run.TestResults) != 8 || run.RunInfo.TotalTests != 8 {
			t.Errorf("%d results of %d tests, want 8: arithmetic 6, tool_use 2", len(run.TestResults), run.RunInfo.TotalTests)
		}
		seen()
	})
	t.Run("chosen domains and model", func(t *testing.T) {
		id := e.runToEnd(map[string]any{"model_name": "picked", "domains": []string{"tool_use", "arithmetic", "tool_use"}, "model": "other-model"})
		m := e.matrix("/api/run/" + id + "/matrix")
		if got := domainsOf(m); !slices.Equal(got, []string{"arithmetic", "tool_use"}) {
			t.Errorf("domains %v", got)
		}
		if got := seen(); len(got) != 1 || got["other-model"] == 0 {
			t.Errorf("models asked %v, want only other-model", got)
		}
		info := must(t, e.get("/api/run/"+id), http.StatusOK).object(t)["run_info"].(map[string]any)
		if info["model_name"] != "picked" {
			t.Errorf("run_info.model_name %v", info["model_name"])
		}
		if v, ok := info["model"]; ok && v != "other-model" {
			t.Errorf("run_info.model %v, want other-model", v)
		}
	})
}

// bulkFiles is a domain "bulk" with n tests at level 1.
func bulkFiles(n int) map[string]string {
	var b strings.Builder
	b.WriteString("tests:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: t%03d\n    name: Sum %d\n    prompt: What is %d + 1?\n    expected:\n      answer: '%d'\n      type: numeric\n", i, i, i, i+1)
	}
	return map[string]string{
		"domains/bulk/domain.yaml":  "id: bulk\nname: Bulk\nenabled: true\n",
		"domains/bulk/level-1.yaml": b.String(),
	}
}

// drainLog polls GET /api/log_poll until EVAL_COMPLETE and returns every
// poll's messages. Each poll must hold at most 100 lines.
func drainLog(t *testing.T, e *testEnv) [][]string {
	t.Helper()
	var polls [][]string
	harnesstest.Eventually(t, runWait, "EVAL_COMPLETE", func() bool {
		var p struct {
			Messages  []string `json:"messages"`
			IsRunning *bool    `json:"is_running"`
		}
		r := must(t, e.get("/api/log_poll"), http.StatusOK)
		r.decode(t, &p)
		if p.Messages == nil || p.IsRunning == nil {
			t.Fatalf("log poll without messages or is_running: %s", r.body)
		}
		if len(p.Messages) > 100 {
			t.Fatalf("a poll returned %d lines, more than 100", len(p.Messages))
		}
		polls = append(polls, p.Messages)
		return slices.Contains(p.Messages, "EVAL_COMPLETE")
	})
	return polls
}

// checkLines checks the form of log lines: "[<domain>][L<level>] text",
// and EVAL_COMPLETE once, last.
func checkLines(t *testing.T, lines []string) {
	t.Helper()
	for i, l := range lines {
		if l == "EVAL_COMPLETE" {
			if i != len(lines)-1 {
				t.Errorf("EVAL_COMPLETE is line %d of %d", i+1, len(lines))
			}
			continue
		}
		if !logLine.MatchString(l) {
			t.Errorf("line %q does not match %s", l, logLine)
		}
	}
	if len(lines) == 0 || lines[len(lines)-1] != "EVAL_COMPLETE" {
		t.Errorf("the log does not end with EVAL_COMPLETE")
	}
}

// TestLogPoll checks GET /api/log_poll: at most 100 lines a poll, their
// form, EVAL_COMPLETE at the end, and the run's log file.
func TestLogPoll(t *testing.T) {
	t.Parallel()
	t.Run("a run of more than 100 lines", func(t *testing.T) {
		const n = 150
		e := newEngineEnv(t, engineConfig{noExamples: true, files: bulkFiles(n), concurrency: 8})
		id := e.runToEnd(map[string]any{"model_name": "bulk"})
		polls := drainLog(t, e)
		if len(polls) < 2 || len(polls[0]) != 100 {
			t.Fatalf("polls of %v lines, want a first poll of 100", lens(polls))
		}
		all := slices.Concat(polls...)
		checkLines(t, all)
		var results int
		for _, l := range all {
			if strings.HasPrefix(l, "[bulk][L1] t") {
				results++
			}
		}
		if results != n {
			t.Errorf("%d result lines, want %d", results, n)
		}
		// Nothing more to drain.
		var p struct {
			Messages  []string `json:"messages"`
			IsRunning bool     `json:"is_running"`
		}
		must(t, e.get("/api/log_poll"), http.StatusOK).decode(t, &p)
		if p.Messages == nil || len(p.Messages) != 0 || p.IsRunning {
			t.Errorf("poll after the end: %+v", p)
		}
		data, err := os.ReadFile(filepath.Join(e.logDir, id+".log"))
		if err != nil {
			t.Fatalf("the run's log file: %v", err)
		}
		if got := strings.Count(string(data), "\n"); got != len(all) {
			t.Errorf("log file has %d lines, the polls %d", got, len(all))
		}
	})
	t.Run("followers with since each see every line", func(t *testing.T) {
		const n = 150
		e := newEngineEnv(t, engineConfig{noExamples: true, files: bulkFiles(n), concurrency: 8})
		e.runToEnd(map[string]any{"model_name": "bulk"})
		type poll struct {
			Messages  []string `json:"messages"`
			IsRunning bool     `json:"is_running"`
			Cursor    *uint64  `json:"cursor"`
		}
		follow := func() []string {
			var all []string
			var cursor uint64
			for i := 0; i < 10; i++ {
				var p poll
				must(t, e.get(fmt.Sprintf("/api/log_poll?since=%d", cursor)), http.StatusOK).decode(t, &p)
				if p.Cursor == nil {
					t.Fatalf("a poll with since has no cursor")
				}
				if len(p.Messages) > 100 {
					t.Fatalf("a poll returned %d lines", len(p.Messages))
				}
				cursor = *p.Cursor
				all = append(all, p.Messages...)
				if len(p.Messages) == 0 {
					return all
				}
			}
			t.Fatalf("the log never ended")
			return nil
		}
		first, second := follow(), follow()
		checkLines(t, first)
		if len(first) < n || !slices.Equal(first, second) {
			t.Fatalf("two followers saw %d and %d lines, want the same %d+", len(first), len(second), n)
		}
		// They took nothing from a draining client.
		drained := slices.Concat(drainLog(t, e)...)
		if !slices.Equal(drained, first) {
			t.Errorf("drain saw %d lines, the followers %d", len(drained), len(first))
		}
		var p poll
		must(t, e.get("/api/log_poll"), http.StatusOK).decode(t, &p)
		if p.Cursor != nil {
			t.Errorf("a draining poll has a cursor: %v", *p.Cursor)
		}
		mustProblem(t, e.get("/api/log_poll?since=-2"), http.StatusUnprocessableEntity, "query.since")
		mustProblem(t, e.get("/api/log_poll?since=x"), http.StatusUnprocessableEntity, "query.since")

		// With tail, a reader skips to the newest lines in one request.
		must(t, e.get(fmt.Sprintf("/api/log_poll?since=0&tail=%d", 20)), http.StatusOK).decode(t, &p)
		if len(p.Messages) != 21 || !strings.Contains(p.Messages[0], fmt.Sprintf("%d earlier lines left out; the newest 20 follow", len(first)-20)) ||
			!slices.Equal(p.Messages[1:], first[len(first)-20:]) || p.Cursor == nil {
			t.Fatalf("tail of 20: %q", p.Messages)
		}
		checkLines(t, p.Messages)
		cursor := *p.Cursor
		must(t, e.get(fmt.Sprintf("/api/log_poll?since=%d&tail=20", cursor-5)), http.StatusOK).decode(t, &p)
		if !slices.Equal(p.Messages, first[len(first)-5:]) || *p.Cursor != cursor {
			t.Errorf("tail behind by 5: %q cursor %d, want the last 5 lines and cursor %d", p.Messages, *p.Cursor, cursor)
		}
		mustProblem(t, e.get("/api/log_poll?tail=20"), http.StatusUnprocessableEntity, "query.tail")
		mustProblem(t, e.get("/api/log_poll?since=0&tail=1001"), http.StatusUnprocessableEntity, "query.tail")
		mustProblem(t, e.get("/api/log_poll?since=0&tail=-1"), http.StatusUnprocessableEntity, "query.tail")
	})
	t.Run("while running", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 50 * time.Millisecond}, concurrency: 1})
		e.start(map[string]any{"model_name": "polled"})
		var p struct {
			Messages  []string `json:"messages"`
			IsRunning bool     `json:"is_running"`
		}
		var all []string
		harnesstest.Eventually(t, runWait, "a poll saying is_running", func() bool {
			must(t, e.get("/api/log_poll"), http.StatusOK).decode(t, &p)
			all = append(all, p.Messages...)
			return p.IsRunning
		})
		for _, polled := range drainLog(t, e) {
			all = append(all, polled...)
		}
		checkLines(t, all)
		for _, d := range []string{"[arithmetic][L1] ", "[knowledge][L2] ", "[tool_use][L2] "} {
			if !slices.ContainsFunc(all, func(l string) bool { return strings.HasPrefix(l, d) }) {
				t.Errorf("no line starting %q", d)
			}
		}
		e.waitIdle()
	})
}

func lens(polls [][]string) []int {
	out := make([]int, len(polls))
	for i, p := range polls {
		out[i] = len(p)
	}
	return out
}

// runDetails is GET /api/run/{id}.
type runDetails struct {
	RunInfo struct {
		RunID           string   `json:"run_id"`
		StartedAt       string   `json:"started_at"`
		CompletedAt     *string  `json:"completed_at"`
		ModelName       string   `json:"model_name"`
		Status          string   `json:"status"`
		OverallScore    *float64 `json:"overall_score"`
		TotalTokens     int      `json:"total_tokens"`
		TotalDurationMS int64    `json:"total_duration_ms"`
	} `json:"run_info"`
	TestResults []testResult `json:"test_results"`
	Stats       struct {
		StatusCounts map[string]int `json:"status_counts"`
		AvgScore     float64        `json:"avg_score"`
		TotalTests   int            `json:"total_tests"`
	} `json:"stats"`
}

func (e *testEnv) run(id string) runDetails {
	e.t.Helper()
	var d runDetails
	must(e.t, e.get("/api/run/"+id), http.StatusOK).decode(e.t, &d)
	return d
}

// waitRunStatus waits until the stored run has the status.
func (e *testEnv) waitRunStatus(id, status string) runDetails {
	e.t.Helper()
	var d runDetails
	harnesstest.Eventually(e.t, runWait, "run "+id+" to be "+status, func() bool {
		d = e.run(id)
		return d.RunInfo.Status == status
	})
	return d
}

// TestStop checks POST /api/stop mid-run and when idle.
func TestStop(t *testing.T) {
	t.Parallel()
	t.Run("mid-run keeps finished results", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 200 * time.Millisecond}, concurrency: 1})
		id := e.start(map[string]any{"model_name": "stopped"})
		harnesstest.Eventually(t, runWait, "two finished tests", func() bool { return e.status().Progress >= 2 })
		var out struct {
			Success bool   `json:"success"`
			Message string `json:"message"`
		}
		must(t, e.post("/api/stop", nil), http.StatusOK).decode(t, &out)
		if !out.Success || out.Message == "" {
			t.Fatalf("stop: %+v", out)
		}
		e.waitIdle()
		d := e.waitRunStatus(id, "stopped")
		if n := len(d.TestResults); n < 2 || n >= exampleTests {
			t.Errorf("%d results kept, want at least 2 and fewer than %d", n, exampleTests)
		}
		if d.Stats.TotalTests != len(d.TestResults) {
			t.Errorf("stats.total_tests %d, results %d", d.Stats.TotalTests, len(d.TestResults))
		}
		if d.RunInfo.CompletedAt == nil {
			t.Errorf("a stopped run has no completed_at")
		}
		m := e.matrix("/api/run/" + id + "/matrix")
		if m.Status != "stopped" {
			t.Errorf("matrix status %q", m.Status)
		}
		var skipped int
		for _, c := range m.cells() {
			st := strings.Fields(c)[1]
			if st == "pending" || st == "running" {
				t.Errorf("cell left %s after stop", c)
			}
			if st == "skipped" {
				skipped++
			}
		}
		if skipped == 0 {
			t.Errorf("no cell skipped: %v", m.cells())
		}
		checkLines(t, slices.Concat(drainLog(t, e)...))
		// The engine runs again.
		e.runToEnd(map[string]any{"model_name": "after", "domains": []string{"tool_use"}})
	})
	t.Run("with a model that never answers", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Timeouts: hangForever}})
		id := e.start(map[string]any{"model_name": "hung"})
		harnesstest.Eventually(t, runWait, "a request in flight", func() bool { return e.mock.Stats().InFlight > 0 })
		r := must(t, e.post("/api/stop", nil), http.StatusOK).object(t)
		if r["success"] != true {
			t.Fatalf("stop: %v", r)
		}
		e.waitIdle()
		d := e.waitRunStatus(id, "stopped")
		if len(d.TestResults) != 0 {
			t.Errorf("%d results from a model that never answered", len(d.TestResults))
		}
		for _, c := range e.matrix("/api/run/" + id + "/matrix").cells() {
			if !strings.HasSuffix(c, " skipped") {
				t.Errorf("cell %s, want skipped", c)
			}
		}
	})
	t.Run("when idle", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{})
		var out struct {
			Success *bool  `json:"success"`
			Message string `json:"message"`
		}
		must(t, e.post("/api/stop", nil), http.StatusOK).decode(t, &out)
		if out.Success == nil || *out.Success || out.Message == "" {
			t.Fatalf("stop when idle: success %v, message %q", out.Success, out.Message)
		}
	})
}

// TestReset checks POST /api/reset: idle at once, even with a model that
// never answers, the run recorded as aborted with its finished results.
func TestReset(t *testing.T) {
	t.Parallel()
	t.Run("with a model that never answers", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Timeouts: hangForever}})
		for range 2 { // the engine runs again after a reset
			id := e.start(map[string]any{"model_name": "stuck"})
			harnesstest.Eventually(t, runWait, "a request in flight", func() bool { return e.mock.Stats().InFlight > 0 })
			r := must(t, e.post("/api/reset", nil), http.StatusOK).object(t)
			if r["success"] != true {
				t.Fatalf("reset: %v", r)
			}
			if st := e.status(); st.Status != "idle" || st.RunID != nil {
				t.Fatalf("status right after reset: %+v", st)
			}
			e.waitRunStatus(id, "aborted")
			checkLines(t, slices.Concat(drainLog(t, e)...))
		}
	})
	t.Run("keeps finished results", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{llm: llmtest.Options{Latency: 200 * time.Millisecond}, concurrency: 1})
		id := e.start(map[string]any{"model_name": "reset"})
		harnesstest.Eventually(t, runWait, "two finished tests", func() bool { return e.status().Progress >= 2 })
		must(t, e.post("/api/reset", nil), http.StatusOK)
		if st := e.status(); st.Status != "idle" {
			t.Fatalf("status right after reset: %+v", st)
		}
		d := e.waitRunStatus(id, "aborted")
		if len(d.TestResults) < 2 {
			t.Errorf("%d results kept, want at least 2", len(d.TestResults))
		}
	})
	t.Run("when idle", func(t *testing.T) {
		e := newEngineEnv(t, engineConfig{})
		if r := must(t, e.post("/api/reset", nil), http.StatusOK).object(t); r["success"] != true {
			t.Fatalf("reset when idle: %v", r)
		}
		if st := e.status(); st.Status != "idle" {
			t.Fatalf("status: %+v", st)
		}
	})
}
