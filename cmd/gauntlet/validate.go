package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
)

// errInvalidDefinitions makes the process exit with status 1: gauntlet
// validate found files that do not load. The files were listed already.
var errInvalidDefinitions = errors.New("definition files have errors")

// validateCmd is "gauntlet validate": it reads every definition file as
// the server's sync does, without a database and without changing
// anything, and prints each error as "file:line: message". It exits 1 when
// there is any, 0 with "N files OK" otherwise, and 2 when the directory
// cannot be read at all.
func validateCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gauntlet validate [--definitions DIR] [--plugins DIR]\n\n"+
			"Checks every definition file: unknown keys, YAML errors, invalid values and references.\n"+
			"Prints each error as file:line: message; exits 1 when there is any.")
		fs.PrintDefaults()
	}
	dir := fs.String("definitions", env("GAUNTLET_DEFINITIONS", "./definitions"), "definition files to check (GAUNTLET_DEFINITIONS)")
	plugins := fs.String("plugins", env("GAUNTLET_PLUGINS", "./plugins"), "directory scanned for plugin executables, whose evaluator types the files may use (GAUNTLET_PLUGINS)")
	sums := fs.String("plugin-sha256", env("GAUNTLET_PLUGIN_SHA256", ""), "pin plugin executables: name=hex,name=hex (GAUNTLET_PLUGIN_SHA256)")
	if err := parseFlags(fs, args, stderr, "give the directory with --definitions"); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg, err := newRegistry(log)
	if err != nil {
		return err
	}
	pm, err := openPlugins(*plugins, *sums, 0, reg, log)
	if err != nil {
		return err
	}
	defer pm.Close()
	res, err := catalog.Check(*dir, reg)
	if err != nil {
		return err
	}
	if len(res.Errors) == 0 {
		fmt.Fprintf(stdout, "%d files OK\n", res.Files)
		return nil
	}
	bad := map[string]bool{}
	for _, fe := range res.Errors {
		bad[fe.File] = true
		// The path as given, so that an editor or CI log links to it.
		fe.File = filepath.Join(*dir, filepath.FromSlash(fe.File))
		fmt.Fprintln(stdout, fe.String())
	}
	fmt.Fprintf(stdout, "%d %s in %d of %d files\n", len(res.Errors), plural(len(res.Errors), "error", "errors"), len(bad), res.Files)
	return errInvalidDefinitions
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// checkLoadErrors prints the definition files that did not load, and
// returns an error (exit status 2) when one belongs to a domain the run
// covers: its domain.yaml or one of its level files. A run must not pass
// in CI over tests that were silently left out. The files of other domains
// are warnings. selected are the --domains (none: every enabled domain; a
// domain whose domain.yaml did not load may be enabled, so it counts).
// A resumed run uses its own stored definitions: every file is a warning.
func checkLoadErrors(ctx context.Context, cat *catalog.Catalog, res *catalog.SyncResult, dir string, selected []string, resume bool, stderr io.Writer) error {
	if len(res.Errors) == 0 {
		return nil
	}
	all := len(selected) == 0
	sel := map[string]bool{}
	for _, id := range selected {
		sel[id] = true
	}
	domains, err := cat.Domains(ctx)
	if err != nil {
		return err
	}
	loaded := map[string]bool{}
	for _, d := range domains {
		loaded[d.ID] = true
		if all && d.Enabled {
			sel[d.ID] = true
		}
	}
	blocking := 0
	for _, fe := range res.Errors {
		id, ok := domainOfFile(fe.File)
		fe.File = filepath.Join(dir, filepath.FromSlash(fe.File))
		if ok && !resume && (sel[id] || (all && !loaded[id])) {
			blocking++
			fmt.Fprintf(stderr, "error: %s\n", fe)
		} else {
			fmt.Fprintf(stderr, "warning: not loaded: %s\n", fe)
		}
	}
	if blocking > 0 {
		return fmt.Errorf("%d %s of the selected domains did not load: fix %s (gauntlet validate lists every error) or leave the domain out with --domains",
			blocking, plural(blocking, "definition file error", "definition file errors"), plural(blocking, "it", "them"))
	}
	return nil
}

// domainOfFile returns the domain id of a file under domains/<id>/.
func domainOfFile(rel string) (string, bool) {
	rest, ok := strings.CutPrefix(rel, "domains/")
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "/")
	return id, ok && id != ""
}
