package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// errGateFailed makes the process exit with status 1: the run was made
// and reported, but it did not pass the gate (score below --min-score,
// not complete, or tests in error). The error wrapping it lists why.
var errGateFailed = errors.New("the run did not pass the gate")

// maxListed bounds the failed and errored tests the text summary lists,
// so that a huge run's summary stays readable.
const maxListed = 50

// maxField bounds one quoted answer or reason in the text summary.
const maxField = 200

// report is what "gauntlet run" says about a finished run, in any format.
// Its results are read as it is written, a few at a time (results), so
// that a report of a million results is never in memory at once.
type report struct {
	info    runs.Info
	matrix  runs.Matrix
	results resultSource
	// samples gives the same results with only what counts and aggregates
	// need (test id, repeat, domain, level, name, score, status, duration):
	// cheaper to read for the passes that need no more.
	samples resultSource
	// failures gives the run's first failed and errored results.
	failures problemSource
	verdict  verdict
}

// problemSource returns a run's first n failed and errored results, in
// the order problems lists them, and how many there are in all.
type problemSource func(n int) ([]runs.Result, int, error)

// resultSource calls fn with each result of a run, by domain, level and
// then the order they finished in (as runs.Store.Results orders them),
// and stops at fn's first error, which it returns. A report reads its
// source more than once.
type resultSource func(fn func(runs.Result) error) error

