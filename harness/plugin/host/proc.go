package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/gauntlet-eval/gauntlet/harness/plugin"
	"github.com/gauntlet-eval/gauntlet/harness/plugin/internal/shim"
)

// killGrace is how long a plugin process has to exit after it is asked
// to, before it is killed.
const killGrace = 3 * time.Second

// probeTimeout bounds the Info call that checks whether a plugin whose
// call timed out still answers.
const probeTimeout = 2 * time.Second

// maxRestartWait is the longest a call waits for a plugin's restart after
// a crash: a plugin that crashed once is back for the next call, while the
// calls to one that keeps failing fail at once instead of queueing behind
// a growing backoff.
const maxRestartWait = time.Second

// exitStatusWait is how long a crashed call waits for go-plugin to report
// the process's exit status, so that its error can say how it ended.
const exitStatusWait = time.Second

// errCallTimeout is the cause of a call context that hit CallTimeout.
var errCallTimeout = errors.New("plugin call timeout")

// proc is one discovered plugin and its process, if one runs.
type proc struct {
	m *Manager
	found

	mu       sync.Mutex
	cur      *instance     // the running process, nil when none
	starting chan struct{} // closed when the start in progress ends
	startErr error         // why the last start failed
	health   Health
	lastErr  string
	// lastErrAt is when lastErr happened.
	lastErrAt time.Time
	// checksum is the result of the last check of the executable.
	checksum ChecksumState
	// crashedInst is the process lastErr is about, whose exit status
	// go-plugin may report after the crash was noticed.
	crashedInst *instance
	info        *shim.Info // from the last successful start
	starts      int
	failures    int       // crashes and failed starts in a row
	retryAt     time.Time // no start before

	// retrying admits one retried call at a time: after a crash that took
	// every call in flight with it, the call that caused it crashes the
	// restarted process alone instead of taking the others' retries too.
	retrying chan struct{}
}

// instance is one process of a plugin.
type instance struct {
	client  *goplugin.Client
	process *os.Process
	pid     int
	sockDir string
	info    *shim.Info
	conn    *shim.Conn
	ev      *shim.EvaluatorClient
	ch      *shim.ChannelClient
	tool    *shim.ToolClient

	mu      sync.Mutex
	probing bool
	exitErr string // the process's exit status, once go-plugin saw it
	// exited is closed once go-plugin saw the process end (exitErr set).
	exited     chan struct{}
	exitedOnce sync.Once
}

// status describes the plugin. A process that died since the last call
// is noticed here, as the next call would: it shows as crashed.
func (p *proc) status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inst := p.cur; inst != nil && inst.client.Exited() {
		p.crashedLocked(inst, "the plugin process exited"+inst.exitReason())
	}
	s := Status{
		Name: p.file, Kind: p.kind, Type: p.typ, Path: p.path, Health: p.health,
		LastError: p.lastErr, LastErrorAt: p.lastErrAt, Restarts: max(p.starts-1, 0),
		Pinned: p.m.checksums[p.file] != "", Checksum: p.checksum,
	}
	if p.crashedInst != nil && p.health == HealthCrashed {
		if r := p.crashedInst.exitReason(); r != "" && !strings.Contains(s.LastError, r) {
			s.LastError += "; the process ended" + r
		}
	}
	if p.info != nil {
		s.Version = p.info.Version
		s.Capabilities = p.info.Capabilities
		s.SecretFields = p.info.SecretFields
	}
	if p.cur != nil {
		s.PID = p.cur.pid
	}
	return s
}

func (p *proc) backoff() time.Duration {
	d := p.m.opts.RestartBackoff
	for i := 1; i < p.failures && d < p.m.opts.MaxRestartBackoff; i++ {
		d *= 2
	}
	return min(d, p.m.opts.MaxRestartBackoff)
}

// get returns the running process, starting one if none runs. Concurrent
// callers share one start. A start after a failure waits for the backoff;
// a caller waits for it at most maxWait (and never past its deadline),
// else it fails at once. The start itself does not depend on ctx: a caller
// that gives up leaves it to finish for the next.
func (p *proc) get(ctx context.Context, maxWait time.Duration) (*instance, error) {
	for {
		if p.m.closed.Load() {
			return nil, errClosed
		}
		p.mu.Lock()
		if inst := p.cur; inst != nil {
			if !inst.client.Exited() {
				p.mu.Unlock()
				return inst, nil
			}
			p.crashedLocked(inst, "the plugin process exited"+inst.exitReason())
		}
		wait := time.Until(p.retryAt)
		dl, hasDeadline := ctx.Deadline()
		if wait > maxWait || wait > 0 && hasDeadline && time.Until(dl) < wait {
			err := fmt.Errorf("plugin %s: restart in %s, after: %s: %w", p.file, wait.Round(time.Millisecond), p.lastErr, plugin.ErrUnavailable)
			p.mu.Unlock()
			return nil, err
		}
		if p.starting == nil {
			starting := make(chan struct{})
			if !p.m.spawn(func() { p.start(max(wait, 0), starting) }) {
				p.mu.Unlock()
				return nil, errClosed
			}
			p.starting = starting
		}
		starting := p.starting
		p.mu.Unlock()

		select {
		case <-starting:
		case <-ctx.Done():
			return nil, fmt.Errorf("plugin %s: waiting for it to start: %w", p.file, context.Cause(ctx))
		}
		p.mu.Lock()
		inst, err := p.cur, p.startErr
		p.mu.Unlock()
		if inst == nil {
			if err == nil {
				err = fmt.Errorf("plugin %s: stopped while starting: %w", p.file, plugin.ErrUnavailable)
			}
			return nil, err
		}
	}
}

