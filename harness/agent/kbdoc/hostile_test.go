package kbdoc_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc/kbdoctest"
)

// small are limits for tests: small enough that the hostile documents
// pass them at once, large enough for every ordinary one.
var small = kbdoc.Options{
	MaxTextBytes:         1 << 20,
	MaxStreamBytes:       4 << 20,
	MaxDecompressedBytes: 8 << 20,
	MaxPages:             100,
	MaxObjects:           1000,
	MaxDepth:             64,
	Timeout:              time.Minute,
	MaxMemory:            256 << 20,
}

// bombDOCX is a DOCX whose text is 200 MB, made once.
var bombDOCX = sync.OnceValue(func() []byte { return kbdoctest.BombDOCX(200 << 20) })

type hostile struct {
	name, file string
	data       func() []byte
	opts       kbdoc.Options
	want       error
	reason     string
	child      bool // run in a child too, not only in process
}

func hostileDocuments() []hostile {
	return []hostile{
		{"flate bomb pdf", "bomb.pdf", func() []byte { return kbdoctest.FlateBombPDF(50 << 20) }, small, kbdoc.ErrTooLarge, "decompresses to more than 4 MiB", true},
		{"pdf text over the limit", "text.pdf", func() []byte { return kbdoctest.FlateBombPDF(3 << 19) }, small, kbdoc.ErrTooLarge, "more than 1 MiB of text", false},
		{"pdf page tree refers to itself", "cycle.pdf", kbdoctest.CyclicPDF, small, kbdoc.ErrUnsupported, "page tree refers to itself", true},
		{"pdf page tree refers to itself, default limits", "cycle.pdf", kbdoctest.CyclicPDF, kbdoc.Options{}, kbdoc.ErrUnsupported, "page tree refers to itself", false},
		{"pdf claiming 2^31 pages", "count.pdf", func() []byte { return kbdoctest.CountPDF(1 << 31) }, kbdoc.Options{}, kbdoc.ErrTooLarge, "2147483648 pages", true},
		{"docx of 200 MB of text", "bomb.docx", bombDOCX, kbdoc.Options{}, kbdoc.ErrTooLarge, "word/document.xml decompresses to more than 64 MiB", true},
		{"docx text over the limit", "bomb.docx", func() []byte { return kbdoctest.BombDOCX(3 << 20) }, small, kbdoc.ErrTooLarge, "more than 1 MiB of text", false},
		{"docx of 200 MB of text, small limits", "bomb.docx", bombDOCX, small, kbdoc.ErrTooLarge, "word/document.xml decompresses to more than 4 MiB", false},
		{"docx nested 100 000 deep", "deep.docx", func() []byte { return kbdoctest.NestedDOCX(100_000) }, kbdoc.Options{}, kbdoc.ErrUnsupported, "nests XML elements (word/document.xml) more than 256 levels deep", true},
		{"docx of 5000 entries", "many.docx", func() []byte { return kbdoctest.ManyEntriesDOCX(5000) }, small, kbdoc.ErrTooLarge, "zip archive of 5001 entries, more than 1000", false},
		{"html nested 100 000 deep", "deep.html", func() []byte { return kbdoctest.NestedHTML(100_000) }, kbdoc.Options{}, kbdoc.ErrUnsupported, "open stack of elements exceeds", false},
		{"html nested 400 deep", "deep.html", func() []byte { return kbdoctest.NestedHTML(400) }, kbdoc.Options{}, kbdoc.ErrUnsupported, "nests elements more than 256 levels deep", false},
	}
}

