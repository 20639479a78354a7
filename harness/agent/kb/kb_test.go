package kb_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc/kbdoctest"
)

// env is a Store in a fresh directory whose Check knows the agents "a"
// and "fresh" only.
type env struct {
	ctx   context.Context
	root  string // the test's directory
	dir   string // the store's Dir, root/kb
	store *kb.Store
	logs  *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{ctx: context.Background(), root: root, dir: filepath.Join(root, "kb"), logs: &bytes.Buffer{}}
	e.store = kb.New(kb.Options{Dir: e.dir, Logger: slog.New(slog.NewTextHandler(e.logs, nil)),
		Check: func(_ context.Context, agentID string) error {
			if agentID != "a" && agentID != "fresh" {
				return harness.ErrNotFound
			}
			return nil
		}})
	return e
}

func (e *env) write(t *testing.T, agentID, name, content string) {
	t.Helper()
	_, err := e.store.Write(e.ctx, agentID, name, strings.NewReader(content), true)
	if errors.Is(err, harness.ErrConflict) {
		_, err = e.store.Write(e.ctx, agentID, name, strings.NewReader(content), false)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var ve *harness.ValidationError
	if !errors.Is(err, harness.ErrInvalid) || !errors.As(err, &ve) ||
		!slices.ContainsFunc(ve.Fields, func(f harness.FieldError) bool { return f.Field == field }) {
		t.Fatalf("error = %v, want ErrInvalid naming %q", err, field)
	}
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx

	files, err := e.store.List(ctx, "a")
	if err != nil || files == nil || len(files) != 0 {
		t.Fatalf("empty List = %#v, %v", files, err)
	}
	before := float64(time.Now().Add(-time.Second).UnixNano()) / 1e9
	f, err := e.store.Write(ctx, "a", "notes.md", strings.NewReader("# Notes\nhello"), true)
	if err != nil {
		t.Fatal(err)
	}
	if f.Filename != "notes.md" || f.Size != 13 || f.Modified < before || f.Content != nil {
		t.Errorf("Write = %+v", f)
	}
	if _, err := e.store.Write(ctx, "a", "notes.md", strings.NewReader("x"), true); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("create existing = %v, want ErrConflict", err)
	}
	if _, err := e.store.Write(ctx, "a", "missing.md", strings.NewReader("x"), false); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("replace missing = %v, want ErrNotFound", err)
	}
	if _, err := e.store.Write(ctx, "a", "data.csv", strings.NewReader("a,b\n1,2\n"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Write(ctx, "a", "empty.txt", strings.NewReader(""), true); err != nil {
		t.Errorf("empty file: %v", err)
	}
	f, err = e.store.Write(ctx, "a", "notes.md", strings.NewReader("replaced ✓"), false)
	if err != nil || f.Size != int64(len("replaced ✓")) {
		t.Fatalf("replace = %+v, %v", f, err)
	}
	r, err := e.store.Read(ctx, "a", "notes.md")
	if err != nil || r.Content == nil || *r.Content != "replaced ✓" || r.Size != f.Size {
		t.Fatalf("KBRead = %+v, %v", r, err)
	}
	files, _ = e.store.List(ctx, "a")
	var names []string
	for _, f := range files {
		names = append(names, f.Filename)
	}
	if strings.Join(names, ",") != "data.csv,empty.txt,notes.md" {
		t.Errorf("List names = %v", names)
	}
	if err := e.store.Delete(ctx, "a", "notes.md"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, "a", "notes.md"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("delete twice = %v", err)
	}
	if _, err := e.store.Read(ctx, "a", "notes.md"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("read deleted = %v", err)
	}
	for name, err := range map[string]error{
		"list":   func() error { _, err := e.store.List(ctx, "nobody"); return err }(),
		"read":   func() error { _, err := e.store.Read(ctx, "nobody", "x.md"); return err }(),
		"write":  func() error { _, err := e.store.Write(ctx, "nobody", "x.md", strings.NewReader("x"), true); return err }(),
		"delete": e.store.Delete(ctx, "nobody", "x.md"),
	} {
		if !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("%s for an unknown agent = %v", name, err)
		}
	}
	// An agent with no directory yet reads as empty.
	if files, err := e.store.List(ctx, "fresh"); err != nil || len(files) != 0 {
		t.Errorf("list of a missing directory = %v, %v", files, err)
	}
	if _, err := e.store.Read(ctx, "fresh", "x.md"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("read in a missing directory = %v", err)
	}
}

