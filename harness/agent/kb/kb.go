package kb

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
)

// MaxFileBytes is the largest text, Markdown or HTML file accepted:
// 10 MiB.
const MaxFileBytes = kbdoc.MaxTextBytes

// MaxDocumentBytes is the largest PDF or DOCX file accepted: 50 MiB.
const MaxDocumentBytes = kbdoc.MaxBinaryBytes

// MaxNameBytes is the longest knowledge-base file name accepted, in
// bytes.
const MaxNameBytes = 255

var (
	// ErrTooLarge reports a knowledge-base file over the limit of its
	// format (MaxFileBytes, MaxDocumentBytes), or whose extraction passes
	// a limit of Options.Extract (text, pages, decompressed size, objects,
	// memory). The server answers it 413.
	ErrTooLarge = kbdoc.ErrTooLarge
	// ErrUnsupported reports content that cannot be read: neither UTF-8
	// text (without NUL bytes), nor a PDF with a text layer, nor a DOCX;
	// the error says why (a damaged file, a PDF page tree that refers to
	// itself, nesting too deep, an extraction past its time limit). The
	// server answers it 415.
	ErrUnsupported = kbdoc.ErrUnsupported
)

// Options configure a Store.
type Options struct {
	// Dir holds the knowledge bases, one directory per agent:
	// Dir/<agent_id>/. Empty means no knowledge bases: List and Documents
	// find none, and Read, Write and Delete fail.
	Dir string
	// Check, when set, is called with the agent id first by List, Read,
	// Write and Delete, whose error it becomes, as is. The agent service
	// makes it refuse an unknown agent (harness.ErrNotFound), so that no
	// directory is made for one.
	Check func(ctx context.Context, agentID string) error
	// Logger receives a line for each file Documents skips; nil discards
	// them.
	Logger *slog.Logger
	// OnChange, when set, is called with the agent id after each write
	// and delete that changed a knowledge base (not by RemoveAgent). The
	// agent service makes it start the embedding of the changed chunks;
	// it must not block.
	OnChange func(agentID string)
	// Extract bounds the extraction of each file (text size, pages,
	// decompressed size, objects, time, memory); zero fields take
	// kbdoc's defaults. Past a limit a write fails with ErrTooLarge or
	// ErrUnsupported, saying which.
	Extract kbdoc.Options
}

// Store keeps the knowledge-base files of agents on disk. It is safe for
// concurrent use; each write is atomic (a temporary file, then a rename).
type Store struct {
	opts Options
	log  *slog.Logger

	mu  sync.Mutex        // serialises the final step of writes and deletes
	gen map[string]uint64 // changes made through the store, by agent; guarded by mu
}

