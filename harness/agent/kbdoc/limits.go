package kbdoc

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Default limits of one extraction; see [Options].
const (
	DefaultMaxPages             = 10_000
	DefaultMaxStreamBytes       = 64 << 20
	DefaultMaxDecompressedBytes = 256 << 20
	DefaultMaxObjects           = 100_000
	DefaultMaxDepth             = 256
	DefaultMaxSections          = 200_000
	DefaultTimeout              = 30 * time.Second
	DefaultMaxMemory            = 512 << 20
)

// Options bound the extraction of one document. A zero field takes its
// default. Exceeding a size limit gives an error wrapping [ErrTooLarge],
// a structure that cannot be read within them (nesting, a page tree that
// refers to itself, the time limit) one wrapping [ErrUnsupported]; the
// message says which limit and its value.
type Options struct {
	// MaxTextBytes bounds the extracted text, counted as it is extracted
	// (default 10 MiB, MaxTextBytes). Heading paths repeated in each
	// section are counted apart, against the same bound.
	MaxTextBytes int
	// MaxSections bounds the sections of a document (default 200 000).
	MaxSections int
	// MaxPages bounds the pages of a PDF, as its page tree claims them and
	// as they are found (default 10 000).
	MaxPages int
	// MaxStreamBytes bounds the decompressed size of one part: a PDF
	// stream (page content, font map), a part of a DOCX archive (default
	// 64 MiB).
	MaxStreamBytes int64
	// MaxDecompressedBytes bounds the decompressed size of all the parts
	// read from one document (default 256 MiB).
	MaxDecompressedBytes int64
	// MaxObjects bounds the objects looked at: the nodes of a PDF's page
	// tree, its content streams and fonts, the entries of a DOCX archive
	// (default 100 000).
	MaxObjects int
	// MaxDepth bounds nesting: of a PDF's page tree and graphics states, of
	// XML elements in a DOCX, of HTML elements (default 256).
	MaxDepth int
	// Timeout bounds the time of one extraction (default 30 s).
	Timeout time.Duration
	// MaxMemory bounds the memory of the child process that extracts a
	// PDF, DOCX or HTML file (default 512 MiB). It is enforced only in a
	// child (see RunIfChild): a process cannot bound the memory of one of
	// its own calls.
	MaxMemory int64
	// InProcess extracts in the calling process even when RunIfChild
	// was called, with the limits that hold there (all but MaxMemory).
	InProcess bool
	// Usage, when set, is called after each extraction with what it
	// used.
	Usage func(Usage)
}

// Usage is what one extraction used.
type Usage struct {
	// Child is true when the extraction ran in a child process.
	Child bool
	// PeakRSS is the child's peak resident memory in bytes (0 in
	// process).
	PeakRSS int64
	// Elapsed is the wall time of the extraction.
	Elapsed time.Duration
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set64 := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&o.MaxTextBytes, MaxTextBytes)
	set(&o.MaxSections, DefaultMaxSections)
	set(&o.MaxPages, DefaultMaxPages)
	set64(&o.MaxStreamBytes, DefaultMaxStreamBytes)
	set64(&o.MaxDecompressedBytes, DefaultMaxDecompressedBytes)
	set(&o.MaxObjects, DefaultMaxObjects)
	set(&o.MaxDepth, DefaultMaxDepth)
	set64(&o.MaxMemory, DefaultMaxMemory)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// limitPanic carries a limit's error up through the PDF reader, which
// recovers its own panics: it is a runtime.Error so that the reader's
// recovery of parse errors passes it on.
type limitPanic struct{ err error }

func (p limitPanic) Error() string { return p.err.Error() }
func (limitPanic) RuntimeError()   {}

// limits counts what one extraction uses. An extraction runs in one
// goroutine; only expired is touched by another (the one that gave up
// waiting for it).
type limits struct {
	o        Options
	ctx      context.Context
	deadline time.Time
	expired  atomic.Bool

	text, paths, sections int
	decompressed          int64
	objects               int
	ticks                 int
	err                   error // the first limit exceeded
}

func newLimits(ctx context.Context, o Options) *limits {
	return &limits{o: o, ctx: ctx, deadline: time.Now().Add(o.Timeout)}
}

// fail records err (the first one wins) and aborts the extraction.
func (l *limits) fail(err error) {
	if l.err == nil {
		l.err = err
	}
	panic(limitPanic{l.err})
}

func (l *limits) tooLarge(format string, args ...any) {
	l.fail(fmt.Errorf(format+": %w", append(args, ErrTooLarge)...))
}

func (l *limits) unsupported(format string, args ...any) {
	l.fail(fmt.Errorf(format+": %w", append(args, ErrUnsupported)...))
}

// timedOut is the error of an extraction past its time.
func timedOut(d time.Duration) error {
	return fmt.Errorf("could not be read within %s (timed out): %w", d, ErrUnsupported)
}

// tick is called in every loop of an extraction: every 256 calls it
// checks the time and the caller's context.
func (l *limits) tick() {
	l.ticks++
	if l.ticks&255 != 0 && !l.expired.Load() {
		return
	}
	if err := l.ctx.Err(); err != nil {
		l.fail(err)
	}
	if l.expired.Load() || time.Now().After(l.deadline) {
		l.fail(timedOut(l.o.Timeout))
	}
}

// object counts n objects looked at.
func (l *limits) object(n int, what string) {
	l.objects += n
	if l.objects > l.o.MaxObjects {
		l.tooLarge("has more than %d objects (%s)", l.o.MaxObjects, what)
	}
}

// inflated counts n more decompressed bytes of a part, whose running
// size is part.
func (l *limits) inflated(n int64, part int64, what string) {
	l.decompressed += n
	if part > l.o.MaxStreamBytes {
		l.tooLarge("%s decompresses to more than %s", what, size(l.o.MaxStreamBytes))
	}
	if l.decompressed > l.o.MaxDecompressedBytes {
		l.tooLarge("decompresses to more than %s in all", size(l.o.MaxDecompressedBytes))
	}
}

// pendingText checks that n bytes of text not yet added would fit.
func (l *limits) pendingText(n int) {
	if l.text+n > l.o.MaxTextBytes {
		l.tooLarge("has more than %s of text", size(int64(l.o.MaxTextBytes)))
	}
}

// addText counts n bytes of text added to the document.
func (l *limits) addText(n int) {
	l.pendingText(n)
	l.text += n
}

// addSection counts a section whose heading path is pathBytes long.
func (l *limits) addSection(pathBytes int) {
	l.sections++
	if l.sections > l.o.MaxSections {
		l.tooLarge("has more than %d sections", l.o.MaxSections)
	}
	l.paths += pathBytes
	if l.paths > l.o.MaxTextBytes {
		l.tooLarge("has more than %s of headings repeated over its sections", size(int64(l.o.MaxTextBytes)))
	}
}

// depth checks a nesting depth.
func (l *limits) depth(d int, what string) {
	if d > l.o.MaxDepth {
		l.unsupported("nests %s more than %d levels deep", what, l.o.MaxDepth)
	}
}

// size writes a byte count for a message: in MiB when whole, else bytes.
func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// recoverLimit turns a limit's panic into its error; other panics go on.
func recoverLimit(x any) (error, bool) {
	var lp limitPanic
	if e, ok := x.(error); ok && errors.As(e, &lp) {
		return lp.err, true
	}
	return nil, false
}
