package testartefact_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/internal/testartefact"
)

// TestDirOutlivesTheTest: a file written to the directory of a test that
// has ended (its t.TempDir already removed) is still there, under the
// root the environment names.
func TestDirOutlivesTheTest(t *testing.T) {
	root := t.TempDir()
	t.Setenv(testartefact.EnvVar, root)
	var dir, artifactDir string
	t.Run("inner/with spaces", func(t *testing.T) {
		dir = testartefact.Dir(t)
		if err := os.WriteFile(filepath.Join(dir, "failure.png"), []byte("png"), 0o644); err != nil {
			t.Fatal(err)
		}
		artifactDir = t.ArtifactDir()
	})
	if _, err := os.Stat(filepath.Join(dir, "failure.png")); err != nil {
		t.Fatalf("the artefact is gone once its test ended: %v", err)
	}
	// What the browser tests used before, and why not: without
	// -artifacts, t.ArtifactDir is removed with its test.
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() != "true" {
		if _, err := os.Stat(artifactDir); !os.IsNotExist(err) {
			t.Errorf("t.ArtifactDir without -artifacts outlived its test (%v): the package could use it", err)
		}
	}
	if filepath.Dir(dir) != root {
		t.Errorf("artefact directory %s, want one under %s", dir, root)
	}
	if base := filepath.Base(dir); !strings.HasPrefix(base, "TestDirOutlivesTheTest_inner_with_spaces-") {
		t.Errorf("artefact directory %q does not name the test", base)
	}
}

// TestRootDefault: without the variable the artefacts go under the
// system's temporary directory.
func TestRootDefault(t *testing.T) {
	t.Setenv(testartefact.EnvVar, "")
	if got, want := testartefact.Root(), filepath.Join(os.TempDir(), "gauntlet-test-artefacts"); got != want {
		t.Errorf("Root() = %s, want %s", got, want)
	}
}
