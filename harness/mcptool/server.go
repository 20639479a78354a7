package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// errCallTimeout is the cause of a call context that ran out of
// CallTimeout.
var errCallTimeout = errors.New("tool call timeout")

// deathWait is how long a call whose error is not the server's own answer
// waits to see whether the connection ended under it.
const deathWait = time.Second

// server is the MCP server of one tool record, and its connection when
// one is up. It is the harness.Tool the Manager hands out.
type server struct {
	m   *Manager
	id  string
	key string // the record's mcp block and function, as ToolFor compares them
	cfg harness.ToolMCP
	fn  harness.FunctionDef
	log *slog.Logger

	mu       sync.Mutex
	cur      *session      // the live connection, nil when none
	starting chan struct{} // closed when the start in progress ends
	startErr error
	lastErr  string
	starts   int
	failures int       // failed starts and deaths in a row
	retryAt  time.Time // no start before
	closed   bool

	// retrying admits one retried call at a time: after a death that took
	// every call in flight with it, the call that caused it dies alone on
	// the restarted server.
	retrying chan struct{}
}

var _ harness.Tool = (*server)(nil)

func newServer(m *Manager, def *harness.ToolDefinition, key string) *server {
	cfg := *def.MCP
	return &server{m: m, id: def.ID, key: key, cfg: cfg, fn: def.Function,
		log:      m.opts.Logger.With(slog.String("tool", def.ID)),
		retrying: make(chan struct{}, 1)}
}

// Definition is the record's function.
func (s *server) Definition() harness.FunctionDef { return s.fn }

// Call calls the server's tool with the model's arguments, restarting a
// server that died under the call once.
func (s *server) Call(ctx context.Context, req *harness.ToolCallRequest) (*harness.ToolResult, error) {
	if req == nil {
		return nil, fmt.Errorf("tool %s: no request: %w", s.id, harness.ErrInvalid)
	}
	if len(req.Arguments) > 0 && !json.Valid(req.Arguments) {
		return nil, fmt.Errorf("tool %s: the arguments are not JSON: %w", s.id, harness.ErrInvalid)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.m.opts.CallTimeout, errCallTimeout)
	defer cancel()
	out, died, err := s.try(ctx, req)
	if !died || ctx.Err() != nil || s.m.closed.Load() {
		return out, err
	}
	select {
	case s.retrying <- struct{}{}:
		defer func() { <-s.retrying }()
	case <-ctx.Done():
		return nil, err
	}
	out, _, retryErr := s.try(ctx, req)
	if retryErr == nil {
		return out, nil
	}
	s.log.Warn("mcp: a call failed again after a restart", slog.Any("first", err), slog.Any("retry", retryErr))
	return nil, fmt.Errorf("%w (retried once on a restarted server)", retryErr)
}

// try is one attempt of a call. died reports that the connection ended
// under it.
func (s *server) try(ctx context.Context, req *harness.ToolCallRequest) (_ *harness.ToolResult, died bool, _ error) {
	sess, err := s.get(ctx)
	if err != nil {
		return nil, false, s.ctxErr(ctx, err)
	}
	args := json.RawMessage(req.Arguments)
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	res, err := sess.cs.CallTool(ctx, &mcp.CallToolParams{Name: s.cfg.ToolName(s.fn), Arguments: args})
	if err == nil {
		s.succeeded()
		out, err := output(res, s.m.opts.MaxAnswerBytes)
		if err != nil {
			return nil, false, fmt.Errorf("tool %s: %w", s.id, err)
		}
		return &harness.ToolResult{Output: out}, false, nil
	}
	died, err = s.failed(ctx, sess, err)
	return nil, died, err
}

// failed sorts out a call's error: an answer over the limit (the
// connection is dropped, the call not retried), the caller's timeout (the
// server stays), the server's own error answer, or the connection's end
// (died: the server is restarted).
func (s *server) failed(ctx context.Context, sess *session, err error) (died bool, _ error) {
	if sess.tooLarge.Load() {
		s.dropped(sess, "it sent a message over the answer limit")
		return false, fmt.Errorf("tool %s: the MCP server sent a message over %s, the answer limit; it was not read further: %w", s.id, byteSize(s.m.opts.MaxAnswerBytes), ErrUnavailable)
	}
	if ctx.Err() != nil {
		return false, s.ctxErr(ctx, err)
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && !sess.ended(0) {
		return false, fmt.Errorf("tool %s: the MCP server answered with an error: %v", s.id, err)
	}
	if sess.ended(deathWait) {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			// Its stream is not MCP: the connection was cut, which ends
			// the program (a broken pipe); that is no news.
			s.dropped(sess, "wrote what is not an MCP message")
			return true, fmt.Errorf("tool %s: the MCP server wrote what is not an MCP message (%v): %w", s.id, err, ErrUnavailable)
		}
		how := sess.howItEnded()
		s.dropped(sess, how+" during a call")
		return true, fmt.Errorf("tool %s: the MCP server %s during the call: %v: %w", s.id, how, err, ErrUnavailable)
	}
	return false, fmt.Errorf("tool %s: %w", s.id, err)
}

