package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// MaxKBFileBytes is the largest knowledge-base file accepted: 10 MiB.
const MaxKBFileBytes = 10 << 20

// MaxKBNameBytes is the longest knowledge-base file name accepted, in
// bytes.
const MaxKBNameBytes = 255

var (
	// ErrTooLarge reports a knowledge-base file over MaxKBFileBytes. The
	// server answers it 413.
	ErrTooLarge = errors.New("too large")
	// ErrUnsupported reports content that is not text: invalid UTF-8, or a
	// NUL byte. The server answers it 415.
	ErrUnsupported = errors.New("unsupported content")
)

// KBFile is a knowledge-base file. Content is set by KBRead only.
type KBFile struct {
	Filename string `json:"filename"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Modified is the modification time, in seconds since the Unix epoch.
	Modified float64 `json:"modified"`
	Content  *string `json:"content,omitempty"`
}

// ValidKBName checks a knowledge-base file name: a plain
// name of at most 255 bytes of valid UTF-8, with no "/", "\", "..", leading
// dot or control character (NUL included). A bad name gives an error
// wrapping harness.ErrInvalid naming "filename".
func ValidKBName(name string) error {
	bad := func(why string) error { return harness.Invalid("filename", "%s", why) }
	switch {
	case name == "":
		return bad("is required")
	case len(name) > MaxKBNameBytes:
		return bad(fmt.Sprintf("is longer than %d bytes", MaxKBNameBytes))
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
	return nil
}

func fileInfo(name string, fi fs.FileInfo) KBFile {
	return KBFile{Filename: name, Size: fi.Size(), Modified: float64(fi.ModTime().UnixNano()) / 1e9}
}

// kbRoot opens the agent's knowledge-base directory as an os.Root, which
// refuses any path leading outside it (symbolic links included). create
// makes the directory when missing; otherwise a missing directory gives
// (nil, nil).
func (s *Service) kbRoot(agentID string, create bool) (*os.Root, error) {
	dir, ok := s.kbDir(agentID)
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

// KBList lists an agent's knowledge-base files, sorted by name. Entries
// that are not regular files with valid names (temporary files of writes
// in progress, say) are left out.
func (s *Service) KBList(ctx context.Context, agentID string) ([]KBFile, error) {
	if _, err := s.agent(ctx, s.db, agentID); err != nil {
		return nil, err
	}
	dir, ok := s.kbDir(agentID)
	if !ok {
		return []KBFile{}, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []KBFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list knowledge base of %s: %w", agentID, err)
	}
	out := make([]KBFile, 0, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() || ValidKBName(e.Name()) != nil {
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

// KBRead returns one knowledge-base file with its content. An unknown
// agent or file gives harness.ErrNotFound.
func (s *Service) KBRead(ctx context.Context, agentID, name string) (KBFile, error) {
	if err := ValidKBName(name); err != nil {
		return KBFile{}, err
	}
	if _, err := s.agent(ctx, s.db, agentID); err != nil {
		return KBFile{}, err
	}
	root, err := s.kbRoot(agentID, false)
	if err != nil {
		return KBFile{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	if root == nil {
		return KBFile{}, notFound("knowledge base file", name)
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return KBFile{}, notFound("knowledge base file", name)
	}
	if err != nil {
		return KBFile{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return KBFile{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return KBFile{}, notFound("knowledge base file", name)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return KBFile{}, fmt.Errorf("read knowledge base file %q: %w", name, err)
	}
	out := fileInfo(name, fi)
	content := string(data)
	out.Content = &content
	return out, nil
}

// KBWrite creates (mustCreate) or replaces (!mustCreate) a knowledge-base
// file with the content read from r.
//
// The content is streamed to a temporary file in the agent's directory and
// checked on the way: more than MaxKBFileBytes gives ErrTooLarge, and
// anything but UTF-8 text without NUL bytes gives ErrUnsupported, both as
// soon as they are seen (the rest of r is not read). Only then is the file
// renamed into place, so that readers see the old content or the new, never
// a part. mustCreate and an existing file give harness.ErrConflict;
// !mustCreate and no such file give harness.ErrNotFound.
func (s *Service) KBWrite(ctx context.Context, agentID, name string, r io.Reader, mustCreate bool) (KBFile, error) {
	if err := ValidKBName(name); err != nil {
		return KBFile{}, err
	}
	if _, err := s.agent(ctx, s.db, agentID); err != nil {
		return KBFile{}, err
	}
	fail := func(err error) (KBFile, error) {
		return KBFile{}, fmt.Errorf("write knowledge base file %q: %w", name, err)
	}
	root, err := s.kbRoot(agentID, true)
	if err != nil {
		return fail(err)
	}
	defer root.Close()
	// A first check, before the body is read; checkExists runs again just
	// before the rename, which decides.
	if err := checkExists(root, name, mustCreate); err != nil {
		return KBFile{}, err
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
	if err := copyText(ctx, f, r); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	s.kbMu.Lock()
	err = checkExists(root, name, mustCreate)
	if err == nil {
		err = root.Rename(tmp, name)
	}
	s.kbMu.Unlock()
	if err != nil {
		root.Remove(tmp)
		done = true
		if errors.Is(err, harness.ErrConflict) || errors.Is(err, harness.ErrNotFound) {
			return KBFile{}, err
		}
		return fail(err)
	}
	done = true
	s.dropIndex(agentID)
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

// copyText copies r to w, at most MaxKBFileBytes, checking that it is
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
		if total > MaxKBFileBytes {
			return fmt.Errorf("larger than %d bytes: %w", MaxKBFileBytes, ErrTooLarge)
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

// KBDelete removes a knowledge-base file; an unknown agent or file gives
// harness.ErrNotFound.
func (s *Service) KBDelete(ctx context.Context, agentID, name string) error {
	if err := ValidKBName(name); err != nil {
		return err
	}
	if _, err := s.agent(ctx, s.db, agentID); err != nil {
		return err
	}
	root, err := s.kbRoot(agentID, false)
	if err != nil {
		return fmt.Errorf("delete knowledge base file %q: %w", name, err)
	}
	if root == nil {
		return notFound("knowledge base file", name)
	}
	defer root.Close()
	s.kbMu.Lock()
	defer s.kbMu.Unlock()
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
	s.dropIndex(agentID)
	return nil
}
