package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// storedRun stores a finished run of three cells (more results than one
// page of the store's reads), each test asked repeats times, some failing,
// some in error, with answers JSON and XML must escape, and returns it.
func storedRun(t *testing.T, repeats int) (*runs.Store, runs.Info) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	// 3 × 170 results: more than a page of the store's reads (500), and
	// more failures than the text report lists (50); no more than that,
	// as every one is encoded several times under the race detector.
	const perCell = 170
	cells := []runs.CellKey{{Domain: "words", Level: 1, Tests: perCell * repeats}, {Domain: "math", Level: 2, Tests: perCell * repeats},
		{Domain: "math", Level: 1, Tests: perCell * repeats}}
	info := runs.Info{RunID: "20261125-090000-abcdef", StartedAt: "2026-11-25 09:00:00", ModelName: "big <&> run", Model: "m",
		Status: runs.StatusRunning, TotalTests: 3 * perCell * repeats, Domains: []string{"words", "math"},
		Config: &runs.Config{Model: "m", Repeats: repeats, DefinitionsHash: "h", GauntletVersion: "test", Params: map[string]any{}}}
	if err := rs.CreateRun(ctx, info, cells); err != nil {
		t.Fatal(err)
	}
	var batch []runs.Result
	for rep := range repeats {
		for i := range perCell {
			for _, c := range cells { // finished interleaved: storage order is not cell order
				id := fmt.Sprintf("%s-%d-%03d", c.Domain, c.Level, i)
				r := runs.Result{RunID: info.RunID, TestID: id, Repeat: rep, Domain: c.Domain, Level: c.Level, Name: "Test <" + id + ">",
					Prompt: "What is 1 & 2?", Response: "It is <b>3</b> & \u2028 fine", Expected: harness.Expected{Answer: "3", Type: "numeric"},
					Score: 1, Status: runs.TestPassed, Details: map[string]any{"extracted_answer": "3", "pass2_used": false},
					DurationMS: int64(i), ModelName: info.ModelName, CreatedAt: "2026-11-25 09:00:01", PromptTokens: 3, CompletionTokens: 4}
				switch {
				case i%7 == 3 && rep == 0:
					r.Status, r.Score, r.Response = runs.TestFailed, 0, "It is 4 \xff\x00."
					r.Details["reason"] = "expected 3, got 4"
				case i%11 == 5:
					r.Status, r.Score, r.Response = runs.TestError, 0, ""
					r.Details = map[string]any{"error": "the model <refused>"}
				}
				batch = append(batch, r)
			}
		}
	}
	if err := rs.SaveResults(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// The run's counts, as the engine keeps them.
	for _, r := range batch {
		info.DoneTests++
		switch r.Status {
		case runs.TestPassed:
			info.Passed++
		case runs.TestFailed:
			info.Failed++
		case runs.TestError:
			info.Errors++
		}
	}
	info.Status = runs.StatusCompleted
	if _, err := rs.FinishRun(ctx, info); err != nil {
		t.Fatal(err)
	}
	if info, err = rs.Run(ctx, info.RunID); err != nil {
		t.Fatal(err)
	}
	return rs, info
}

