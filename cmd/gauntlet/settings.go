package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/engine"
	"github.com/gauntlet-eval/gauntlet/harness/engine/riverexec"
	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/mcptool"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/host"
	"github.com/gauntlet-eval/gauntlet/server"
)

// settings are the settings of the commands that open the application
// (serve and run): each from its flag, else its environment variable, else
// its default. They are registered in one place, settings.register, so
// that every command reads a setting the same way; the README's
// configuration table lists them.
type settings struct {
	data        string
	definitions string
	plugins     string
	database    string
	llmBaseURL  string
	llmModel    string
	llmAPIKey   string
	// simulatorModel plays the simulated users of tests that name no
	// model; empty: the run's model.
	simulatorModel string
	// providers are --provider's entries (GAUNTLET_PROVIDERS), in their
	// command-line form.
	providers []string
	// embeddingModel, when set, makes knowledge-base retrieval hybrid;
	// embeddingBaseURL is its endpoint, by default llmBaseURL.
	embeddingModel   string
	embeddingBaseURL string
	concurrency      int
	llmTimeout       time.Duration
	llmRetries       int
	llmMaxBytes      int64
	// llmRateLimitWait bounds the time one model request waits out rate
	// limits (--llm-rate-limit-wait).
	llmRateLimitWait time.Duration
	pluginSums       string
	// pluginTimeout bounds one call to a plugin (--plugin-timeout).
	pluginTimeout time.Duration
	// toolTimeout bounds one call to a tool's MCP server (--tool-timeout).
	toolTimeout time.Duration
	debug       bool
	// rescueAfter: with PostgreSQL, when a running job is taken for lost
	// (serve, worker).
	rescueAfter time.Duration

	// The listener's, serve only.
	addr        string
	apiToken    string
	insecure    bool
	corsOrigins string
	// noLocalWorker: with PostgreSQL, the server executes no job.
	noLocalWorker bool
	// jobAttempts: with PostgreSQL, how often a run's job is tried before
	// it is given up (serve).
	jobAttempts int
	// limits are the HTTP limits (serve).
	limits limitSettings
}

// settingsScope says which settings a command takes.
type settingsScope int

const (
	// appSettings are the application's: every setting but the listener's
	// (gauntlet run).
	appSettings settingsScope = iota
	// serverSettings add the listener's: --addr, --api-token, --insecure
	// and --cors-origins (gauntlet serve).
	serverSettings
)

