// Package testartefact gives a failing test a directory for what it
// leaves behind to be looked at (a screenshot, a server's log), one that
// still exists when the test process has ended: testing's ArtifactDir
// when go test runs with -artifacts (under -outputdir), otherwise a new
// directory under $GAUNTLET_TEST_ARTEFACTS, or under
// $TMPDIR/gauntlet-test-artefacts when that is unset. Unlike t.TempDir
// (and ArtifactDir without -artifacts), it is never removed by the test:
// the path a failure message names must still be there to open.
package testartefact

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvVar names the directory the artefacts go under when go test runs
// without -artifacts.
const EnvVar = "GAUNTLET_TEST_ARTEFACTS"

// Root is the directory the artefacts of a run without -artifacts go
// under: $GAUNTLET_TEST_ARTEFACTS, else $TMPDIR/gauntlet-test-artefacts.
func Root() string {
	if d := os.Getenv(EnvVar); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "gauntlet-test-artefacts")
}

// Dir returns a new directory for t's artefacts that outlives the test
// process (see the package comment). It fails t when none can be made.
func Dir(t testing.TB) string {
	t.Helper()
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	root := Root()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatalf("artefact directory: %v", err)
	}
	d, err := os.MkdirTemp(root, safeName(t.Name())+"-")
	if err != nil {
		t.Fatalf("artefact directory: %v", err)
	}
	return d
}

// safeName makes a test's name one path element: subtests' slashes and
// anything but letters, digits, '-', '_' and '.' become '_'.
func safeName(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
	if len(name) > 80 {
		name = name[:80]
	}
	return name
}