// New returns a Store over opts.Dir. Nothing is read or made until used.
func New(opts Options) *Store {
	s := &Store{opts: opts, log: opts.Logger, gen: map[string]uint64{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, harness.ErrNotFound)
}

func (s *Store) check(ctx context.Context, agentID string) error {
	if s.opts.Check == nil {
		return nil
	}
	return s.opts.Check(ctx, agentID)
}

// dir returns the knowledge-base directory of an agent, and false when the
// store has no Dir.
func (s *Store) dir(agentID string) (string, bool) {
	if s.opts.Dir == "" {
		return "", false
	}
	return filepath.Join(s.opts.Dir, agentID), true
}

// changed records a change made through the store, which Version reports
// even when the files' names, sizes and times look the same. Callers hold
// s.mu.
func (s *Store) changed(agentID string) { s.gen[agentID]++ }

// notify calls Options.OnChange, when set, after a change; callers do
// not hold s.mu.
func (s *Store) notify(agentID string) {
	if s.opts.OnChange != nil {
		s.opts.OnChange(agentID)
	}
}

// File is a knowledge-base file. Content is set by Read only.
type File struct {
	Filename string `json:"filename"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Modified is the modification time, in seconds since the Unix epoch.
	Modified float64 `json:"modified"`
	// Format is how the file was read (text, markdown, html, pdf, docx);
	// set by Read.
	Format kbdoc.Format `json:"format,omitempty"`
	// Content is the file's text, set by Read: the file itself for text
	// and Markdown, the extracted text for HTML, PDF and DOCX.
	Content *string `json:"content,omitempty"`
	// EmptyPages lists the pages of a PDF without text, from 1; set by
	// Read.
	EmptyPages []int `json:"empty_pages,omitempty"`
}

// ValidName checks a knowledge-base file name: a plain
// name of at most 255 bytes of valid UTF-8, with no "/", "\", "..", leading
// dot, control character (NUL included) or bidirectional control character
// (see harness.NameProblem). A bad name gives an error
// wrapping harness.ErrInvalid naming "filename".
func ValidName(name string) error {
	bad := func(why string) error { return harness.Invalid("filename", "%s", why) }
	switch {
	case name == "":
		return bad("is required")
	case len(name) > MaxNameBytes:
		return bad(fmt.Sprintf("is longer than %d bytes", MaxNameBytes))
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case strings.ContainsAny(name, `/\`):
		return bad(`must be a plain name, without "/" or "\"`)
	case strings.Contains(name, ".."):
		return bad(`must not contain ".."`)
	case name[0] == '.':
		return bad("must not start with a dot")
	case strings.TrimSpace(name) != name:
		return bad("must not start or end with a space")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return bad("must not contain control characters")
		}
	}
	if p := harness.NameProblem(name); p != "" {
		return bad(p) // a bidirectional control character
	}
	return nil
}

func fileInfo(name string, fi fs.FileInfo) File {
	return File{Filename: name, Size: fi.Size(), Modified: float64(fi.ModTime().UnixNano()) / 1e9}
}

// root opens the agent's knowledge-base directory as an os.Root, which
// refuses any path leading outside it (symbolic links included). create
// makes the directory when missing; otherwise a missing directory gives
// (nil, nil).
func (s *Store) root(agentID string, create bool) (*os.Root, error) {
	dir, ok := s.dir(agentID)
	if !ok {
		return nil, errors.New("no data directory is configured for knowledge bases")
	}
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return nil, nil
	}
	return root, err
}

// List lists an agent's knowledge-base files, sorted by name: never nil,
// empty when the agent has none. Entries that are not regular files with
// valid names (temporary files of writes in progress, say) are left out.
func (s *Store) List(ctx context.Context, agentID string) ([]File, error) {
	if err := s.check(ctx, agentID); err != nil {
		return nil, err
	}
	dir, ok := s.dir(agentID)
	if !ok {
		return []File{}, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list knowledge base of %s: %w", agentID, err)
	}
	out := make([]File, 0, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() || ValidName(e.Name()) != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo(e.Name(), fi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Filename < out[j].Filename })
	return out, nil
}

