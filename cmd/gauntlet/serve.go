package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/channels/telegram"
	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/evaluators/jsonschema"
	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/server"
)

// settings are the server's settings, from flags and the environment
// (the README's configuration table).
type settings struct {
	addr        string
	data        string
	definitions string
	plugins     string
	database    string
	llmBaseURL  string
	llmModel    string
	llmAPIKey   string
	concurrency int
	llmTimeout  time.Duration
	llmRetries  int
	llmMaxBytes int64
	pluginSums  string
	apiToken    string
	debug       bool
	insecure    bool

	// pluginTimeout bounds one call to a plugin (--plugin-timeout).
	pluginTimeout time.Duration
}

// env returns the environment variable's value, or def when unset.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envBool(name string, def bool) (bool, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: not a boolean", name, v)
	}
	return b, nil
}

// debugFromOtherTools reads DEBUG when it is a boolean. Other tools set
// DEBUG to their own patterns (Node's debug module: DEBUG=express:*), which
// must neither stop the server nor turn debugging on: only GAUNTLET_DEBUG
// is ours.
func debugFromOtherTools() bool {
	b, err := strconv.ParseBool(os.Getenv("DEBUG"))
	return err == nil && b
}

func envInt(name string, def int) (int, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not an integer", name, v)
	}
	return n, nil
}

func envDuration(name string, def time.Duration) (time.Duration, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a duration such as 30s or 2m", name, v)
	}
	return d, nil
}

// secretFlag is a flag whose value is never printed: its default comes
// from the environment, and flag's usage shows a Value's default, so a
// plain string flag would print the secret on any usage error.
type secretFlag struct{ v *string }

func (f secretFlag) String() string { return "" }

func (f secretFlag) Set(v string) error {
	*f.v = v
	return nil
}

// commonFlags registers the settings shared by serve and run.
func commonFlags(fs *flag.FlagSet, s *settings) error {
	concurrency, err := envInt("GAUNTLET_CONCURRENCY", 8)
	if err != nil {
		return err
	}
	timeout, err := envDuration("LLM_TIMEOUT", engine.DefaultTimeout)
	if err != nil {
		return err
	}
	retries, err := envInt("LLM_RETRIES", engine.DefaultRetries)
	if err != nil {
		return err
	}
	maxBytes, err := envInt("LLM_MAX_RESPONSE_BYTES", llm.DefaultMaxResponseBytes)
	if err != nil {
		return err
	}
	debug, err := envBool("GAUNTLET_DEBUG", debugFromOtherTools())
	if err != nil {
		return err
	}
	pluginTimeout, err := envDuration("GAUNTLET_PLUGIN_TIMEOUT", host.DefaultCallTimeout)
	if err != nil {
		return err
	}
	fs.StringVar(&s.data, "data", env("GAUNTLET_DATA", "./data"), "SQLite database, run logs, knowledge-base files (GAUNTLET_DATA)")
	fs.StringVar(&s.definitions, "definitions", env("GAUNTLET_DEFINITIONS", "./definitions"), "definition files, the source of truth (GAUNTLET_DEFINITIONS)")
	fs.StringVar(&s.plugins, "plugins", env("GAUNTLET_PLUGINS", "./plugins"), "directory scanned for plugin executables (GAUNTLET_PLUGINS)")
	fs.StringVar(&s.database, "database", env("GAUNTLET_DATABASE", ""), "database URL (GAUNTLET_DATABASE; default sqlite://<data>/gauntlet.db)")
	fs.StringVar(&s.llmBaseURL, "llm-base-url", env("LLM_BASE_URL", "http://127.0.0.1:11434/v1"), "OpenAI-compatible endpoint (LLM_BASE_URL)")
	fs.StringVar(&s.llmModel, "llm-model", env("LLM_MODEL", "llama3.2"), "model name sent to the endpoint (LLM_MODEL)")
	s.llmAPIKey = env("LLM_API_KEY", "")
	fs.Var(secretFlag{&s.llmAPIKey}, "llm-api-key", "API key of the endpoint, never logged or returned (LLM_API_KEY)")
	fs.DurationVar(&s.llmTimeout, "llm-timeout", timeout, "bound of each model request, e.g. 30s (LLM_TIMEOUT)")
	fs.IntVar(&s.llmRetries, "llm-retries", retries, "retries of a failed model request; 0: none (LLM_RETRIES)")
	fs.Int64Var(&s.llmMaxBytes, "llm-max-response-bytes", int64(maxBytes), "largest model answer read; a larger one is an error (LLM_MAX_RESPONSE_BYTES)")
	fs.DurationVar(&s.pluginTimeout, "plugin-timeout", pluginTimeout, "bound of one call to a plugin (an evaluation, a tool call, a config check), e.g. 30s (GAUNTLET_PLUGIN_TIMEOUT)")
	fs.StringVar(&s.pluginSums, "plugin-sha256", env("GAUNTLET_PLUGIN_SHA256", ""), "pin plugin executables: name=hex,name=hex; a pinned plugin whose file differs is not started (GAUNTLET_PLUGIN_SHA256)")
	fs.IntVar(&s.concurrency, "concurrency", concurrency, "tests in flight at once within one run (GAUNTLET_CONCURRENCY)")
	fs.BoolVar(&s.debug, "debug", debug, "debug logging; reported by GET /api/config (GAUNTLET_DEBUG)")
	return nil
}

