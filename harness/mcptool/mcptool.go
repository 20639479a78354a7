package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Defaults of Options.
const (
	// DefaultCallTimeout bounds one tool call, the server's start
	// included: as long as a plugin call may take.
	DefaultCallTimeout = 30 * time.Second
	// DefaultMaxAnswerBytes is the largest message read from a server:
	// the default bound of a model's answer.
	DefaultMaxAnswerBytes = 4 << 20
	// DefaultStopGrace is how long a started program has to exit once its
	// standard input is closed, before its process group is killed.
	DefaultStopGrace = 2 * time.Second
)

// restartBackoff and maxRestartBackoff bound the wait before a server that
// failed is started again: it doubles with each failure in a row.
const (
	restartBackoff    = 200 * time.Millisecond
	maxRestartBackoff = 30 * time.Second
	// maxRestartWait is the longest a call waits for a restart after a
	// failure; past it the call fails at once with the last failure.
	maxRestartWait = time.Second
)

// Options configure a Manager. The zero value of each field means its
// default.
type Options struct {
	// CallTimeout bounds one call (starting the server when it is not
	// running included), besides the call's context. Default
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// MaxAnswerBytes bounds every message read from a server (a tool's
	// result with its envelope). Default DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// StopGrace: see DefaultStopGrace.
	StopGrace time.Duration
	// Logger receives the Manager's records and the servers' stderr.
	// Nil discards them.
	Logger *slog.Logger
	// LookupEnv resolves ${VAR} references of env, and gives started
	// programs PATH, HOME, TMPDIR, LANG and LC_ALL. Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Manager connects tool records to their MCP servers. It is safe for
// concurrent use. Build one with New; Close it when the program ends.
type Manager struct {
	opts   Options
	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	closed atomic.Bool
	wg     sync.WaitGroup // starts and stops in the background

	mu      sync.Mutex
	servers map[string]*server // by tool id
}

var _ harness.ToolConnector = (*Manager)(nil)

// New returns a Manager. It starts nothing: a server starts on its tool's
// first call.
func New(opts Options) *Manager {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.MaxAnswerBytes <= 0 {
		opts.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, ctx: ctx, cancel: cancel, servers: map[string]*server{}}
}

// ErrUnavailable is wrapped by the error of a call whose MCP server could
// not be started, died under the call, or failed lately and waits out its
// backoff before it starts again.
// It wraps harness.ErrToolUnavailable, so that the tool loop ends with it.
var ErrUnavailable = fmt.Errorf("MCP server unavailable: %w", harness.ErrToolUnavailable)

// errClosed is the error of a call after Close.
var errClosed = errors.New("the MCP client is closed")

// ToolFor returns the Tool answering def's calls through def's MCP server:
// the same for every call of the record, until its mcp block or function
// name changes.
func (m *Manager) ToolFor(def *harness.ToolDefinition) (harness.Tool, error) {
	if def == nil || def.MCP == nil {
		return nil, fmt.Errorf("mcp: the tool record has no mcp block: %w", harness.ErrInvalid)
	}
	if m.closed.Load() {
		return nil, fmt.Errorf("tool %s: %w", def.ID, errClosed)
	}
	key, err := json.Marshal(struct {
		MCP *harness.ToolMCP
		Fn  harness.FunctionDef
	}{def.MCP, def.Function})
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", def.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.servers[def.ID]; s != nil {
		if s.key == string(key) {
			return s, nil
		}
		m.spawn(s.close) // the record changed: its old server goes
	}
	s := newServer(m, def, string(key))
	m.servers[def.ID] = s
	return s, nil
}

// Close closes every connection, ends every started program and waits for
// them to be gone. Calls afterwards fail. A second call does nothing.
func (m *Manager) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return nil
	}
	m.cancel()
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.servers = map[string]*server{}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.close)
	}
	wg.Wait()
	m.wg.Wait()
	return nil
}

// spawn runs f in the background, tracked by Close.
func (m *Manager) spawn(f func()) {
	m.wg.Go(f)
}

// Status describes the server of one tool record.
type Status struct {
	ToolID string `json:"tool_id"`
	// Running reports a live connection.
	Running bool `json:"running"`
	// PID is the started program's process id while it runs (0 over
	// HTTP or when none runs).
	PID int `json:"pid,omitempty"`
	// Starts counts the connections made, the first one included.
	Starts int `json:"starts"`
	// LastError says why the server last failed; empty when it never did.
	LastError string `json:"last_error,omitempty"`
}

// Servers describes the servers started or asked for so far, by tool id.
func (m *Manager) Servers() []Status {
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	return out
}
