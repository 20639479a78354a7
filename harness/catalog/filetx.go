package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gauntlet-eval/gauntlet/harness"
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
	f, err := os.CreateTemp(dir, tmpPrefix+filepath.Base(path)+"-*")
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

// Names the catalog uses for its own bookkeeping in a definitions
// directory. Both start with a dot: sync never reads them.
const (
	// tmpPrefix starts every temporary file and staging directory; one left
	// by a crash is removed at the next Open.
	tmpPrefix = ".tmp-"
	// pendingName is a staged change set that is committed: it is applied
	// (again) until it is gone.
	pendingName = ".pending-switch"
	// manifestName lists the changes of a staged set.
	manifestName = "manifest.json"
	// stagedFiles is the folder of a staged set holding the new files, at
	// their paths relative to the definitions directory.
	stagedFiles = "files"
)

// manifest is the list of changes of a staged set.
type manifest struct {
	Write  []string `json:"write"`
	Remove []string `json:"remove"`
}

// switchHook, when set (by tests), is called at each step of a switch:
// "staged", "committed", "applied" after each file, "done".
var switchHook func(step string)

func hook(step string) {
	if switchHook != nil {
		switchHook(step)
	}
}

// switchFiles applies a set of file changes under root as one: after a
// crash at any point, root holds every old file or every new one.
//
// The new files are first written and synced in a staging directory
// (.tmp-switch-*) beside them, with a manifest of the changes. Renaming the
// staging directory to .pending-switch is the commit point: before it, a
// crash leaves the old tree and a staging directory that Open removes;
// after it, the changes are applied, and a crash while applying leaves a
// pending set that Open (or Sync) applies again, to the end. Each step of
// applying is a rename or a removal that can be done twice.
func switchFiles(root string, changes []change) (err error) {
	if _, err := os.Lstat(filepath.Join(root, pendingName)); err == nil {
		return fmt.Errorf("an earlier change of the definitions directory was not finished; sync to finish it: %w", harness.ErrConflict)
	}
	stage, err := os.MkdirTemp(root, tmpPrefix+"switch-")
	if err != nil {
		return fmt.Errorf("stage the new files: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(stage)
		}
	}()
	var m manifest
	for _, ch := range changes {
		if err := checkRel(ch.rel); err != nil {
			return err
		}
		if ch.remove {
			m.Remove = append(m.Remove, ch.rel)
			continue
		}
		p := filepath.Join(stage, stagedFiles, filepath.FromSlash(ch.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("stage %s: %w", ch.rel, err)
		}
		if err := writeSynced(p, ch.data); err != nil {
			return fmt.Errorf("stage %s: %w", ch.rel, err)
		}
		m.Write = append(m.Write, ch.rel)
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(stage, manifestName), mb); err != nil {
		return fmt.Errorf("stage the manifest: %w", err)
	}
	// Every staged name must be on disk before the commit point.
	if err := filepath.WalkDir(stage, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = syncDir(p)
		}
		return err
	}); err != nil {
		return fmt.Errorf("stage the new files: %w", err)
	}
	hook("staged")
	if err := os.Rename(stage, filepath.Join(root, pendingName)); err != nil {
		return fmt.Errorf("switch to the new files: %w", err)
	}
	committed = true
	if err := syncDir(root); err != nil {
		return fmt.Errorf("switch to the new files: %w", err)
	}
	hook("committed")
	return finishPending(root)
}

// finishPending applies a committed change set left in root, if any, and
// removes it. Doing it again after a crash in the middle gives the same
// result.
func finishPending(root string) error {
	pending := filepath.Join(root, pendingName)
	mb, err := os.ReadFile(filepath.Join(pending, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(pending); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
		// The manifest is on disk before the commit point, and goes only
		// with the set, once every change is applied: a set without one
		// was being removed when the process died.
		return removePending(root, pending)
	}
	if err != nil {
		return fmt.Errorf("finish a change of the definitions: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return fmt.Errorf("finish a change of the definitions: bad manifest: %w", err)
	}
	touched := map[string]bool{}
	for _, rel := range m.Write {
		if err := checkRel(rel); err != nil {
			return fmt.Errorf("finish a change of the definitions: %w", err)
		}
		src := filepath.Join(pending, stagedFiles, filepath.FromSlash(rel))
		dst := filepath.Join(root, filepath.FromSlash(rel))
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue // moved before a crash
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
		if err := os.Rename(src, dst); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
		touched[filepath.Dir(dst)] = true
		hook("applied")
	}
	for _, rel := range m.Remove {
		if err := checkRel(rel); err != nil {
			return fmt.Errorf("finish a change of the definitions: %w", err)
		}
		dst := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", rel, err)
		}
		touched[filepath.Dir(dst)] = true
		hook("applied")
	}
	for dir := range touched {
		if err := syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("finish a change of the definitions: %w", err)
		}
	}
	// A domain folder the change emptied goes too.
	for _, rel := range m.Remove {
		if strings.HasPrefix(rel, domainsDir+"/") && strings.Count(rel, "/") == 2 {
			dir := filepath.Join(root, filepath.FromSlash(path.Dir(rel)))
			if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
				os.Remove(dir)
			}
		}
	}
	if err := removePending(root, pending); err != nil {
		return err
	}
	hook("done")
	return nil
}

// removePending removes an applied set at once: renamed to a temporary
// name (which Open removes, if a crash leaves it), then deleted. Deleted
// in place, a crash in the middle would leave a set missing some of its
// files, its manifest among them.
func removePending(root, pending string) error {
	trash := filepath.Join(root, tmpPrefix+"applied-switch")
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("finish a change of the definitions: %w", err)
	}
	if err := os.Rename(pending, trash); err != nil {
		return fmt.Errorf("finish a change of the definitions: %w", err)
	}
	if err := syncDir(root); err != nil {
		return fmt.Errorf("finish a change of the definitions: %w", err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("finish a change of the definitions: %w", err)
	}
	return nil
}

// checkRel refuses a path that is not a clean relative path inside the
// definitions directory (a manifest is read back from disk).
func checkRel(rel string) error {
	if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "\\") {
		return fmt.Errorf("bad definitions path %q", rel)
	}
	return nil
}

// recoverDir brings a definitions directory back to a whole tree after a
// crash: it finishes a committed change set and removes the temporary files
// and staging directories writers left behind. It returns the paths
// removed, relative to root.
func recoverDir(root string) ([]string, error) {
	if err := finishPending(root); err != nil {
		return nil, err
	}
	var removed []string
	dirs := []string{".", evaluatorsDir, toolsDir, targetsDir, domainsDir}
	if entries, err := os.ReadDir(filepath.Join(root, domainsDir)); err == nil {
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), tmpPrefix) {
				dirs = append(dirs, domainsDir+"/"+e.Name())
			}
		}
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), tmpPrefix) {
				continue
			}
			if err := os.RemoveAll(filepath.Join(root, filepath.FromSlash(dir), e.Name())); err != nil {
				return removed, fmt.Errorf("remove a stale temporary file: %w", err)
			}
			removed = append(removed, path.Join(dir, e.Name()))
		}
	}
	return removed, nil
}

// writeSynced creates path with data and syncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir syncs a directory, so that the names created or removed in it
// are on disk.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
