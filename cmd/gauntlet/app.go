package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/evaluators/jsonschema"
	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/evaluators/trajectory"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/mcptool"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// app is the application that serve and run share, built once by openApp
// from the settings: the commands differ only in what they do with it
// (serve puts the HTTP API in front of it, run starts one run and writes a
// report).
type app struct {
	settings settings
	log      *slog.Logger
	db       *store.DB
	registry *harness.Registry
	plugins  *host.Manager
	// mcpTools answers the calls of tools with an MCP server.
	mcpTools *mcptool.Manager
	catalog  *catalog.Catalog
	// loaded is the definitions' sync at start-up: counts and the files
	// that did not load, which each command reports its own way.
	loaded *catalog.SyncResult
	model  *llm.Router
	runs   *runs.Store
	// lease is the process's lease on the store: the runs it starts are
	// its own, and no other process marks them interrupted while it lives.
	lease  *runs.Lease
	engine *engine.Engine
	// agents is nil unless appOptions.agents was set.
	agents *agent.Service
	// queue is the job queue of a server on PostgreSQL, nil otherwise.
	queue *riverexec.Queue

	closers []func() // in the order opened; Close runs them backwards
}

// appOptions are what the commands building an app choose beyond the
// settings.
type appOptions struct {
	// log receives the application's log lines (required).
	log *slog.Logger
	// definitionsMustExist makes a missing --definitions directory an
	// error instead of an empty directory to create: a mistyped path given
	// to a one-off run must not look like a suite with no tests.
	definitionsMustExist bool
	// onEvent, when set, sees every event of every run (run's progress).
	onEvent func(engine.Event)
	// agents opens the agent service. It takes over the channels of the
	// database (the ones recorded running are marked stopped, for Resume),
	// which one process at a time should do: the server.
	agents bool
	// evalAgents opens the agent service for evaluations only (runs that
	// target an agent): the channel records and the knowledge-base
	// directories are left as they are, since a server may be running
	// them. Ignored with agents.
	evalAgents bool
	// queue, with a PostgreSQL database, sends runs' tests to the job
	// queue (the server); false keeps them in process.
	queue bool
	// kind is what the process is, recorded in its lease: runs.KindServe
	// or runs.KindRun ("" means run).
	kind string
	// noDefinitions opens no definitions directory: for a resume, which
	// runs the definitions the run stored. The app's catalog is then nil.
	noDefinitions bool
}

