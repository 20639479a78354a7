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

// compareCmd is "gauntlet compare BASE HEAD": it compares two stored runs
// test by test, as GET /api/compare does, and prints per domain and level
// the change of score and whether it is significant, the tests that
// flipped and a summary.
func compareCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gauntlet compare BASE HEAD [flags]\n\n"+
			"Compares run HEAD with run BASE, test by test, in the database. Exits 1 with\n"+
			"--fail-on-regression when a domain and level got significantly worse.")
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
	if len(ids) != 2 {
		fmt.Fprintf(stderr, "gauntlet compare: want two run ids, BASE and HEAD, not %d\n", len(ids))
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
	rep, err := compare.Load(ctx, st, ids[0], ids[1])
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		var infos [2]runs.Info
		for i, id := range ids {
			if infos[i], err = st.Run(ctx, id); err != nil {
				return err
			}
		}
		if err := writeComparison(stdout, rep, infos[0], infos[1]); err != nil {
			return err
		}
	}
	if fail && rep.Regressed() {
		return errRegression
	}
	return nil
}

// writeComparison prints a comparison as text: a table of the cells, the
// flipped tests and the summary.
func writeComparison(w io.Writer, rep *compare.Report, base, head runs.Info) error {
	fmt.Fprintf(w, "base %s (%s, %s)\nhead %s (%s, %s)\n", base.RunID, base.ModelName, base.Status, head.RunID, head.ModelName, head.Status)
	for _, in := range []runs.Info{base, head} {
		if in.Status == runs.StatusRunning {
			fmt.Fprintf(w, "run %s is still running: the comparison covers the tests it finished so far\n", in.RunID)
		}
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
	for line := range strings.Lines(table.String()) {
		// The padding of an empty last column.
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	if len(rep.Flipped) > 0 {
		fmt.Fprintf(w, "\nflipped tests (%d):\n", len(rep.Flipped))
		// With repeats, the same asking of a test is paired: name it.
		repeats := slices.ContainsFunc(rep.Flipped, func(f compare.Flip) bool { return f.Repeat > 0 })
		for _, f := range rep.Flipped {
			id := f.TestID
			if repeats {
				id += "#" + strconv.Itoa(f.Repeat)
			}
			fmt.Fprintf(w, "  %s/%d  %s  %s -> %s\n", f.Domain, f.Level, id, f.BaseStatus, f.HeadStatus)
		}
	}
	s := rep.Summary
	_, err := fmt.Fprintf(w, "\n%d tests improved, %d regressed, %d unchanged; %s significantly worse, %s significantly better\n",
		s.Improved, s.Regressed, s.Unchanged, cells(s.SignificantRegressions), cells(s.SignificantImprovements))
	return err
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
