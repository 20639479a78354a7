package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/dataset"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// errRowsRefused makes the process exit with status 1: rows were refused
// and nothing was written. The rows were listed already.
var errRowsRefused = fmt.Errorf("rows refused, nothing written: %w", errInvalidDefinitions)

// importTestsCmd is "gauntlet import-tests FILE --domain D --level N": it
// creates tests from the rows of a JSONL or CSV file through the catalog,
// as POST /api/settings/tests/import does, and prints the counts and the
// refused rows.
func importTestsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet import-tests", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gauntlet import-tests FILE --domain D --level N [flags]\n\n"+
			"Creates tests in one level from the rows of a JSON Lines or CSV file (see examples/datasets).\n"+
			"When a row is refused, nothing is written (exit 1) unless --skip-invalid.")
		fs.PrintDefaults()
	}
	var (
		domain, format, preset, mapping, delim, typ string
		level                                       int
		skip                                        bool
		s                                           settings
	)
	fs.StringVar(&domain, "domain", "", "domain the tests go to; it must exist (required)")
	fs.IntVar(&level, "level", -1, "level the tests go to, 0 to 1000 (required)")
	fs.StringVar(&format, "format", "", "jsonl or csv (default from the file's extension)")
	fs.StringVar(&preset, "preset", "", "gsm8k or mmlu")
	fs.StringVar(&mapping, "map", "", "columns to read: prompt=question,answer=target,type=kind,id=key")
	fs.StringVar(&delim, "delimiter", "", `CSV field separator: one character such as ';', or "tab" (default ',')`)
	fs.StringVar(&typ, "type", "", "expected type of rows without a type column (default exact)")
	fs.BoolVar(&skip, "skip-invalid", false, "write the valid rows when some are refused")
	fs.StringVar(&s.definitions, "definitions", env("GAUNTLET_DEFINITIONS", "./definitions"), "definition files (GAUNTLET_DEFINITIONS)")
	fs.StringVar(&s.data, "data", env("GAUNTLET_DATA", "./data"), "data directory holding the database (GAUNTLET_DATA)")
	fs.StringVar(&s.database, "database", env("GAUNTLET_DATABASE", ""), "database URL (GAUNTLET_DATABASE; default sqlite://<data>/gauntlet.db)")
	fs.StringVar(&s.plugins, "plugins", env("GAUNTLET_PLUGINS", "./plugins"), "plugins whose expected types rows may use (GAUNTLET_PLUGINS)")
	fs.StringVar(&s.pluginSums, "plugin-sha256", env("GAUNTLET_PLUGIN_SHA256", ""), "pin plugin executables: name=hex,name=hex (GAUNTLET_PLUGIN_SHA256)")
	// FILE may come before, between or after the flags.
	files, err := parseArgs(fs, args, 1, stderr, "")
	if errors.Is(err, errHelp) {
		return nil
	} else if err != nil {
		return err
	}
	var file string
	if len(files) == 1 {
		file = files[0]
	}
	usageErr := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "gauntlet import-tests: "+format+"\n", a...)
		return errUsage
	}
	switch {
	case file == "":
		return usageErr("give the dataset file: gauntlet import-tests FILE --domain D --level N")
	case domain == "":
		return usageErr("--domain is required")
	case level < 0:
		return usageErr("--level is required")
	}
	if format == "" {
		switch strings.ToLower(filepath.Ext(file)) {
		case ".jsonl", ".ndjson":
			format = dataset.JSONL
		case ".csv", ".tsv":
			format = dataset.CSV
		default:
			return usageErr("cannot tell the format of %s: give --format jsonl or csv", file)
		}
		if strings.EqualFold(filepath.Ext(file), ".tsv") && delim == "" {
			delim = "tab"
		}
	}
	opts := dataset.Options{Format: format, Preset: preset, Delimiter: delim, Type: typ,
		DomainID: domain, Level: level, SkipInvalid: skip}
	if mapping != "" {
		for pair := range strings.SplitSeq(mapping, ",") {
			k, v, ok := strings.Cut(pair, "=")
			if !ok || v == "" {
				return usageErr("--map takes field=column pairs, such as prompt=question,answer=target")
			}
			switch strings.TrimSpace(k) {
			case "prompt":
				opts.Mapping.Prompt = v
			case "answer":
				opts.Mapping.Answer = v
			case "type":
				opts.Mapping.Type = v
			case "id":
				opts.Mapping.ID = v
			default:
				return usageErr("--map: unknown field %q (prompt, answer, type, id)", k)
			}
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := store.Open(ctx, s.databaseURL())
	if err != nil {
		return err
	}
	defer db.Close()
	reg, err := newRegistry(log)
	if err != nil {
		return err
	}
	pm, err := openPlugins(s.plugins, s.pluginSums, 0, reg, log)
	if err != nil {
		return err
	}
	defer pm.Close()
	cat, _, err := catalog.Open(ctx, catalog.Options{Dir: s.definitions, DB: db, Registry: reg, MustExist: true})
	if err != nil {
		return err
	}
	rep, err := dataset.Import(ctx, cat, f, opts)
	if err != nil {
		return err
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(stdout, "%s:%d: %s\n", file, e.Line, e.Error())
	}
	if !rep.Written {
		fmt.Fprintf(stdout, "%d of %d rows refused; nothing written (--skip-invalid writes the others)\n",
			rowsIn(rep.Errors), rep.Total)
		return errRowsRefused
	}
	fmt.Fprintf(stdout, "%d rows: %d created, %d updated, %d skipped (domain %s, level %d)\n",
		rep.Total, rep.Created, rep.Updated, rep.Skipped, domain, level)
	return nil
}

// rowsIn counts the rows row errors name.
func rowsIn(errs []dataset.RowError) int {
	rows := map[int]bool{}
	for _, e := range errs {
		rows[e.Row] = true
	}
	return len(rows)
}