// ctxErr turns an error that came with ctx's end into the call's: the
// tool timeout named, else the caller's own end.
func (s *server) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if errors.Is(context.Cause(ctx), errCallTimeout) {
		return fmt.Errorf("tool %s: the MCP server did not answer within %s (the tool timeout): %w: %w", s.id, s.m.opts.CallTimeout, ErrUnavailable, context.DeadlineExceeded)
	}
	return fmt.Errorf("tool %s: %w", s.id, context.Cause(ctx))
}

// get returns the live connection, starting one if none is up. Concurrent
// callers share one start. A start after a failure waits for the backoff;
// a caller waits for it at most maxRestartWait (and never past its
// deadline), else fails at once with the last failure.
func (s *server) get(ctx context.Context) (*session, error) {
	for {
		s.mu.Lock()
		if s.closed || s.m.closed.Load() {
			s.mu.Unlock()
			return nil, fmt.Errorf("tool %s: %w", s.id, errClosed)
		}
		if sess := s.cur; sess != nil {
			if !sess.ended(0) {
				s.mu.Unlock()
				return sess, nil
			}
			s.droppedLocked(sess, "ended its connection between calls")
		}
		wait := time.Until(s.retryAt)
		dl, hasDeadline := ctx.Deadline()
		if wait > maxRestartWait || wait > 0 && hasDeadline && time.Until(dl) < wait {
			err := fmt.Errorf("tool %s: the MCP server failed (%s); it starts again in %s: %w", s.id, s.lastErr, wait.Round(time.Millisecond), ErrUnavailable)
			s.mu.Unlock()
			return nil, err
		}
		if s.starting == nil {
			s.starting = make(chan struct{})
			done := s.starting
			s.m.spawn(func() { s.start(max(wait, 0), done) })
		}
		starting := s.starting
		s.mu.Unlock()

		select {
		case <-starting:
		case <-ctx.Done():
			return nil, fmt.Errorf("tool %s: waiting for the MCP server to start: %w", s.id, context.Cause(ctx))
		}
		s.mu.Lock()
		sess, err := s.cur, s.startErr
		s.mu.Unlock()
		if sess == nil {
			if err == nil {
				err = fmt.Errorf("tool %s: %w", s.id, errClosed)
			}
			return nil, err
		}
	}
}

// start connects after wait and makes the connection the current one. It
// does not depend on the caller's context: a caller that gives up leaves
// it to finish for the next; it is bounded by CallTimeout.
func (s *server) start(wait time.Duration, done chan struct{}) {
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.m.ctx.Done():
			t.Stop()
		}
	}
	var sess *session
	err := errClosed
	if s.m.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(s.m.ctx, s.m.opts.CallTimeout)
		sess, err = s.connect(ctx)
		cancel()
		if err != nil {
			err = fmt.Errorf("tool %s: start the MCP server: %w: %w", s.id, err, ErrUnavailable)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	s.starting = nil
	switch {
	case err == nil && (s.closed || s.m.closed.Load()):
		s.m.spawn(func() { sess.close(s.m.opts.StopGrace) })
		s.startErr = errClosed
	case err != nil:
		s.startErr = err
		if !s.closed && s.m.ctx.Err() == nil {
			s.failures++
			s.retryAt = time.Now().Add(s.backoff())
			s.lastErr = err.Error()
			s.log.Error("mcp: the server did not start", slog.Any("error", err), slog.Duration("retry_in", s.backoff()))
		}
	default:
		s.cur, s.startErr = sess, nil
		s.starts++
		attrs := []any{slog.Int("restarts", s.starts-1)}
		if sess.proc != nil {
			attrs = append(attrs, slog.Int("pid", sess.proc.pid))
		}
		s.log.Info("mcp: server started", attrs...)
	}
}

// connect starts the program, or dials the URL, and opens the MCP
// session.
func (s *server) connect(ctx context.Context) (*session, error) {
	if len(s.cfg.Command) > 0 {
		return s.connectStdio(ctx)
	}
	return s.connectHTTP(ctx)
}

func (s *server) backoff() time.Duration {
	d := restartBackoff
	for i := 1; i < s.failures && d < maxRestartBackoff; i++ {
		d *= 2
	}
	return min(d, maxRestartBackoff)
}

// succeeded notes a successful call: failures no longer count as in a row.
func (s *server) succeeded() {
	s.mu.Lock()
	s.failures = 0
	s.mu.Unlock()
}

