package agent_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
)

func TestKBLifecycle(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	ctx := e.ctx

	files, err := e.svc.KBList(ctx, "a")
	if err != nil || files == nil || len(files) != 0 {
		t.Fatalf("empty KBList = %#v, %v", files, err)
	}
	before := float64(time.Now().Add(-time.Second).UnixNano()) / 1e9
	f, err := e.svc.KBWrite(ctx, "a", "notes.md", strings.NewReader("# Notes\nhello"), true)
	if err != nil {
		t.Fatal(err)
	}
	if f.Filename != "notes.md" || f.Size != 13 || f.Modified < before || f.Content != nil {
		t.Errorf("KBWrite = %+v", f)
	}
	if _, err := e.svc.KBWrite(ctx, "a", "notes.md", strings.NewReader("x"), true); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("create existing = %v, want ErrConflict", err)
	}
	if _, err := e.svc.KBWrite(ctx, "a", "missing.md", strings.NewReader("x"), false); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("replace missing = %v, want ErrNotFound", err)
	}
	if _, err := e.svc.KBWrite(ctx, "a", "data.csv", strings.NewReader("a,b\n1,2\n"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.KBWrite(ctx, "a", "empty.txt", strings.NewReader(""), true); err != nil {
		t.Errorf("empty file: %v", err)
	}
	f, err = e.svc.KBWrite(ctx, "a", "notes.md", strings.NewReader("replaced ✓"), false)
	if err != nil || f.Size != int64(len("replaced ✓")) {
		t.Fatalf("replace = %+v, %v", f, err)
	}
	r, err := e.svc.KBRead(ctx, "a", "notes.md")
	if err != nil || r.Content == nil || *r.Content != "replaced ✓" || r.Size != f.Size {
		t.Fatalf("KBRead = %+v, %v", r, err)
	}
	files, _ = e.svc.KBList(ctx, "a")
	var names []string
	for _, f := range files {
		names = append(names, f.Filename)
	}
	if strings.Join(names, ",") != "data.csv,empty.txt,notes.md" {
		t.Errorf("KBList names = %v", names)
	}
	if err := e.svc.KBDelete(ctx, "a", "notes.md"); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.KBDelete(ctx, "a", "notes.md"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("delete twice = %v", err)
	}
	if _, err := e.svc.KBRead(ctx, "a", "notes.md"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("read deleted = %v", err)
	}
	for name, err := range map[string]error{
		"list":   func() error { _, err := e.svc.KBList(ctx, "nobody"); return err }(),
		"read":   func() error { _, err := e.svc.KBRead(ctx, "nobody", "x.md"); return err }(),
		"write":  func() error { _, err := e.svc.KBWrite(ctx, "nobody", "x.md", strings.NewReader("x"), true); return err }(),
		"delete": e.svc.KBDelete(ctx, "nobody", "x.md"),
	} {
		if !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("%s for an unknown agent = %v", name, err)
		}
	}
	// An agent with no directory yet reads as empty.
	e.createAgent("fresh", "")
	if _, err := e.svc.KBRead(ctx, "fresh", "x.md"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("read in a missing directory = %v", err)
	}
}

func TestValidKBName(t *testing.T) {
	for _, name := range []string{"notes.md", "résumé.txt", "a b.txt", "data.v2.csv", "x", strings.Repeat("é", 127)} {
		if err := agent.ValidKBName(name); err != nil {
			t.Errorf("ValidKBName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "../x", "a/b", "..", ".", ".hidden", "a\x00b", `a\b`, "/abs", "x/..", "a..b",
		"line\nbreak", "tab\t", "\x7f", strings.Repeat("a", 256), " lead", "trail ", "bad\xffutf8"} {
		if err := agent.ValidKBName(name); !errors.Is(err, harness.ErrInvalid) || !strings.Contains(err.Error(), "filename") {
			t.Errorf("ValidKBName(%q) = %v, want ErrInvalid naming filename", name, err)
		}
	}
}

// snapshotTree lists every file under dir with its content.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".db") || strings.Contains(p, ".db-") {
			return nil
		}
		b, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return nil
	})
	return out
}