// logDir is where run log files go.
func logDir(data string) string { return filepath.Join(data, "logs") }

func (s *settings) databaseURL() string {
	if s.database != "" {
		return s.database
	}
	return "sqlite://" + filepath.Join(s.data, "gauntlet.db")
}

func (s *settings) check() error {
	if s.concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1, not %d", s.concurrency)
	}
	if s.llmTimeout <= 0 || s.llmTimeout > engine.MaxTimeout {
		return fmt.Errorf("--llm-timeout must be above 0 and at most %v, not %v", engine.MaxTimeout, s.llmTimeout)
	}
	if s.llmRetries < 0 || s.llmRetries > engine.MaxRetries {
		return fmt.Errorf("--llm-retries must be between 0 and %d, not %d", engine.MaxRetries, s.llmRetries)
	}
	if s.pluginTimeout <= 0 {
		return fmt.Errorf("--plugin-timeout must be above 0, not %v", s.pluginTimeout)
	}
	if s.llmMaxBytes < 1024 {
		return fmt.Errorf("--llm-max-response-bytes must be at least 1024, not %d", s.llmMaxBytes)
	}
	return nil
}

// modelClient returns the model client the settings describe.
func (s *settings) modelClient() (*llm.Client, error) {
	return llm.New(llm.Options{BaseURL: s.llmBaseURL, APIKey: s.llmAPIKey, Model: s.llmModel,
		Timeout: s.llmTimeout, MaxRetries: s.retries(), MaxResponseBytes: s.llmMaxBytes})
}

// engineOptions are the engine settings common to serve and run.
func (s *settings) engineOptions() engine.Options {
	return engine.Options{ModelName: s.llmModel, BaseURL: s.llmBaseURL, Concurrency: s.concurrency,
		Timeout: s.llmTimeout, Retries: s.retries(), Version: server.Version, LogDir: logDir(s.data)}
}

