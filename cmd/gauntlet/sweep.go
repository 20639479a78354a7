package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// A model sweep is "gauntlet run --model a --model b ...": the suite runs
// once per model, one run after another, with every other flag the same,
// and the report compares the runs, each with the first. One --model (or
// none) is a plain run.

// sweepFlags are the flags of gauntlet run that a sweep reads.
type sweepFlags struct {
	models           modelList
	failOnRegression bool
}

// modelList is the repeatable --model flag: each use adds a model.
type modelList []string

func (m *modelList) String() string { return strings.Join(*m, ",") }

func (m *modelList) Set(v string) error {
	*m = append(*m, v)
	return nil
}

// register registers --model and --fail-on-regression on fs.
func (s *sweepFlags) register(fs *flag.FlagSet) {
	fs.Var(&s.models, "model", "endpoint `model` of the run (default --llm-model); repeat it to run the suite once per model, one after another, and compare the runs with the first")
	fs.BoolVar(&s.failOnRegression, "fail-on-regression", false, "with several --model: exit 1 when a later model scores significantly worse than the first in a domain and level")
}

// check validates the sweep flags once parsed. With one model it sets
// f.model, so that the run goes on as before; several models with
// --resume, or an empty one, are usage errors.
func (s *sweepFlags) check(f *runFlags, stderr io.Writer) error {
	switch len(s.models) {
	case 0:
		return nil
	case 1:
		f.model = s.models[0]
		return nil
	}
	usage := func(msg string) error {
		fmt.Fprintln(stderr, "gauntlet run:", msg)
		return errUsage
	}
	if f.resume != "" {
		return usage("--resume continues one stored run with its own model: it takes no --model, let alone several")
	}
	for _, m := range s.models {
		if strings.TrimSpace(m) == "" {
			return usage("--model must name a model when it is given several times")
		}
	}
	return nil
}

// sweeping reports whether the flags ask for a sweep: several models.
func (s *sweepFlags) sweeping() bool { return len(s.models) > 1 }

// sweepLabel is the label of a sweep's run of model: the model itself, or
// "<label>/<model>" when --model-name set a label.
func sweepLabel(fs *flag.FlagSet, label, model string) string {
	if flagSet(fs, "model-name") {
		return label + "/" + model
	}
	return model
}

// sweepRun is one model of a sweep.
type sweepRun struct {
	model string
	label string
	// rep is the run's report; nil when the run did not start, err then
	// says why.
	rep *report
	err error
}

// errNotRun is the reason of the models a sweep did not reach because it
// was interrupted.
var errNotRun = errors.New("the sweep was interrupted before this model")

// runSweep runs req once per model of s, one run after another, and
// writes the sweep's report. A model whose run does not start is reported
// and the sweep goes on; an interrupt (ctx done) stops the current run and
// the sweep, and what ran is reported. Each run passes or fails the gate
// (--min-score, complete, no test in error) on its own; the sweep's error
// wraps errGateFailed when one did not, when a model did not run, or,
// with --fail-on-regression, when a later model scored significantly worse
// than the first. When no run started at all it is the first model's
// error.
func runSweep(ctx context.Context, a *app, fs *flag.FlagSet, f runFlags, s sweepFlags, req engine.StartRequest,
	prog *progress, finished <-chan runs.Info, out, stderr io.Writer) error {
	sweep := make([]sweepRun, len(s.models))
	var ids []string
	for i, model := range s.models {
		sr := &sweep[i]
		sr.model, sr.label = model, sweepLabel(fs, f.modelName, model)
		if ctx.Err() != nil {
			sr.err = errNotRun
			continue
		}
		fmt.Fprintf(stderr, "model %s (%d of %d)\n", oneLine(model, 80), i+1, len(s.models))
		*prog = *newProgress(prog.w)
		r := req
		r.Model, r.ModelName = model, sr.label
		id, err := a.engine.Start(context.WithoutCancel(ctx), r)
		if err != nil {
			fmt.Fprintf(stderr, "model %s: the run did not start: %v\n", oneLine(model, 80), err)
			sr.err = err
			continue
		}
		info := awaitRun(ctx, a, finished, stderr, "stopping the run and the sweep")
		prog.finish()
		if sr.rep, err = loadReport(a.runs, info, f.minScore); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return sweep[0].err
	}
	cmp, err := compare.Many(context.Background(), a.runs, ids[0], ids[1:]...)
	if err != nil {
		return err
	}
	if err := writeSweep(out, f.format, sweep, cmp, s.failOnRegression); err != nil {
		return err
	}
	if f.output != "" && f.format != "text" {
		if err := writeSweep(stderr, "text", sweep, cmp, s.failOnRegression); err != nil {
			return err
		}
	}
	return sweepVerdict(sweep, cmp, s.failOnRegression)
}

