package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// isPostgres reports whether a database URL names PostgreSQL.
func isPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// workerCmd is "gauntlet worker": it executes the tests of the runs a
// server sharing the PostgreSQL database started, until ctx ends.
func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseSettings("gauntlet worker", args, stderr, appSettings)
	if s == nil {
		return err
	}
	if !isPostgres(s.database) {
		return fmt.Errorf("gauntlet worker needs --database postgres://… (GAUNTLET_DATABASE), the database its server uses")
	}
	level := slog.LevelInfo
	if s.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	db, err := store.Open(ctx, s.database)
	if err != nil {
		return err
	}
	defer db.Close()
	reg, err := newRegistry(log)
	if err != nil {
		return err
	}
	mcpTools, err := newMCPTools(s, reg, log)
	if err != nil {
		return err
	}
	defer mcpTools.Close()
	plugins, err := openPlugins(s.plugins, s.pluginSums, s.pluginTimeout, reg, log)
	if err != nil {
		return err
	}
	defer plugins.Close()
	model, err := s.modelClient()
	if err != nil {
		return err
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		return err
	}
	lease, err := rs.Lease(ctx, runs.LeaseOptions{Kind: runs.KindWorker, Command: "gauntlet worker", Logger: log})
	if err != nil {
		return err
	}
	defer lease.Close()
	eo := s.engineOptions()
	eo.Definitions, eo.Runs, eo.Client, eo.Registry, eo.Logger, eo.Worker = noDefinitions{}, rs, model, reg, log, true
	eo.LogDir = ""
	e, err := engine.New(ctx, eo)
	if err != nil {
		return err
	}
	queue, err := riverexec.Open(ctx, riverexec.Options{URL: s.database, DB: db, Concurrency: s.concurrency,
		RescueAfter: s.rescueAfter, Logger: log})
	if err != nil {
		return err
	}
	defer queue.Close()
	if err := queue.Work(ctx, e); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Gauntlet worker: executing tests, %d at once, model endpoint %s\n", s.concurrency, harness.RedactURL(s.llmBaseURL))
	log.Info("worker started", slog.Int("concurrency", s.concurrency), slog.Duration("rescue_after", s.rescueAfter))
	<-ctx.Done()
	log.Info("worker stopping: the jobs in flight are left for another worker")
	return nil
}

// noDefinitions is a worker engine's Definitions: a worker reads each
// run's definitions from the run's stored copy, never from files.
type noDefinitions struct{}

func (noDefinitions) Export(context.Context) (*harness.Snapshot, error) {
	return nil, fmt.Errorf("a worker starts no run: %w", harness.ErrInvalid)
}
