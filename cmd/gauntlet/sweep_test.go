package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// sweepFixture writes a suite of one domain, sums, with ten additions at
// level 1 and ten products at level 2, and starts a fake endpoint whose
// answers depend on the model asked: "good" answers everything right,
// "bad" every addition wrong (a significant regression at level 1),
// "meh" one addition wrong (not significant), "down" fails every request.
// It returns the common flags and the data directory.
func sweepFixture(t *testing.T, respond func(*llmtest.Request) *llmtest.Reply) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	defs := filepath.Join(dir, "defs")
	var l1, l2 strings.Builder
	l1.WriteString("tests:\n")
	l2.WriteString("tests:\n")
	for i := range 10 {
		fmt.Fprintf(&l1, "  - id: add-%d\n    prompt: What is %d + 1?\n    expected:\n      answer: '%d'\n      type: numeric\n", i, i, i+1)
		fmt.Fprintf(&l2, "  - id: mul-%d\n    prompt: What is %d * 3?\n    expected:\n      answer: '%d'\n      type: numeric\n", i, i, i*3)
	}
	for rel, body := range map[string]string{
		"evaluators/number.yaml":    "id: number\nname: Number\ntype: regex\nextraction_regex: (?<answer>-?\\d+)\n",
		"domains/sums/domain.yaml":  "id: sums\nname: Sums\nevaluator_id: number\n",
		"domains/sums/level-1.yaml": l1.String(),
		"domains/sums/level-2.yaml": l2.String(),
	} {
		writeDef(t, defs, rel, body)
	}
	mock := llmtest.NewServer(llmtest.Options{Respond: func(r *llmtest.Request) *llmtest.Reply {
		if respond != nil {
			if rep := respond(r); rep != nil {
				return rep
			}
		}
		prompt := r.LastUser()
		switch r.Model {
		case "bad":
			if strings.Contains(prompt, "+") {
				return &llmtest.Reply{Content: "The answer is 99999."}
			}
		case "meh":
			if strings.Contains(prompt, "What is 0 + 1?") {
				return &llmtest.Reply{Content: "The answer is 99999."}
			}
		case "down":
			return &llmtest.Reply{Status: 500, Content: "the model is down"} // a 503 would be a rate limit, waited out
		}
		return nil
	}})
	t.Cleanup(mock.Close)
	data := filepath.Join(dir, "data")
	return []string{"--data", data, "--definitions", defs, "--llm-base-url", mock.URL, "--llm-model", "good", "--llm-retries", "0"}, data
}

