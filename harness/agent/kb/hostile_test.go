package kb_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc/kbdoctest"
)

// TestWriteRefusesHostile writes documents made to exhaust a reader:
// each is refused, with the limit it passed, and leaves nothing behind.
func TestWriteRefusesHostile(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, file string
		data       []byte
		want       error
		reason     string
	}{
		{"flate bomb", "bomb.pdf", kbdoctest.FlateBombPDF(80 << 20), kb.ErrTooLarge, "decompresses to more than 64 MiB"},
		{"page tree refers to itself", "cycle.pdf", kbdoctest.CyclicPDF(), kb.ErrUnsupported, "page tree refers to itself"},
		{"2^31 pages", "count.pdf", kbdoctest.CountPDF(1 << 31), kb.ErrTooLarge, "2147483648 pages"},
		{"docx of 200 MB of text", "bomb.docx", kbdoctest.BombDOCX(200 << 20), kb.ErrTooLarge, "decompresses to more than 64 MiB"},
		{"docx nested deep", "deep.docx", kbdoctest.NestedDOCX(100_000), kb.ErrUnsupported, "levels deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.store.Write(e.ctx, "a", tc.file, bytes.NewReader(tc.data), true)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("write = %v; want %v saying %q", err, tc.want, tc.reason)
			}
		})
	}
	files, err := e.store.List(e.ctx, "a")
	if err != nil || len(files) != 0 {
		t.Errorf("list = %v, %v; want nothing kept", files, err)
	}
	if kept, _ := filepath.Glob(filepath.Join(e.dir, ".extracted", "a", "*")); len(kept) != 0 {
		t.Errorf("extractions kept: %v", kept)
	}
}

// TestDocumentsSkipHostile puts hostile documents in a knowledge base
// behind the store's back: reading the base skips them, with a log line,
// instead of looping or exhausting memory.
func TestDocumentsSkipHostile(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a", "faq.md", "# FAQ\n\nAsk us.")
	dir := filepath.Join(e.dir, "a")
	if err := os.WriteFile(filepath.Join(dir, "cycle.pdf"), kbdoctest.CyclicPDF(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "count.pdf"), kbdoctest.CountPDF(1<<31), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := e.store.Documents("a")
	if err != nil || len(docs) != 1 || docs[0].Name != "faq.md" {
		t.Fatalf("documents = %v, %v; want faq.md alone", docs, err)
	}
	for _, want := range []string{"cycle.pdf", "count.pdf"} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("no log line for %s: %s", want, e.logs)
		}
	}
}

// TestExtractOptions checks that the store's Extract limits apply.
func TestExtractOptions(t *testing.T) {
	e := newEnv(t)
	store := kb.New(kb.Options{Dir: e.dir, Extract: kbdocOptions(1)})
	pdf := kbdoctest.PDF(kbdoctest.Page{Paragraphs: []string{"one"}}, kbdoctest.Page{Paragraphs: []string{"two"}})
	_, err := store.Write(e.ctx, "a", "two.pdf", bytes.NewReader(pdf), true)
	if !errors.Is(err, kb.ErrTooLarge) || !strings.Contains(err.Error(), "at most 1 are read") {
		t.Fatalf("write of 2 pages with a limit of 1 = %v, want ErrTooLarge", err)
	}
}

func kbdocOptions(maxPages int) kbdoc.Options { return kbdoc.Options{MaxPages: maxPages} }
