package kb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RemoveStaleTemp removes the temporary files a write leaves behind when
// the process dies before its rename: names starting with ".tmp-"
// directly in dir/<agent_id>/, and in dir/.extracted/<agent_id>/ where
// the extracted texts are kept, dir being a Store's Options.Dir. It
// returns their paths.
//
// Call it at start-up, before a Store writes: a write in flight would lose
// its temporary file. A missing dir is not an error.
func RemoveStaleTemp(dir string) ([]string, error) {
	agents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clean knowledge bases: %w", err)
	}
	var agentDirs []string
	for _, a := range agents {
		if !a.IsDir() {
			continue
		}
		if a.Name() != extractedDir {
			agentDirs = append(agentDirs, filepath.Join(dir, a.Name()))
			continue
		}
		extracted, err := os.ReadDir(filepath.Join(dir, extractedDir))
		if err != nil {
			return nil, fmt.Errorf("clean knowledge bases: %w", err)
		}
		for _, e := range extracted {
			if e.IsDir() {
				agentDirs = append(agentDirs, filepath.Join(dir, extractedDir, e.Name()))
			}
		}
	}
	var removed []string
	for _, agentDir := range agentDirs {
		entries, err := os.ReadDir(agentDir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("clean knowledge bases: %w", err)
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".tmp-") || !e.Type().IsRegular() {
				continue
			}
			p := filepath.Join(agentDir, e.Name())
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, fmt.Errorf("clean knowledge bases: %w", err)
			}
			removed = append(removed, p)
		}
	}
	return removed, nil
}