// dataRuns opens the runs store of a data directory's SQLite database
// (created if missing), closed when the test ends.
func dataRuns(t *testing.T, data string) *runs.Store {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(data, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// storedRuns lists the runs of the data directory's database.
func storedRuns(t *testing.T, data string) []runs.Info {
	t.Helper()
	list, _, err := dataRuns(t, data).List(context.Background(), 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func TestSweepText(t *testing.T) {
	flags, data := sweepFixture(t, nil)
	var out, errOut strings.Builder
	err := run(context.Background(), append([]string{"run", "--model", "good", "--model", "bad", "--model", "meh", "--min-score", "0.5"}, flags...), &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	got := out.String()
	lines := strings.Split(got, "\n")
	row := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q in:\n%s", prefix, got)
		return ""
	}
	if h := row("DOMAIN"); !strings.Contains(h, "good") || !strings.Contains(h, "Δ bad") || !strings.Contains(h, "Δ meh") {
		t.Errorf("header %q", h)
	}
	// Ten additions all wrong: p = 2/1024, significantly worse. One wrong: not significant.
	if r := row("sums    1"); !strings.Contains(r, "1.000 [0.72, 1.00]") || !strings.Contains(r, "0.000 [0.00, 0.28]") ||
		!strings.Contains(r, "-1.000 p=0.0020 ⚠") || !strings.Contains(r, "-0.100 p=1.0000") || strings.Count(r, "⚠") != 1 {
		t.Errorf("row sums/1 %q", r)
	}
	if r := row("sums    2"); strings.ContainsAny(r, "⚠★") || strings.Count(r, "+0.000 p=1.0000") != 2 {
		t.Errorf("row sums/2 %q", r)
	}
	for _, want := range []string{
		"good: run ", "overall score 1.000 (the base: every other run is compared with it)",
		"overall score 0.500; vs good: 0 tests better, 10 worse, 10 unchanged; significantly worse in sums/1, significantly better in no cell",
		"overall score 0.950; vs good: 0 tests better, 1 worse, 19 unchanged; significantly worse in no cell",
		"flipped tests, bad vs good (10):\n  sums/1  add-",
		"flipped tests, meh vs good (1):\n  sums/1  add-0  passed -> failed\n",
		"Of 4 comparisons, about 0.2 would be marked by chance alone",
		"gate:\n  good: passed (min score 0.500)\n  bad: passed (min score 0.500)\n  meh: passed (min score 0.500)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, want := range []string{"model good (1 of 3)", "model bad (2 of 3)", "model meh (3 of 3)"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, errOut.String())
		}
	}
	// One run per model, one after another, each labelled by its model.
	list := storedRuns(t, data)
	if len(list) != 3 {
		t.Fatalf("%d runs stored", len(list))
	}
	labels := map[string]string{}
	for _, in := range list {
		labels[in.Model] = in.ModelName
		if in.Status != runs.StatusCompleted || in.TotalTests != 20 {
			t.Errorf("run %+v", in)
		}
	}
	if labels["good"] != "good" || labels["bad"] != "bad" || labels["meh"] != "meh" {
		t.Errorf("labels %v", labels)
	}

	// --fail-on-regression: bad is significantly worse than good.
	err = run(context.Background(), append([]string{"run", "--model", "good", "--model", "bad", "--fail-on-regression", "--model-name", "ci"}, flags...), &out, io.Discard)
	if !errors.Is(err, errGateFailed) || !strings.Contains(err.Error(), "model bad regressed significantly against good in 1 cell") {
		t.Errorf("--fail-on-regression: err = %v", err)
	}
	// ... and nothing regressed when the worse model comes first; --model-name prefixes the labels.
	out.Reset()
	err = run(context.Background(), append([]string{"run", "--model", "bad", "--model", "good", "--fail-on-regression", "--model-name", "ci"}, flags...), &out, io.Discard)
	if err != nil {
		t.Errorf("improvement with --fail-on-regression: err = %v", err)
	}
	if r := row2(out.String(), "sums    1"); !strings.Contains(r, "+1.000 p=0.0020 ★") {
		t.Errorf("row sums/1 %q\n%s", r, out.String())
	}
	if !strings.Contains(out.String(), "ci/good: run ") || !strings.Contains(out.String(), "Δ ci/good") {
		t.Errorf("labels with --model-name:\n%s", out.String())
	}
}

// row2 is the first line of s starting with prefix.
func row2(s, prefix string) string {
	for l := range strings.Lines(s) {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestSweepJSON(t *testing.T) {
	flags, _ := sweepFixture(t, nil)
	var out strings.Builder
	err := run(context.Background(), append([]string{"run", "--format", "json", "--model", "good", "--model", "bad", "--repeats", "2", "--domains", "sums"}, flags...), &out, io.Discard)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var doc struct {
		Runs []struct {
			RunInfo struct {
				RunID     string `json:"run_id"`
				Model     string `json:"model"`
				ModelName string `json:"model_name"`
				Config    struct {
					Repeats int `json:"repeats"`
				} `json:"config"`
			} `json:"run_info"`
			Matrix      map[string]any   `json:"matrix"`
			TestResults []map[string]any `json:"test_results"`
			Verdict     struct {
				PassedGate bool `json:"passed_gate"`
			} `json:"verdict"`
		} `json:"runs"`
		Comparison struct {
			Base string `json:"base"`
			Runs []struct {
				RunID    string `json:"run_id"`
				Compared bool   `json:"compared"`
				Flipped  []any  `json:"flipped"`
				Summary  struct {
					SignificantRegressions int `json:"significant_regressions"`
				} `json:"summary"`
			} `json:"runs"`
			Cells map[string]map[string][]struct {
				Score  *float64  `json:"score"`
				CI95   []float64 `json:"ci95"`
				VsBase *struct {
					Delta       float64 `json:"delta"`
					Significant bool    `json:"significant"`
					Tests       int     `json:"tests"`
				} `json:"vs_base"`
			} `json:"cells"`
		} `json:"comparison"`
		NotRun []any `json:"not_run"`
	}
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(doc.Runs) != 2 || doc.Runs[0].RunInfo.Model != "good" || doc.Runs[1].RunInfo.ModelName != "bad" || doc.Runs[1].RunInfo.Config.Repeats != 2 ||
		len(doc.Runs[1].TestResults) != 40 || doc.Runs[1].Matrix["sums"] == nil || !doc.Runs[1].Verdict.PassedGate {
		t.Fatalf("runs: %+v", doc.Runs)
	}
	c := doc.Comparison
	if c.Base != doc.Runs[0].RunInfo.RunID || len(c.Runs) != 2 || c.Runs[1].RunID != doc.Runs[1].RunInfo.RunID || c.Runs[0].Compared ||
		!c.Runs[1].Compared || len(c.Runs[1].Flipped) != 20 || c.Runs[1].Summary.SignificantRegressions != 1 || doc.NotRun == nil || len(doc.NotRun) != 0 {
		t.Fatalf("comparison: %+v", c)
	}
	l1 := c.Cells["sums"]["1"]
	if len(l1) != 2 || *l1[0].Score != 1 || len(l1[0].CI95) != 2 || l1[0].VsBase != nil || l1[1].VsBase == nil ||
		!l1[1].VsBase.Significant || l1[1].VsBase.Delta != -1 || l1[1].VsBase.Tests != 10 {
		t.Fatalf("sums/1: %s", out.String())
	}
}

func TestSweepJUnit(t *testing.T) {
	flags, _ := sweepFixture(t, nil)
	outFile := filepath.Join(t.TempDir(), "report.xml")
	var errOut strings.Builder
	err := run(context.Background(), append([]string{"run", "--format", "junit", "--output", outFile, "--model", "good", "--model", "bad", "--fail-on-regression"}, flags...), io.Discard, &errOut)
	if !errors.Is(err, errGateFailed) {
		t.Fatalf("err = %v", err)
	}
	// The text table goes to stderr when the report goes to a file.
	if !strings.Contains(errOut.String(), "Δ bad") {
		t.Errorf("stderr lacks the table:\n%s", errOut.String())
	}
	data, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("invalid XML: %v\n%s", err, data)
	}
	var names []string
	for _, s := range doc.Suites {
		names = append(names, s.Name)
	}
	want := "[good/sums/L1 good/sums/L2 good/gauntlet bad/sums/L1 bad/sums/L2 bad/gauntlet comparison]"
	if fmt.Sprint(names) != want {
		t.Fatalf("suites %v, want %s", names, want)
	}
	// 2 × (20 tests + the verdict) + one comparison case; bad fails 10 tests and the comparison.
	if doc.Tests != 2*21+1 || doc.Failures != 10+1 || doc.Errors != 0 {
		t.Errorf("tests=%d failures=%d errors=%d", doc.Tests, doc.Failures, doc.Errors)
	}
	bad := doc.Suites[3]
	if bad.Failures != 10 || bad.Cases[0].Classname != "bad.sums.L1" || bad.Properties[1].Value != "bad" {
		t.Errorf("suite bad/sums/L1: %+v", bad)
	}
	cmp := doc.Suites[6]
	if cmp.Tests != 1 || cmp.Failures != 1 || cmp.Cases[0].Name != "bad vs good" || cmp.Cases[0].Failure == nil ||
		!strings.Contains(cmp.Cases[0].Failure.Message, "significantly worse than good in 1 cell") {
		t.Errorf("comparison suite: %+v", cmp)
	}
}

// A model whose every request fails does not stop the sweep: its run is
// reported (every test in error), the next model runs, and the sweep
// fails the gate naming it.
func TestSweepModelDown(t *testing.T) {
	flags, _ := sweepFixture(t, nil)
	var out strings.Builder
	err := run(context.Background(), append([]string{"run", "--model", "good", "--model", "down", "--model", "meh"}, flags...), &out, io.Discard)
	if !errors.Is(err, errGateFailed) || !strings.Contains(err.Error(), "model down: ") || strings.Contains(err.Error(), "model meh") || strings.Contains(err.Error(), "model good") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"shares no scored test with good: not compared",
		"meh: run ",
		"  down: FAILED (min score 0.000): ",
		"  meh: passed",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if r := row2(got, "sums    1"); !strings.Contains(r, "error") || !strings.Contains(r, "-0.100 p=1.0000") {
		t.Errorf("row sums/1 %q", r)
	}
}

// Ctrl-C stops the current run and the sweep: the models after it do not
// run, and what ran is reported.
func TestSweepInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	var once sync.Once
	flags, data := sweepFixture(t, func(r *llmtest.Request) *llmtest.Reply {
		if r.Model == "bad" {
			cancel() // the user presses Ctrl-C during the second model's run
			<-release
		}
		return nil
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var out, errOut strings.Builder
	err := run(ctx, append([]string{"run", "--model", "good", "--model", "bad", "--model", "meh"}, flags...), &out, &errOut)
	once.Do(func() { close(release) })
	if !errors.Is(err, errGateFailed) || !strings.Contains(err.Error(), "model bad: the run is not complete: stopped") ||
		!strings.Contains(err.Error(), "model meh: the sweep was interrupted before this model") {
		t.Fatalf("err = %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "interrupted: stopping the run and the sweep") || strings.Contains(errOut.String(), "model meh (3 of 3)") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	if !strings.Contains(out.String(), "  meh: did not run: the sweep was interrupted before this model") {
		t.Errorf("report:\n%s", out.String())
	}
	if list := storedRuns(t, data); len(list) != 2 {
		t.Errorf("%d runs stored, want good's and bad's", len(list))
	}
}

func TestSweepUsage(t *testing.T) {
	flags, _ := sweepFixture(t, nil)
	ctx := context.Background()
	for _, args := range [][]string{
		{"--resume", "some-run", "--model", "good", "--model", "bad"},
		{"--model", "good", "--model", ""},
	} {
		var errOut strings.Builder
		if err := run(ctx, append(append([]string{"run"}, args...), flags...), io.Discard, &errOut); !errors.Is(err, errUsage) || errOut.Len() == 0 {
			t.Errorf("%q: err = %v, stderr %q", args, err, errOut.String())
		}
	}
	// No run starts at all: the error is the run's own.
	if err := run(ctx, append([]string{"run", "--model", "good", "--model", "bad", "--domains", "nope"}, flags...), io.Discard, io.Discard); err == nil || errors.Is(err, errGateFailed) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown domain: err = %v", err)
	}
	// One --model is a plain run, as before.
	var out strings.Builder
	if err := run(ctx, append([]string{"run", "--model", "meh"}, flags...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "model meh) completed: complete") || strings.Contains(out.String(), "DOMAIN") {
		t.Errorf("single model report:\n%s", out.String())
	}
}

func TestSweepExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	flags, _ := sweepFixture(t, nil)
	for _, tc := range []struct {
		args   []string
		status int
	}{
		{[]string{"--model", "good", "--model", "meh", "--fail-on-regression"}, 0},
		{[]string{"--model", "good", "--model", "bad", "--fail-on-regression"}, 1},
		{[]string{"--model", "good", "--model", "bad", "--min-score", "0.9"}, 1},
		{[]string{"--model", "good", "--model", "bad", "--resume", "x"}, 2},
	} {
		if got := exitCode(t, append(append([]string{"run"}, tc.args...), flags...)...); got != tc.status {
			t.Errorf("run %q: exit %d, want %d", tc.args, got, tc.status)
		}
	}
}

// Runs that share a label are told apart by their position.
func TestManyLabels(t *testing.T) {
	rep := &compare.ManyReport{Runs: []compare.ManyRun{{ModelName: "a"}, {ModelName: "b"}, {ModelName: "a"}, {ModelName: "x\ny"}}}
	if got := fmt.Sprint(manyLabels(rep)); got != "[a#1 b a#3 x y]" {
		t.Errorf("labels %s", got)
	}
}
