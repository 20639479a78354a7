package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

// DefaultCallTimeout is the default of Options.CallTimeout.
const DefaultCallTimeout = 30 * time.Second

// Options configures a Manager. The zero value of each field means its
// default.
type Options struct {
	// Dir is the plugins directory. A missing directory holds no plugins.
	Dir string
	// CallTimeout bounds one call to a plugin (Evaluate, a tool's Call,
	// ValidateConfig, Receive; not a channel's Run). The caller's context
	// deadline applies as well. Default DefaultCallTimeout (30 s);
	// negative means none.
	CallTimeout time.Duration
	// StartTimeout bounds a plugin's start-up: process start, handshake,
	// Info. Default 10 s.
	StartTimeout time.Duration
	// StopGrace is how long a channel plugin's Run has to return after
	// its context is cancelled before its call is cut. Default 5 s.
	StopGrace time.Duration
	// RestartBackoff is the delay before the first restart after a crash
	// or a failed start; it doubles with each further failure in a row up
	// to MaxRestartBackoff. Defaults 200 ms and 30 s.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// Checksums pins plugin executables by their sha256, hex encoded
	// (an optional "sha256:" prefix is allowed), keyed by file name
	// ("gauntlet-evaluator-keyword"). A pinned plugin whose file does not
	// match is not started: its calls fail with an error wrapping
	// ErrChecksumMismatch. Plugins without an entry are not checked.
	Checksums map[string]string
	// Logger receives the Manager's records, go-plugin's, and what the
	// plugins log or print. Nil discards them.
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = 200 * time.Millisecond
	}
	if o.MaxRestartBackoff <= 0 {
		o.MaxRestartBackoff = 30 * time.Second
	}
	if o.MaxRestartBackoff < o.RestartBackoff {
		o.MaxRestartBackoff = o.RestartBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Health is the state of a plugin process.
type Health string

// The plugin states.
const (
	// HealthStopped: not started yet (plugins start on first use), or
	// stopped by Close.
	HealthStopped Health = "stopped"
	// HealthRunning: the process is up and answered its Info call.
	HealthRunning Health = "running"
	// HealthCrashed: the process died, stopped answering, or could not
	// start; LastError says why. The next call restarts it (after the
	// backoff).
	HealthCrashed Health = "crashed"
)

// ChecksumState is the result of checking a plugin executable against its
// pinned sha256 (Options.Checksums).
type ChecksumState string

// The checksum states.
const (
	// ChecksumUnpinned: no checksum is pinned for the plugin; its file is
	// not checked.
	ChecksumUnpinned ChecksumState = "unpinned"
	// ChecksumOK: the file matched its pin when last checked.
	ChecksumOK ChecksumState = "ok"
	// ChecksumMismatch: the file did not match its pin (or could not be
	// read) when last checked; the plugin is not started.
	ChecksumMismatch ChecksumState = "mismatch"
)

// Status describes one discovered plugin.
type Status struct {
	// Name is the executable's file name, such as
	// "gauntlet-evaluator-keyword".
	Name string      `json:"name"`
	Kind plugin.Kind `json:"kind"`
	// Type is the name the plugin is registered under: the evaluator or
	// channel type, the tool's function name.
	Type string `json:"type"`
	Path string `json:"path"`
	// Version is what the plugin reported; empty until it first started.
	Version string `json:"version"`
	// Capabilities are the optional interfaces the plugin implements
	// ("validate_config", "receive"), known once it has started.
	Capabilities []string `json:"capabilities"`
	Health       Health   `json:"health"`
	// LastError is why the plugin last crashed or failed to start; it
	// stays after a successful restart, so that a crash is not forgotten.
	LastError string `json:"last_error"`
	// LastErrorAt is when LastError happened; zero when it never did.
	LastErrorAt time.Time `json:"last_error_at"`
	// PID is the running process's id, 0 when none runs.
	PID int `json:"pid"`
	// Restarts counts the starts after the first.
	Restarts int `json:"restarts"`
	// Pinned is true when Options.Checksums pins the executable.
	Pinned bool `json:"pinned"`
	// Checksum is the result of the last check of a pinned executable:
	// at discovery (New) and before every start.
	Checksum ChecksumState `json:"checksum"`
	// SecretFields are the config keys the plugin declares secret
	// (harness.ConfigSecrets), known once it has started; nil when it
	// declares nothing, and the default rule applies.
	SecretFields []string `json:"secret_fields"`
}

// Manager discovers the plugins of a directory, registers a shim for each
// in a harness.Registry, and runs their processes: each is started on its
// first call and kept, restarted after a crash or a hang, and stopped by
// Close. It is safe for concurrent use.
type Manager struct {
	opts      Options
	log       *slog.Logger
	checksums map[string]string
	plugins   []*proc
	byName    map[string]*proc
	// sockDir holds one directory per plugin process for its Unix
	// sockets; Close removes it.
	sockDir string

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	closed atomic.Bool

	// The goroutines that start, probe and kill processes in the
	// background; Close waits for them. goMu orders their Add with Close's
	// Wait: none is spawned once Close has begun.
	goMu    sync.Mutex
	noSpawn bool
	wg      sync.WaitGroup
}

// spawn runs f in a goroutine Close waits for, unless Close has begun;
// it reports whether f runs.
func (m *Manager) spawn(f func()) bool {
	m.goMu.Lock()
	defer m.goMu.Unlock()
	if m.noSpawn {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
	return true
}

// New discovers the plugins in opts.Dir. It starts none of them. It fails
// only when the directory cannot be read or a checksum is malformed.
func New(opts Options) (*Manager, error) {
	opts.defaults()
	sums, err := normaliseChecksums(opts.Checksums)
	if err != nil {
		return nil, err
	}
	log := opts.Logger.With(slog.String("component", "plugins"))
	list, err := discover(opts.Dir, log)
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, log: log, checksums: sums, byName: map[string]*proc{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for _, f := range list {
		p := &proc{m: m, found: f, health: HealthStopped, retrying: make(chan struct{}, 1), checksum: ChecksumUnpinned}
		if sums[f.file] != "" {
			// Checked now so that a listing shows a replaced file before
			// anything tries to start it; checked again at every start.
			p.checksum = ChecksumOK
			if err := p.checkChecksum(); err != nil {
				p.checksum = ChecksumMismatch
				log.Warn("plugins: checksum mismatch; the plugin will not start", slog.String("plugin", f.file), slog.Any("error", err))
			}
		}
		m.plugins = append(m.plugins, p)
		m.byName[f.file] = p
	}
	for name := range sums {
		if m.byName[name] == nil {
			log.Warn("plugins: a checksum is pinned for a plugin that is not installed", slog.String("plugin", name))
		}
	}
	if len(m.plugins) > 0 {
		if m.sockDir, err = os.MkdirTemp("", "gauntlet-plugins-"); err != nil {
			return nil, fmt.Errorf("plugins: socket directory: %w", err)
		}
	}
	for _, p := range m.plugins {
		log.Info("plugins: found", slog.String("plugin", p.file), slog.String("kind", string(p.kind)),
			slog.String("type", p.typ), slog.Bool("pinned", sums[p.file] != ""))
	}
	return m, nil
}

// Register registers a shim for every discovered plugin in reg: evaluator
// plugins under their type, channel plugins under their type, tool plugins
// under the function name of their file name (gauntlet-tool-<name>), so
// that the engine and the agents use them as they use built-ins. No plugin
// is started: tools are named by their file name so that registering
// needs no process, and a tool plugin whose definition names another
// function is refused when it starts.
//
// A name already registered (a built-in, or the built-in "regex"
// evaluator type) is not overridden: Register goes on with the others and
// returns the conflicts joined, each wrapping harness.ErrConflict.
func (m *Manager) Register(reg *harness.Registry) error {
	var errs []error
	for _, p := range m.plugins {
		var err error
		switch p.kind {
		case plugin.KindEvaluator:
			if p.typ == harness.EvaluatorTypeRegex {
				err = fmt.Errorf("register evaluator %q: the type is built in: %w", p.typ, harness.ErrConflict)
				break
			}
			err = reg.RegisterEvaluator(p.typ, &evaluator{p: p})
		case plugin.KindChannel:
			err = reg.RegisterChannel(p.typ, &channel{p: p})
		case plugin.KindTool:
			err = reg.RegisterTool(&tool{p: p})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("plugin %s: %w", p.file, err))
		}
	}
	return errors.Join(errs...)
}

// Dir is the plugins directory the Manager scanned.
func (m *Manager) Dir() string { return m.opts.Dir }

// List describes every discovered plugin, sorted by name.
func (m *Manager) List() []Status {
	out := make([]Status, 0, len(m.plugins))
	for _, p := range m.plugins {
		out = append(out, p.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Start starts a plugin now, by file name, if it is not running: to learn
// its version, or to check it, before its first use. It waits for the
// restart backoff after a crash.
func (m *Manager) Start(ctx context.Context, name string) error {
	p := m.byName[name]
	if p == nil {
		return fmt.Errorf("plugin %q: %w", name, harness.ErrNotFound)
	}
	_, err := p.get(ctx, time.Duration(math.MaxInt64))
	return err
}

// Close stops every plugin process and waits until they are gone, then
// removes their socket files. Calls in flight fail; later calls fail with
// an error wrapping plugin.ErrUnavailable. Close is idempotent.
func (m *Manager) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.cancel()
	m.goMu.Lock()
	m.noSpawn = true
	m.goMu.Unlock()
	var insts []*instance
	for _, p := range m.plugins {
		p.mu.Lock()
		if p.cur != nil {
			insts = append(insts, p.cur)
			p.cur = nil
		}
		p.health = HealthStopped
		p.mu.Unlock()
	}
	var kills sync.WaitGroup
	for _, inst := range insts {
		kills.Go(func() { m.kill(inst) })
	}
	kills.Wait()
	m.wg.Wait()
	if m.sockDir != "" {
		return os.RemoveAll(m.sockDir)
	}
	return nil
}

// errClosed is the error of calls after Close.
var errClosed = fmt.Errorf("plugins: the host is shutting down: %w", plugin.ErrUnavailable)
