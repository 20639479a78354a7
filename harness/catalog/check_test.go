package catalog

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenMustExist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	missing := filepath.Join(t.TempDir(), "nope")
	_, _, err := Open(ctx, Options{Dir: missing, DB: openDB(t), MustExist: true})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing directory: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory was created: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, _, err := Open(ctx, Options{Dir: file, DB: openDB(t), MustExist: true}); err == nil {
		t.Fatal("Open of a file succeeded")
	}
	if _, _, err := Open(ctx, Options{Dir: copyDefinitions(t), DB: openDB(t), MustExist: true}); err != nil {
		t.Fatal(err)
	}
}

func TestLastSync(t *testing.T) {
	t.Parallel()
	dir := copyDefinitions(t)
	writeFile(t, dir, "tools/bad.yaml", "name: Bad\nfuncton: {name: x}\n")
	c, res := openAt(t, dir)
	last := c.LastSync()
	if len(last.Errors) != 1 || last.Errors[0].Key != "funct"+"on" || last.Loaded != res.Loaded {
		t.Fatalf("LastSync after Open = %+v", last)
	}
	// The result is a copy: changing it changes nothing in the catalog.
	last.Errors[0].File = "changed"
	if c.LastSync().Errors[0].File != "tools/bad.yaml" {
		t.Fatal("LastSync returned the catalog's own list")
	}
	os.Remove(filepath.Join(dir, "tools", "bad.yaml"))
	doSync(t, c)
	if last := c.LastSync(); len(last.Errors) != 0 || last.Errors == nil || last.Loaded != testdataCounts {
		t.Fatalf("LastSync after a clean sync = %+v", last)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	t.Run("clean", func(t *testing.T) {
		res, err := Check(copyDefinitions(t), testRegistry(t))
		if err != nil || len(res.Errors) != 0 || res.Errors == nil || res.Files != 8 || res.Loaded != testdataCounts {
			t.Fatalf("Check = %+v, %v", res, err)
		}
	})
	t.Run("errors, and nothing written", func(t *testing.T) {
		dir := copyDefinitions(t)
		writeFile(t, dir, "domains/math/level-1.yaml", "tests:\n  - id: x\n    prompt: p\n    expected: {answer: a, typ: exact}\n")
		writeFile(t, dir, "evaluators/.tmp-number.yaml-1", "stale")
		before := dirHash(t, dir)
		res, err := Check(dir, testRegistry(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) != 1 || res.Errors[0].String() != `domains/math/level-1.yaml:4: unknown key "typ" (did you mean "type"?)` {
			t.Fatalf("errors %+v", res.Errors)
		}
		if dirHash(t, dir) != before {
			t.Fatal("Check changed the directory")
		}
	})
	t.Run("an interrupted switch is reported", func(t *testing.T) {
		dir := copyDefinitions(t)
		writeFile(t, dir, pendingName+"/"+manifestName, `{"write":[],"remove":[]}`)
		res, err := Check(dir, testRegistry(t))
		if err != nil || len(res.Errors) != 1 || res.Errors[0].File != pendingName {
			t.Fatalf("Check = %+v, %v", res, err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		if _, err := Check(filepath.Join(t.TempDir(), "nope"), nil); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
}