// TestHostileDocuments extracts documents made to exhaust a reader: each
// is refused with the limit it passed, in a child process whose memory
// stays under its limit (the main cases), and in process alike.
func TestHostileDocuments(t *testing.T) {
	for _, tc := range hostileDocuments() {
		data := tc.data()
		for _, inProcess := range []bool{false, true} {
			if !inProcess && !tc.child {
				continue // the child reads as the process does; a few suffice
			}
			mode := "child"
			if inProcess {
				mode = "in process"
			}
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				opts := tc.opts
				opts.InProcess = inProcess
				var u kbdoc.Usage
				opts.Usage = func(got kbdoc.Usage) { u = got }
				d, err := kbdoc.ExtractContext(context.Background(), tc.file, data, opts)
				if !errors.Is(err, tc.want) {
					t.Fatalf("extract = %v sections, %v; want %v", d != nil, err, tc.want)
				}
				if !strings.Contains(err.Error(), tc.reason) {
					t.Errorf("error %q does not say %q", err, tc.reason)
				}
				if u.Child == inProcess {
					t.Errorf("usage %+v: ran in a child = %v, want %v", u, u.Child, !inProcess)
				}
				limit := opts.MaxMemory
				if limit == 0 {
					limit = kbdoc.DefaultMaxMemory
				}
				t.Logf("usage: %+v", u)
				if u.Child && (u.PeakRSS <= 0 || u.PeakRSS > limit) {
					t.Errorf("child's peak memory %d MiB, want within %d MiB", u.PeakRSS>>20, limit>>20)
				}
			})
		}
	}
}

// TestChildLimits checks the limits only a child process enforces: its
// memory, and the time of a reader that never checks the clock.
func TestChildLimits(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		// A stream within the size limits whose operands, held in memory
		// by the PDF reader, pass a memory limit set low: only the child's
		// limit stops it.
		opts := kbdoc.Options{MaxMemory: 64 << 20}
		var u kbdoc.Usage
		opts.Usage = func(got kbdoc.Usage) { u = got }
		_, err := kbdoc.ExtractContext(context.Background(), "bomb.pdf", kbdoctest.OperandBombPDF(32<<20), opts)
		if !errors.Is(err, kbdoc.ErrTooLarge) || !strings.Contains(err.Error(), "needs more than 64 MiB of memory") {
			t.Fatalf("extract = %v, want ErrTooLarge for memory", err)
		}
		if !u.Child {
			t.Errorf("usage %+v: not in a child", u)
		}
		t.Logf("usage: %+v", u)
	})
	t.Run("time", func(t *testing.T) {
		// A limit of a millisecond: the child cannot even start reading.
		_, err := kbdoc.ExtractContext(context.Background(), "bomb.pdf", kbdoctest.FlateBombPDF(1<<20), kbdoc.Options{Timeout: time.Millisecond})
		if !errors.Is(err, kbdoc.ErrUnsupported) || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("extract = %v, want ErrUnsupported, timed out", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := kbdoc.ExtractContext(ctx, "policy.pdf", kbdoctest.PDF(kbdoctest.Page{Paragraphs: []string{"x"}}), kbdoc.Options{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("extract = %v, want context.Canceled", err)
		}
	})
}

// TestChildExtracts checks that a document read in a child is the one
// read in process.
func TestChildExtracts(t *testing.T) {
	files := map[string][]byte{
		"policy.pdf": kbdoctest.PDF(kbdoctest.Page{Heading: "Shipping", Paragraphs: []string{"Orders ship in two days.", "Express costs extra."}}, kbdoctest.Page{}),
		"hr.docx":    kbdoctest.DOCX(kbdoctest.Para{Style: "Heading1", Text: "Leave"}, kbdoctest.Para{Text: "Twenty five days."}),
		"help.html":  []byte("<h1>Help</h1><p>Call us.</p>"),
		"scan.pdf":   kbdoctest.ImagePDF(1),
		"locked.pdf": kbdoctest.EncryptedPDF(kbdoctest.Page{Paragraphs: []string{"x"}}),
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			var u kbdoc.Usage
			child, cerr := kbdoc.ExtractContext(context.Background(), name, data, kbdoc.Options{Usage: func(got kbdoc.Usage) { u = got }})
			local, lerr := kbdoc.ExtractContext(context.Background(), name, data, kbdoc.Options{InProcess: true})
			if !u.Child {
				t.Errorf("not read in a child: %+v", u)
			}
			if (cerr == nil) != (lerr == nil) || cerr != nil && cerr.Error() != lerr.Error() {
				t.Fatalf("child: %v; in process: %v", cerr, lerr)
			}
			if cerr != nil {
				if errors.Is(cerr, kbdoc.ErrUnsupported) != errors.Is(lerr, kbdoc.ErrUnsupported) {
					t.Errorf("errors differ in kind: %v, %v", cerr, lerr)
				}
				return
			}
			if child.Text() != local.Text() || child.Pages != local.Pages || len(child.Sections) != len(local.Sections) {
				t.Errorf("child read %+v, in process %+v", child, local)
			}
		})
	}
}