func TestValidName(t *testing.T) {
	for _, name := range []string{"notes.md", "résumé.txt", "a b.txt", "data.v2.csv", "x", strings.Repeat("é", 127)} {
		if err := kb.ValidName(name); err != nil {
			t.Errorf("ValidName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "../x", "a/b", "..", ".", ".hidden", "a\x00b", `a\b`, "/abs", "x/..", "a..b",
		"line\nbreak", "tab\t", "\x7f", strings.Repeat("a", 256), " lead", "trail ", "bad\xffutf8"} {
		if err := kb.ValidName(name); !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "filename") {
			t.Errorf("ValidName(%q) = %v, want ErrInvalid naming filename", name, err)
		}
	}
}

// snapshotTree lists every file under dir with its content.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return nil
	})
	return out
}

func TestTraversalRefused(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	e.write(t, "a", "inside.md", "inside")
	// A file next to the agent's directory, which traversal would reach.
	outside := filepath.Join(e.dir, "x")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotTree(t, e.root)
	for _, name := range []string{"../x", "a/b", "..", ".hidden", "nul\x00.md", `a\b`, `..\x`, "../../gauntlet.db", "/etc/passwd", ".tmp-0000"} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			_, err := e.store.Write(ctx, "a", name, strings.NewReader("pwned"), true)
			wantInvalid(t, err, "filename")
			_, err = e.store.Write(ctx, "a", name, strings.NewReader("pwned"), false)
			wantInvalid(t, err, "filename")
			_, err = e.store.Read(ctx, "a", name)
			wantInvalid(t, err, "filename")
			wantInvalid(t, e.store.Delete(ctx, "a", name), "filename")
		})
	}
	if after := snapshotTree(t, e.root); !equalMaps(before, after) {
		t.Errorf("files changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestSymlinkEscapeRefused(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a", "inside.md", "inside")
	secret := filepath.Join(e.root, "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o644)
	link := filepath.Join(e.dir, "a", "link.md")
	if err := os.Symlink(secret, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	if f, err := e.store.Read(e.ctx, "a", "link.md"); err == nil {
		t.Errorf("read through a symlink leaving the directory = %q", *f.Content)
	}
	if _, err := e.store.Write(e.ctx, "a", "link.md", strings.NewReader("pwned"), false); err == nil {
		t.Error("replace through a symlink succeeded")
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Errorf("the file outside became %q", b)
	}
	files, _ := e.store.List(e.ctx, "a")
	if len(files) != 1 {
		t.Errorf("List lists %v, want only the regular file", files)
	}
	// Nor do the documents given to retrieval follow it.
	docs, err := e.store.Documents("a")
	if err != nil || len(docs) != 1 || docs[0].Name != "inside.md" {
		t.Errorf("Documents = %v, %v; want only inside.md", docs, err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestRefusesBinary(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name    string
		content []byte
	}{
		{"nul", []byte("text\x00more")},
		{"invalid utf8", []byte("caf\xe9 au lait")},
		{"truncated rune at end", []byte("abc\xe2\x9c")},
		{"png header", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")},
		{"nul after 1 MiB", append(bytes.Repeat([]byte("a"), 1<<20), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.store.Write(e.ctx, "a", "bin.txt", bytes.NewReader(tc.content), true)
			if !errors.Is(err, kb.ErrUnsupported) {
				t.Fatalf("Write = %v, want ErrUnsupported", err)
			}
		})
	}
	// Runes split across reads are fine.
	text := strings.Repeat("héllo ✓ 日本語 🎉 ", 100)
	if _, err := e.store.Write(e.ctx, "a", "utf8.txt", iotest.OneByteReader(strings.NewReader(text)), true); err != nil {
		t.Fatalf("one byte at a time: %v", err)
	}
	r, _ := e.store.Read(e.ctx, "a", "utf8.txt")
	if *r.Content != text {
		t.Error("content changed")
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "a"))
	if len(entries) != 1 {
		t.Errorf("directory holds %v, want only utf8.txt (no temporary file left)", entries)
	}
}

// countingReader yields n bytes of text, counting what was read.
type countingReader struct {
	left, read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	n = min(n, r.left)
	for i := range n {
		p[i] = 'a' + byte(i%26)
	}
	r.left -= n
	r.read += n
	return int(n), nil
}

func TestTooLarge(t *testing.T) {
	e := newEnv(t)
	e.write(t, "a", "big.txt", "old content")
	for _, mustCreate := range []bool{true, false} {
		name := "new.txt"
		if !mustCreate {
			name = "big.txt"
		}
		r := &countingReader{left: 11 << 20}
		_, err := e.store.Write(e.ctx, "a", name, r, mustCreate)
		if !errors.Is(err, kb.ErrTooLarge) {
			t.Fatalf("Write of 11 MiB = %v, want ErrTooLarge", err)
		}
		if r.read > kb.MaxFileBytes+(1<<20) {
			t.Errorf("read %d bytes of the body, want it to stop soon after %d", r.read, kb.MaxFileBytes)
		}
	}
	if _, err := e.store.Read(e.ctx, "a", "new.txt"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("the refused file exists: %v", err)
	}
	if r, _ := e.store.Read(e.ctx, "a", "big.txt"); *r.Content != "old content" {
		t.Errorf("a refused replace changed the file to %d bytes", len(*r.Content))
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "a"))
	if len(entries) != 1 {
		t.Errorf("directory holds %v, want only big.txt", entries)
	}
	// Exactly the limit is accepted.
	f, err := e.store.Write(e.ctx, "a", "max.txt", &countingReader{left: kb.MaxFileBytes}, true)
	if err != nil || f.Size != kb.MaxFileBytes {
		t.Errorf("Write of exactly 10 MiB = %+v, %v", f, err)
	}
}

// TestAtomicReplace replaces a file again and again while readers read
// it: each read sees one whole version, never a mix or a part.
func TestAtomicReplace(t *testing.T) {
	e := newEnv(t)
	// Versions of several write buffers each (a torn file would show), not
	// larger: the readers spin, under the race detector, for as long as
	// the writes take.
	versions := []string{strings.Repeat("A", 64<<10), strings.Repeat("B", 128<<10)}
	e.write(t, "a", "doc.txt", versions[0])
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f, err := e.store.Read(e.ctx, "a", "doc.txt")
				if err != nil {
					t.Errorf("read during replace: %v", err)
					return
				}
				if *f.Content != versions[0] && *f.Content != versions[1] {
					t.Errorf("read a torn file of %d bytes", len(*f.Content))
					return
				}
			}
		})
	}
	for i := range 10 {
		if _, err := e.store.Write(e.ctx, "a", "doc.txt", iotest.HalfReader(strings.NewReader(versions[i%2])), false); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	// A replace that fails half way leaves the old version.
	bad := io.MultiReader(strings.NewReader(strings.Repeat("C", 100<<10)), strings.NewReader("\x00"))
	if _, err := e.store.Write(e.ctx, "a", "doc.txt", bad, false); !errors.Is(err, kb.ErrUnsupported) {
		t.Fatalf("bad replace = %v", err)
	}
	if f, _ := e.store.Read(e.ctx, "a", "doc.txt"); *f.Content != versions[1] {
		t.Error("a failed replace changed the file")
	}
}

