package kbdoc

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// childEnv marks a process started to extract one document; its value is
// the protocol version, the memory limit and the time limit.
const childEnv = "GAUNTLET_KBDOC_CHILD"

// childProtocol is the version of the exchange between parent and child:
// a gob-encoded childRequest on the child's stdin, a gob-encoded
// childResponse on its stdout.
const childProtocol = "1"

// errNoChild reports a child process that could not be started; the
// document is then extracted in process.
var errNoChild = errors.New("cannot start the extraction child")

// MaxChildren is how many extraction children run at once in a process;
// a document waits for a slot within its time limit. Each child may use
// Options.MaxMemory, so the memory of all of them is bounded as well.
const MaxChildren = 2

// childSlots holds a token per running child.
var childSlots = make(chan struct{}, MaxChildren)

// hooked is set once RunIfChild has been called in a process that is not
// a child: that process's executable serves children.
var hooked atomic.Bool

// RunIfChild makes this program able to extract documents in child
// processes, and must be called first thing in main (or in TestMain, or
// an init function of a test package, for tests that extract documents).
//
// In a process started as such a child (the same executable, with an
// environment variable set), it reads one document from stdin, extracts
// it within its limits (its own memory and CPU time bounded by the
// system, when the platform allows), writes the result to stdout and
// exits: it never returns. Anywhere else it records that the executable
// can serve children and returns at once.
//
// A program that does not call it extracts in its own process: every
// limit of Options holds there but MaxMemory, and the time limit frees
// the caller, not the CPU, when the reader loops where it checks nothing.
func RunIfChild() {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		hooked.Store(true)
		return
	}
	os.Exit(serveChild(v, os.Stdin, os.Stdout, os.Stderr))
}

// childRequest is what a child is given to extract.
type childRequest struct {
	Name   string
	Format Format
	Data   []byte
	Limits Options // the func field (Usage) is not sent
}

// childResponse is a child's answer: a document, or the error's kind
// ("too_large", "unsupported") and message.
type childResponse struct {
	Doc     *Document
	Kind    string
	Message string
	PeakRSS int64 // the child's peak resident memory, in bytes
}

// serveChild serves one extraction and returns the exit code.
func serveChild(env string, in io.Reader, out, errw io.Writer) int {
	fields := strings.Fields(env)
	if len(fields) != 3 || fields[0] != childProtocol {
		fmt.Fprintf(errw, "kbdoc: child: unknown protocol %q\n", env)
		return 2
	}
	mem, err1 := strconv.ParseInt(fields[1], 10, 64)
	timeout, err2 := time.ParseDuration(fields[2])
	if err1 != nil || err2 != nil {
		fmt.Fprintf(errw, "kbdoc: child: bad limits %q\n", env)
		return 2
	}
	// Limits first, before the document is read into memory.
	limitChild(mem, timeout)
	debug.SetMemoryLimit(mem / 4 * 3)
	var req childRequest
	if err := gob.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintf(errw, "kbdoc: child: read request: %v\n", err)
		return 2
	}
	o := req.Limits.withDefaults()
	d, err := extractLocal(newLimits(context.Background(), o), req.Format, req.Data)
	var resp childResponse
	switch {
	case err == nil:
		resp.Doc = d
	case errors.Is(err, ErrTooLarge):
		resp.Kind, resp.Message = "too_large", strings.TrimSuffix(err.Error(), ": "+ErrTooLarge.Error())
	default:
		resp.Kind, resp.Message = "unsupported", strings.TrimSuffix(err.Error(), ": "+ErrUnsupported.Error())
	}
	resp.PeakRSS = selfPeakRSS()
	if err := gob.NewEncoder(out).Encode(&resp); err != nil {
		fmt.Fprintf(errw, "kbdoc: child: write response: %v\n", err)
		return 2
	}
	return 0
}

// cappedBuffer keeps at most max bytes and remembers that more came; it
// never fails a write, so that the child is never blocked on a pipe.
type cappedBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); len(p) > room {
		b.over = true
		b.buf.Write(p[:max(room, 0)])
	} else {
		b.buf.Write(p)
	}
	return len(p), nil
}

