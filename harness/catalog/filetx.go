package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// fileTx applies a set of file writes and removals under a definitions
// directory, and can put every touched file back as it was. Each write is
// atomic (temp file, fsync, rename), so a crash leaves either the old or the
// new content of a file, never a mix.
type fileTx struct {
	root string
	// check is called with a file's current content the first time the
	// transaction touches it; an error stops the write.
	check func(rel string, cur []byte, exists bool) error
	saved map[string][]byte
	had   map[string]bool
	order []string
	// dirs are the directories the transaction created, outermost first.
	dirs []string
}

func newFileTx(root string, check func(rel string, cur []byte, exists bool) error) *fileTx {
	return &fileTx{root: root, check: check, saved: map[string][]byte{}, had: map[string]bool{}}
}

func (tx *fileTx) abs(rel string) string { return filepath.Join(tx.root, filepath.FromSlash(rel)) }

func (tx *fileTx) save(rel string) error {
	if _, done := tx.had[rel]; done {
		return nil
	}
	data, err := os.ReadFile(tx.abs(rel))
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if tx.check != nil {
		if err := tx.check(rel, data, exists); err != nil {
			return err
		}
	}
	tx.had[rel] = exists
	tx.saved[rel] = data
	tx.order = append(tx.order, rel)
	return nil
}

// write replaces a file's content.
func (tx *fileTx) write(rel string, data []byte) error {
	if err := tx.save(rel); err != nil {
		return err
	}
	// Note the directories writeAtomic is about to create, so that a
	// rollback removes them too (an empty domain directory left behind
	// would be reported by the next sync).
	var missing []string
	for dir := filepath.Dir(tx.abs(rel)); dir != tx.root; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		missing = append([]string{dir}, missing...)
	}
	tx.dirs = append(tx.dirs, missing...)
	return writeAtomic(tx.abs(rel), data)
}

// remove deletes a file; a missing file is not an error.
func (tx *fileTx) remove(rel string) error {
	if err := tx.save(rel); err != nil {
		return err
	}
	if err := os.Remove(tx.abs(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", rel, err)
	}
	return nil
}

// removeEmptyDir removes a directory if it holds nothing.
func (tx *fileTx) removeEmptyDir(rel string) {
	dir := tx.abs(rel)
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
		os.Remove(dir)
	}
}

// rollback puts every touched file back, newest change first. It returns
// the first error met; it keeps going past errors.
func (tx *fileTx) rollback() error {
	var first error
	for i := len(tx.order) - 1; i >= 0; i-- {
		rel := tx.order[i]
		var err error
		if tx.had[rel] {
			err = writeAtomic(tx.abs(rel), tx.saved[rel])
		} else if rerr := os.Remove(tx.abs(rel)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
		if err != nil && first == nil {
			first = fmt.Errorf("roll back %s: %w", rel, err)
		}
	}
	for i := len(tx.dirs) - 1; i >= 0; i-- {
		os.Remove(tx.dirs[i]) // only if empty
	}
	return first
}

// writeAtomic writes data to path through a temporary file in the same
// directory, synced before it is renamed over path.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