// start starts a process after wait and makes it the current one.
func (p *proc) start(wait time.Duration, done chan struct{}) {
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.m.ctx.Done():
			t.Stop()
		}
	}
	var inst *instance
	err := errClosed
	if !p.m.closed.Load() {
		inst, err = p.launch()
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	defer close(done)
	p.starting = nil
	switch {
	case err == nil && p.m.closed.Load():
		p.m.killAsync(inst)
		p.startErr = errClosed
	case err != nil:
		p.startErr = err
		if !p.m.closed.Load() {
			p.failures++
			p.retryAt = time.Now().Add(p.backoff())
			p.health, p.lastErr, p.lastErrAt, p.crashedInst = HealthCrashed, err.Error(), time.Now(), nil
			p.m.log.Error("plugins: start failed", slog.String("plugin", p.file), slog.Any("error", err),
				slog.Duration("retry_in", p.backoff()))
		}
	default:
		p.cur, p.startErr = inst, nil
		p.info = inst.info
		p.starts++
		p.health = HealthRunning
		p.m.log.Info("plugins: started", slog.String("plugin", p.file), slog.String("version", inst.info.Version),
			slog.Int("pid", inst.pid), slog.Int("restarts", p.starts-1))
	}
}

// launch starts a plugin process, checks what it says it is and attaches
// the host's callback services.
func (p *proc) launch() (_ *instance, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("plugin %s: start: %w", p.file, err)
			if !errors.Is(err, plugin.ErrUnavailable) {
				err = fmt.Errorf("%w (%w)", err, plugin.ErrUnavailable)
			}
		}
	}()
	if p.m.checksums[p.file] != "" {
		err := p.checkChecksum()
		p.mu.Lock()
		p.checksum = ChecksumOK
		if err != nil {
			p.checksum = ChecksumMismatch
		}
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	sockDir, err := os.MkdirTemp(p.m.sockDir, "p")
	if err != nil {
		return nil, err
	}
	inst := &instance{sockDir: sockDir, exited: make(chan struct{})}
	cmd := exec.Command(p.path)
	// go-plugin puts the plugin's Unix sockets here, so that Close can
	// remove what a killed plugin leaves behind.
	cmd.Env = []string{goplugin.EnvUnixSocketDir + "=" + sockDir}
	log := p.m.log.With(slog.String("plugin", p.file))
	inst.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: plugin.VersionedPlugins(),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     p.m.opts.StartTimeout,
		Logger: &hclogger{log: log, onExit: func(exitErr string) {
			inst.mu.Lock()
			inst.exitErr = exitErr
			inst.mu.Unlock()
			inst.exitedOnce.Do(func() { close(inst.exited) })
		}},
		SyncStdout: &lineWriter{log: log, level: slog.LevelInfo, attrs: []any{slog.String("stream", "stdout")}},
		SyncStderr: &lineWriter{log: log, level: slog.LevelWarn, attrs: []any{slog.String("stream", "stderr")}},
	})
	ok := false
	defer func() {
		if !ok {
			p.m.kill(inst)
		}
	}()
	rpc, err := inst.client.Client()
	if err != nil {
		return nil, err
	}
	inst.process = cmd.Process
	if cmd.Process != nil {
		inst.pid = cmd.Process.Pid
	}
	raw, err := rpc.Dispense(string(p.kind))
	if err != nil {
		return nil, err
	}
	switch c := raw.(type) {
	case *shim.EvaluatorClient:
		inst.ev, inst.conn = c, c.Conn
	case *shim.ChannelClient:
		inst.ch, inst.conn = c, c.Conn
	case *shim.ToolClient:
		inst.tool, inst.conn = c, c.Conn
	default:
		return nil, fmt.Errorf("unexpected client %T", raw)
	}
	ctx, cancel := context.WithTimeout(p.m.ctx, p.m.opts.StartTimeout)
	defer cancel()
	if inst.info, err = inst.conn.Info(ctx); err != nil {
		return nil, fmt.Errorf("info: %w", err)
	}
	switch {
	case inst.info.Kind != p.kind:
		return nil, fmt.Errorf("the executable serves a %q plugin, its name says %q", inst.info.Kind, p.kind)
	case p.kind == plugin.KindTool && (inst.info.Tool == nil || inst.info.Tool.Name != p.typ):
		name := ""
		if inst.info.Tool != nil {
			name = inst.info.Tool.Name
		}
		return nil, fmt.Errorf("the tool's definition names function %q; the file name says %q", name, p.typ)
	}
	if p.kind != plugin.KindTool {
		switch err := inst.conn.Attach(ctx); {
		case errors.Is(err, shim.ErrUnimplemented):
			// A plugin that never calls back may leave Attach out; its
			// calls back (a judge's model) would find nothing.
			log.Debug("plugins: the plugin does not implement Attach: it gets no callbacks")
		case err != nil:
			return nil, fmt.Errorf("attach the host's services: %w", err)
		}
	}
	ok = true
	return inst, nil
}