// outOfMemory tells, from a child's stderr, a child the system refused
// memory: the Go runtime says so, or, when the refused mapping was one of
// its own (a thread's stack, say), dies of a segmentation fault, which
// pure Go code does not otherwise cause.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "SIGSEGV", "unexpected signal"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// extractChild extracts a document in a child process: the executable
// itself, which RunIfChild turns into the extractor. The child is killed
// at the time limit (or when ctx ends) and when its memory passes the
// limit; its answer is read up to the size a document within the limits
// can have.
func extractChild(ctx context.Context, name string, f Format, data []byte, o Options) (*Document, Usage, error) {
	u := Usage{Child: true}
	exe, err := childExecutable()
	if err != nil {
		return nil, u, fmt.Errorf("%w: find the executable: %v", errNoChild, err)
	}
	var req bytes.Buffer
	if err := gob.NewEncoder(&req).Encode(&childRequest{Name: name, Format: f, Data: data, Limits: o}); err != nil {
		return nil, u, fmt.Errorf("extract %s: %w", name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// A slot first: each child may use MaxMemory, so the children at once
	// are bounded too. The wait counts against the document's time, but a
	// free slot taken after that time ran out reports the time limit, as a
	// child would (a select with both cases ready picks one at random).
	select {
	case childSlots <- struct{}{}:
	default:
		select {
		case childSlots <- struct{}{}:
		case <-cctx.Done():
			if ctx.Err() != nil {
				return nil, u, ctx.Err()
			}
			return nil, u, fmt.Errorf("extract %s: %d documents were being read for %s: %w",
				name, cap(childSlots), o.Timeout, context.DeadlineExceeded)
		}
	}
	defer func() { <-childSlots }()
	if cctx.Err() != nil {
		if ctx.Err() != nil {
			return nil, u, ctx.Err()
		}
		return nil, u, timedOut(o.Timeout)
	}
	cmd := exec.CommandContext(cctx, exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s", childEnv, childProtocol, o.MaxMemory, o.Timeout))
	cmd.Stdin = &req
	stdout := &cappedBuffer{max: 2*o.MaxTextBytes + 32*o.MaxSections + 8*o.MaxPages + 64<<10}
	stderr := &cappedBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = childAttr()
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, u, fmt.Errorf("%w: %v", errNoChild, err)
	}
	var overMemory atomic.Bool
	stopWatch := watchMemory(cmd.Process, o.MaxMemory, &overMemory)
	werr := cmd.Wait()
	u.PeakRSS = stopWatch()
	errText := stderr.buf.String()
	switch {
	case ctx.Err() != nil:
		return nil, u, ctx.Err()
	case overMemory.Load() || outOfMemory(errText):
		return nil, u, fmt.Errorf("needs more than %s of memory to read: %w", size(o.MaxMemory), ErrTooLarge)
	case cctx.Err() != nil || cpuLimited(cmd.ProcessState):
		return nil, u, timedOut(o.Timeout)
	case stdout.over:
		return nil, u, fmt.Errorf("gives more text than %s: %w", size(int64(o.MaxTextBytes)), ErrTooLarge)
	case werr != nil:
		line, _, _ := strings.Cut(strings.TrimSpace(errText), "\n")
		if line == "" {
			line = werr.Error()
		}
		return nil, u, fmt.Errorf("is a damaged or unreadable %s file: its reader stopped (%s): %w", f, line, ErrUnsupported)
	}
	var resp childResponse
	if err := gob.NewDecoder(&stdout.buf).Decode(&resp); err != nil {
		return nil, u, fmt.Errorf("extract %s: read the child's answer: %w", name, err)
	}
	u.PeakRSS = max(u.PeakRSS, resp.PeakRSS)
	switch resp.Kind {
	case "":
		if resp.Doc == nil {
			return nil, u, fmt.Errorf("extract %s: the child answered no document", name)
		}
		return resp.Doc, u, nil
	case "too_large":
		return nil, u, fmt.Errorf("%s: %w", resp.Message, ErrTooLarge)
	default:
		return nil, u, fmt.Errorf("%s: %w", resp.Message, ErrUnsupported)
	}
}
