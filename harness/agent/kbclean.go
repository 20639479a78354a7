package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RemoveStaleKBTemp removes the temporary files a knowledge-base write
// leaves behind when the process dies before its rename: names starting
// with ".tmp-" directly in dataDir/kb/<agent_id>/. It returns their paths.
//
// Call it at start-up, before a Service writes: a write in flight would
// lose its temporary file. A missing kb directory is not an error.
func RemoveStaleKBTemp(dataDir string) ([]string, error) {
	kb := filepath.Join(dataDir, "kb")
	agents, err := os.ReadDir(kb)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clean knowledge bases: %w", err)
	}
	var removed []string
	for _, a := range agents {
		if !a.IsDir() {
			continue
		}
		dir := filepath.Join(kb, a.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			return removed, fmt.Errorf("clean knowledge bases: %w", err)
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".tmp-") || !e.Type().IsRegular() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, fmt.Errorf("clean knowledge bases: %w", err)
			}
			removed = append(removed, p)
		}
	}
	return removed, nil
}
