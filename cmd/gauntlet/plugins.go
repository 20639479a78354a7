package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
)

// pluginsCmd is "gauntlet plugins": what the plugins directory holds, each
// plugin started once to learn its version and check it answers.
func pluginsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet plugins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("plugins", env("GAUNTLET_PLUGINS", "./plugins"), "directory scanned for plugin executables (GAUNTLET_PLUGINS)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := parseFlags(fs, args, stderr, "give the directory with --plugins"); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	m, err := host.New(host.Options{Dir: *dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer m.Close()
	for _, p := range m.List() {
		m.Start(ctx, p.Name) // health and version; a failure shows in the list
	}
	list := m.List()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	if len(list) == 0 {
		fmt.Fprintf(stdout, "no plugins in %s (names: gauntlet-evaluator-<type>, gauntlet-channel-<type>, gauntlet-tool-<name>)\n", *dir)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tTYPE\tVERSION\tHEALTH\tERROR")
	for _, p := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Kind, p.Type, p.Version, p.Health, p.LastError)
	}
	return tw.Flush()
}
