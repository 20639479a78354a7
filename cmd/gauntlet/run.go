package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// errBelowMin makes the process exit with status 1: the run finished but
// scored below --min-score.
var errBelowMin = errors.New("score below --min-score")

type runFlags struct {
	settings
	domains   string
	modelName string
	model     string
	minScore  float64
	format    string
	output    string
	resume    string
}

// runCmd is "gauntlet run": one evaluation without the HTTP server, with
// the same engine and store as serve.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f runFlags
	fs := flag.NewFlagSet("gauntlet run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := commonFlags(fs, &f.settings); err != nil {
		return err
	}
	fs.StringVar(&f.domains, "domains", "", "comma-separated domain ids (default: every enabled domain)")
	fs.StringVar(&f.modelName, "model-name", "default", "label of the run")
	fs.StringVar(&f.model, "model", "", "endpoint model for this run (default --llm-model)")
	fs.Float64Var(&f.minScore, "min-score", 0, "exit with status 1 when the overall score is below this (0-1)")
	fs.StringVar(&f.format, "format", "text", "report format: text, json or junit")
	fs.StringVar(&f.output, "output", "", "write the report to this file instead of stdout")
	fs.StringVar(&f.resume, "resume", "", "resume this stored run instead of starting one: run its tests that have no result or ended in error, with its own definitions")
	timeoutS := fs.Float64("timeout-s", 0, "bound of each model request of this run, in seconds (default --llm-timeout)")
	retries := fs.Int("retries", -1, "retries of a failed model request in this run (default --llm-retries)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if err := f.check(); err != nil {
		return err
	}
	var req engine.StartRequest
	if *timeoutS != 0 {
		req.Timeout = time.Duration(*timeoutS * float64(time.Second))
	}
	if *retries >= 0 {
		req.Retries = retries
	}
	if f.resume != "" && (f.domains != "" || f.model != "") {
		return fmt.Errorf("--resume runs the stored run as it was: it takes no --domains or --model")
	}
	switch f.format {
	case "text", "json", "junit":
	default:
		return fmt.Errorf("--format must be text, json or junit, not %q", f.format)
	}
	if f.minScore < 0 || f.minScore > 1 {
		return fmt.Errorf("--min-score must be between 0 and 1, not %v", f.minScore)
	}
	var domains []string
	if f.domains != "" {
		for _, d := range strings.Split(f.domains, ",") {
			if d = strings.TrimSpace(d); d != "" {
				domains = append(domains, d)
			}
		}
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := store.Open(ctx, f.databaseURL())
	if err != nil {
		return err
	}
	defer db.Close()
	reg, err := newRegistry(log)
	if err != nil {
		return err
	}
	plugins, err := openPlugins(f.plugins, f.pluginSums, reg, log)
	if err != nil {
		return err
	}
	defer plugins.Close()
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: f.definitions, DB: db, Registry: reg, MustExist: true})
	if err != nil {
		return err
	}
	if err := checkLoadErrors(ctx, cat, res, f.definitions, domains, f.resume != "", stderr); err != nil {
		return err
	}
	model, err := f.settings.modelClient()
	if err != nil {
		return err
	}
	runStore, err := runs.Open(ctx, db)
	if err != nil {
		return err
	}

	progress := newProgress(stderr)
	finished := make(chan runs.Info, 1)
	eo := f.engineOptions()
	eo.Definitions, eo.Runs, eo.Model, eo.Registry, eo.Logger = cat, runStore, model, reg, log
	eo.OnEvent = func(ev engine.Event) {
		progress.event(ev)
		if ev.Kind == engine.EventRunFinished {
			finished <- *ev.Info
		}
	}
	eng, err := engine.New(ctx, eo)
	if err != nil {
		return err
	}
	id := f.resume
	if id != "" {
		err = eng.Resume(ctx, id)
	} else {
		req.ModelName, req.Model, req.Domains = f.modelName, f.model, domains
		id, err = eng.Start(ctx, req)
	}
	if err != nil {
		return err
	}
	var info runs.Info
	select {
	case info = <-finished:
	case <-ctx.Done():
		fmt.Fprintln(stderr, "\ninterrupted: stopping the run (finished results are kept)")
		eng.Stop(10 * time.Second)
		info = <-finished
	}
	progress.finish()

	matrix, err := runStore.Matrix(context.Background(), id)
	if err != nil {
		return err
	}
	results, err := runStore.Results(context.Background(), id)
	if err != nil {
		return err
	}
	out := stdout
	if f.output != "" {
		file, err := os.Create(f.output)
		if err != nil {
			return err
		}
		defer file.Close()
		out = file
	}
	switch f.format {
	case "json":
		err = writeJSONReport(out, info, matrix, results)
	case "junit":
		err = writeJUnit(out, info, results)
	default:
		err = writeTextReport(out, info, matrix)
	}
	if err != nil {
		return err
	}
	if f.output != "" && f.format != "text" {
		writeTextReport(stderr, info, matrix)
	}
	score := 0.0
	if info.OverallScore != nil {
		score = *info.OverallScore
	}
	if info.Status != runs.StatusCompleted {
		return fmt.Errorf("run %s %s", info.RunID, info.Status)
	}
	if err := allErrors(results); err != nil {
		return err
	}
	if score < f.minScore {
		fmt.Fprintf(stderr, "overall score %.3f is below --min-score %.3f\n", score, f.minScore)
		return errBelowMin
	}
	return nil
}