func TestConcurrentCreate(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, conflicts := 0, 0
	for i := range 8 {
		wg.Go(func() {
			_, err := e.store.Write(e.ctx, "a", "same.txt", strings.NewReader(strings.Repeat("x", i+1)), true)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, harness.ErrConflict):
				conflicts++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if created != 1 || conflicts != 7 {
		t.Errorf("created %d, conflicts %d; want 1 and 7", created, conflicts)
	}
}

func TestWithoutDir(t *testing.T) {
	store := kb.New(kb.Options{})
	ctx := context.Background()
	if _, err := store.Write(ctx, "a", "x.md", strings.NewReader("x"), true); err == nil {
		t.Error("Write without a directory succeeded")
	}
	if _, err := store.Read(ctx, "a", "x.md"); err == nil {
		t.Error("Read without a directory succeeded")
	}
	if files, err := store.List(ctx, "a"); err != nil || files == nil || len(files) != 0 {
		t.Errorf("List = %#v, %v", files, err)
	}
	if v, err := store.Version("a"); v != "" || err != nil {
		t.Errorf("Version = %q, %v", v, err)
	}
	if docs, err := store.Documents("a"); len(docs) != 0 || err != nil {
		t.Errorf("Documents = %v, %v", docs, err)
	}
	if err := store.RemoveAgent("a"); err != nil {
		t.Errorf("RemoveAgent = %v", err)
	}
}

// TestVersionAndDocuments: Version changes with every change, through the
// store or behind its back, and Documents gives the text files in name
// order.
func TestVersionAndDocuments(t *testing.T) {
	e := newEnv(t)
	version := func() string {
		t.Helper()
		v, err := e.store.Version("a")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := version(); v != "" {
		t.Errorf("version of a missing base = %q", v)
	}
	e.write(t, "a", "b.md", "bee")
	e.write(t, "a", "a.txt", "ay")
	v1 := version()
	if v1 == "" || version() != v1 {
		t.Fatalf("version %q, then %q: want it set and stable", v1, version())
	}
	docs, err := e.store.Documents("a")
	if err != nil || len(docs) != 2 || docs[0].Name != "a.txt" || docs[0].Text != "ay" || docs[1].Name != "b.md" || docs[1].Text != "bee" || docs[1].Doc.Format != kbdoc.Markdown {
		t.Fatalf("Documents = %v, %v", docs, err)
	}
	// A replace with the same size, its time then set back as it was:
	// only the store's own count can tell.
	path := filepath.Join(e.dir, "a", "a.txt")
	fi, _ := os.Stat(path)
	e.write(t, "a", "a.txt", "AY")
	os.Chtimes(path, fi.ModTime(), fi.ModTime())
	v2 := version()
	if v2 == v1 {
		t.Error("a write through the store left the version as it was")
	}
	// A change behind the store's back: size and time.
	os.WriteFile(path, []byte("changed by hand"), 0o644)
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(path, later, later)
	v3 := version()
	if v3 == v2 {
		t.Error("a change on disk left the version as it was")
	}
	// A file that is not text, put there by hand, is skipped and logged.
	os.WriteFile(filepath.Join(e.dir, "a", "c.bin"), []byte("\x00\x01"), 0o644)
	docs, _ = e.store.Documents("a")
	if len(docs) != 2 || !strings.Contains(e.logs.String(), "c.bin") {
		t.Errorf("Documents = %v; log %q", docs, e.logs.String())
	}
	if err := e.store.Delete(e.ctx, "a", "c.bin"); err != nil {
		t.Fatal(err)
	}
	if version() == v3 {
		t.Error("a delete left the version as it was")
	}
	// Other agents are untouched; RemoveAgent empties the base.
	e.write(t, "fresh", "x.md", "x")
	if err := e.store.RemoveAgent("a"); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != "" {
		t.Errorf("version after RemoveAgent = %q", v)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "a")); !os.IsNotExist(err) {
		t.Errorf("directory after RemoveAgent: %v", err)
	}
	if files, _ := e.store.List(e.ctx, "fresh"); len(files) != 1 {
		t.Errorf("the other agent's files = %v", files)
	}
}

// TestDocuments uploads each format: the text is extracted once, kept
// beside the original (which stays as uploaded), and read back by Read
// and Documents; what cannot be read is refused with the reason and
// leaves nothing behind.
func TestDocuments(t *testing.T) {
	e := newEnv(t)
	pdf := kbdoctest.PDF(kbdoctest.Page{Heading: "Shipping", Paragraphs: []string{"Orders ship in two days."}}, kbdoctest.Page{})
	docx := kbdoctest.DOCX(kbdoctest.Para{Style: "Heading1", Text: "Leave"}, kbdoctest.Para{Text: "Twenty five days."})
	page := []byte(`<h1>Help</h1><p>Call us.</p><script>alert(1)</script>`)
	for name, data := range map[string][]byte{"policy.pdf": pdf, "hr.docx": docx, "help.html": page} {
		if _, err := e.store.Write(e.ctx, "a", name, bytes.NewReader(data), true); err != nil {
			t.Fatalf("Write %s: %v", name, err)
		}
		f, raw, _, err := e.store.ReadOriginal(e.ctx, "a", name)
		if err != nil || !bytes.Equal(raw, data) || f.Size != int64(len(data)) {
			t.Errorf("ReadOriginal %s: %d bytes, %v; want the upload", name, len(raw), err)
		}
	}
	for name, want := range map[string]string{"policy.pdf": "Shipping\n\nOrders ship in two days.", "hr.docx": "Leave\n\nTwenty five days.", "help.html": "Help\n\nCall us."} {
		f, err := e.store.Read(e.ctx, "a", name)
		if err != nil || *f.Content != want {
			t.Errorf("Read %s = %q, %v; want %q", name, *f.Content, err, want)
		}
	}
	if f, _ := e.store.Read(e.ctx, "a", "policy.pdf"); f.Format != kbdoc.PDF || !slices.Equal(f.EmptyPages, []int{2}) {
		t.Errorf("PDF read as %s with empty pages %v", f.Format, f.EmptyPages)
	}
	// Kept beside: Documents uses the stored extraction, not the file.
	docs, err := e.store.Documents("a")
	if err != nil || len(docs) != 3 || docs[2].Doc.Sections[0].Page != 1 {
		t.Fatalf("Documents = %+v, %v", docs, err)
	}
	stored, _ := filepath.Glob(filepath.Join(e.dir, ".extracted", "a", "*.json"))
	if len(stored) != 3 {
		t.Errorf("extractions kept: %v, want 3", stored)
	}
	if err := e.store.Delete(e.ctx, "a", "hr.docx"); err != nil {
		t.Fatal(err)
	}
	if stored, _ = filepath.Glob(filepath.Join(e.dir, ".extracted", "a", "*.json")); len(stored) != 2 {
		t.Errorf("after a delete, extractions kept: %v, want 2", stored)
	}
	// The texts are kept apart, one per file: a replaced file's old text
	// goes.
	if _, err := e.store.Write(e.ctx, "a", "help.html", strings.NewReader("<h1>Help</h1><p>Write to us.</p>"), false); err != nil {
		t.Fatal(err)
	}
	texts, _ := filepath.Glob(filepath.Join(e.dir, ".extracted", "a", "*.txt"))
	if len(texts) != 2 {
		t.Errorf("texts kept: %v, want 2", texts)
	}
	// A kept text that does not match its description (damaged, say) is
	// not used: the file is extracted again.
	for _, p := range texts {
		if err := os.WriteFile(p, []byte("damaged"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, err = e.store.Documents("a")
	if err != nil || len(docs) != 2 || docs[0].Text != "Help\n\nWrite to us." || docs[1].Doc.Sections[0].Text != "Orders ship in two days." {
		t.Errorf("Documents with damaged texts = %+v, %v", docs, err)
	}

	for _, tc := range []struct {
		name   string
		data   []byte
		reason string
	}{
		{"scan.pdf", kbdoctest.ImagePDF(1), "no text layer"},
		{"locked.pdf", kbdoctest.EncryptedPDF(kbdoctest.Page{Paragraphs: []string{"x"}}), "encrypted"},
		{"notzip.docx", []byte("plain words"), "not a zip"},
	} {
		_, err := e.store.Write(e.ctx, "a", tc.name, bytes.NewReader(tc.data), true)
		if !errors.Is(err, kb.ErrUnsupported) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Write %s = %v, want ErrUnsupported saying %q", tc.name, err, tc.reason)
		}
	}
	if files, _ := e.store.List(e.ctx, "a"); len(files) != 2 {
		t.Errorf("files after refusals: %+v", files)
	}
	// 50 MiB + 1 of PDF is too large; it stops reading soon after.
	r := &countingReader{left: kb.MaxDocumentBytes + 1}
	body := io.MultiReader(strings.NewReader("%PDF-1.4\n"), r)
	if _, err := e.store.Write(e.ctx, "a", "huge.pdf", body, true); !errors.Is(err, kb.ErrTooLarge) {
		t.Errorf("50 MiB + 1 PDF = %v, want ErrTooLarge", err)
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "a"))
	if len(entries) != 2 {
		t.Errorf("directory holds %v, want the two files only", entries)
	}
}

// TestExtractedOnceWhenNotKept: a file whose extraction is not kept (put
// there by hand, or kept in an older form) is extracted on reading, and
// the extraction is then kept.
func TestExtractedOnceWhenNotKept(t *testing.T) {
	e := newEnv(t)
	if _, err := e.store.Write(e.ctx, "a", "seed.md", strings.NewReader("x"), true); err != nil {
		t.Fatal(err)
	}
	page := "<h1>Help</h1><p>Call us.</p>"
	if err := os.WriteFile(filepath.Join(e.dir, "a", "help.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	// An extraction in an older form: the whole document as JSON.
	metas, _ := filepath.Glob(filepath.Join(e.dir, ".extracted", "a", "*.json"))
	if len(metas) != 1 {
		t.Fatalf("extractions: %v", metas)
	}
	if err := os.WriteFile(metas[0], []byte(`{"name":"seed.md","size":1,"mod_nano":0,"document":{"format":"markdown","sections":[{"offset":0,"text":"x"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	texts, _ := filepath.Glob(filepath.Join(e.dir, ".extracted", "a", "*.txt"))
	for _, p := range texts {
		os.Remove(p)
	}
	docs, err := e.store.Documents("a")
	if err != nil || len(docs) != 2 || docs[0].Text != "Help\n\nCall us." || docs[1].Text != "x" {
		t.Fatalf("Documents = %+v, %v", docs, err)
	}
	if texts, _ = filepath.Glob(filepath.Join(e.dir, ".extracted", "a", "*.txt")); len(texts) != 2 {
		t.Errorf("texts kept after reading: %v, want 2", texts)
	}
	// Kept: a damaged original is no longer read.
	for _, name := range []string{"help.html", "seed.md"} {
		p := filepath.Join(e.dir, "a", name)
		fi, _ := os.Stat(p)
		os.WriteFile(p, bytes.Repeat([]byte{0}, int(fi.Size())), 0o644)
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
	}
	if docs, err := e.store.Documents("a"); err != nil || len(docs) != 2 || docs[0].Text != "Help\n\nCall us." {
		t.Errorf("Documents from the kept extractions = %+v, %v", docs, err)
	}
}