// checkChecksum hashes the executable and compares it with its pin. The
// error wraps ErrChecksumMismatch when the file differs.
func (p *proc) checkChecksum() error {
	want := p.m.checksums[p.file]
	got, err := fileSHA256(p.path)
	if err != nil {
		return fmt.Errorf("checksum: %w", err)
	}
	if got != want {
		return fmt.Errorf("refused: the sha256 of %s is %s, the configuration pins %s: %w", p.path, got, want, ErrChecksumMismatch)
	}
	return nil
}

// howItEnded says how the process ended, for an error: "exited (exit
// status 2)", "was killed by a signal (signal: killed)", "exited" when
// go-plugin saw a clean exit, or "crashed" when it has not reported the
// end (yet). It waits up to exitStatusWait for the report.
func (inst *instance) howItEnded() string {
	if inst.exited != nil {
		t := time.NewTimer(exitStatusWait)
		select {
		case <-inst.exited:
		case <-t.C:
		}
		t.Stop()
	}
	inst.mu.Lock()
	exitErr := inst.exitErr
	seen := inst.exited != nil && isClosed(inst.exited)
	inst.mu.Unlock()
	switch {
	case strings.HasPrefix(exitErr, "signal: "):
		return "was killed by a signal (" + exitErr + ")"
	case exitErr != "":
		return "exited (" + exitErr + ")"
	case seen:
		return "exited"
	}
	return "crashed"
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (inst *instance) exitReason() string {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.exitErr == "" {
		return ""
	}
	return " (" + inst.exitErr + ")"
}

// crashed records that inst died or hangs, unless it is no longer the
// current process, and kills it in the background.
func (p *proc) crashed(inst *instance, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.crashedLocked(inst, reason)
}

func (p *proc) crashedLocked(inst *instance, reason string) {
	if p.cur != inst {
		return
	}
	p.cur = nil
	p.failures++
	p.retryAt = time.Now().Add(p.backoff())
	p.health, p.lastErr, p.lastErrAt, p.crashedInst = HealthCrashed, reason, time.Now(), inst
	p.m.log.Error("plugins: plugin crashed; it restarts on its next call", slog.String("plugin", p.file),
		slog.Int("pid", inst.pid), slog.String("reason", reason), slog.Duration("restart_after", p.backoff()))
	p.m.killAsync(inst)
}

// succeeded notes a successful call: crashes no longer count as in a row.
func (p *proc) succeeded() {
	p.mu.Lock()
	p.failures = 0
	p.mu.Unlock()
}

// probe checks, after a call timed out, whether inst still answers; a
// process that does not is killed as hung, and restarts on the next call.
func (p *proc) probe(inst *instance) {
	inst.mu.Lock()
	if inst.probing {
		inst.mu.Unlock()
		return
	}
	inst.probing = true
	inst.mu.Unlock()
	p.m.spawn(func() {
		defer func() {
			inst.mu.Lock()
			inst.probing = false
			inst.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(p.m.ctx, probeTimeout)
		defer cancel()
		if _, err := inst.conn.Info(ctx); err != nil && p.m.ctx.Err() == nil {
			if inst.process != nil {
				_ = inst.process.Kill() // a hung process would not stop when asked
			}
			p.crashed(inst, fmt.Sprintf("the plugin stopped answering (a call timed out, then Info: %v)", err))
		}
	})
}

// kill stops a plugin process (asking first, then by force) and removes
// its sockets.
func (m *Manager) kill(inst *instance) {
	done := make(chan struct{})
	go func() {
		inst.client.Kill()
		close(done)
	}()
	t := time.NewTimer(killGrace)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		if inst.process != nil {
			_ = inst.process.Kill()
		}
		<-done
	}
	if inst.sockDir != "" {
		_ = os.RemoveAll(inst.sockDir)
	}
}

// killAsync kills inst in the background, or right away once Close has
// begun.
func (m *Manager) killAsync(inst *instance) {
	if !m.spawn(func() { m.kill(inst) }) {
		m.kill(inst)
	}
}

// callContext is ctx bounded by CallTimeout.
func (m *Manager) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if m.opts.CallTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, m.opts.CallTimeout, errCallTimeout)
}