// Read returns one knowledge-base file with its content. A bad name gives
// harness.ErrInvalid naming "filename", an unknown file
// harness.ErrNotFound.
func (s *Store) Read(ctx context.Context, agentID, name string) (File, error) {
	if err := ValidName(name); err != nil {
		return File{}, err
	}
	if err := s.check(ctx, agentID); err != nil {
		return File{}, err
	}
	root, err := s.root(agentID, false)
	if err != nil {
		return File{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	if root == nil {
		return File{}, notFound("knowledge base file", name)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, notFound("knowledge base file", name)
	}
	if err != nil {
		return File{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return File{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, notFound("knowledge base file", name)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return File{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	out := fileInfo(name, fi)
	doc, content, err := s.extracted(ctx, agentID, name, fi, func() ([]byte, error) { return data, nil })
	if err != nil {
		return File{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	out.Format = doc.Format
	out.EmptyPages = doc.EmptyPages
	if doc.Format == kbdoc.Text || doc.Format == kbdoc.Markdown {
		content = string(data)
	}
	out.Content = &content
	return out, nil
}

// ReadOriginal returns a knowledge-base file's bytes as uploaded, with its
// media type (File.Format set, Content not). Errors are Read's.
func (s *Store) ReadOriginal(ctx context.Context, agentID, name string) (File, []byte, string, error) {
	if err := ValidName(name); err != nil {
		return File{}, nil, "", err
	}
	if err := s.check(ctx, agentID); err != nil {
		return File{}, nil, "", err
	}
	root, err := s.root(agentID, false)
	if err != nil {
		return File{}, nil, "", fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	if root == nil {
		return File{}, nil, "", notFound("knowledge base file", name)
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return File{}, nil, "", notFound("knowledge base file", name)
	}
	data, err := root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, nil, "", notFound("knowledge base file", name)
	}
	if err != nil {
		return File{}, nil, "", fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	out := fileInfo(name, fi)
	ct := "application/octet-stream"
	if f, err := kbdoc.Detect(name, data[:min(len(data), 512)]); err == nil {
		out.Format = f
		ct = kbdoc.ContentType(f)
	}
	return out, data, ct, nil
}

// Write creates (mustCreate) or replaces (!mustCreate) a knowledge-base
// file with the content read from r.
//
// The content is streamed to a temporary file in the agent's directory and
// checked on the way: more than MaxFileBytes gives ErrTooLarge, and
// anything but UTF-8 text without NUL bytes gives ErrUnsupported, both as
// soon as they are seen (the rest of r is not read). Only then is the file
// renamed into place, so that readers see the old content or the new, never
// a part. mustCreate and an existing file give harness.ErrConflict;
// !mustCreate and no such file give harness.ErrNotFound.
func (s *Store) Write(ctx context.Context, agentID, name string, r io.Reader, mustCreate bool) (File, error) {
	if err := ValidName(name); err != nil {
		return File{}, err
	}
	if err := s.check(ctx, agentID); err != nil {
		return File{}, err
	}
	fail := func(err error) (File, error) {
		return File{}, fmt.Errorf("write knowledge base file %q: %w", name, err)
	}
	root, err := s.root(agentID, true)
	if err != nil {
		return fail(err)
	}
	defer root.Close()
	// A first check, before the body is read; checkExists runs again just
	// before the rename, which decides.
	if err := checkExists(root, name, mustCreate); err != nil {
		return File{}, err
	}
	tmp, err := tempName()
	if err != nil {
		return fail(err)
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fail(err)
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			root.Remove(tmp)
		}
	}()
	// The format, from the name and the first bytes, sets the limit and
	// whether the content must be text all along.
	head := make([]byte, 512)
	n, rerr := io.ReadFull(r, head)
	if rerr != nil && rerr != io.ErrUnexpectedEOF && rerr != io.EOF {
		return fail(rerr)
	}
	head = head[:n]
	format, err := kbdoc.Detect(name, head)
	if err != nil {
		return fail(err)
	}
	body := io.MultiReader(bytes.NewReader(head), r)
	if format == kbdoc.PDF || format == kbdoc.DOCX {
		err = copyLimited(ctx, f, body, kbdoc.MaxBytes(format))
	} else {
		err = copyText(ctx, f, body)
	}
	if err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	// Extraction, once: what cannot be read is refused now, with the
	// reason, and the text is kept beside the file.
	data, err := root.ReadFile(tmp)
	if err != nil {
		return fail(err)
	}
	doc, err := kbdoc.ExtractContext(ctx, name, data, s.opts.Extract)
	if err != nil {
		return fail(err)
	}
	tfi, err := root.Stat(tmp)
	if err != nil {
		return fail(err)
	}
	s.mu.Lock()
	err = checkExists(root, name, mustCreate)
	if err == nil {
		err = s.saveExtracted(agentID, name, tfi, doc)
	}
	if err == nil {
		if err = root.Rename(tmp, name); err == nil {
			s.changed(agentID)
		}
	}
	s.mu.Unlock()
	if err != nil {
		root.Remove(tmp)
		done = true
		if errors.Is(err, harness.ErrConflict) || errors.Is(err, harness.ErrNotFound) {
			return File{}, err
		}
		return fail(err)
	}
	done = true
	s.notify(agentID)
	fi, err := root.Stat(name)
	if err != nil {
		return fail(err)
	}
	return fileInfo(name, fi), nil
}

func checkExists(root *os.Root, name string, mustCreate bool) error {
	fi, err := root.Lstat(name)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write knowledge base file %q: %w", name, err)
	}
	switch {
	case mustCreate && exists:
		return fmt.Errorf("knowledge base file %q already exists: %w", name, harness.ErrConflict)
	case !mustCreate && !exists:
		return notFound("knowledge base file", name)
	case exists && !fi.Mode().IsRegular():
		return fmt.Errorf("knowledge base file %q is not a regular file: %w", name, harness.ErrConflict)
	}
	return nil
}

// tempName is the name of a temporary file: a leading dot, so that it is
// neither listed nor reachable through the API.
func tempName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return ".tmp-" + hex.EncodeToString(b[:]), nil
}

// copyLimited copies r to w, at most limit bytes (else ErrTooLarge).
func copyLimited(ctx context.Context, w io.Writer, r io.Reader, limit int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if n > limit {
		return fmt.Errorf("larger than %d bytes: %w", limit, ErrTooLarge)
	}
	return ctx.Err()
}

// copyText copies r to w, at most MaxFileBytes, checking that it is
// UTF-8 text without NUL bytes.
func copyText(ctx context.Context, w io.Writer, r io.Reader) error {
	buf := make([]byte, 64<<10)
	var carry [utf8.UTFMax]byte
	nc := 0 // bytes of an incomplete rune held over from the last read
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		copy(buf, carry[:nc])
		n, rerr := r.Read(buf[nc:])
		total += int64(n)
		if total > MaxFileBytes {
			return fmt.Errorf("larger than %d bytes: %w", MaxFileBytes, ErrTooLarge)
		}
		data := buf[:nc+n]
		eof := errors.Is(rerr, io.EOF)
		cut := len(data)
		if !eof {
			cut = completeRunes(data)
		}
		chunk := data[:cut]
		if bytes.IndexByte(chunk, 0) >= 0 {
			return fmt.Errorf("contains a NUL byte, so it is not text: %w", ErrUnsupported)
		}
		if !utf8.Valid(chunk) {
			return fmt.Errorf("is not valid UTF-8 text: %w", ErrUnsupported)
		}
		if _, err := w.Write(chunk); err != nil {
			return err
		}
		nc = copy(carry[:], data[cut:])
		if eof {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// completeRunes returns the length of the longest prefix of b that does
// not end inside a UTF-8 sequence: an incomplete last rune (at most three
// bytes) is left for the next read.
func completeRunes(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// Delete removes a knowledge-base file; an unknown file gives
// harness.ErrNotFound.
func (s *Store) Delete(ctx context.Context, agentID, name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := s.check(ctx, agentID); err != nil {
		return err
	}
	root, err := s.root(agentID, false)
	if err != nil {
		return fmt.Errorf("delete knowledge base file %q: %w", name, err)
	}
	if root == nil {
		return notFound("knowledge base file", name)
	}
	defer root.Close()
	if err := s.delete(root, agentID, name); err != nil {
		return err
	}
	s.notify(agentID)
	return nil
}

// delete removes a file under s.mu.
func (s *Store) delete(root *os.Root, agentID, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()) {
		return notFound("knowledge base file", name)
	}
	if err == nil {
		err = root.Remove(name)
	}
	if err != nil {
		return fmt.Errorf("delete knowledge base file %q: %w", name, err)
	}
	s.removeExtracted(agentID, name)
	s.changed(agentID)
	return nil
}

// RemoveAgent removes an agent's whole knowledge base, directory and all.
// A missing directory, or a store without Dir, is not an error. It calls
// no Check: the agent service calls it as it deletes the agent.
func (s *Store) RemoveAgent(agentID string) error {
	dir, ok := s.dir(agentID)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changed(agentID)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove knowledge base of %s: %w", agentID, err)
	}
	if err := os.RemoveAll(filepath.Join(s.opts.Dir, extractedDir, agentID)); err != nil {
		return fmt.Errorf("remove knowledge base of %s: %w", agentID, err)
	}
	return nil
}

// usable is a file of a knowledge base that Version and Documents count.
type usable struct {
	name    string
	size    int64
	modNano int64
}

// usableFiles lists the regular files with valid names of a knowledge
// base, sorted by name.
func (s *Store) usableFiles(agentID string) ([]usable, error) {
	dir, ok := s.dir(agentID)
	if !ok {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge base of %s: %w", agentID, err)
	}
	var out []usable
	for _, e := range entries {
		if !e.Type().IsRegular() || ValidName(e.Name()) != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, usable{name: e.Name(), size: fi.Size(), modNano: fi.ModTime().UnixNano()})
	}
	return out, nil
}

// Version returns a string that changes whenever an agent's knowledge
// base does: through this store (every write and delete counts, even one
// that leaves names, sizes and times as they were), or on disk behind its
// back (a file's name, size or modification time). It is "" for an empty
// or missing base, and cheap: one directory listing, no file read. It
// calls no Check. Caches of what Documents returns (harness/agent/retrieval)
// key on it.
func (s *Store) Version(agentID string) (string, error) {
	s.mu.Lock()
	gen := s.gen[agentID]
	s.mu.Unlock()
	files, err := s.usableFiles(agentID)
	if err != nil || len(files) == 0 {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strconv.FormatUint(gen, 10))
	for _, f := range files {
		b.WriteByte(0)
		b.WriteString(f.name)
		b.WriteByte(0)
		b.WriteString(strconv.FormatInt(f.size, 10))
		b.WriteByte(0)
		b.WriteString(strconv.FormatInt(f.modNano, 10))
	}
	return b.String(), nil
}

// Document is the text of one knowledge-base file.
type Document struct {
	Name string
	// Text is the file's text: the file itself for text and Markdown, the
	// extracted text for HTML, PDF and DOCX.
	Text string
	// Doc is the extracted document, its sections with their heading
	// paths and pages; Section offsets index Doc.Text(). Nil for a
	// Document made by hand: retrieval then takes Text as one section.
	Doc *kbdoc.Document
}

// Documents returns the text of every file of an agent's knowledge base,
// in name order. A file that is not text (put there behind the store's
// back) is skipped with a log line, one removed meanwhile silently; a
// missing base gives none. It calls no Check.
func (s *Store) Documents(agentID string) ([]Document, error) {
	files, err := s.usableFiles(agentID)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	root, err := s.root(agentID, false)
	if err != nil || root == nil {
		return nil, err
	}
	defer root.Close()
	docs := make([]Document, 0, len(files))
	for _, f := range files {
		fi, err := root.Stat(f.name)
		if err != nil {
			continue // removed meanwhile
		}
		// The original is read only when its extraction is not kept.
		missing := false
		doc, text, err := s.extracted(context.Background(), agentID, f.name, fi, func() ([]byte, error) {
			data, err := root.ReadFile(f.name)
			missing = errors.Is(err, fs.ErrNotExist)
			return data, err
		})
		if missing {
			continue
		}
		if err != nil {
			s.log.Warn("knowledge base file cannot be read; skipped", slog.String("agent", agentID), slog.String("file", f.name), slog.String("error", err.Error()))
			continue
		}
		docs = append(docs, Document{Name: f.name, Text: text, Doc: doc})
	}
	return docs, nil
}