// sweepVerdict is nil when every model ran and passed its gate and, with
// failOnRegression, none regressed significantly against the first; else
// an error wrapping errGateFailed that says which did not and why.
func sweepVerdict(sweep []sweepRun, cmp *compare.ManyReport, failOnRegression bool) error {
	var reasons []string
	for _, sr := range sweep {
		switch {
		case sr.rep == nil:
			reasons = append(reasons, fmt.Sprintf("model %s: %v", sr.model, sr.err))
		case !sr.rep.verdict.PassedGate:
			reasons = append(reasons, fmt.Sprintf("model %s: %s", sr.model, strings.Join(sr.rep.verdict.Reasons, ", ")))
		}
	}
	if failOnRegression {
		for _, r := range cmp.Runs[1:] {
			if r.Regressed() {
				reasons = append(reasons, fmt.Sprintf("model %s regressed significantly against %s in %s",
					r.Model, cmp.Runs[0].Model, cells(r.Summary.SignificantRegressions)))
			}
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", errGateFailed, strings.Join(reasons, "; "))
}

// writeSweep writes a sweep's report in format: text, json or junit.
func writeSweep(w io.Writer, format string, sweep []sweepRun, cmp *compare.ManyReport, failOnRegression bool) error {
	switch format {
	case "json":
		return writeSweepJSON(w, sweep, cmp)
	case "junit":
		return writeSweepJUnit(w, sweep, cmp, failOnRegression)
	default:
		return writeSweepText(w, sweep, cmp)
	}
}

// writeSweepText prints the comparison table of the runs, then each
// model's gate and the models that did not run.
func writeSweepText(w io.Writer, sweep []sweepRun, cmp *compare.ManyReport) error {
	if err := writeMany(w, cmp); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("\ngate:\n")
	for _, sr := range sweep {
		switch {
		case sr.rep == nil:
			fmt.Fprintf(&b, "  %s: did not run: %s\n", oneLine(sr.label, 80), oneLine(sr.err.Error(), 400))
		case sr.rep.verdict.PassedGate:
			fmt.Fprintf(&b, "  %s: passed (min score %.3f)\n", oneLine(sr.label, 80), sr.rep.verdict.MinScore)
		default:
			fmt.Fprintf(&b, "  %s: FAILED (min score %.3f): %s\n", oneLine(sr.label, 80), sr.rep.verdict.MinScore,
				oneLine(strings.Join(sr.rep.verdict.Reasons, "; "), 400))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sweepNotRun is a model of a sweep whose run did not start, in the JSON
// report.
type sweepNotRun struct {
	Model string `json:"model"`
	Error string `json:"error"`
}

// writeSweepJSON writes {"runs": [...], "comparison": ..., "not_run":
// [...]}: each run's report exactly as gauntlet run --format json writes
// it, the comparison of the runs with the first, and the models whose run
// did not start. The document is the one json.Encoder writes of the whole
// value with a two-space indent; each run's report is streamed into it,
// indented to its depth, as gauntlet run streams it.
func writeSweepJSON(w io.Writer, sweep []sweepRun, cmp *compare.ManyReport) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.WriteString("{\n  \"runs\": ["); err != nil {
		return err
	}
	notRun := []sweepNotRun{}
	n := 0
	for _, sr := range sweep {
		if sr.rep == nil {
			notRun = append(notRun, sweepNotRun{Model: sr.model, Error: sr.err.Error()})
			continue
		}
		sep := ",\n    "
		if n == 0 {
			sep = "\n    "
		}
		n++
		if _, err := bw.WriteString(sep); err != nil {
			return err
		}
		in := &indentWriter{w: bw, prefix: "    "}
		if err := sr.rep.writeJSON(in); err != nil {
			return err
		}
		if in.err != nil {
			return in.err
		}
	}
	if n > 0 {
		if _, err := bw.WriteString("\n  "); err != nil {
			return err
		}
	}
	if _, err := bw.WriteString("],\n  \"comparison\": "); err != nil {
		return err
	}
	if err := writeIndented(bw, cmp); err != nil {
		return err
	}
	if _, err := bw.WriteString(",\n  \"not_run\": "); err != nil {
		return err
	}
	if err := writeIndented(bw, notRun); err != nil {
		return err
	}
	if _, err := bw.WriteString("\n}\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// indentWriter writes an indented JSON document one level deeper: prefix
// after each newline but a last one, which it drops (the document ends
// there). A JSON document's newlines are all between its tokens (a
// string holds "\n", escaped), so this is json.Indent's own result for
// the document at that depth.
type indentWriter struct {
	w       *bufio.Writer
	prefix  string
	newline bool // a newline was written and not yet followed
	err     error
}

func (iw *indentWriter) Write(p []byte) (int, error) {
	if iw.err != nil {
		return 0, iw.err
	}
	n := len(p)
	for len(p) > 0 {
		if iw.newline {
			iw.newline = false
			iw.w.WriteByte('\n')
			iw.w.WriteString(iw.prefix)
		}
		line := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			line, p, iw.newline = p[:i], p[i+1:], true
		} else {
			p = nil
		}
		if _, iw.err = iw.w.Write(line); iw.err != nil {
			return 0, iw.err
		}
	}
	return n, nil
}

// writeIndented writes v as JSON at depth 1 of a two-space indented
// document.
func writeIndented(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// writeSweepJUnit writes one document holding every run's test suites, as
// gauntlet run --format junit writes them, each suite's name and each
// case's class prefixed with the run's label ("<label>/<domain>/L<n>",
// "<label>/gauntlet"). With failOnRegression, a last suite, "comparison",
// holds a case per later model, failed when it scored significantly worse
// than the first; a model that did not run is a failed case there too.
//
// It streams as a run's report does: the runs' counts are read first
// (the totals open the document), then each run's results a cell at a
// time.
func writeSweepJUnit(w io.Writer, sweep []sweepRun, cmp *compare.ManyReport, failOnRegression bool) error {
	root := junitSuites{Name: "gauntlet sweep"}
	counts := make([]junitSuites, len(sweep))
	var ms int64
	for i, sr := range sweep {
		if sr.rep == nil {
			continue
		}
		doc, err := sr.rep.junitSuites(sr.rep.samples)
		if err != nil {
			return err
		}
		xmlSafeSuites(&doc)
		counts[i] = doc
		root.Tests += doc.Tests
		root.Failures += doc.Failures
		root.Errors += doc.Errors
		ms += sr.rep.info.TotalDurationMS
	}
	root.Time = seconds(ms)
	const suite = "comparison"
	c := junitSuite{Name: suite, Time: seconds(0)}
	for _, sr := range sweep {
		if sr.rep == nil {
			c.Cases = append(c.Cases, junitCase{Name: sr.label, Classname: suite, Time: seconds(0),
				Error: &junitProblem{Type: "not_run", Message: sr.err.Error(), Text: sr.err.Error()}})
			c.Errors++
		}
	}
	if failOnRegression {
		base := cmp.Runs[0]
		for _, r := range cmp.Runs[1:] {
			tc := junitCase{Name: r.ModelName + " vs " + base.ModelName, Classname: suite, Time: seconds(0)}
			if r.Regressed() {
				msg := fmt.Sprintf("%s scored significantly worse than %s in %s", r.ModelName, base.ModelName, cells(r.Summary.SignificantRegressions))
				tc.Failure = &junitProblem{Type: "regression", Message: msg, Text: msg}
				c.Failures++
			}
			c.Cases = append(c.Cases, tc)
		}
	}
	c.Tests = len(c.Cases)
	root.Tests += c.Tests
	root.Failures += c.Failures
	root.Errors += c.Errors

	x := newJUnitWriter(w)
	if err := x.open(root); err != nil {
		return err
	}
	for i, sr := range sweep {
		if sr.rep == nil {
			continue
		}
		if err := sr.rep.writeJUnitSuites(x, counts[i], sr.label); err != nil {
			return err
		}
	}
	if c.Tests > 0 {
		xmlSafeSuites(&junitSuites{Suites: []junitSuite{c}})
		if err := x.suite(c); err != nil {
			return err
		}
	}
	return x.close()
}

// outputFile is the file --output names, created, or stdout when it names
// none; close closes the file and says whether everything written reached
// it (a full disk shows there).
func outputFile(name string, stdout io.Writer) (w io.Writer, close func() error, err error) {
	if name == "" {
		return stdout, func() error { return nil }, nil
	}
	file, err := os.Create(name)
	if err != nil {
		return nil, nil, err
	}
	return file, file.Close, nil
}
