package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gauntlet-eval/gauntlet/harness/compare"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// errRegression makes the process exit with status 1: compare
// --fail-on-regression found a cell whose score went down significantly.
var errRegression = fmt.Errorf("a cell regressed significantly: %w", errGateFailed)

// compareCmd is "gauntlet compare BASE HEAD [HEAD...]": it compares two
// stored runs test by test, as GET /api/compare does, and prints per
// domain and level the change of score and whether it is significant, the
// tests that flipped and a summary. With several heads it compares each
// with BASE and prints one table of them all, as a model sweep does.
func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gauntlet compare BASE HEAD [HEAD...] [flags]\n\n"+
			"Compares run HEAD with run BASE, test by test, in the database; with several\n"+
			"HEADs, each with BASE in one table. Exits 1 with --fail-on-regression when a\n"+
			"domain and level got significantly worse.")
		fs.PrintDefaults()
	}
	var (
		s      settings
		format string
		fail   bool
	)
	fs.BoolVar(&fail, "fail-on-regression", false, "exit 1 when a cell's score went down significantly")
	fs.StringVar(&format, "format", "text", "text or json")
	fs.StringVar(&s.data, "data", env("GAUNTLET_DATA", "./data"), "data directory holding the database (GAUNTLET_DATA)")
	fs.StringVar(&s.database, "database", env("GAUNTLET_DATABASE", ""), "database URL (GAUNTLET_DATABASE; default sqlite://<data>/gauntlet.db)")
	ids, err := parseArgs(fs, args, -1, stderr, "")
	if errors.Is(err, errHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if len(ids) < 2 {
		fmt.Fprintf(stderr, "gauntlet compare: want at least two run ids, BASE and HEAD, not %d\n", len(ids))
		fs.Usage()
		return errUsage
	}
	if format != "text" && format != "json" {
		fmt.Fprintf(stderr, "gauntlet compare: --format must be text or json, not %q\n", format)
		return errUsage
	}
	if s.database == "" {
		// Reading must not leave an empty database in a mistyped --data.
		if _, err := os.Stat(filepath.Join(s.data, "gauntlet.db")); err != nil {
			return fmt.Errorf("no database in %s (--data): %w", s.data, err)
		}
	}
	db, err := store.Open(ctx, s.databaseURL())
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := runs.Open(ctx, db)
	if err != nil {
		return err
	}
	if len(ids) > 2 {
		return compareMany(ctx, st, ids, format, fail, stdout)
	}
	rep, err := compare.Load(ctx, st, ids[0], ids[1])
	if err != nil {
		return err
	}
	var infos [2]runs.Info
	var figures [2]compare.Figures
	for i, id := range ids {
		if infos[i], err = st.Run(ctx, id); err != nil {
			return err
		}
		// The samples of a run, a page at a time: a huge run's results are
		// never in memory at once.
		each := func(fn func(runs.Result) error) error { return st.EachSampleByCell(ctx, id, fn) }
		if figures[i], err = compare.RunFigures(infos[i], each); err != nil {
			return err
		}
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(comparisonJSON{rep, []comparedRun{{ids[0], infos[0].ModelName, infos[0].Model, infos[0].OverallScore, figures[0]},
			{ids[1], infos[1].ModelName, infos[1].Model, infos[1].OverallScore, figures[1]}}}); err != nil {
			return err
		}
	} else {
		if err := writeComparison(stdout, rep, infos, figures); err != nil {
			return err
		}
	}
	if fail && rep.Regressed() {
		return errRegression
	}
	return nil
}

// compareMany compares runs ids[1:] with ids[0] and prints one table (or
// the JSON of compare.ManyReport).
func compareMany(ctx context.Context, st *runs.Store, ids []string, format string, fail bool, stdout io.Writer) error {
	rep, err := compare.Many(ctx, st, ids[0], ids[1:]...)
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeMany(stdout, rep)
	}
	if err != nil {
		return err
	}
	if fail && rep.Regressed() {
		return errRegression
	}
	return nil
}

// comparisonJSON is what gauntlet compare BASE HEAD --format json writes:
// the comparison as GET /api/compare answers it, and the two runs side by
// side (base first) with their score interval, cost and latency.
type comparisonJSON struct {
	*compare.Report
	Runs []comparedRun `json:"runs"`
}

