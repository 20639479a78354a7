package kb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
)

// extractedDir, directly under Options.Dir, holds the text extracted
// from each file at upload, in extractedDir/<agent_id>/: <key>.json
// describes the extraction (the original's size and time, the format,
// the sections' heading paths, pages and places in the text) and
// <key>.<text hash>.txt holds the text itself, read as it is, without
// decoding; <key> is the SHA-256 of the file name. Its leading dot keeps
// it apart from agents' directories (agent ids have no dot).
const extractedDir = ".extracted"

// extractedFile is the description of an upload's extraction. Size and
// ModNano are the original's: a file changed behind the store's back no
// longer matches, and is read again.
type extractedFile struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	ModNano int64  `json:"mod_nano"`
	// Format, Pages, EmptyPages and Sections are the document's, the
	// sections without their text, which is in the text file named by
	// TextSHA256 (TextBytes long).
	Format     kbdoc.Format     `json:"format"`
	Pages      int              `json:"pages,omitempty"`
	EmptyPages []int            `json:"empty_pages,omitempty"`
	Sections   []extractSection `json:"sections"`
	TextSHA256 string           `json:"text_sha256"`
	TextBytes  int              `json:"text_bytes"`
}

// extractSection is a section of an extraction: its text is
// text[Offset : Offset+Bytes].
type extractSection struct {
	Headings []string `json:"headings,omitempty"`
	Page     int      `json:"page,omitempty"`
	Offset   int      `json:"offset"`
	Bytes    int      `json:"bytes"`
}

// extractedKey is the file name key of an extraction.
func (s *Store) extractedKey(agentID, name string) (dir, key string) {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(s.opts.Dir, extractedDir, agentID), hex.EncodeToString(sum[:])
}

// writeAtomic writes data to path through a temporary file and a rename.
func writeAtomic(path string, data []byte) error {
	tmp, err := tempName()
	if err != nil {
		return err
	}
	tp := filepath.Join(filepath.Dir(path), tmp)
	if err := os.WriteFile(tp, data, 0o644); err != nil {
		os.Remove(tp)
		return err
	}
	if err := os.Rename(tp, path); err != nil {
		os.Remove(tp)
		return err
	}
	return nil
}

// saveExtracted keeps doc, extracted from a file whose info is fi (the
// temporary file about to be renamed to name: a rename keeps size and
// time): the text first, under a name of its own hash, then the
// description that names it, so that a crash between the two leaves the
// previous description pointing to the previous text. Texts no longer
// named are removed.
func (s *Store) saveExtracted(agentID, name string, fi fs.FileInfo, doc *kbdoc.Document) error {
	dir, key := s.extractedKey(agentID, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	text := doc.Text()
	sum := sha256.Sum256([]byte(text))
	e := extractedFile{Name: name, Size: fi.Size(), ModNano: fi.ModTime().UnixNano(), Format: doc.Format,
		Pages: doc.Pages, EmptyPages: doc.EmptyPages, Sections: make([]extractSection, len(doc.Sections)),
		TextSHA256: hex.EncodeToString(sum[:]), TextBytes: len(text)}
	for i, sec := range doc.Sections {
		e.Sections[i] = extractSection{Headings: sec.Headings, Page: sec.Page, Offset: sec.Offset, Bytes: len(sec.Text)}
	}
	meta, err := json.Marshal(e)
	if err != nil {
		return err
	}
	textPath := filepath.Join(dir, key+"."+e.TextSHA256[:16]+".txt")
	if err := writeAtomic(textPath, []byte(text)); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, key+".json"), meta); err != nil {
		return err
	}
	s.removeTexts(dir, key, textPath)
	return nil
}

// removeTexts removes the text files of key but keep.
func (s *Store) removeTexts(dir, key, keep string) {
	old, _ := filepath.Glob(filepath.Join(dir, key+".*.txt"))
	for _, p := range old {
		if p != keep {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("cannot remove an outdated extracted text", "file", p, "error", err.Error())
			}
		}
	}
}

func (s *Store) removeExtracted(agentID, name string) {
	dir, key := s.extractedKey(agentID, name)
	if err := os.Remove(filepath.Join(dir, key+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot remove the extracted text of a knowledge base file", "agent", agentID, "file", name, "error", err.Error())
	}
	s.removeTexts(dir, key, "")
}

// loadExtracted returns the extraction kept for a file whose info is fi,
// with its text; false when there is none that matches (a file changed
// behind the store's back, put there by hand, or kept in an older form).
// The sections' texts are parts of the text, not copies.
func (s *Store) loadExtracted(agentID, name string, fi fs.FileInfo) (*kbdoc.Document, string, bool) {
	dir, key := s.extractedKey(agentID, name)
	raw, err := os.ReadFile(filepath.Join(dir, key+".json"))
	if err != nil {
		return nil, "", false
	}
	var e extractedFile
	if json.Unmarshal(raw, &e) != nil || e.Name != name || e.Size != fi.Size() || e.ModNano != fi.ModTime().UnixNano() ||
		len(e.TextSHA256) != 64 || strings.ContainsAny(e.TextSHA256, `/\.`) {
		return nil, "", false
	}
	data, err := os.ReadFile(filepath.Join(dir, key+"."+e.TextSHA256[:16]+".txt"))
	if err != nil || len(data) != e.TextBytes {
		return nil, "", false
	}
	text := string(data)
	doc := &kbdoc.Document{Format: e.Format, Pages: e.Pages, EmptyPages: e.EmptyPages, Sections: make([]kbdoc.Section, len(e.Sections))}
	for i, sec := range e.Sections {
		if sec.Offset < 0 || sec.Bytes < 0 || sec.Offset+sec.Bytes > len(text) {
			return nil, "", false
		}
		doc.Sections[i] = kbdoc.Section{Headings: sec.Headings, Page: sec.Page, Offset: sec.Offset, Text: text[sec.Offset : sec.Offset+sec.Bytes]}
	}
	return doc, text, true
}

// extracted returns the document of a file (info fi) and its text: the
// one kept at upload when it still matches, else extracted now from the
// content read by data (files put in the directory by hand, or kept
// before this form).
func (s *Store) extracted(ctx context.Context, agentID, name string, fi fs.FileInfo, data func() ([]byte, error)) (*kbdoc.Document, string, error) {
	if doc, text, ok := s.loadExtracted(agentID, name, fi); ok {
		return doc, text, nil
	}
	b, err := data()
	if err != nil {
		return nil, "", err
	}
	doc, err := kbdoc.ExtractContext(ctx, name, b, s.opts.Extract)
	if err != nil {
		return nil, "", err
	}
	s.keepExtracted(agentID, name, fi, doc)
	return doc, doc.Text(), nil
}

// keepExtracted keeps an extraction made on reading (a file put there by
// hand, or kept in an older form), so that it is made once: only while
// the file is still the one read (same size and time), under the lock of
// writes. A failure is logged; the next read extracts again.
func (s *Store) keepExtracted(agentID, name string, fi fs.FileInfo, doc *kbdoc.Document) {
	dir, ok := s.dir(agentID)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := os.Lstat(filepath.Join(dir, name))
	if err != nil || !cur.Mode().IsRegular() || cur.Size() != fi.Size() || !cur.ModTime().Equal(fi.ModTime()) {
		return
	}
	if err := s.saveExtracted(agentID, name, fi, doc); err != nil {
		s.log.Warn("cannot keep the extracted text of a knowledge base file", "agent", agentID, "file", name, "error", err.Error())
	}
}
