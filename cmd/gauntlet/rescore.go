package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// rescoreCmd is "gauntlet rescore RUN_ID": it scores the stored responses
// of a run again, with today's evaluators and expected answers, into a
// new run, as POST /api/run/{run_id}/rescore does, asking no model but a
// judge; then it prints the new run's report as gauntlet run does.
func rescoreCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		s         settings
		format    string
		output    string
		modelName string
		minScore  float64
	)
	fs := flag.NewFlagSet("gauntlet rescore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gauntlet rescore RUN_ID [flags]\n\n"+
			"Scores the stored responses of run RUN_ID again, with today's evaluators and\n"+
			"expected answers, into a new run. No model is asked, except a judge. Exits 1\n"+
			"as gauntlet run does: below --min-score, or when the new run is not complete.")
		fs.PrintDefaults()
	}
	if err := s.register(fs, appSettings); err != nil {
		return err
	}
	fs.StringVar(&format, "format", "text", "report format: text, json or junit")
	fs.StringVar(&output, "output", "", "write the report to this file instead of stdout")
	fs.StringVar(&modelName, "model-name", "", "label of the new run (default: the source run's)")
	fs.Float64Var(&minScore, "min-score", 0, "exit with status 1 when the overall score is below this (0-1)")
	ids, err := parseArgs(fs, args, 1, stderr, "give one run id")
	if errors.Is(err, errHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if len(ids) != 1 {
		fmt.Fprintln(stderr, "gauntlet rescore: want the id of the run to rescore")
		fs.Usage()
		return errUsage
	}
	if err := s.check(); err != nil {
		return err
	}
	switch format {
	case "text", "json", "junit":
	default:
		return fmt.Errorf("--format must be text, json or junit, not %q", format)
	}
	if minScore < 0 || minScore > 1 {
		return fmt.Errorf("--min-score must be between 0 and 1, not %v", minScore)
	}

	progress := newProgress(stderr)
	a, err := openApp(ctx, s, appOptions{
		log:                  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		definitionsMustExist: true,
	})
	if err != nil {
		return err
	}
	defer a.Close()
	stopped := context.AfterFunc(ctx, func() {
		fmt.Fprintln(stderr, "\ninterrupted: stopping the rescore (finished results are kept)")
	})
	defer stopped()
	// Run stops the rescore when ctx ends, and returns its final info.
	info, err := a.engine.Run(ctx, engine.StartRequest{RescoreFrom: ids[0], ModelName: modelName, OnEvent: progress.event})
	if info.RunID == "" {
		return err
	}
	progress.finish()
	fmt.Fprintf(stderr, "run %s rescored run %s\n", info.RunID, info.RescoredFrom)
	return writeReport(a.runs, info, format, output, minScore, stdout, stderr)
}

// writeReport writes the report of a finished run, as gauntlet run does,
// and returns its verdict (an error wrapping errGateFailed when the gate
// fails).
func writeReport(rs *runs.Store, info runs.Info, format, output string, minScore float64, stdout, stderr io.Writer) error {
	rep, err := loadReport(rs, info, minScore)
	if err != nil {
		return err
	}
	out, closeOut, err := outputFile(output, stdout)
	if err != nil {
		return err
	}
	if err := errors.Join(rep.write(out, format), closeOut()); err != nil {
		return err
	}
	if output != "" && format != "text" {
		rep.writeText(stderr)
	}
	return rep.verdict.err()
}

// loadReport reads a finished run's matrix from the store and makes its
// report, with the gate of minScore. The report reads the run's results
// from the store as it is written, a page at a time.
func loadReport(rs *runs.Store, info runs.Info, minScore float64) (*report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	matrix, err := rs.Matrix(ctx, info.RunID)
	if err != nil {
		return nil, err
	}
	src := func(fn func(runs.Result) error) error {
		return rs.EachResultByCell(context.Background(), info.RunID, fn)
	}
	samples := func(fn func(runs.Result) error) error {
		return rs.EachSampleByCell(context.Background(), info.RunID, fn)
	}
	failures := func(n int) ([]runs.Result, int, error) { return storedProblems(rs, info, matrix, n) }
	return newSourceReport(info, matrix, src, samples, failures, minScore)
}