// register registers the settings of scope on fs, each defaulting to its
// environment variable. It fails when such a variable does not parse.
func (s *settings) register(fs *flag.FlagSet, scope settingsScope) error {
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
	rateLimitWait, err := envDuration("GAUNTLET_LLM_RATE_LIMIT_WAIT", llm.DefaultRateLimitWait)
	if err != nil {
		return err
	}
	pluginTimeout, err := envDuration("GAUNTLET_PLUGIN_TIMEOUT", host.DefaultCallTimeout)
	if err != nil {
		return err
	}
	toolTimeout, err := envDuration("GAUNTLET_TOOL_TIMEOUT", mcptool.DefaultCallTimeout)
	if err != nil {
		return err
	}
	debug, err := envBool("GAUNTLET_DEBUG", debugFromOtherTools())
	if err != nil {
		return err
	}
	fs.StringVar(&s.data, "data", env("GAUNTLET_DATA", "./data"), "SQLite database, run logs, knowledge-base files (GAUNTLET_DATA)")
	fs.StringVar(&s.definitions, "definitions", env("GAUNTLET_DEFINITIONS", "./definitions"), "definition files, the source of truth (GAUNTLET_DEFINITIONS)")
	fs.StringVar(&s.plugins, "plugins", env("GAUNTLET_PLUGINS", "./plugins"), "directory scanned for plugin executables (GAUNTLET_PLUGINS)")
	fs.StringVar(&s.database, "database", env("GAUNTLET_DATABASE", ""), "database URL: sqlite://FILE, or postgres://user:password@host:port/database to store everything in PostgreSQL (GAUNTLET_DATABASE; default sqlite://<data>/gauntlet.db)")
	fs.StringVar(&s.llmBaseURL, "llm-base-url", env("LLM_BASE_URL", "http://127.0.0.1:11434/v1"), "OpenAI-compatible endpoint (LLM_BASE_URL)")
	fs.StringVar(&s.llmModel, "llm-model", env("LLM_MODEL", "llama3.2"), "model reference: a model of --llm-base-url, or PROVIDER/model (LLM_MODEL)")
	fs.StringVar(&s.simulatorModel, "simulator-model", env("GAUNTLET_SIMULATOR_MODEL", ""), "model reference that plays the simulated users of tests that name no model, as --llm-model takes it (GAUNTLET_SIMULATOR_MODEL; default the run's model)")
	s.providers = splitProviders(env("GAUNTLET_PROVIDERS", ""))
	fs.Var(&providerList{list: &s.providers}, "provider", "a model provider, NAME=KIND[,base_url=URL][,api_key_env=VAR][,rpm=N][,tpm=N]; repeatable; KIND is openai, anthropic or gemini (GAUNTLET_PROVIDERS; several, ';'-separated)")
	s.llmAPIKey = env("LLM_API_KEY", "")
	fs.Var(secretFlag{&s.llmAPIKey}, "llm-api-key", "API key of the endpoint, never logged or returned (LLM_API_KEY)")
	fs.StringVar(&s.embeddingModel, "embedding-model", env("EMBEDDING_MODEL", ""), "embedding model of knowledge-base retrieval; set, retrieval is hybrid (BM25 and embeddings), empty BM25 only (EMBEDDING_MODEL)")
	fs.StringVar(&s.embeddingBaseURL, "embedding-base-url", env("EMBEDDING_BASE_URL", ""), "OpenAI-compatible endpoint of --embedding-model, with the key of --llm-api-key (EMBEDDING_BASE_URL; default --llm-base-url)")
	fs.DurationVar(&s.llmTimeout, "llm-timeout", timeout, "bound of each model request, e.g. 30s (LLM_TIMEOUT)")
	fs.IntVar(&s.llmRetries, "llm-retries", retries, "retries of a failed model request; 0: none (LLM_RETRIES)")
	fs.DurationVar(&s.llmRateLimitWait, "llm-rate-limit-wait", rateLimitWait, "bound of the time one model request waits out rate limits (429, 529, 503), which are not counted as retries; a provider asking for longer makes the test an error, e.g. 10m (GAUNTLET_LLM_RATE_LIMIT_WAIT)")
	fs.Int64Var(&s.llmMaxBytes, "llm-max-response-bytes", int64(maxBytes), "largest model answer read; a larger one is an error (LLM_MAX_RESPONSE_BYTES)")
	fs.DurationVar(&s.pluginTimeout, "plugin-timeout", pluginTimeout, "bound of one call to a plugin (an evaluation, a tool call, a config check), e.g. 30s (GAUNTLET_PLUGIN_TIMEOUT)")
	fs.DurationVar(&s.toolTimeout, "tool-timeout", toolTimeout, "bound of one call to a tool's MCP server, starting it included, e.g. 30s; its answer is bounded by --llm-max-response-bytes (GAUNTLET_TOOL_TIMEOUT)")
	fs.StringVar(&s.pluginSums, "plugin-sha256", env("GAUNTLET_PLUGIN_SHA256", ""), "pin plugin executables: name=hex,name=hex; a pinned plugin whose file differs is not started (GAUNTLET_PLUGIN_SHA256)")
	fs.IntVar(&s.concurrency, "concurrency", concurrency, "tests in flight at once within one run (GAUNTLET_CONCURRENCY)")
	rescue, err := envDuration("GAUNTLET_RESCUE_AFTER", riverexec.DefaultRescueAfter)
	if err != nil {
		return err
	}
	fs.DurationVar(&s.rescueAfter, "rescue-after", rescue, "with PostgreSQL (serve, worker): bounds one test's execution (then cancelled and run again); above the longest a test takes. A dead worker's tests run again after 20 s without its heartbeat (GAUNTLET_RESCUE_AFTER)")
	fs.BoolVar(&s.debug, "debug", debug, "debug logging; reported by GET /api/config (GAUNTLET_DEBUG)")
	if scope == serverSettings {
		fs.StringVar(&s.addr, "addr", env("GAUNTLET_ADDR", "127.0.0.1:8080"), "listen address (GAUNTLET_ADDR)")
		s.apiToken = env("GAUNTLET_API_TOKEN", "")
		fs.Var(secretFlag{&s.apiToken}, "api-token", "when set, every /api/ request needs Authorization: Bearer <token> (GAUNTLET_API_TOKEN)")
		fs.BoolVar(&s.insecure, "insecure", false, "allow a non-loopback address without an API token")
		fs.BoolVar(&s.noLocalWorker, "no-local-worker", false, "with PostgreSQL: execute no test in the server, leave every job to gauntlet worker processes")
		attempts, err := envInt("GAUNTLET_JOB_ATTEMPTS", riverexec.DefaultMaxAttempts)
		if err != nil {
			return err
		}
		fs.IntVar(&s.jobAttempts, "job-attempts", attempts, "with PostgreSQL: how often a test's job is tried (its result could not be stored, or its worker gave it back) before it is given up and the run ends saying so (GAUNTLET_JOB_ATTEMPTS)")
		fs.StringVar(&s.corsOrigins, "cors-origins", env("GAUNTLET_CORS_ORIGINS", ""), "origins whose web pages may call the API, comma-separated: https://host[:port] or * (GAUNTLET_CORS_ORIGINS)")
		if err := s.limits.register(fs); err != nil {
			return err
		}
	}
	return nil
}

