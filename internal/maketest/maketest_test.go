package maketest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestShortTestsAreExhaustive: every test function that looks at
// testing.Short(), itself or through a helper of its package, is named in the Makefile's EXHAUSTIVE_TESTS (so that
// the race pass's -short does not drop what it skips) and its package in
// EXHAUSTIVE_PACKAGES, and every name there is such a test.
func TestShortTestsAreExhaustive(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^EXHAUSTIVE_TESTS :=((?:.*\\\n)*.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no EXHAUSTIVE_TESTS in the Makefile")
	}
	listed := strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " "))

	// Per directory: the functions that call testing.Short(), and the
	// functions each test calls; a test looks at -short when it calls
	// testing.Short() or a helper of its package that does.
	type fn struct {
		dir, name string
		short     bool
		calls     []string
	}
	var fns []fn
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Body == nil {
				continue
			}
			info := fn{dir: filepath.Dir(path), name: fd.Name.Name}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch f := call.Fun.(type) {
				case *ast.SelectorExpr:
					if id, ok := f.X.(*ast.Ident); ok && id.Name == "testing" && f.Sel.Name == "Short" {
						info.short = true
					}
				case *ast.Ident:
					info.calls = append(info.calls, f.Name)
				}
				return true
			})
			fns = append(fns, info)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	helpers := map[string]bool{} // dir + " " + name
	for _, f := range fns {
		if f.short && !strings.HasPrefix(f.name, "Test") {
			helpers[f.dir+" "+f.name] = true
		}
	}
	m = regexp.MustCompile(`(?m)^EXHAUSTIVE_PACKAGES :=((?:.*\\\n)*.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("no EXHAUSTIVE_PACKAGES in the Makefile")
	}
	packages := strings.Fields(strings.ReplaceAll(string(m[1]), "\\", " "))
	var short []string
	for _, f := range fns {
		if !strings.HasPrefix(f.name, "Test") || f.name == "TestMain" {
			continue
		}
		uses := f.short || slices.ContainsFunc(f.calls, func(c string) bool { return helpers[f.dir+" "+c] })
		if uses {
			short = append(short, strings.TrimPrefix(f.name, "Test"))
			rel, err := filepath.Rel(root, f.dir)
			if err != nil {
				t.Fatal(err)
			}
			if pkg := "./" + filepath.ToSlash(rel); !slices.Contains(packages, pkg) {
				t.Errorf("%s looks at testing.Short() but its package %s is not in the Makefile's EXHAUSTIVE_PACKAGES: make test would never run it whole", f.name, pkg)
			}
		}
	}
	for _, name := range short {
		if !slices.Contains(listed, name) {
			t.Errorf("Test%s looks at testing.Short() but is not in the Makefile's EXHAUSTIVE_TESTS: make test would never run it whole", name)
		}
	}
	for _, name := range listed {
		if !slices.Contains(short, name) {
			t.Errorf("EXHAUSTIVE_TESTS names %s, which is no test looking at testing.Short()", name)
		}
	}
}