// dropped records that sess died or can no longer be trusted, unless it is
// no longer the current one, and closes it in the background.
func (s *server) dropped(sess *session, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.droppedLocked(sess, reason)
}

func (s *server) droppedLocked(sess *session, reason string) {
	if s.cur != sess {
		return
	}
	s.cur = nil
	s.failures++
	s.retryAt = time.Now().Add(s.backoff())
	s.lastErr = "it " + reason
	attrs := []any{slog.String("reason", reason), slog.Duration("restart_after", s.backoff())}
	if sess.proc != nil {
		attrs = append(attrs, slog.Int("pid", sess.proc.pid))
	}
	s.log.Error("mcp: the server failed; it starts again on its next call", attrs...)
	s.m.spawn(func() { sess.close(s.m.opts.StopGrace) })
}

// close ends the server's connection and process, and refuses further
// calls.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	sess := s.cur
	s.cur = nil
	starting := s.starting
	s.mu.Unlock()
	if sess != nil {
		sess.close(s.m.opts.StopGrace)
	}
	if starting != nil {
		<-starting // the start sees closed and closes what it made
	}
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{ToolID: s.id, Starts: s.starts, LastError: s.lastErr}
	if s.cur != nil && !s.cur.ended(0) {
		st.Running = true
		if s.cur.proc != nil {
			st.PID = s.cur.proc.pid
		}
	}
	return st
}

// session is one connection to a server: its MCP session, and the
// process when the server was started.
type session struct {
	cs   *mcp.ClientSession
	proc *process // nil over HTTP
	// done is closed once the connection ended (its read side failed or
	// was closed).
	done chan struct{}
	// tooLarge is set when a message from the server went over the answer
	// limit: the stream was cut there.
	tooLarge atomic.Bool
	// endErr is why the connection ended, when known.
	endErr    atomic.Value // string
	closeOnce sync.Once
}

func newSession() *session { return &session{done: make(chan struct{})} }

// watch closes done when cs's connection ends.
func (sess *session) watch(cs *mcp.ClientSession) {
	sess.cs = cs
	go func() {
		if err := cs.Wait(); err != nil {
			sess.endErr.Store(err.Error())
		}
		close(sess.done)
	}()
}

// ended reports whether the connection ended, waiting up to wait for it.
func (sess *session) ended(wait time.Duration) bool {
	if wait <= 0 {
		select {
		case <-sess.done:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-sess.done:
		return true
	case <-t.C:
		return false
	}
}

// howItEnded says how the server went: "exited (exit status 2)", "was
// killed by a signal (signal: killed)", or how its connection ended.
func (sess *session) howItEnded() string {
	if sess.proc != nil {
		return sess.proc.howItEnded()
	}
	if e, _ := sess.endErr.Load().(string); e != "" {
		return "closed the connection (" + e + ")"
	}
	return "closed the connection"
}

// close closes the MCP session, then ends the process: it has grace to
// exit once its input is closed, then its process group is killed. It
// returns once the process is gone.
func (sess *session) close(grace time.Duration) {
	sess.closeOnce.Do(func() {
		closed := make(chan struct{})
		go func() {
			if sess.cs != nil {
				_ = sess.cs.Close()
			}
			close(closed)
		}()
		if sess.proc == nil {
			t := time.NewTimer(grace)
			select {
			case <-closed:
			case <-t.C:
			}
			t.Stop()
			return
		}
		sess.proc.stop(grace)
	})
}

// byteSize writes n as "4 MiB" when whole, else in bytes.
func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// output is what a call result gives the model, as JSON: its structured
// content; else its text, as it is when JSON, else as a JSON string; else
// its content parts. A result marked as an error is an error with its
// text. An output over limit is an error.
func output(res *mcp.CallToolResult, limit int64) (json.RawMessage, error) {
	if res == nil {
		return json.RawMessage("{}"), nil
	}
	var texts []string
	allText := true
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		} else {
			allText = false
		}
	}
	if res.IsError {
		msg := strings.Join(texts, "\n")
		if msg == "" {
			msg = "no message"
		}
		return nil, fmt.Errorf("the MCP tool reported an error: %s", msg)
	}
	var out []byte
	var err error
	switch {
	case res.StructuredContent != nil:
		out, err = json.Marshal(res.StructuredContent)
	case len(res.Content) == 0:
		out = []byte("{}")
	case allText:
		text := strings.Join(texts, "\n")
		if trimmed := strings.TrimSpace(text); trimmed != "" && json.Valid([]byte(trimmed)) {
			out = []byte(trimmed)
		} else {
			out, err = json.Marshal(text)
		}
	default:
		out, err = json.Marshal(res.Content)
	}
	if err != nil {
		return nil, fmt.Errorf("the MCP tool's result: %w", err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("the MCP tool's result is %d bytes, over %s, the answer limit", len(out), byteSize(limit))
	}
	return out, nil
}