// check refuses settings out of range, once the flags are parsed.
func (s *settings) check() error {
	if s.concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1, not %d", s.concurrency)
	}
	if s.addr != "" && s.jobAttempts < 1 {
		return fmt.Errorf("--job-attempts must be at least 1, not %d", s.jobAttempts)
	}
	if s.llmTimeout <= 0 || s.llmTimeout > engine.MaxTimeout {
		return fmt.Errorf("--llm-timeout must be above 0 and at most %v, not %v", engine.MaxTimeout, s.llmTimeout)
	}
	if s.llmRetries < 0 || s.llmRetries > engine.MaxRetries {
		return fmt.Errorf("--llm-retries must be between 0 and %d, not %d", engine.MaxRetries, s.llmRetries)
	}
	if s.llmRateLimitWait <= 0 || s.llmRateLimitWait > engine.MaxTimeout*24 {
		return fmt.Errorf("--llm-rate-limit-wait must be above 0 and at most %v, not %v", engine.MaxTimeout*24, s.llmRateLimitWait)
	}
	if s.pluginTimeout <= 0 {
		return fmt.Errorf("--plugin-timeout must be above 0, not %v", s.pluginTimeout)
	}
	if s.toolTimeout <= 0 || s.toolTimeout > engine.MaxTimeout {
		return fmt.Errorf("--tool-timeout must be above 0 and at most %v, not %v", engine.MaxTimeout, s.toolTimeout)
	}
	if s.llmMaxBytes < 1024 {
		return fmt.Errorf("--llm-max-response-bytes must be at least 1024, not %d", s.llmMaxBytes)
	}
	return s.limits.check()
}

// databaseURL is --database, by default the SQLite file in --data.
func (s *settings) databaseURL() string {
	if s.database != "" {
		return s.database
	}
	return "sqlite://" + filepath.Join(s.data, "gauntlet.db")
}

// logDir is where run log files go.
func logDir(data string) string { return filepath.Join(data, "logs") }

// modelClient returns the model client the settings describe: the
// endpoint of --llm-base-url for plain model references, and each
// provider for the references that name it.
func (s *settings) modelClient() (*llm.Router, error) {
	o := llm.Options{Timeout: s.llmTimeout, MaxRetries: s.retries(), MaxResponseBytes: s.llmMaxBytes,
		RateLimitWait: s.llmRateLimitWait, MaxConcurrency: s.concurrency}
	def := o
	def.BaseURL, def.APIKey, def.Model = s.llmBaseURL, s.llmAPIKey, s.llmModel
	c, err := llm.New(def)
	if err != nil {
		return nil, err
	}
	providers, err := llm.ParseProviders(s.providers)
	if err != nil {
		return nil, fmt.Errorf("--provider: %w", err)
	}
	return llm.NewRouter(llm.RouterOptions{Default: c, Providers: providers, Client: o})
}

// providerList is the repeatable --provider flag: the first use replaces
// the providers of GAUNTLET_PROVIDERS, later ones add to it.
type providerList struct {
	list *[]string
	set  bool
}

func (p *providerList) String() string {
	if p == nil || p.list == nil {
		return ""
	}
	return strings.Join(*p.list, ";")
}

func (p *providerList) Set(v string) error {
	if !p.set {
		*p.list, p.set = nil, true
	}
	if _, err := llm.ParseProvider(v); err != nil {
		return err
	}
	*p.list = append(*p.list, v)
	return nil
}

// splitProviders splits GAUNTLET_PROVIDERS at its semicolons.
func splitProviders(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// embedder returns the client of the embedding endpoint, nil when no
// embedding model is set: --embedding-base-url (default --llm-base-url)
// with the model endpoint's key, timeout and retries.
func (s *settings) embedder() (*llm.Client, error) {
	if s.embeddingModel == "" {
		return nil, nil
	}
	base := s.embeddingBaseURL
	if base == "" {
		base = s.llmBaseURL
	}
	return llm.New(llm.Options{BaseURL: base, APIKey: s.llmAPIKey, Model: s.embeddingModel,
		Timeout: s.llmTimeout, MaxRetries: s.retries(), MaxResponseBytes: max(s.llmMaxBytes, 64<<20),
		RateLimitWait: s.llmRateLimitWait})
}

// engineOptions are the engine settings the settings give; openApp adds
// the parts.
func (s *settings) engineOptions() engine.Options {
	return engine.Options{Model: s.llmModel, BaseURL: s.llmBaseURL, Concurrency: s.concurrency,
		Timeout: s.llmTimeout, Retries: s.retries(), Version: server.Version, LogDir: logDir(s.data),
		SimulatorModel: s.simulatorModel, MaxResponseBytes: s.llmMaxBytes}
}

// retries is --llm-retries as the engine and the client read it: there 0
// means their default, and a negative number none.
func (s *settings) retries() int {
	if s.llmRetries == 0 {
		return -1
	}
	return s.llmRetries
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

// splitList returns the items of a comma-separated setting, trimmed, the
// empty ones left out.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// parseSettings parses the flags of a command that takes only settings
// of scope (serve, worker) and checks them. It returns nil settings when
// the command is to end: with a nil error after --help, else with the
// error.
func parseSettings(name string, args []string, stderr io.Writer, scope settingsScope) (*settings, error) {
	var s settings
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := s.register(fs, scope); err != nil {
		return nil, err
	}
	if err := parseFlags(fs, args, stderr, ""); err != nil {
		if errors.Is(err, errHelp) {
			return nil, nil
		}
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}