// openApp opens the database, links in the built-in evaluators and
// channels and the plugins, loads the definitions, and builds the model
// client, the run store, the engine and, when asked, the agent service.
// On error everything opened so far is closed again. The caller closes
// the app.
func openApp(ctx context.Context, s settings, opts appOptions) (_ *app, err error) {
	a := &app{settings: s, log: opts.log}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.db, err = store.Open(ctx, s.databaseURL()); err != nil {
		return nil, err
	}
	a.onClose(func() { a.db.Close() })
	if a.registry, err = newRegistry(a.log); err != nil {
		return nil, err
	}
	if err := a.openMCPTools(); err != nil {
		return nil, err
	}
	if a.plugins, err = openPlugins(s.plugins, s.pluginSums, s.pluginTimeout, a.registry, a.log); err != nil {
		return nil, err
	}
	a.onClose(func() { a.plugins.Close() })
	var definitions engine.Definitions = noDefinitions{}
	defsDir := ""
	if opts.noDefinitions {
		a.loaded = &catalog.SyncResult{Errors: []catalog.FileError{}}
	} else {
		a.catalog, a.loaded, err = catalog.Open(ctx, catalog.Options{Dir: s.definitions, DB: a.db, Registry: a.registry,
			MustExist: opts.definitionsMustExist})
		if err != nil {
			return nil, err
		}
		definitions = a.catalog
		if defsDir, err = filepath.Abs(s.definitions); err != nil {
			defsDir = s.definitions
		}
	}
	if a.model, err = s.modelClient(); err != nil {
		return nil, err
	}
	if a.runs, err = runs.Open(ctx, a.db); err != nil {
		return nil, err
	}
	kind := cmp.Or(opts.kind, runs.KindRun)
	if a.lease, err = a.runs.Lease(ctx, runs.LeaseOptions{Kind: kind, Command: commandName(kind),
		Definitions: defsDir, Logger: a.log}); err != nil {
		return nil, err
	}
	a.onClose(func() {
		if err := a.lease.Close(); err != nil {
			a.log.Warn("end the process lease", slog.Any("error", err))
		}
	})
	if opts.agents || opts.evalAgents {
		if err := a.openAgents(ctx, opts.agents); err != nil {
			return nil, err
		}
	}
	eo := s.engineOptions()
	eo.Definitions, eo.Runs, eo.Client, eo.Registry, eo.Logger, eo.OnEvent = definitions, a.runs, a.model, a.registry, a.log, opts.onEvent
	if a.agents != nil {
		eo.Agents = a.agents // runs may evaluate an agent
	}
	if opts.queue && isPostgres(s.databaseURL()) {
		a.queue, err = riverexec.Open(ctx, riverexec.Options{URL: s.databaseURL(), DB: a.db, Concurrency: s.concurrency,
			RescueAfter: s.rescueAfter, MaxAttempts: s.jobAttempts, Server: true, Logger: a.log})
		if err != nil {
			return nil, err
		}
		a.onClose(func() { a.queue.Close() })
		eo.Queue, eo.NoLocalWork = a.queue, s.noLocalWorker
	}
	if a.engine, err = engine.New(ctx, eo); err != nil {
		return nil, err
	}
	if a.queue != nil && !s.noLocalWorker {
		if err := a.queue.Work(ctx, a.engine); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// openAgents opens the agent service on the app's database, model, tools
// and channel types. The process that owns the agents (owner: the server)
// first removes what interrupted knowledge-base writes left, and takes
// over the channel records; one that only evaluates them touches neither.
func (a *app) openAgents(ctx context.Context, owner bool) error {
	if owner {
		// A knowledge-base write cut short by a crash leaves a temporary file.
		if removed, err := kb.RemoveStaleTemp(filepath.Join(a.settings.data, "kb")); err != nil {
			a.log.Warn("clean knowledge bases", slog.Any("error", err))
		} else if len(removed) > 0 {
			a.log.Info("removed temporary files of interrupted knowledge-base writes", slog.Int("files", len(removed)))
		}
	}
	embedder, err := a.settings.embedder()
	if err != nil {
		return err
	}
	ao := agent.Options{
		DB: a.db, DataDir: a.settings.data, Registry: a.registry, Client: a.model,
		Model: a.settings.llmModel, Logger: a.log, LeaveChannels: !owner, EmbeddingModel: a.settings.embeddingModel,
	}
	if embedder != nil {
		ao.Embedder = embedder
	}
	if a.catalog != nil {
		ao.Tools = a.catalog
	}
	agents, err := agent.Open(ctx, ao)
	if err != nil {
		return err
	}
	if owner {
		// A changed embedding model re-embeds every knowledge base in the
		// background, without waiting for each agent's next chat.
		if err := agents.EmbedAll(ctx); err != nil {
			a.log.Warn("queue knowledge-base embeddings", slog.Any("error", err))
		}
	}
	a.agents = agents
	a.onClose(agents.Close)
	if a.catalog == nil {
		return nil
	}
	// A tool an agent lists is in use: the catalog refuses to delete it.
	a.catalog.AddToolUsers(func(ctx context.Context, toolID string) ([]string, error) {
		ids, err := agents.ToolUsers(ctx, toolID)
		for i := range ids {
			ids[i] = "agent " + ids[i]
		}
		return ids, err
	})
	return nil
}

func (a *app) onClose(f func()) { a.closers = append(a.closers, f) }

// commandName is the command a process of this kind runs, as its lease
// records it: the program and its subcommand, never the flags (they may
// hold secrets).
func commandName(kind string) string {
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		return "gauntlet " + os.Args[1]
	}
	return "gauntlet " + kind
}

// Close closes what openApp opened, the last opened first: the agent
// service (its channels stop), the plugin processes, the database. It
// does not stop a run in progress; a second call does nothing.
func (a *app) Close() {
	closers := a.closers
	a.closers = nil
	for _, f := range slices.Backward(closers) {
		f()
	}
}

// newRegistry links in the first-party evaluators and channel types: only
// the binary decides what is built in.
func newRegistry(log *slog.Logger) (*harness.Registry, error) {
	reg := harness.NewRegistry()
	for _, err := range []error{
		reg.RegisterEvaluator(judge.Type, judge.New(judge.Options{Logger: log})),
		reg.RegisterEvaluator(jsonschema.Type, jsonschema.New(jsonschema.Options{})),
		jsonschema.RegisterExpectedType(reg),
		judge.RegisterExpectedType(reg),
		reg.RegisterEvaluator(trajectory.Type, trajectory.New()),
		trajectory.RegisterExpectedType(reg),
		reg.RegisterChannel("telegram", telegram.New(telegram.Options{Logger: log})),
		reg.RegisterChannel("webhook", webhook.New(webhook.Options{Logger: log})),
	} {
		if err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// openPlugins discovers the plugins directory and registers every plugin
// beside the built-ins; a plugin whose name a built-in already has is
// logged and left out. Processes start on first use; each call to one is
// bounded by callTimeout (0: the default).
func openPlugins(dir, sums string, callTimeout time.Duration, reg *harness.Registry, log *slog.Logger) (*host.Manager, error) {
	checksums := map[string]string{}
	for _, pair := range strings.Split(sums, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		name, sum, ok := strings.Cut(pair, "=")
		if !ok || name == "" || sum == "" {
			return nil, fmt.Errorf("--plugin-sha256: %q is not name=hex", pair)
		}
		checksums[name] = sum
	}
	m, err := host.New(host.Options{Dir: dir, Checksums: checksums, CallTimeout: callTimeout, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := m.Register(reg); err != nil {
		log.Warn("some plugins were not registered", slog.Any("error", err))
	}
	return m, nil
}