// allErrors returns an error when every test of a run ended in error: the
// model was not evaluated (its endpoint unreachable, say), which must not
// pass a CI job that sets no --min-score.
func allErrors(results []runs.Result) error {
	if len(results) == 0 {
		return nil
	}
	for _, r := range results {
		if r.Status != runs.TestError {
			return nil
		}
	}
	why, _ := results[0].Details["error"].(string)
	return fmt.Errorf("every test (%d) ended in error, so nothing was evaluated; the first: %s", len(results), why)
}

// progress shows a run's progress: a bar redrawn in place on a terminal,
// a line per finished level otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	total    int
	done     int
	failed   int
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progress) event(ev engine.Event) {
	switch ev.Kind {
	case engine.EventRunStarted:
		p.total = ev.Info.TotalTests
		fmt.Fprintf(p.w, "run %s: %d tests\n", ev.RunID, p.total)
	case engine.EventTestFinished:
		p.done++
		if ev.Result.Status != runs.TestPassed {
			p.failed++
		}
		if p.terminal {
			const width = 30
			filled := width * p.done / max(p.total, 1)
			fmt.Fprintf(p.w, "\r[%s%s] %d/%d tests, %d not passed", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done, p.total, p.failed)
		}
	case engine.EventCellFinished:
		if !p.terminal {
			fmt.Fprintf(p.w, "%s L%d: %s, score %.2f (%d/%d passed) [%d/%d tests]\n",
				ev.Domain, ev.Level, ev.Cell.Status, deref(ev.Cell.Score), ev.Cell.Passed, ev.Cell.Tests, p.done, p.total)
		}
	}
}

func (p *progress) finish() {
	if p.terminal {
		fmt.Fprintln(p.w)
	}
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

func levelsOf(m runs.Matrix) []int {
	seen := map[int]bool{}
	for _, cells := range m {
		for k := range cells {
			n, _ := strconv.Atoi(k)
			seen[n] = true
		}
	}
	var out []int
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// writeTextReport prints the domain × level table and the overall line.
func writeTextReport(w io.Writer, info runs.Info, m runs.Matrix) error {
	levels := levelsOf(m)
	domains := info.Domains
	width := len("domain")
	for _, d := range domains {
		width = max(width, len(d))
	}
	fmt.Fprintf(w, "\n%-*s", width, "domain")
	for _, l := range levels {
		fmt.Fprintf(w, "  %-10s", "L"+strconv.Itoa(l))
	}
	fmt.Fprintln(w)
	for _, d := range domains {
		fmt.Fprintf(w, "%-*s", width, d)
		for _, l := range levels {
			c, ok := m[d][strconv.Itoa(l)]
			cell := "-"
			if ok {
				switch c.Status {
				case runs.CellPassed:
					cell = fmt.Sprintf("%.2f pass", deref(c.Score))
				case runs.CellFailed:
					cell = fmt.Sprintf("%.2f FAIL", deref(c.Score))
				default:
					cell = c.Status
				}
			}
			fmt.Fprintf(w, "  %-10s", cell)
		}
		fmt.Fprintln(w)
	}
	_, err := fmt.Fprintf(w, "\nrun %s %s: overall score %.3f, %d tests, %d tokens, %.1f s\n",
		info.RunID, info.Status, deref(info.OverallScore), info.TotalTests, info.TotalTokens, float64(info.TotalDurationMS)/1000)
	return err
}

func writeJSONReport(w io.Writer, info runs.Info, m runs.Matrix, results []runs.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"run_info": info, "matrix": m, "test_results": results})
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// writeJUnit writes one test suite per domain × level and one test case
// per test: failed tests are failures, tests the model or evaluator could
// not complete are errors.
func writeJUnit(w io.Writer, info runs.Info, results []runs.Result) error {
	doc := junitSuites{Name: "gauntlet " + info.ModelName, Time: seconds(info.TotalDurationMS)}
	index := map[string]int{}
	suiteMS := map[string]int64{}
	for _, r := range results {
		name := r.Domain + "/L" + strconv.Itoa(r.Level)
		i, ok := index[name]
		if !ok {
			i = len(doc.Suites)
			index[name] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: name, Timestamp: strings.Replace(info.StartedAt, " ", "T", 1)})
		}
		s := &doc.Suites[i]
		c := junitCase{Name: r.TestID, Classname: r.Domain + ".L" + strconv.Itoa(r.Level), Time: seconds(r.DurationMS), SystemOut: r.Response}
		switch r.Status {
		case runs.TestFailed:
			got, _ := r.Details["extracted_answer"].(string)
			c.Failure = &junitProblem{Type: r.Expected.Type, Message: fmt.Sprintf("expected %q, got %q (score %.2f)", r.Expected.Answer, got, r.Score), Text: r.Response}
			s.Failures++
			doc.Failures++
		case runs.TestError:
			msg, _ := r.Details["error"].(string)
			c.Error = &junitProblem{Type: "error", Message: msg}
			s.Errors++
			doc.Errors++
		}
		suiteMS[name] += r.DurationMS
		s.Tests++
		doc.Tests++
		s.Cases = append(s.Cases, c)
	}
	for i := range doc.Suites {
		doc.Suites[i].Time = seconds(suiteMS[doc.Suites[i].Name])
	}
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
