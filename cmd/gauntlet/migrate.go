package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// schemaComponents are the parts of the database with a schema of their
// own, in the order they are migrated, with the function that migrates
// each.
var schemaComponents = []struct {
	name    string
	migrate func(context.Context, *store.DB) error
}{
	{"catalog", catalog.Migrate},
	{"runs", runs.Migrate},
	{"agent", agent.Migrate},
}

// migrateCmd is "gauntlet migrate": it brings the database's schemas to
// this Gauntlet's versions, as serve does when it starts, and does
// nothing else; it prints each component's version before and after. A
// database that a newer Gauntlet migrated is refused, untouched.
func migrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gauntlet migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gauntlet migrate [--database URL | --data DIR]\n\n"+
			"Brings the database's tables to this Gauntlet's schema versions (serve does so\n"+
			"when it starts) and prints each component's version before and after. An empty\n"+
			"database gets every table.")
		fs.PrintDefaults()
	}
	var s settings
	fs.StringVar(&s.data, "data", env("GAUNTLET_DATA", "./data"), "data directory holding the SQLite database (GAUNTLET_DATA)")
	fs.StringVar(&s.database, "database", env("GAUNTLET_DATABASE", ""), "database URL: sqlite://FILE or postgres://user:password@host:port/database (GAUNTLET_DATABASE; default sqlite://<data>/gauntlet.db)")
	if err := parseFlags(fs, args, stderr, ""); errors.Is(err, errHelp) {
		return nil
	} else if err != nil {
		return err
	}
	db, err := store.Open(ctx, s.databaseURL())
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(stdout, "database %s\n", redactedURL(s.databaseURL()))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	for _, c := range schemaComponents {
		before, err := store.Version(ctx, db, c.name)
		if err != nil {
			return fmt.Errorf("read the %s schema version: %w", c.name, err)
		}
		if err := c.migrate(ctx, db); err != nil {
			return err
		}
		after, err := store.Version(ctx, db, c.name)
		if err != nil {
			return fmt.Errorf("read the %s schema version: %w", c.name, err)
		}
		note := "up to date"
		if after != before {
			note = fmt.Sprintf("migrated (%d step", after-before)
			if after-before > 1 {
				note += "s"
			}
			note += ")"
		}
		fmt.Fprintf(tw, "%s\t%d → %d\t%s\n", c.name, before, after, note)
	}
	return nil
}

// redactedURL is a database URL fit to print: its password hidden.
func redactedURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
