package kb_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kb"
)

func TestRemoveStaleTemp(t *testing.T) {
	data := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(data, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kb/bot/.tmp-0123456789abcdef", "half a file")
	write("kb/bot/notes.md", "kept")
	write("kb/other/.tmp-ffff", "half")
	write("kb/other/guide.txt", "kept")
	write("kb/stray.txt", "not an agent folder")
	write("kb/.extracted/bot/.tmp-00aa", "half an extraction")
	write("kb/.extracted/bot/0123.json", "kept")
	removed, err := kb.RemoveStaleTemp(filepath.Join(data, "kb"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(data, "kb", ".extracted", "bot", ".tmp-00aa"),
		filepath.Join(data, "kb", "bot", ".tmp-0123456789abcdef"), filepath.Join(data, "kb", "other", ".tmp-ffff")}
	if slices.Sort(removed); !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, rel := range []string{"kb/bot/notes.md", "kb/other/guide.txt", "kb/stray.txt", "kb/.extracted/bot/0123.json"} {
		if _, err := os.Stat(filepath.Join(data, filepath.FromSlash(rel))); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
	for _, p := range want {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", p, err)
		}
	}
	if removed, err := kb.RemoveStaleTemp(filepath.Join(data, "none")); err != nil || len(removed) != 0 {
		t.Fatalf("missing data directory: %v, %v", removed, err)
	}
}
