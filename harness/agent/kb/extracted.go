package kb

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
)

// extractedDir, directly under Options.Dir, holds the text extracted
// from each file at upload: extractedDir/<agent_id>/<sha256 of the
// name>.json. Its leading dot keeps it apart from agents' directories
// (agent ids have no dot).
const extractedDir = ".extracted"

// extractedFile is what is kept of an upload's extraction. Size and
// ModNano are the original's: a file changed behind the store's back no
// longer matches, and is read again.
type extractedFile struct {
	Name    string          `json:"name"`
	Size    int64           `json:"size"`
	ModNano int64           `json:"mod_nano"`
	Doc     *kbdoc.Document `json:"document"`
}

func (s *Store) extractedPath(agentID, name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(s.opts.Dir, extractedDir, agentID, hex.EncodeToString(sum[:])+".json")
}

// saveExtracted keeps doc, extracted from a file whose info is fi (the
// temporary file about to be renamed to name: a rename keeps size and
// time). Written to a temporary file and renamed, like the originals.
func (s *Store) saveExtracted(agentID, name string, fi fs.FileInfo, doc *kbdoc.Document) error {
	p := s.extractedPath(agentID, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(extractedFile{Name: name, Size: fi.Size(), ModNano: fi.ModTime().UnixNano(), Doc: doc})
	if err != nil {
		return err
	}
	tmp, err := tempName()
	if err != nil {
		return err
	}
	tp := filepath.Join(filepath.Dir(p), tmp)
	if err := os.WriteFile(tp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tp, p); err != nil {
		os.Remove(tp)
		return err
	}
	return nil
}

func (s *Store) removeExtracted(agentID, name string) {
	if err := os.Remove(s.extractedPath(agentID, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot remove the extracted text of a knowledge base file", "agent", agentID, "file", name, "error", err.Error())
	}
}

// extracted returns the document of a file (info fi, content data): the
// one kept at upload when it still matches, else extracted now (files put
// in the directory by hand, or before extraction existed).
func (s *Store) extracted(agentID, name string, fi fs.FileInfo, data []byte) (*kbdoc.Document, error) {
	if raw, err := os.ReadFile(s.extractedPath(agentID, name)); err == nil {
		var e extractedFile
		if json.Unmarshal(raw, &e) == nil && e.Doc != nil && e.Name == name &&
			e.Size == fi.Size() && e.ModNano == fi.ModTime().UnixNano() {
			return e.Doc, nil
		}
	}
	return kbdoc.Extract(name, data)
}
