package mcptool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inherited are the variables of Gauntlet's environment a started program
// gets, besides its record's env.
var inherited = []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL"}

// Bounds of what is logged of a program's stderr.
const (
	maxStderrLine   = 4 << 10
	stderrPerSecond = 100
)

// exitWait is how long a failed start waits for the program's exit
// status, so that its error can say how it ended.
const exitWait = time.Second

// process is a started MCP server program.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File // the parent's end: closing it tells the program to exit
	exited chan struct{}
	// exitErr is cmd.Wait's error, set before exited is closed.
	exitErr error
	// lastStderr is the last line the program wrote to stderr.
	lastStderr atomic.Value // string
}

// connectStdio starts the program and opens the MCP session over its
// standard input and output.
func (s *server) connectStdio(ctx context.Context) (_ *session, err error) {
	env := make([]string, 0, len(inherited)+len(s.cfg.Env))
	for _, k := range inherited {
		if v, ok := s.m.opts.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	own, err := s.cfg.Environ(s.m.opts.LookupEnv)
	if err != nil {
		return nil, err
	}
	env = append(env, own...)

	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	ownProcessGroup(cmd)
	err = cmd.Start()
	// The child has its ends now; the parent keeps its own.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("run %s: %w", s.cfg.Command[0], err)
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, exited: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	go s.logStderr(errR, p)

	sess := newSession()
	sess.proc = p
	defer func() {
		if err != nil {
			p.stop(s.m.opts.StopGrace)
		}
	}()
	transport := &mcp.IOTransport{
		Reader:        &lineLimitReader{r: outR, limit: s.m.opts.MaxAnswerBytes, over: &sess.tooLarge},
		Writer:        inW,
		MaxLineLength: -1, // lineLimitReader bounds the lines
	}
	cs, err := newClient().Connect(ctx, transport, nil)
	if err != nil {
		if sess.tooLarge.Load() {
			return nil, fmt.Errorf("it sent a message over %s, the answer limit, while starting", byteSize(s.m.opts.MaxAnswerBytes))
		}
		t := time.NewTimer(exitWait)
		select {
		case <-p.exited:
			t.Stop()
			return nil, fmt.Errorf("the program %s at start%s", p.howItEnded(), p.stderrNote())
		case <-t.C:
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the program did not complete MCP's initialization within %s%s", s.m.opts.CallTimeout, p.stderrNote())
		}
		return nil, fmt.Errorf("MCP initialization: %v%s", err, p.stderrNote())
	}
	sess.watch(cs)
	return sess, nil
}

// newClient is the MCP client Gauntlet presents itself as.
func newClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "gauntlet", Version: "1"}, nil)
}

// stderrNote quotes the program's last stderr line for an error.
func (p *process) stderrNote() string {
	if line, _ := p.lastStderr.Load().(string); line != "" {
		return fmt.Sprintf("; its last line on stderr: %q", line)
	}
	return ""
}

// howItEnded says how the process ended: "exited (exit status 2)", "was
// killed by a signal (signal: killed)", "exited", or "stopped answering"
// while it still runs.
func (p *process) howItEnded() string {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		return "stopped answering"
	}
	var ee *exec.ExitError
	switch {
	case p.exitErr == nil:
		return "exited (exit status 0)"
	case errors.As(p.exitErr, &ee) && strings.HasPrefix(ee.String(), "signal: "):
		return "was killed by a signal (" + ee.String() + ")"
	default:
		return "exited (" + p.exitErr.Error() + ")"
	}
}

// stop closes the program's input, gives it grace to exit, then kills its
// process group, and returns once it is gone.
func (p *process) stop(grace time.Duration) {
	_ = p.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		killGroup(p.pid) // what it started and left behind
		return
	case <-t.C:
	}
	killGroup(p.pid)
	<-p.exited
}

// logStderr logs what the program writes to stderr, one record per line,
// prefixed with the tool id: each line cut at maxStderrLine, at most
// stderrPerSecond lines a second (the lines over are counted and the count
// logged).
func (s *server) logStderr(r *os.File, p *process) {
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	var windowStart time.Time
	lines, dropped := 0, 0
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || err == nil {
			text := string(line)
			if isPrefix {
				text += " …(cut)"
				for isPrefix && err == nil { // skip the rest of the line
					_, isPrefix, err = br.ReadLine()
				}
			}
			p.lastStderr.Store(text)
			now := time.Now()
			if now.Sub(windowStart) >= time.Second {
				if dropped > 0 {
					s.log.Warn(fmt.Sprintf("tool %s: %d lines of stderr not logged (over %d a second)", s.id, dropped, stderrPerSecond), slog.Int("pid", p.pid))
				}
				windowStart, lines, dropped = now, 0, 0
			}
			if lines < stderrPerSecond {
				lines++
				s.log.Info("tool "+s.id+": "+text, slog.String("stream", "stderr"), slog.Int("pid", p.pid))
			} else {
				if dropped == 0 {
					s.log.Warn(fmt.Sprintf("tool %s: more than %d lines of stderr a second: lines not logged until the next second", s.id, stderrPerSecond), slog.Int("pid", p.pid))
				}
				dropped++
			}
		}
		if err != nil {
			if dropped > 0 {
				s.log.Warn(fmt.Sprintf("tool %s: %d lines of stderr not logged (over %d a second)", s.id, dropped, stderrPerSecond), slog.Int("pid", p.pid))
			}
			return
		}
	}
}

// errLineTooLong cuts a stream whose line went over the answer limit.
var errLineTooLong = errors.New("a message over the answer limit")

// lineLimitReader reads a newline-delimited stream, failing once a line
// (an MCP message) goes over limit bytes: the decoder reading from it
// never buffers more than that.
type lineLimitReader struct {
	r     io.ReadCloser
	limit int64
	n     int64 // bytes of the current line so far
	over  *atomic.Bool
}

func (l *lineLimitReader) Read(p []byte) (int, error) {
	if l.over.Load() {
		return 0, errLineTooLong
	}
	n, err := l.r.Read(p)
	rest := p[:n]
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l.n += int64(len(rest))
			break
		}
		if l.n+int64(i) > l.limit {
			l.n += int64(i)
			break
		}
		l.n = 0
		rest = rest[i+1:]
	}
	if l.n > l.limit {
		l.over.Store(true)
		return 0, errLineTooLong
	}
	return n, err
}

func (l *lineLimitReader) Close() error { return l.r.Close() }