// comparedRun is one run of a two-run comparison's JSON.
type comparedRun struct {
	RunID        string   `json:"run_id"`
	ModelName    string   `json:"model_name"`
	Model        string   `json:"model"`
	OverallScore *float64 `json:"overall_score"`
	compare.Figures
}

// writeComparison prints a comparison as text: the two runs side by side
// (score, interval, cost, latency), a table of the cells, the flipped
// tests and the summary.
func writeComparison(w io.Writer, rep *compare.Report, infos [2]runs.Info, figures [2]compare.Figures) error {
	base, head := infos[0], infos[1]
	fmt.Fprintf(w, "base %s (%s, %s)\nhead %s (%s, %s)\n", base.RunID, base.ModelName, base.Status, head.RunID, head.ModelName, head.Status)
	for _, in := range []runs.Info{base, head} {
		if in.Status == runs.StatusRunning {
			fmt.Fprintf(w, "run %s is still running: the comparison covers the tests it finished so far\n", in.RunID)
		}
	}
	if err := writeFigures(w, []figureRow{{"base " + oneLine(base.ModelName, 40), base.OverallScore, figures[0]},
		{"head " + oneLine(head.ModelName, 40), head.OverallScore, figures[1]}}); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DOMAIN\tLEVEL\tTESTS\tBASE\tHEAD\tDELTA\t95% CI\tP\t")
	for _, d := range rep.Domains() {
		for _, l := range rep.Levels(d) {
			c := rep.Cells[d][l]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%+.3f\t[%+.3f, %+.3f]\t%s\t%s\n", d, l, c.Tests, c.BaseScore, c.HeadScore,
				c.Delta, c.CI95.Low, c.CI95.High, pValue(c.PValue), marker(c))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeTable(w, &table)
	if err := writeRetrievalChange(w, rep); err != nil {
		return err
	}
	if len(rep.Flipped) > 0 {
		fmt.Fprintf(w, "\nflipped tests (%d):\n", len(rep.Flipped))
		repeats := hasRepeats(rep.Flipped)
		for _, f := range rep.Flipped {
			writeFlip(w, f, repeats)
		}
	}
	s := rep.Summary
	_, err := fmt.Fprintf(w, "\n%d tests improved, %d regressed, %d unchanged; %s significantly worse, %s significantly better\n",
		s.Improved, s.Regressed, s.Unchanged, cells(s.SignificantRegressions), cells(s.SignificantImprovements))
	return err
}

// writeTable writes a tabwriter's output without the padding of an empty
// last column.
func writeTable(w io.Writer, table *bytes.Buffer) {
	for line := range strings.Lines(table.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

// writeRetrievalChange prints, when the runs target agents and some of
// their tests name expected sources, how retrieval changed in each cell:
// recall@k and hit rate over the tests that measured it in both runs.
func writeRetrievalChange(w io.Writer, rep *compare.Report) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	found := false
	for _, d := range rep.Domains() {
		for _, l := range rep.Levels(d) {
			r := rep.Cells[d][l].Retrieval
			if r == nil {
				continue
			}
			if !found {
				fmt.Fprintf(tw, "DOMAIN\tLEVEL\tTESTS\tBASE R@%d\tHEAD R@%d\tDELTA\tBASE HITS\tHEAD HITS\t\n", runs.RetrievalK, runs.RetrievalK)
				found = true
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%+.3f\t%.3f\t%.3f\t\n", d, l, r.Tests, r.BaseRecallAtK, r.HeadRecallAtK,
				r.Delta, r.BaseHitRate, r.HeadHitRate)
		}
	}
	if !found {
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nretrieval (tests naming expected sources, measured in both runs):")
	writeTable(w, &table)
	return nil
}

// writeManyRetrieval prints, when some run's cells measured an agent's
// retrieval against the base's, a table of each cell's recall@k in the
// base and in each later run ("0.25 -> 1.00 (+0.750, 4 tests)"), over the tests
// that measured it in both.
func writeManyRetrieval(w io.Writer, rep *compare.ManyReport, labels []string) error {
	found := false
	for _, d := range rep.Domains() {
		for _, l := range rep.Levels(d) {
			for _, c := range rep.Cells[d][l] {
				found = found || c.VsBase != nil && c.VsBase.Retrieval != nil
			}
		}
	}
	if !found {
		return nil
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "DOMAIN\tLEVEL")
	for _, l := range labels[1:] {
		fmt.Fprintf(tw, "\tR@%d %s vs %s", runs.RetrievalK, l, labels[0])
	}
	fmt.Fprintln(tw, "\t")
	for _, d := range rep.Domains() {
		for _, l := range rep.Levels(d) {
			fmt.Fprintf(tw, "%s\t%d", oneLine(d, 80), l)
			for _, c := range rep.Cells[d][l][1:] {
				text := ""
				if c.VsBase != nil && c.VsBase.Retrieval != nil {
					r := c.VsBase.Retrieval
					text = fmt.Sprintf("%.2f -> %.2f (%+.3f, %d tests)", r.BaseRecallAtK, r.HeadRecallAtK, r.Delta, r.Tests)
				}
				fmt.Fprintf(tw, "\t%s", text)
			}
			fmt.Fprintln(tw, "\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nretrieval (tests naming expected sources, measured in both runs):")
	writeTable(w, &table)
	return nil
}

// pValue formats a p-value: 4 decimals, or "<0.0001".
func pValue(p float64) string {
	if p < 0.0001 {
		return "<0.0001"
	}
	return strconv.FormatFloat(p, 'f', 4, 64)
}

// marker says whether a cell's change is significant, and which way.
func marker(c compare.Cell) string {
	switch {
	case c.SignificantRegression():
		return "* worse"
	case c.SignificantImprovement():
		return "* better"
	}
	return ""
}

// cells is "1 cell" or "n cells".
func cells(n int) string {
	if n == 1 {
		return "1 cell"
	}
	return strconv.Itoa(n) + " cells"
}

// Markers of a significant change in the N-run table.
const (
	markBetter = "★"
	markWorse  = "⚠"
)

// writeMany prints the comparison of several runs with the first: a table
// with a row per domain and level and, per run, its score with its 95 %
// interval and, for each run after the first, the change from the first
// (over the tests both scored) with its p-value and a marker when it is
// significant; then the runs side by side, a row each with its overall
// score and interval, cost per 1,000 tests, median latency, cost and
// tokens; then a line per run with its overall score and the cells
// that changed significantly, the tests that flipped, and how many
// significant marks chance alone would give.
func writeMany(w io.Writer, rep *compare.ManyReport) error {
	labels := manyLabels(rep)
	for i, r := range rep.Runs {
		if r.Status == runs.StatusRunning {
			fmt.Fprintf(w, "run %s (%s) is still running: the comparison covers the tests it finished so far\n", r.RunID, labels[i])
		}
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "DOMAIN\tLEVEL")
	for i, l := range labels {
		fmt.Fprintf(tw, "\t%s", l)
		if i > 0 {
			fmt.Fprintf(tw, "\tΔ %s", l)
		}
	}
	fmt.Fprintln(tw, "\t")
	compared := 0
	for _, d := range rep.Domains() {
		for _, l := range rep.Levels(d) {
			fmt.Fprintf(tw, "%s\t%d", oneLine(d, 80), l)
			for i, c := range rep.Cells[d][l] {
				fmt.Fprintf(tw, "\t%s", runCellText(c))
				if i == 0 {
					continue
				}
				delta := ""
				if v := c.VsBase; v != nil {
					compared++
					p := pValue(v.PValue)
					if !strings.HasPrefix(p, "<") {
						p = "=" + p
					}
					delta = fmt.Sprintf("%+.3f p%s", v.Delta, p)
					switch {
					case v.SignificantImprovement():
						delta += " " + markBetter
					case v.SignificantRegression():
						delta += " " + markWorse
					}
				}
				fmt.Fprintf(tw, "\t%s", delta)
			}
			fmt.Fprintln(tw, "\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	writeTable(w, &table)
	if err := writeManyRetrieval(w, rep, labels); err != nil {
		return err
	}

	rows := make([]figureRow, len(rep.Runs))
	for i, r := range rep.Runs {
		rows[i] = figureRow{labels[i], r.OverallScore, r.Figures}
	}
	if err := writeFigures(w, rows); err != nil {
		return err
	}

	base := labels[0]
	fmt.Fprintln(w)
	for i, r := range rep.Runs {
		fmt.Fprintf(w, "%s: run %s, %s, overall score %s", labels[i], r.RunID, r.Status, overall(r.OverallScore))
		switch {
		case i == 0:
			fmt.Fprintln(w, " (the base: every other run is compared with it)")
		case !r.Compared:
			fmt.Fprintf(w, "; shares no scored test with %s: not compared\n", base)
		default:
			s := r.Summary
			fmt.Fprintf(w, "; vs %s: %d tests better, %d worse, %d unchanged; significantly worse in %s, significantly better in %s\n",
				base, s.Improved, s.Regressed, s.Unchanged, cellList(rep, i, compare.Cell.SignificantRegression), cellList(rep, i, compare.Cell.SignificantImprovement))
		}
	}
	for i, r := range rep.Runs {
		if len(r.Flipped) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nflipped tests, %s vs %s (%d):\n", labels[i], base, len(r.Flipped))
		repeats := hasRepeats(r.Flipped)
		for j, f := range r.Flipped {
			if j == maxListed {
				fmt.Fprintf(w, "  ... and %d more (--format json lists them all)\n", len(r.Flipped)-maxListed)
				break
			}
			writeFlip(w, f, repeats)
		}
	}
	if compared > 0 {
		fmt.Fprintf(w, "\n%s significantly better, %s significantly worse than %s (p < 0.05). Of %s, about %.1f would be marked by chance alone if nothing had changed: weigh the size of a change and the flipped tests, and run again before trusting one mark.\n",
			markBetter, markWorse, base, strconv.Itoa(compared)+" "+plural(compared, "comparison", "comparisons"), float64(compared)*0.05)
	}
	return nil
}

// manyLabels names the runs of rep in the table: each run's label, with
// "#<position>" added to labels that several runs share.
func manyLabels(rep *compare.ManyReport) []string {
	count := map[string]int{}
	for _, r := range rep.Runs {
		count[r.ModelName]++
	}
	out := make([]string, len(rep.Runs))
	for i, r := range rep.Runs {
		out[i] = oneLine(r.ModelName, 40)
		if count[r.ModelName] > 1 {
			out[i] += "#" + strconv.Itoa(i+1)
		}
	}
	return out
}

// runCellText is a run's cell in the N-run table: score and interval, the
// cell's status when nothing was scored, "-" when the run has no such
// cell.
func runCellText(c compare.RunCell) string {
	switch {
	case c.Score != nil && c.CI95 != nil:
		return fmt.Sprintf("%.3f [%.2f, %.2f]", *c.Score, c.CI95.Low, c.CI95.High)
	case c.Score != nil:
		return fmt.Sprintf("%.3f", *c.Score)
	case c.Status != "":
		return c.Status
	}
	return "-"
}

// overall formats an overall score, "none" when nothing was scored.
func overall(s *float64) string {
	if s == nil {
		return "none"
	}
	return strconv.FormatFloat(*s, 'f', 3, 64)
}

// cellList lists the cells where run i's change from the base passes
// keep, as "domain/level, ...", or "no cell".
func cellList(rep *compare.ManyReport, i int, keep func(compare.Cell) bool) string {
	var out []string
	for _, d := range rep.Domains() {
		for _, l := range rep.Levels(d) {
			if v := rep.Cells[d][l][i].VsBase; v != nil && keep(*v) {
				out = append(out, fmt.Sprintf("%s/%d", oneLine(d, 80), l))
			}
		}
	}
	if len(out) == 0 {
		return "no cell"
	}
	return strings.Join(out, ", ")
}

// hasRepeats reports whether flips come from runs with repeats: then the
// same test may flip in several of its askings, and each line names one.
func hasRepeats(flips []compare.Flip) bool {
	return slices.ContainsFunc(flips, func(f compare.Flip) bool { return f.Repeat > 0 })
}

// writeFlip prints one flipped test: domain/level, the test (test#k with
// repeats) and how its status changed.
func writeFlip(w io.Writer, f compare.Flip, repeats bool) {
	id := oneLine(f.TestID, 120)
	if repeats {
		id += "#" + strconv.Itoa(f.Repeat)
	}
	fmt.Fprintf(w, "  %s/%d  %s  %s -> %s\n", oneLine(f.Domain, 80), f.Level, id, f.BaseStatus, f.HeadStatus)
}