// sliceSource is a resultSource of results in memory, in their order.
func sliceSource(results []runs.Result) resultSource {
	return func(fn func(runs.Result) error) error {
		for _, r := range results {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
}

// verdict says whether a run passes the gate a CI job sets: every reason
// it does not is listed.
type verdict struct {
	MinScore   float64  `json:"min_score"`
	PassedGate bool     `json:"passed_gate"`
	Reasons    []string `json:"reasons"`
}

// sampleName names a result in a report: its test id, followed by
// "#<repeat>" when the run asked each test more than once, so that the
// repeats of a test are told apart.
func sampleName(info runs.Info, res runs.Result) string {
	if repeated(info) {
		return res.TestID + "#" + strconv.Itoa(res.Repeat)
	}
	return res.TestID
}

// repeated reports whether the run asked each test more than once.
func repeated(info runs.Info) bool {
	return info.Config != nil && info.Config.Repeats > 1
}

// newReport is the report of a run whose results are in memory.
func newReport(info runs.Info, m runs.Matrix, results []runs.Result, minScore float64) *report {
	src := sliceSource(results)
	rep, _ := newSourceReport(info, m, src, src, nil, minScore) // a slice never fails
	return rep
}

// newSourceReport is the report of a run whose results src reads, and
// samples with only what counts and aggregates need; failures, when not
// nil, reads its first failures more cheaply than a pass over src.
func newSourceReport(info runs.Info, m runs.Matrix, src, samples resultSource, failures problemSource, minScore float64) (*report, error) {
	if failures == nil {
		failures = func(n int) ([]runs.Result, int, error) { return problems(info, src, n) }
	}
	v, err := gate(info, failures, minScore)
	if err != nil {
		return nil, err
	}
	return &report{info: info, matrix: m, results: src, samples: samples, failures: failures, verdict: v}, nil
}

// gate decides the gate: the run must be complete (completed, every
// test finished), have no test in error, and score at least minScore
// over its scored tests.
func gate(info runs.Info, failures problemSource, minScore float64) (verdict, error) {
	v := verdict{MinScore: minScore, Reasons: []string{}}
	if why := incomplete(info); why != "" {
		v.Reasons = append(v.Reasons, "the run is not complete: "+why)
	}
	switch {
	case info.Errors == 0:
	case info.Errors == info.DoneTests:
		first := ""
		p, _, err := failures(1)
		if err != nil {
			return v, err
		}
		if len(p) > 0 {
			first = ": the first: " + reasonOf(p[0])
		}
		v.Reasons = append(v.Reasons, fmt.Sprintf("every test that finished (%d) ended in error, so nothing was evaluated%s", info.Errors, first))
	default:
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d of %d finished tests ended in error", info.Errors, info.DoneTests))
	}
	switch {
	case minScore <= 0:
	case info.OverallScore == nil:
		v.Reasons = append(v.Reasons, fmt.Sprintf("no test was scored, so --min-score %.3f cannot be met", minScore))
	case *info.OverallScore < minScore:
		v.Reasons = append(v.Reasons, fmt.Sprintf("overall score %.3f is below --min-score %.3f", *info.OverallScore, minScore))
	}
	if !info.Complete && len(v.Reasons) == 0 {
		v.Reasons = append(v.Reasons, "the run is not complete")
	}
	v.PassedGate = len(v.Reasons) == 0
	return v, nil
}

// err is nil when the gate passed, else an error wrapping errGateFailed
// with the reasons.
func (v verdict) err() error {
	if v.PassedGate {
		return nil
	}
	return fmt.Errorf("%w: %s", errGateFailed, strings.Join(v.Reasons, "; "))
}

// incomplete says in words why a run is not complete, "" when it is.
func incomplete(info runs.Info) string {
	var why string
	switch {
	case info.Status == runs.StatusRunning:
		why = fmt.Sprintf("still running after %d of %d tests", info.DoneTests, info.TotalTests)
	case info.Status != runs.StatusCompleted || info.DoneTests < info.TotalTests:
		why = fmt.Sprintf("%s after %d of %d tests", info.Status, info.DoneTests, info.TotalTests)
	default:
		return ""
	}
	if info.Error != "" {
		why += ": " + info.Error
	}
	return why
}

// write writes the report in format: text, json or junit.
func (r *report) write(w io.Writer, format string) error {
	switch format {
	case "json":
		return r.writeJSON(w)
	case "junit":
		return r.writeJUnit(w)
	default:
		return r.writeText(w)
	}
}

// problems returns the first n failed and errored results in the run's
// domain order, then by level (in the source's order within a level),
// and how many there are in all. It keeps n results, not all of them,
// and reads none when the run counted no failure and no error.
func problems(info runs.Info, results resultSource, n int) ([]runs.Result, int, error) {
	if info.Failed == 0 && info.Errors == 0 {
		return nil, 0, nil // the run's exact counts say so: no pass over its results
	}
	less := func(a, b *runs.Result) bool {
		if c := domainRank(info, a.Domain) - domainRank(info, b.Domain); c != 0 {
			return c < 0
		}
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c < 0
		}
		return a.Level < b.Level
	}
	var first []runs.Result
	total := 0
	err := results(func(r runs.Result) error {
		if r.Status != runs.TestFailed && r.Status != runs.TestError {
			return nil
		}
		total++
		// After every kept result it does not come before: a stable order.
		i := len(first)
		for i > 0 && less(&r, &first[i-1]) {
			i--
		}
		if i < n {
			first = slices.Insert(first, i, r)
			if len(first) > n {
				first = first[:n]
			}
		}
		return nil
	})
	return first, total, err
}

// eachAggregate calls fn with each test's aggregate over its repeats, in
// the order the tests first appear in results. The results of a test
// are all in its cell: a cell at a time is kept, and of each result only
// what an aggregate needs.
func eachAggregate(results resultSource, fn func(runs.TestAggregate) error) error {
	var cell []runs.Result
	flush := func() error {
		for _, a := range runs.Aggregates(cell) {
			if err := fn(a); err != nil {
				return err
			}
		}
		cell = cell[:0]
		return nil
	}
	err := results(func(r runs.Result) error {
		if len(cell) > 0 && (cell[0].Domain != r.Domain || cell[0].Level != r.Level) {
			if err := flush(); err != nil {
				return err
			}
		}
		cell = append(cell, runs.Result{TestID: r.TestID, Domain: r.Domain, Level: r.Level, Name: r.Name, Repeat: r.Repeat,
			Score: r.Score, Status: r.Status})
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// eachCell calls fn with the results of each cell in turn (each run of
// results of one domain and level), in order.
func eachCell(results resultSource, fn func([]runs.Result) error) error {
	var cell []runs.Result
	err := results(func(r runs.Result) error {
		if len(cell) > 0 && (cell[0].Domain != r.Domain || cell[0].Level != r.Level) {
			if err := fn(cell); err != nil {
				return err
			}
			cell = nil
		}
		cell = append(cell, r)
		return nil
	})
	if err != nil || len(cell) == 0 {
		return err
	}
	return fn(cell)
}

// reasonOf says why a test failed or errored: details.error, else the
// evaluator's reason, else the judge's reasoning.
func reasonOf(r runs.Result) string {
	for _, k := range []string{"error", "reason", "judge_reasoning"} {
		if s, ok := r.Details[k].(string); ok && s != "" {
			return s
		}
	}
	if r.Status == runs.TestFailed {
		return fmt.Sprintf("score %.2f", r.Score)
	}
	return "no reason recorded"
}

// extracted is the answer the evaluator extracted from the response.
func extracted(r runs.Result) string {
	s, _ := r.Details["extracted_answer"].(string)
	return s
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
	slices.Sort(out)
	return out
}

// writeText prints the domain × level table, the counts, whether the run
// is complete, the overall score, the failed and errored tests (at most
// maxListed) and the verdict.
func (r *report) writeText(w io.Writer) error {
	info, m := r.info, r.matrix
	levels := levelsOf(m)
	width := len("domain")
	for _, d := range info.Domains {
		width = max(width, len(d))
	}
	// Each column is as wide as its widest cell (fmt pads by runes).
	texts := make(map[string][]string, len(info.Domains))
	cols := make([]int, len(levels))
	for _, d := range info.Domains {
		row := make([]string, len(levels))
		for i, l := range levels {
			row[i] = "-"
			if c, ok := m[d][strconv.Itoa(l)]; ok {
				row[i] = cellText(c)
			}
			cols[i] = max(cols[i], 12, utf8.RuneCountInString(row[i]))
		}
		texts[d] = row
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "\n%-*s", width, "domain")
	for i, l := range levels {
		fmt.Fprintf(b, "  %-*s", max(cols[i], 12), "L"+strconv.Itoa(l))
	}
	b.WriteString("\n")
	for _, d := range info.Domains {
		fmt.Fprintf(b, "%-*s", width, d)
		for i, cell := range texts[d] {
			fmt.Fprintf(b, "  %-*s", cols[i], cell)
		}
		b.WriteString("\n")
	}
	if hasRetrieval(m) {
		fmt.Fprintf(b, "R@%d: mean recall@%d of the agent's retrieval over the cell's scored tests that list expected sources\n",
			runs.RetrievalK, runs.RetrievalK)
	}

	fmt.Fprintf(b, "\nrun %s (%s, model %s) %s: ", info.RunID, oneLine(info.ModelName, 80), oneLine(info.Model, 80), info.Status)
	if why := incomplete(info); why != "" {
		fmt.Fprintf(b, "INCOMPLETE: %s\n", oneLine(why, 400))
	} else if info.Errors > 0 {
		fmt.Fprintf(b, "INCOMPLETE: every test finished, %d in error\n", info.Errors)
	} else {
		b.WriteString("complete\n")
	}
	fmt.Fprintf(b, "tests: %d passed, %d failed, %d errors; %d done of %d\n",
		info.Passed, info.Failed, info.Errors, info.DoneTests, info.TotalTests)
	if info.OverallScore == nil {
		b.WriteString("overall score: none, no test was scored")
	} else {
		fmt.Fprintf(b, "overall score %.3f over %d scored tests", *info.OverallScore, info.Passed+info.Failed)
	}
	fmt.Fprintf(b, "; %d tokens, %.1f s\n", info.TotalTokens, float64(info.TotalDurationMS)/1000)
	p50, err := runLatencyP50(info, r.samples)
	if err != nil {
		return err
	}
	writeSpend(b, info, p50)
	if repeated(info) {
		if err := writeRepeats(b, info, r.samples); err != nil {
			return err
		}
	}

	p, total, err := r.failures(maxListed)
	if err != nil {
		return err
	}
	if total > 0 {
		fmt.Fprintf(b, "\nfailed and errored tests (%d):\n", total)
		for _, res := range p {
			tag := "FAIL "
			if res.Status == runs.TestError {
				tag = "ERROR"
			}
			fmt.Fprintf(b, "  %s %s  %s/L%d  expected %s (%s), got %s: %s\n", tag, oneLine(sampleName(info, res), 120), oneLine(res.Domain, 80), res.Level,
				quoted(res.Expected.Answer), oneLine(res.Expected.Type, 40), quoted(extracted(res)), oneLine(reasonOf(res), maxField))
		}
		if total > maxListed {
			fmt.Fprintf(b, "  ... and %d more (--format json lists every result)\n", total-maxListed)
		}
	}

	v := r.verdict
	if v.PassedGate {
		fmt.Fprintf(b, "\nverdict: passed (min score %.3f)\n", v.MinScore)
	} else {
		fmt.Fprintf(b, "\nverdict: FAILED (min score %.3f)\n", v.MinScore)
		for _, why := range v.Reasons {
			fmt.Fprintf(b, "  - %s\n", oneLine(why, 400))
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// writeRepeats says, for a run that asked each test several times, how
// the tests did over their repeats: how many passed every time (pass^k)
// and at least once (pass@k), and which did not pass every time, with
// their pass rate (at most maxListed). Results in error are not among a
// test's k: they say nothing about the model.
func writeRepeats(b *strings.Builder, info runs.Info, results resultSource) error {
	var all, once, scored, tests, nShaky int
	var rates float64
	var shaky []runs.TestAggregate
	err := eachAggregate(results, func(a runs.TestAggregate) error {
		tests++
		if a.K > 0 {
			scored++
			rates += *a.PassRate
			if *a.PassAtK {
				once++
			}
			if *a.PassAllK {
				all++
			}
		}
		if a.K == 0 || !*a.PassAllK || a.Errors > 0 {
			nShaky++
			if len(shaky) < maxListed {
				shaky = append(shaky, a)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "repeats %d: %d tests; %d passed every scored repeat (pass^k), %d at least once (pass@k)",
		info.Config.Repeats, tests, all, once)
	if scored > 0 {
		fmt.Fprintf(b, ", mean pass rate %.3f", rates/float64(scored))
	}
	if n := tests - scored; n > 0 {
		fmt.Fprintf(b, "; %d never scored (every repeat in error)", n)
	}
	b.WriteString("\n")
	if nShaky == 0 {
		return nil
	}
	fmt.Fprintf(b, "\ntests not passing every repeat (%d):\n", nShaky)
	for _, a := range shaky {
		fmt.Fprintf(b, "  %s  %s/L%d  %s\n", oneLine(a.TestID, 120), oneLine(a.Domain, 80), a.Level, aggregateText(a))
	}
	if nShaky > maxListed {
		fmt.Fprintf(b, "  ... and %d more (--format json lists every aggregate)\n", nShaky-maxListed)
	}
	return nil
}

// aggregateText says how a test did over its repeats: "passed 1 of 3
// (pass rate 0.33)", with its errors.
func aggregateText(a runs.TestAggregate) string {
	if a.K == 0 {
		return fmt.Sprintf("every repeat in error (%d)", a.Errors)
	}
	s := fmt.Sprintf("passed %d of %d", a.Passed, a.K)
	if a.PassRate != nil {
		s += fmt.Sprintf(" (pass rate %.2f)", *a.PassRate)
	}
	if a.Errors > 0 {
		s += fmt.Sprintf(", %d in error", a.Errors)
	}
	return s
}

// cellText is a cell in the text table: its score with its uncertainty
// and its status word, then the recall@k of an agent's retrieval when the
// cell measured it ("R@5 0.83"), then what the cell cost when the model
// had a price ("$0.14"; nothing without one, the run's cost line says
// n/a).
func cellText(c runs.Cell) string {
	s := c.Status
	switch c.Status {
	case runs.CellPassed:
		s = scoreText(c) + " pass"
	case runs.CellFailed:
		s = scoreText(c) + " FAIL"
	case runs.CellPartial:
		s = fmt.Sprintf("%d/%d PART", c.Done, c.Tests)
	case runs.CellError:
		s = "ERROR"
	case runs.CellSkipped:
		s = "skipped"
	}
	if r := c.Retrieval; r != nil {
		s += fmt.Sprintf(" R@%d %.2f", runs.RetrievalK, r.RecallAtK)
	}
	if c.CostUSD != nil && c.Done > 0 {
		s += " " + usd(c.CostUSD)
	}
	return s
}

// hasRetrieval reports whether a cell of m measured retrieval.
func hasRetrieval(m runs.Matrix) bool {
	for _, levels := range m {
		for _, c := range levels {
			if c.Retrieval != nil {
				return true
			}
		}
	}
	return false
}

// scoreText is a cell's score with ± its standard error and its 95 %
// interval when the run computed them, "0.72±0.05 [0.61,0.81]"; the
// score alone for cells stored before they were.
func scoreText(c runs.Cell) string {
	s := fmt.Sprintf("%.2f", deref(c.Score))
	if c.StdErr != nil {
		s += fmt.Sprintf("±%.2f", *c.StdErr)
	}
	if c.CI95 != nil {
		s += fmt.Sprintf(" [%.2f,%.2f]", c.CI95.Low, c.CI95.High)
	}
	return s
}

// quoted is s shortened to maxField runes and Go-quoted: control
// characters and invalid UTF-8 show as escapes, never reach a terminal.
func quoted(s string) string {
	return strconv.Quote(truncate(s, maxField))
}

// oneLine is s on one line, shortened to n runes, with control characters
// and invalid UTF-8 replaced by spaces and U+FFFD.
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return truncate(strings.Join(strings.Fields(s), " "), n)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// writeJSON writes run_info (counts, completeness, config), the matrix
// (counts per cell, each score's stderr and ci95, the retrieval figures
// of the cells that measured them), every test result,
// each test's aggregate over its repeats (pass_rate, pass_at_k,
// pass_all_k) and the verdict. The document is the one json.Encoder
// writes of the whole report with a two-space indent, written a result at
// a time.
func (r *report) writeJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var err error
	put := func(s string) {
		if err == nil {
			_, err = bw.WriteString(s)
		}
	}
	value := func(v any, prefix string) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = json.MarshalIndent(v, prefix, "  "); err == nil {
			_, err = bw.Write(b)
		}
	}
	// list writes the items each gives as a JSON array at depth 1.
	list := func(each func(item func(v any) error) error) {
		if err != nil {
			return
		}
		n := 0
		put("[")
		if e := each(func(v any) error {
			if n == 0 {
				put("\n    ")
			} else {
				put(",\n    ")
			}
			n++
			value(v, "    ")
			return err
		}); e != nil && err == nil {
			err = e
		}
		if n > 0 {
			put("\n  ")
		}
		put("]")
	}
	put("{\n  \"run_info\": ")
	value(r.info, "  ")
	put(",\n  \"matrix\": ")
	value(r.matrix, "  ")
	put(",\n  \"test_results\": ")
	list(func(item func(v any) error) error {
		return r.results(func(res runs.Result) error { return item(res) })
	})
	put(",\n  \"aggregates\": ")
	list(func(item func(v any) error) error {
		return eachAggregate(r.samples, func(a runs.TestAggregate) error { return item(a) })
	})
	put(",\n  \"verdict\": ")
	value(r.verdict, "  ")
	put("\n}\n")
	if err != nil {
		return err
	}
	return bw.Flush()
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
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

// junitProperties are a test case's properties: a pointer, so that a case
// without any has no element at all (encoding/xml writes the empty
// parent of a "properties>property" path).
type junitProperties struct {
	Items []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string           `xml:"name,attr"`
	Classname  string           `xml:"classname,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Failure    *junitProblem    `xml:"failure,omitempty"`
	Error      *junitProblem    `xml:"error,omitempty"`
	SystemOut  string           `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func seconds(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) }

// gateSuite names the suite holding the verdict's test case.
const gateSuite = "gauntlet"

// properties describe the run in every suite: what ran, against what, with
// which definitions, the verdict, and what it spent (spendProperties).
func (r *report) properties() []junitProperty {
	info := r.info
	var c runs.Config
	if info.Config != nil {
		c = *info.Config
	}
	model := info.Model
	if model == "" {
		model = c.Model
	}
	props := []junitProperty{
		{"run_id", info.RunID},
		{"model", model},
		{"label", info.ModelName},
		{"base_url", c.BaseURL},
		{"definitions_hash", c.DefinitionsHash},
		{"gauntlet_version", c.GauntletVersion},
		{"status", info.Status},
		{"complete", strconv.FormatBool(info.Complete)},
		{"min_score", strconv.FormatFloat(r.verdict.MinScore, 'f', -1, 64)},
		{"passed_gate", strconv.FormatBool(r.verdict.PassedGate)},
	}
	if repeated(info) {
		props = append(props, junitProperty{"repeats", strconv.Itoa(c.Repeats)})
	}
	return append(props, spendProperties(info)...)
}

// writeJUnit writes one test suite per domain × level and one test case
// per test: failed tests are failures, tests that ended in error are
// errors (cellCases says how repeats are reported). A last suite,
// "gauntlet", holds one case, "verdict", failed with the reasons when the
// run did not pass the gate, so that a stopped run never shows green in a
// CI system for the tests it did not reach. Every suite carries the run's
// properties. Text XML 1.0 cannot carry (NUL and other control
// characters, invalid UTF-8, U+FFFE, U+FFFF) is left out.
//
// The totals come first in the document, so the results are read twice:
// once to count, once to write, a cell at a time.
func (r *report) writeJUnit(w io.Writer) error {
	// The suites without their cases: counts and durations.
	doc, err := r.junitSuites(r.samples)
	if err != nil {
		return err
	}
	xmlSafeSuites(&doc)
	x := newJUnitWriter(w)
	if err := x.open(doc); err != nil {
		return err
	}
	if err := r.writeJUnitSuites(x, doc, ""); err != nil {
		return err
	}
	return x.close()
}

// junitWriter writes a JUnit document a suite, or a case, at a time.
type junitWriter struct {
	bw  *bufio.Writer
	enc *xml.Encoder
}

func newJUnitWriter(w io.Writer) *junitWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := xml.NewEncoder(bw)
	enc.Indent("", "  ")
	return &junitWriter{bw: bw, enc: enc}
}

func xmlAttr(name, value string) xml.Attr { return xml.Attr{Name: xml.Name{Local: name}, Value: value} }

// open writes the XML header and the root element's start, with doc's
// name and totals.
func (x *junitWriter) open(doc junitSuites) error {
	if _, err := io.WriteString(x.bw, xml.Header); err != nil {
		return err
	}
	return x.enc.EncodeToken(xml.StartElement{Name: xml.Name{Local: "testsuites"}, Attr: []xml.Attr{xmlAttr("name", doc.Name),
		xmlAttr("tests", strconv.Itoa(doc.Tests)), xmlAttr("failures", strconv.Itoa(doc.Failures)),
		xmlAttr("errors", strconv.Itoa(doc.Errors)), xmlAttr("time", doc.Time)}})
}

// suite writes a whole suite, its cases included.
func (x *junitWriter) suite(s junitSuite) error {
	return x.enc.EncodeElement(s, xml.StartElement{Name: xml.Name{Local: "testsuite"}})
}

// close ends the root element and flushes the document.
func (x *junitWriter) close() error {
	if err := x.enc.EncodeToken(xml.EndElement{Name: xml.Name{Local: "testsuites"}}); err != nil {
		return err
	}
	if err := x.enc.Flush(); err != nil {
		return err
	}
	if _, err := io.WriteString(x.bw, "\n"); err != nil {
		return err
	}
	return x.bw.Flush()
}

// writeJUnitSuites writes the report's suites, a cell at a time: doc is
// the document of their counts (junitSuites without cases, made safe for
// XML), in the order of the cells, the gate's suite last. A label (a
// sweep's run) prefixes each suite's name ("<label>/") and each case's
// class ("<label>.").
func (r *report) writeJUnitSuites(x *junitWriter, doc junitSuites, label string) error {
	named := func(name, sep string) string {
		if label == "" {
			return name
		}
		return xmlSafe(label) + sep + name
	}
	i := 0
	err := eachCell(r.results, func(cell []runs.Result) error {
		s := &doc.Suites[i]
		i++
		start := xml.StartElement{Name: xml.Name{Local: "testsuite"}, Attr: []xml.Attr{xmlAttr("name", named(s.Name, "/")),
			xmlAttr("tests", strconv.Itoa(s.Tests)), xmlAttr("failures", strconv.Itoa(s.Failures)),
			xmlAttr("errors", strconv.Itoa(s.Errors)), xmlAttr("time", s.Time)}}
		if s.Timestamp != "" {
			start.Attr = append(start.Attr, xmlAttr("timestamp", s.Timestamp))
		}
		if err := x.enc.EncodeToken(start); err != nil {
			return err
		}
		if err := x.enc.EncodeElement(junitProperties{s.Properties}, xml.StartElement{Name: xml.Name{Local: "properties"}}); err != nil {
			return err
		}
		for _, e := range r.cellCases(cell) {
			c := e.c
			c.Classname = named(c.Classname, ".")
			xmlSafeCase(&c)
			if err := x.enc.EncodeElement(c, xml.StartElement{Name: xml.Name{Local: "testcase"}}); err != nil {
				return err
			}
		}
		return x.enc.EncodeToken(start.End())
	})
	if err != nil {
		return err
	}
	gate := doc.Suites[len(doc.Suites)-1]
	gate.Name = named(gate.Name, "/")
	for j := range gate.Cases {
		gate.Cases[j].Classname = named(gate.Cases[j].Classname, ".")
	}
	return x.suite(gate)
}

// junitSuites is the report's document of JUnit suites, one per cell read
// from src and the gate's last, with their counts and durations; the
// cells' suites without their cases (writeJUnitSuites writes those).
func (r *report) junitSuites(src resultSource) (junitSuites, error) {
	info := r.info
	props := r.properties()
	stamp := strings.Replace(info.StartedAt, " ", "T", 1)
	doc := junitSuites{Name: "gauntlet " + info.ModelName, Time: seconds(info.TotalDurationMS)}
	err := eachCell(src, func(cell []runs.Result) error {
		s := junitSuite{Name: cellSuite(cell[0]), Timestamp: stamp, Properties: props}
		var ms int64
		for _, e := range r.cellCases(cell) {
			if e.c.Failure != nil {
				s.Failures++
			}
			if e.c.Error != nil {
				s.Errors++
			}
			ms += e.ms
			s.Tests++
		}
		s.Time = seconds(ms)
		doc.Suites = append(doc.Suites, s)
		return nil
	})
	doc.Suites = append(doc.Suites, r.gateSuite(stamp, props))
	for i := range doc.Suites {
		s := &doc.Suites[i]
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
	}
	return doc, err
}

// gateSuite is the suite holding the verdict's test case.
func (r *report) gateSuite(stamp string, props []junitProperty) junitSuite {
	gate := junitSuite{Name: gateSuite, Tests: 1, Time: seconds(0), Timestamp: stamp, Properties: props,
		Cases: []junitCase{{Name: "verdict", Classname: gateSuite, Time: seconds(0)}}}
	if !r.verdict.PassedGate {
		gate.Failures = 1
		gate.Cases[0].Failure = &junitProblem{Type: "gate", Message: strings.Join(r.verdict.Reasons, "; "),
			Text: strings.Join(r.verdict.Reasons, "\n")}
	}
	return gate
}

// cellSuite names the suite of a result's cell.
func cellSuite(res runs.Result) string { return res.Domain + "/L" + strconv.Itoa(res.Level) }

// junitEntry is a test case and the suite it goes in.
type junitEntry struct {
	suite string
	ms    int64
	c     junitCase
}

// cellCases are the test cases of one cell's results. Without repeats,
// one per result, named by its test id, with a cost_usd property when the
// result had a price.
//
// With repeats, still one per test, named by its test id: a CI system
// follows a test from build to build by its name, so a test keeps one
// name (and one history, and the CI's own flakiness tracking) whatever
// the repeats, and the count of tests stays the count of tests. The case
// is a failure unless the test passed every scored repeat (pass^k): a
// test that passes only sometimes is not one a CI job can rely on. The
// failure's message gives the pass rate and the first failed repeat,
// its text every failed repeat. A case with no failure but a repeat in
// error is an error (an error says nothing about the model, but the test
// was not fully evaluated). Its properties carry samples, k, passed,
// failed, errors, pass_rate, pass_at_k and pass_all_k; its system-out
// holds each repeat's status and response; its time is the repeats'
// total, and its cost_usd property (when priced) their cost.
func (r *report) cellCases(results []runs.Result) []junitEntry {
	var out []junitEntry
	suite := cellSuite
	class := func(res runs.Result) string { return res.Domain + ".L" + strconv.Itoa(res.Level) }
	if !repeated(r.info) {
		for _, res := range results {
			c := junitCase{Name: res.TestID, Classname: class(res), Time: seconds(res.DurationMS), SystemOut: res.Response}
			if res.CostUSD != nil {
				c.Properties = &junitProperties{[]junitProperty{{"cost_usd", costValue(*res.CostUSD)}}}
			}
			switch res.Status {
			case runs.TestFailed:
				c.Failure = &junitProblem{Type: res.Expected.Type, Message: failureText(res), Text: res.Response}
			case runs.TestError:
				c.Error = &junitProblem{Type: "error", Message: reasonOf(res), Text: reasonOf(res)}
			}
			out = append(out, junitEntry{suite(res), res.DurationMS, c})
		}
		return out
	}
	type key struct {
		domain string
		level  int
		id     string
	}
	byTest := map[key][]runs.Result{}
	for _, res := range results {
		k := key{res.Domain, res.Level, res.TestID}
		byTest[k] = append(byTest[k], res)
	}
	for _, a := range runs.Aggregates(results) {
		rs := byTest[key{a.Domain, a.Level, a.TestID}]
		slices.SortStableFunc(rs, func(x, y runs.Result) int { return x.Repeat - y.Repeat })
		var ms int64
		var stdout, failures, errs strings.Builder
		var firstFailed, firstError *runs.Result
		var cost float64
		priced := false
		for i := range rs {
			res := &rs[i]
			ms += res.DurationMS
			if res.CostUSD != nil {
				cost += *res.CostUSD
				priced = true
			}
			fmt.Fprintf(&stdout, "--- repeat %d: %s (score %.2f) ---\n%s\n", res.Repeat, res.Status, res.Score, res.Response)
			switch res.Status {
			case runs.TestFailed:
				if firstFailed == nil {
					firstFailed = res
				}
				fmt.Fprintf(&failures, "repeat %d: %s\n%s\n", res.Repeat, failureText(*res), res.Response)
			case runs.TestError:
				if firstError == nil {
					firstError = res
				}
				fmt.Fprintf(&errs, "repeat %d: %s\n", res.Repeat, reasonOf(*res))
			}
		}
		c := junitCase{Name: a.TestID, Classname: class(rs[0]), Time: seconds(ms), SystemOut: stdout.String(), Properties: aggregateProperties(a)}
		if priced {
			c.Properties.Items = append(c.Properties.Items, junitProperty{"cost_usd", costValue(cost)})
		}
		switch {
		case firstFailed != nil:
			c.Failure = &junitProblem{Type: firstFailed.Expected.Type,
				Message: fmt.Sprintf("%s; repeat %d: %s", aggregateText(a), firstFailed.Repeat, failureText(*firstFailed)),
				Text:    failures.String()}
		case firstError != nil:
			c.Error = &junitProblem{Type: "error",
				Message: fmt.Sprintf("%d of %d repeats ended in error; repeat %d: %s", a.Errors, a.Samples, firstError.Repeat, reasonOf(*firstError)),
				Text:    errs.String()}
		}
		out = append(out, junitEntry{suite(rs[0]), ms, c})
	}
	return out
}

// failureText says what a failed result answered and why it failed.
func failureText(res runs.Result) string {
	return fmt.Sprintf("expected %q, got %q (score %.2f): %s", res.Expected.Answer, extracted(res), res.Score, reasonOf(res))
}

// aggregateProperties are a test's figures over its repeats as JUnit
// properties; pass_rate, pass_at_k and pass_all_k only when a repeat was
// scored.
func aggregateProperties(a runs.TestAggregate) *junitProperties {
	props := []junitProperty{
		{"samples", strconv.Itoa(a.Samples)}, {"k", strconv.Itoa(a.K)}, {"passed", strconv.Itoa(a.Passed)},
		{"failed", strconv.Itoa(a.Failed)}, {"errors", strconv.Itoa(a.Errors)},
	}
	if a.K > 0 {
		props = append(props, junitProperty{"pass_rate", strconv.FormatFloat(*a.PassRate, 'f', 4, 64)},
			junitProperty{"pass_at_k", strconv.FormatBool(*a.PassAtK)}, junitProperty{"pass_all_k", strconv.FormatBool(*a.PassAllK)})
	}
	return &junitProperties{props}
}

// xmlSafeSuites makes every text of doc one XML 1.0 can carry.
func xmlSafeSuites(doc *junitSuites) {
	doc.Name = xmlSafe(doc.Name)
	for i := range doc.Suites {
		s := &doc.Suites[i]
		s.Name, s.Timestamp = xmlSafe(s.Name), xmlSafe(s.Timestamp)
		for j := range s.Properties {
			p := &s.Properties[j]
			p.Name, p.Value = xmlSafe(p.Name), xmlSafe(p.Value)
		}
		for j := range s.Cases {
			xmlSafeCase(&s.Cases[j])
		}
	}
}

// xmlSafeCase makes every text of a test case one XML 1.0 can carry.
func xmlSafeCase(c *junitCase) {
	c.Name, c.Classname, c.SystemOut = xmlSafe(c.Name), xmlSafe(c.Classname), xmlSafe(c.SystemOut)
	if c.Properties != nil {
		for k := range c.Properties.Items {
			p := &c.Properties.Items[k]
			p.Name, p.Value = xmlSafe(p.Name), xmlSafe(p.Value)
		}
	}
	for _, p := range []*junitProblem{c.Failure, c.Error} {
		if p != nil {
			p.Message, p.Type, p.Text = xmlSafe(p.Message), xmlSafe(p.Type), xmlSafe(p.Text)
		}
	}
}

// xmlSafe drops from s what XML 1.0 cannot carry: bytes that are not
// UTF-8, control characters other than tab, newline and carriage return,
// and U+FFFE and U+FFFF. The report does not lean on its encoder for
// this (encoding/xml turns each into U+FFFD, other writers emit them as
// they are and the file no longer parses): a model's answer full of NUL
// reads as its text, not as a row of replacement characters.
func xmlSafe(s string) string {
	ok := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !xmlChar(r, n) {
			ok = false
			break
		}
		i += n
	}
	if ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if xmlChar(r, n) {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// xmlChar reports whether the rune r, decoded from n bytes, is a Char of
// XML 1.0.
func xmlChar(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return false
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20:
		return false
	case r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	default:
		return r >= 0x10000 && r <= 0x10FFFF
	}
}

// domainRank is where the failures of domain d come in a report: the
// run's domains in their order, then any other.
func domainRank(info runs.Info, d string) int {
	if i := slices.Index(info.Domains, d); i >= 0 {
		return i
	}
	return len(info.Domains)
}

// storedProblems is problems for a stored run, read through the index of
// each cell's results by status rather than by a pass over all of them:
// the cells in the order problems lists them, each asked for the
// failures still wanted, and the total the run counted.
func storedProblems(rs *runs.Store, info runs.Info, m runs.Matrix, n int) ([]runs.Result, int, error) {
	total := info.Failed + info.Errors
	if total == 0 {
		return nil, 0, nil
	}
	type cell struct {
		rank   int
		domain string
		level  int
	}
	var cells []cell
	for d, levels := range m {
		rank := domainRank(info, d)
		for l := range levels {
			level, err := strconv.Atoi(l)
			if err != nil {
				return nil, 0, fmt.Errorf("the matrix's level %q of %s: %w", l, d, err)
			}
			cells = append(cells, cell{rank, d, level})
		}
	}
	slices.SortFunc(cells, func(a, b cell) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.domain, b.domain), cmp.Compare(a.level, b.level))
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var first []runs.Result
	for _, c := range cells {
		if len(first) >= n {
			break
		}
		got, err := rs.CellProblems(ctx, info.RunID, c.domain, c.level, n-len(first))
		if err != nil {
			return nil, 0, err
		}
		first = append(first, got...)
	}
	return first, total, nil
}