// call runs one call on the plugin's process, starting it if need be, and
// sorts out its failure: a dead or unreachable process is marked crashed
// (the error wraps plugin.ErrUnavailable and says how the process ended),
// a call that ran out of CallTimeout has the process probed for a hang
// (the error wraps context.DeadlineExceeded). Errors of the
// implementation are returned as they came.
//
// A call whose process died under it is retried once on the restarted
// process: a crash takes every call in flight with it, and all but the
// one that caused it deserve a second chance. Retries run one at a time,
// so that the call that crashes the process again is the only one it
// takes. A plugin's calls must therefore be safe to repeat.
func (p *proc) call(ctx context.Context, op string, maxWait time.Duration, f func(ctx context.Context, inst *instance) error) error {
	crashed, err := p.try(ctx, op, maxWait, f)
	if !crashed || ctx.Err() != nil || p.m.closed.Load() {
		return err
	}
	select {
	case p.retrying <- struct{}{}:
		defer func() { <-p.retrying }()
	case <-ctx.Done():
		return err
	case <-p.m.ctx.Done():
		return err
	}
	_, retryErr := p.try(ctx, op, maxWait, f)
	switch {
	case retryErr == nil:
		return nil
	case ctx.Err() != nil:
		return retryErr
	}
	p.m.log.Warn("plugins: a call failed again after a restart", slog.String("plugin", p.file),
		slog.String("op", op), slog.Any("first", err), slog.Any("retry", retryErr))
	return fmt.Errorf("%w (retried once on a restarted process)", retryErr)
}

// try is one attempt of call. crashed reports that the process died under
// the call.
func (p *proc) try(ctx context.Context, op string, maxWait time.Duration, f func(ctx context.Context, inst *instance) error) (crashed bool, err error) {
	inst, err := p.get(ctx, maxWait)
	if err != nil {
		return false, err
	}
	cctx, cancel := p.m.callContext(ctx)
	defer cancel()
	err = f(cctx, inst)
	if err == nil {
		p.succeeded()
		return false, nil
	}
	return p.failed(ctx, cctx, inst, op, err)
}

// failed turns the error of a call on inst into the caller's.
//
// A deadline counts as passed once its time has come, even when the
// context's own timer has not fired yet: under load the plugin's side may
// reset the stream (gRPC CANCEL) before this process's timer runs.
//
// crashed reports that the process died (or its connection broke) under
// the call: the process is marked crashed and killed, and the error, which
// wraps plugin.ErrUnavailable, names the plugin and says how its process
// ended ("plugin gauntlet-evaluator-x exited (exit status 2) during
// evaluate").
func (p *proc) failed(ctx, cctx context.Context, inst *instance, op string, err error) (crashed bool, _ error) {
	now := time.Now()
	switch {
	case ctx.Err() != nil || passed(ctx, now):
		// The caller gave up: its own context error says so.
		cause := context.Cause(ctx)
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		if !errors.Is(err, cause) {
			return false, fmt.Errorf("plugin %s: %s: %w (%v)", p.file, op, cause, err)
		}
		return false, err
	case shim.IsTransport(err) || inst.client.Exited():
		reason := fmt.Sprintf("%s failed: %v", op, err)
		if inst.client.Exited() {
			reason = "the plugin process exited" + inst.exitReason() + " during " + op
		}
		p.crashed(inst, reason)
		how := inst.howItEnded()
		if !errors.Is(err, plugin.ErrUnavailable) {
			return true, fmt.Errorf("plugin %s %s during %s: %v: %w", p.file, how, op, err, plugin.ErrUnavailable)
		}
		return true, fmt.Errorf("plugin %s %s during %s: %w", p.file, how, op, err)
	case errors.Is(context.Cause(cctx), errCallTimeout) || passed(cctx, now):
		p.probe(inst)
		return false, fmt.Errorf("plugin %s: %s did not finish within %s: %w", p.file, op, p.m.opts.CallTimeout, context.DeadlineExceeded)
	}
	return false, err
}

// passed reports whether ctx has a deadline at or before now.
func passed(ctx context.Context, now time.Time) bool {
	d, ok := ctx.Deadline()
	return ok && !now.Before(d)
}