// TestReportsStreamed: the reports of a stored run, read from the store
// a page at a time as they are written, are byte for byte those made of
// all its results in memory the way they always were: the JSON document
// json.Encoder writes of the whole report, the JUnit document of all its
// suites, the same text.
func TestReportsStreamed(t *testing.T) {
	for _, repeats := range []int{1, 2} {
		t.Run(fmt.Sprintf("repeats %d", repeats), func(t *testing.T) {
			rs, info := storedRun(t, repeats)
			ctx := context.Background()
			streamed, err := loadReport(rs, info, 0.9)
			if err != nil {
				t.Fatal(err)
			}
			all, err := rs.Results(ctx, info.RunID)
			if err != nil {
				t.Fatal(err)
			}
			mem := newReport(info, streamed.matrix, all, 0.9)
			if fmt.Sprint(mem.verdict) != fmt.Sprint(streamed.verdict) || streamed.verdict.PassedGate {
				t.Fatalf("verdict %+v; in memory %+v", streamed.verdict, mem.verdict)
			}

			var got, want bytes.Buffer
			if err := streamed.writeJSON(&got); err != nil {
				t.Fatal(err)
			}
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(struct {
				RunInfo     runs.Info            `json:"run_info"`
				Matrix      runs.Matrix          `json:"matrix"`
				TestResults []runs.Result        `json:"test_results"`
				Aggregates  []runs.TestAggregate `json:"aggregates"`
				Verdict     verdict              `json:"verdict"`
			}{info, mem.matrix, all, runs.Aggregates(all), mem.verdict}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("streamed JSON (%d bytes) differs from the encoded report (%d bytes) at byte %d",
					got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
			}

			got.Reset()
			want.Reset()
			if err := streamed.writeJUnit(&got); err != nil {
				t.Fatal(err)
			}
			if err := writeJUnitDoc(&want, wholeJUnit(t, mem)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("streamed JUnit (%d bytes) differs from the whole document (%d bytes) at byte %d",
					got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
			}

			got.Reset()
			want.Reset()
			if err := streamed.writeText(&got); err != nil {
				t.Fatal(err)
			}
			if err := mem.writeText(&want); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() || !bytes.Contains(got.Bytes(), []byte("... and ")) {
				t.Errorf("streamed text:\n%s\nin memory:\n%s", got.String(), want.String())
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// wholeJUnit is a report's JUnit document made in memory, every case of
// every suite: what the streamed writers are compared with.
func wholeJUnit(t *testing.T, r *report) junitSuites {
	t.Helper()
	doc, err := r.junitSuites(r.results)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if err := eachCell(r.results, func(cell []runs.Result) error {
		for _, e := range r.cellCases(cell) {
			doc.Suites[i].Cases = append(doc.Suites[i].Cases, e.c)
		}
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return doc
}

// writeJUnitDoc writes doc as an XML document, leaving out what XML 1.0
// cannot carry.
func writeJUnitDoc(w io.Writer, doc junitSuites) error {
	xmlSafeSuites(&doc)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// TestSweepReportsStreamed: a sweep's JSON and JUnit reports, each run's
// results streamed from its store, are byte for byte the documents made
// of the whole sweep in memory: the value json.Encoder writes, and the
// JUnit document of every run's suites and the comparison's.
func TestSweepReportsStreamed(t *testing.T) {
	var sweep []sweepRun
	var mems []*report
	for i, repeats := range []int{1, 2} {
		rs, info := storedRun(t, repeats)
		streamed, err := loadReport(rs, info, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		all, err := rs.Results(context.Background(), info.RunID)
		if err != nil {
			t.Fatal(err)
		}
		sweep = append(sweep, sweepRun{model: fmt.Sprintf("m%d", i), label: fmt.Sprintf("run <%d> & co", i), rep: streamed})
		mems = append(mems, newReport(info, streamed.matrix, all, 0.9))
	}
	sweep = append(sweep, sweepRun{model: "down", label: "down", err: errors.New("the model <down> refused")})
	cmp := &compare.ManyReport{Base: "a", Runs: []compare.ManyRun{{RunID: "a", ModelName: "run <0> & co"},
		{RunID: "b", ModelName: "run <1> & co", Compared: true, Flipped: []compare.Flip{},
			Summary: compare.Summary{Regressed: 3, SignificantRegressions: 1}}},
		Cells: map[string]map[int][]compare.RunCell{}}

	var got, want bytes.Buffer
	if err := writeSweepJSON(&got, sweep, cmp); err != nil {
		t.Fatal(err)
	}
	whole := struct {
		Runs       []json.RawMessage   `json:"runs"`
		Comparison *compare.ManyReport `json:"comparison"`
		NotRun     []sweepNotRun       `json:"not_run"`
	}{Comparison: cmp, NotRun: []sweepNotRun{{Model: "down", Error: "the model <down> refused"}}}
	for _, r := range mems {
		var b bytes.Buffer
		if err := r.writeJSON(&b); err != nil {
			t.Fatal(err)
		}
		whole.Runs = append(whole.Runs, b.Bytes())
	}
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(whole); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("streamed sweep JSON (%d bytes) differs from the encoded value (%d bytes) at byte %d",
			got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
	}

	got.Reset()
	want.Reset()
	if err := writeSweepJUnit(&got, sweep, cmp, true); err != nil {
		t.Fatal(err)
	}
	doc := junitSuites{Name: "gauntlet sweep"}
	var ms int64
	for i, r := range mems {
		for _, s := range wholeJUnit(t, r).Suites {
			s.Name = sweep[i].label + "/" + s.Name
			for j := range s.Cases {
				s.Cases[j].Classname = sweep[i].label + "." + s.Cases[j].Classname
			}
			doc.Suites = append(doc.Suites, s)
		}
		ms += r.info.TotalDurationMS
	}
	doc.Time = seconds(ms)
	doc.Suites = append(doc.Suites, junitSuite{Name: "comparison", Tests: 2, Failures: 1, Errors: 1, Time: seconds(0), Cases: []junitCase{
		{Name: "down", Classname: "comparison", Time: seconds(0),
			Error: &junitProblem{Type: "not_run", Message: "the model <down> refused", Text: "the model <down> refused"}},
		{Name: "run <1> & co vs run <0> & co", Classname: "comparison", Time: seconds(0),
			Failure: &junitProblem{Type: "regression", Message: "run <1> & co scored significantly worse than run <0> & co in " + cells(1),
				Text: "run <1> & co scored significantly worse than run <0> & co in " + cells(1)}}}})
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	if err := writeJUnitDoc(&want, doc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("streamed sweep JUnit (%d bytes) differs from the whole document (%d bytes) at byte %d:\n%s",
			got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()), got.Bytes()[max(0, firstDiff(got.Bytes(), want.Bytes())-200):min(got.Len(), firstDiff(got.Bytes(), want.Bytes())+200)])
	}
}