// retries is --llm-retries as the engine and the client read it: there 0
// means their default, and a negative number none.
func (s *settings) retries() int {
	if s.llmRetries == 0 {
		return -1
	}
	return s.llmRetries
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var s settings
	fs := flag.NewFlagSet("gauntlet serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := commonFlags(fs, &s); err != nil {
		return err
	}
	fs.StringVar(&s.addr, "addr", env("GAUNTLET_ADDR", "127.0.0.1:8080"), "listen address (GAUNTLET_ADDR)")
	s.apiToken = env("GAUNTLET_API_TOKEN", "")
	fs.Var(secretFlag{&s.apiToken}, "api-token", "when set, every /api/ request needs Authorization: Bearer <token> (GAUNTLET_API_TOKEN)")
	fs.BoolVar(&s.insecure, "insecure", false, "allow a non-loopback address without an API token")
	if err := parseFlags(fs, args, stderr, ""); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := checkExposure(s.addr, s.apiToken, s.insecure); err != nil {
		return err
	}

	level := slog.LevelInfo
	if s.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	db, err := store.Open(ctx, s.databaseURL())
	if err != nil {
		return err
	}
	defer db.Close()
	reg, err := newRegistry(log)
	if err != nil {
		return err
	}
	plugins, err := openPlugins(s.plugins, s.pluginSums, s.pluginTimeout, reg, log)
	if err != nil {
		return err
	}
	defer plugins.Close()
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: s.definitions, DB: db, Registry: reg})
	if err != nil {
		return err
	}
	for _, fe := range res.Errors {
		attrs := []any{slog.String("file", fe.File), slog.String("error", fe.Error)}
		if fe.Line > 0 {
			attrs = append(attrs, slog.Int("line", fe.Line))
		}
		if fe.Key != "" {
			attrs = append(attrs, slog.String("key", fe.Key))
		}
		log.Warn("definitions file not loaded", attrs...)
	}
	log.Info("definitions loaded", slog.String("dir", s.definitions),
		slog.Int("domains", res.Loaded.Domains), slog.Int("tests", res.Loaded.Tests),
		slog.Int("evaluators", res.Loaded.Evaluators), slog.Int("tools", res.Loaded.Tools))

	model, err := s.modelClient()
	if err != nil {
		return err
	}
	runStore, err := runs.Open(ctx, db)
	if err != nil {
		return err
	}
	eo := s.engineOptions()
	eo.Definitions, eo.Runs, eo.Model, eo.Registry, eo.Logger = cat, runStore, model, reg, log
	eng, err := engine.New(ctx, eo)
	if err != nil {
		return err
	}
	// A knowledge-base write cut short by a crash leaves a temporary file.
	if removed, err := agent.RemoveStaleKBTemp(s.data); err != nil {
		log.Warn("clean knowledge bases", slog.Any("error", err))
	} else if len(removed) > 0 {
		log.Info("removed temporary files of interrupted knowledge-base writes", slog.Int("files", len(removed)))
	}
	agents, err := agent.Open(ctx, agent.Options{
		DB: db, DataDir: s.data, Tools: cat, Registry: reg, Model: model, ModelName: s.llmModel, Logger: log,
	})
	if err != nil {
		return err
	}
	defer agents.Close()
	cat.AddToolUsers(func(ctx context.Context, toolID string) ([]string, error) {
		ids, err := agents.ToolUsers(ctx, toolID)
		for i := range ids {
			ids[i] = "agent " + ids[i]
		}
		return ids, err
	})
	srv, err := server.New(server.Options{
		Catalog:  cat,
		Engine:   eng,
		Runs:     runStore,
		Agents:   agents,
		LLM:      server.LLMConfig{BaseURL: s.llmBaseURL, Model: s.llmModel},
		Models:   model,
		Plugins:  plugins,
		Debug:    s.debug,
		APIToken: s.apiToken,
		Logger:   log,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "Gauntlet is listening on http://%s (dashboard at http://%s/, API docs at http://%s/docs)\n", ln.Addr(), ln.Addr(), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	// Channels that were running when the server last stopped come back.
	if err := agents.Resume(ctx); err != nil {
		log.Error("resume channels", slog.Any("error", err))
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if eng.Running() {
		eng.Stop(5 * time.Second)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
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

// checkExposure refuses to listen beyond loopback without an API token.
func checkExposure(addr, token string, insecure bool) error {
	if token != "" || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without an API token: anyone who can reach it could change your definitions. "+
		"Set --api-token (GAUNTLET_API_TOKEN), listen on 127.0.0.1, or pass --insecure", addr)
}