func TestKBTraversalRefused(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	ctx := e.ctx
	e.writeKB("a", "inside.md", "inside")
	// A file next to the agent's directory, which traversal would reach.
	outside := filepath.Join(e.opts.DataDir, "kb", "x")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotTree(t, e.dir)
	for _, name := range []string{"../x", "a/b", "..", ".hidden", "nul\x00.md", `a\b`, `..\x`, "../../gauntlet.db", "/etc/passwd", ".tmp-0000"} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			_, err := e.svc.KBWrite(ctx, "a", name, strings.NewReader("pwned"), true)
			wantInvalid(t, err, "filename")
			_, err = e.svc.KBWrite(ctx, "a", name, strings.NewReader("pwned"), false)
			wantInvalid(t, err, "filename")
			_, err = e.svc.KBRead(ctx, "a", name)
			wantInvalid(t, err, "filename")
			wantInvalid(t, e.svc.KBDelete(ctx, "a", name), "filename")
		})
	}
	if after := snapshotTree(t, e.dir); !equalMaps(before, after) {
		t.Errorf("files changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestKBSymlinkEscapeRefused(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	e.writeKB("a", "inside.md", "inside")
	secret := filepath.Join(e.dir, "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o644)
	link := filepath.Join(e.opts.DataDir, "kb", "a", "link.md")
	if err := os.Symlink(secret, link); err != nil {
		t.Skip("no symlinks:", err)
	}
	if f, err := e.svc.KBRead(e.ctx, "a", "link.md"); err == nil {
		t.Errorf("read through a symlink leaving the directory = %q", *f.Content)
	}
	if _, err := e.svc.KBWrite(e.ctx, "a", "link.md", strings.NewReader("pwned"), false); err == nil {
		t.Error("replace through a symlink succeeded")
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Errorf("the file outside became %q", b)
	}
	files, _ := e.svc.KBList(e.ctx, "a")
	if len(files) != 1 {
		t.Errorf("KBList lists %v, want only the regular file", files)
	}
	// Nor does the knowledge base given to the model follow it.
	e.chat("a", "u", "hello")
	if strings.Contains(systemOf(e.lastRequest()), "top secret") {
		t.Error("the model saw the file outside")
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

func TestKBRefusesBinary(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
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
			_, err := e.svc.KBWrite(e.ctx, "a", "bin.txt", bytes.NewReader(tc.content), true)
			if !errors.Is(err, agent.ErrUnsupported) {
				t.Fatalf("KBWrite = %v, want ErrUnsupported", err)
			}
		})
	}
	// Runes split across reads are fine.
	text := strings.Repeat("héllo ✓ 日本語 🎉 ", 100)
	if _, err := e.svc.KBWrite(e.ctx, "a", "utf8.txt", iotest.OneByteReader(strings.NewReader(text)), true); err != nil {
		t.Fatalf("one byte at a time: %v", err)
	}
	r, _ := e.svc.KBRead(e.ctx, "a", "utf8.txt")
	if *r.Content != text {
		t.Error("content changed")
	}
	entries, _ := os.ReadDir(filepath.Join(e.opts.DataDir, "kb", "a"))
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

func TestKBTooLarge(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	e.writeKB("a", "big.txt", "old content")
	for _, mustCreate := range []bool{true, false} {
		name := "new.txt"
		if !mustCreate {
			name = "big.txt"
		}
		r := &countingReader{left: 11 << 20}
		_, err := e.svc.KBWrite(e.ctx, "a", name, r, mustCreate)
		if !errors.Is(err, agent.ErrTooLarge) {
			t.Fatalf("KBWrite of 11 MiB = %v, want ErrTooLarge", err)
		}
		if r.read > agent.MaxKBFileBytes+(1<<20) {
			t.Errorf("read %d bytes of the body, want it to stop soon after %d", r.read, agent.MaxKBFileBytes)
		}
	}
	if _, err := e.svc.KBRead(e.ctx, "a", "new.txt"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("the refused file exists: %v", err)
	}
	if r, _ := e.svc.KBRead(e.ctx, "a", "big.txt"); *r.Content != "old content" {
		t.Errorf("a refused replace changed the file to %d bytes", len(*r.Content))
	}
	entries, _ := os.ReadDir(filepath.Join(e.opts.DataDir, "kb", "a"))
	if len(entries) != 1 {
		t.Errorf("directory holds %v, want only big.txt", entries)
	}
	// Exactly the limit is accepted.
	f, err := e.svc.KBWrite(e.ctx, "a", "max.txt", &countingReader{left: agent.MaxKBFileBytes}, true)
	if err != nil || f.Size != agent.MaxKBFileBytes {
		t.Errorf("KBWrite of exactly 10 MiB = %+v, %v", f, err)
	}
}

// TestKBAtomicReplace replaces a file again and again while readers read
// it: each read sees one whole version, never a mix or a part.
func TestKBAtomicReplace(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	versions := []string{strings.Repeat("A", 256<<10), strings.Repeat("B", 512<<10)}
	e.writeKB("a", "doc.txt", versions[0])
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
				f, err := e.svc.KBRead(e.ctx, "a", "doc.txt")
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
	for i := range 20 {
		if _, err := e.svc.KBWrite(e.ctx, "a", "doc.txt", iotest.HalfReader(strings.NewReader(versions[i%2])), false); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	// A replace that fails half way leaves the old version.
	bad := io.MultiReader(strings.NewReader(strings.Repeat("C", 100<<10)), strings.NewReader("\x00"))
	if _, err := e.svc.KBWrite(e.ctx, "a", "doc.txt", bad, false); !errors.Is(err, agent.ErrUnsupported) {
		t.Fatalf("bad replace = %v", err)
	}
	if f, _ := e.svc.KBRead(e.ctx, "a", "doc.txt"); *f.Content != versions[1] {
		t.Error("a failed replace changed the file")
	}
}

func TestKBConcurrentCreate(t *testing.T) {
	e := newEnv(t)
	e.createAgent("a", "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, conflicts := 0, 0
	for i := range 8 {
		wg.Go(func() {
			_, err := e.svc.KBWrite(e.ctx, "a", "same.txt", strings.NewReader(strings.Repeat("x", i+1)), true)
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

func TestKBWithoutDataDir(t *testing.T) {
	e := newEnv(t, withOptions(func(o *agent.Options) { o.DataDir = "" }))
	e.createAgent("a", "Be brief.")
	if _, err := e.svc.KBWrite(e.ctx, "a", "x.md", strings.NewReader("x"), true); err == nil {
		t.Error("KBWrite without a data directory succeeded")
	}
	if files, err := e.svc.KBList(e.ctx, "a"); err != nil || len(files) != 0 {
		t.Errorf("KBList = %v, %v", files, err)
	}
	e.chat("a", "u", "hi")
	if systemOf(e.lastRequest()) != "Be brief." {
		t.Errorf("system message = %q", systemOf(e.lastRequest()))
	}
}
