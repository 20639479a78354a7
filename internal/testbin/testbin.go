// Package testbin builds the Go programs that tests run as subprocesses
// (plugins, helpers) once per test process instead of once per test:
// linking a program costs seconds of CPU, a copy of it milliseconds. The
// programs are kept in a temporary directory that Cleanup removes, from
// TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		testbin.Cleanup()
//		os.Exit(code)
//	}
package testbin

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]*program{}
)

// program is one package's build, made once; its waiters wait on once.
type program struct {
	once sync.Once
	path string
	err  error
}

// Build compiles the main package pkg (a path as go build takes it,
// relative to the test's package directory) with extra go build flags,
// once per test process and set of flags, and returns the executable.
// The executable is shared: copy it (Install) to rename or change it.
func Build(t testing.TB, pkg string, flags ...string) string {
	t.Helper()
	mu.Lock()
	if dir == "" {
		d, err := os.MkdirTemp("", "gauntlet-testbin-")
		if err != nil {
			mu.Unlock()
			t.Fatalf("testbin: %v", err)
		}
		dir = d
	}
	key := fmt.Sprint(pkg, flags)
	p := built[key]
	if p == nil {
		p = &program{path: filepath.Join(dir, fmt.Sprintf("%d-%s", len(built), filepath.Base(pkg)))}
		built[key] = p
	}
	mu.Unlock()
	p.once.Do(func() {
		args := append(append([]string{"build", "-o", p.path}, flags...), pkg)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			p.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.path
}

// Install builds pkg (see Build) and copies the executable into dir
// under name, returning its path.
func Install(t testing.TB, pkg, dir, name string, flags ...string) string {
	t.Helper()
	src := Build(t, pkg, flags...)
	dst := filepath.Join(dir, name)
	if err := copyFile(src, dst); err != nil {
		t.Fatalf("testbin: install %s: %v", pkg, err)
	}
	return dst
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Cleanup removes the programs built so far. Call it once the tests have
// run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
		built = map[string]*program{}
	}
}
