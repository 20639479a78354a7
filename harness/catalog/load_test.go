package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// loadAt loads a catalog from a file system with the tests' registry.
func loadAt(t testing.TB, fsys fs.FS) (*Catalog, *SyncResult) {
	t.Helper()
	c, res, err := Load(context.Background(), fsys, LoadOptions{Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c, res
}

// reads returns everything a catalog's reads give, as JSON, so that two
// catalogs can be compared read for read.
func reads(t *testing.T, c *Catalog) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	put := func(name string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(b)
	}
	snap, err := c.Export(ctx)
	put("export", snap, err)
	v1, err := c.Domains(ctx)
	put("domains", v1, err)
	v2, err := c.Domain(ctx, "math")
	put("domain math", v2, err)
	v3, err := c.Levels(ctx, "")
	put("levels", v3, err)
	v4, err := c.Levels(ctx, "math")
	put("levels math", v4, err)
	v5, err := c.Level(ctx, "math", 2)
	put("level math 2", v5, err)
	v6, err := c.Level(ctx, "math", 9) // no file: the default
	put("level math 9", v6, err)
	v7, err := c.Tests(ctx, TestFilter{})
	put("tests", v7, err)
	v8, err := c.Tests(ctx, TestFilter{DomainID: "math", Level: ptr(2)})
	put("tests math 2", v8, err)
	v9, err := c.Test(ctx, "weather-call")
	put("test weather-call", v9, err)
	v10, err := c.Evaluators(ctx)
	put("evaluators", v10, err)
	v11, err := c.Evaluator(ctx, "judge")
	put("evaluator judge", v11, err)
	v12, err := c.Tools(ctx)
	put("tools", v12, err)
	v13, err := c.Tool(ctx, "weather")
	put("tool weather", v13, err)
	return out
}

// TestLoadReadsAsOpen loads the test definitions from an fs.FS and checks
// that every read gives exactly what a catalog opened on the same files
// with a database gives, down to the JSON of free-form values.
func TestLoadReadsAsOpen(t *testing.T) {
	t.Parallel()
	dir := copyTestdata(t)
	opened, openRes := openAt(t, dir)
	loaded, loadRes := loadAt(t, os.DirFS(dir))
	if !reflect.DeepEqual(openRes, loadRes) {
		t.Errorf("sync results differ:\nopen %+v\nload %+v", openRes, loadRes)
	}
	if len(loadRes.Errors) != 0 || loadRes.Loaded.Tests != 6 || loadRes.Loaded.Domains != 2 {
		t.Errorf("load result %+v", loadRes)
	}
	want, got := reads(t, opened), reads(t, loaded)
	for name := range want {
		if want[name] != got[name] {
			t.Errorf("%s:\nopen %s\nload %s", name, want[name], got[name])
		}
	}
	// And the same Go values: numbers in free-form maps have the same type.
	ctx := context.Background()
	se, err1 := opened.Export(ctx)
	le, err2 := loaded.Export(ctx)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(se, le) {
		t.Errorf("exports differ (%v, %v):\nopen %#v\nload %#v", err1, err2, se, le)
	}
	if !loaded.ReadOnly() || opened.ReadOnly() || loaded.Dir() != "" {
		t.Errorf("ReadOnly: loaded %v, opened %v; Dir %q", loaded.ReadOnly(), opened.ReadOnly(), loaded.Dir())
	}

	// Not found is the same error too.
	for name, err := range map[string]error{
		"domain":    second(loaded.Domain(ctx, "nope")),
		"level":     second(loaded.Level(ctx, "nope", 1)),
		"test":      second(loaded.Test(ctx, "nope")),
		"evaluator": second(loaded.Evaluator(ctx, "nope")),
		"tool":      second(loaded.Tool(ctx, "nope")),
	} {
		if !errors.Is(err, harness.ErrNotFound) {
			t.Errorf("%s nope: %v, want ErrNotFound", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// copyTestdata copies testdata/definitions to a temporary directory.
func copyTestdata(t *testing.T) string {
	t.Helper()
	dir := t.TempDir() + "/definitions"
	if err := os.CopyFS(dir, os.DirFS("testdata/definitions")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadBadFile: a file with an unknown key or an invalid value is
// reported as Sync reports it, with its line and key, loads nothing, and
// the other files load.
func TestLoadBadFile(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"evaluators/number.yaml":   {Data: []byte("name: Number\ntype: regex\nextraction_regex: '(\\d+)'\n")},
		"evaluators/broken.yaml":   {Data: []byte("name: Broken\nextraction_regex: (\\d+\n")},
		"domains/math/domain.yaml": {Data: []byte("name: Math\nevaluator_id: number\n")},
		"domains/math/level-1.yaml": {Data: []byte(
			"tests:\n  - id: a\n    prompt: What is 1 + 1?\n    expected: {answer: '2', type: numeric}\n")},
		"domains/math/level-2.yaml": {Data: []byte(
			"tests:\n  - id: b\n    prompt: What is 2 + 2?\n    expected: {answer: '4', typ: numeric}\n")},
	}
	c, res := loadAt(t, fsys)
	if res.Loaded.Evaluators != 1 || res.Loaded.Domains != 1 || res.Loaded.Tests != 1 {
		t.Errorf("loaded %+v", res.Loaded)
	}
	errs := map[string]FileError{}
	for _, fe := range res.Errors {
		errs[fe.File] = fe
	}
	if len(errs) != 2 {
		t.Fatalf("errors %+v, want one for broken.yaml and one for level-2.yaml", res.Errors)
	}
	if fe := errs["evaluators/broken.yaml"]; fe.Error == "" {
		t.Errorf("broken.yaml: %+v", fe)
	}
	if fe := errs["domains/math/level-2.yaml"]; fe.Line != 4 || fe.Key != "typ" {
		t.Errorf("level-2.yaml: %+v, want line 4, key typ", fe)
	}
	if got := c.LastSync(); !reflect.DeepEqual(got, res) {
		t.Errorf("LastSync %+v, want %+v", got, res)
	}
	ctx := context.Background()
	if _, err := c.Test(ctx, "b"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("test of the bad file: %v, want not found", err)
	}
	if _, err := c.Evaluator(ctx, "broken"); !errors.Is(err, harness.ErrNotFound) {
		t.Errorf("evaluator of the bad file: %v, want not found", err)
	}

	// The same files read by Check give the same errors: one parser.
	dir := t.TempDir()
	if err := os.CopyFS(dir, fsys); err != nil {
		t.Fatal(err)
	}
	chk, err := Check(dir, testRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(chk.Errors, res.Errors) {
		t.Errorf("Check errors %+v, Load errors %+v", chk.Errors, res.Errors)
	}
}

// TestLoadRefusesWrites: every write fails with ErrReadOnly (which also
// matches harness.ErrConflict) and changes nothing.
func TestLoadRefusesWrites(t *testing.T) {
	t.Parallel()
	c, _ := loadAt(t, os.DirFS("testdata/definitions"))
	ctx := context.Background()
	before, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keep := func(any) error { return nil }
	writes := map[string]error{
		"CreateDomain":    second(c.CreateDomain(ctx, harness.Domain{ID: "new", Name: "New"})),
		"UpdateDomain":    second(c.UpdateDomain(ctx, "math", func(d *harness.Domain) error { d.Name = "x"; return nil })),
		"DeleteDomain":    c.DeleteDomain(ctx, "math"),
		"UpdateLevel":     second(c.UpdateLevel(ctx, "math", 1, func(l *harness.LevelConfig) error { return keep(l) })),
		"CreateTest":      second(c.CreateTest(ctx, harness.Test{DomainID: "math", Level: 1, Prompt: "p", Expected: harness.Expected{Answer: "1", Type: "numeric"}})),
		"UpdateTest":      second(c.UpdateTest(ctx, "half", func(x *harness.Test) error { x.Prompt = "q"; return nil })),
		"MoveTest":        second(c.MoveTest(ctx, "half", "math", 1)),
		"DeleteTest":      c.DeleteTest(ctx, "half"),
		"CreateEvaluator": second(c.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "e", Name: "E", Type: "regex"})),
		"UpdateEvaluator": second(c.UpdateEvaluator(ctx, "number", func(e *harness.EvaluatorConfig) error { return keep(e) })),
		"DeleteEvaluator": c.DeleteEvaluator(ctx, "judge"),
		"CreateTool":      second(c.CreateTool(ctx, harness.ToolDefinition{ID: "t", Name: "T", Function: harness.FunctionDef{Name: "t"}})),
		"UpdateTool":      second(c.UpdateTool(ctx, "weather", func(x *harness.ToolDefinition) error { return keep(x) })),
		"DeleteTool":      c.DeleteTool(ctx, "weather"),
		"Import":          second(c.Import(ctx, before, true)),
		"CheckImport":     c.CheckImport(ctx, before, false),
	}
	for name, err := range writes {
		if !errors.Is(err, ErrReadOnly) || !errors.Is(err, harness.ErrConflict) {
			t.Errorf("%s: %v, want ErrReadOnly and ErrConflict", name, err)
		}
	}
	after, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Error("a refused write changed the definitions")
	}
}

// TestLoadCopies: what a read returns belongs to the caller; changing it
// changes nothing in the catalog.
func TestLoadCopies(t *testing.T) {
	t.Parallel()
	c, _ := loadAt(t, os.DirFS("testdata/definitions"))
	ctx := context.Background()
	snap, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range snap.Tests {
		snap.Tests[i].Prompt = "changed"
		if snap.Tests[i].Expected.Arguments != nil {
			snap.Tests[i].Expected.Arguments["city"] = "Rome"
		}
	}
	snap.Evaluators[0].Config["rubric"] = "changed"
	snap.Tools[0].Function.Parameters["type"] = "changed"
	tc, err := c.Test(ctx, "weather-call")
	if err != nil {
		t.Fatal(err)
	}
	if tc.Prompt == "changed" || tc.Expected.Arguments["city"] != "Paris" {
		t.Errorf("test after the caller changed its copy: %+v", tc)
	}
	ev, _ := c.Evaluator(ctx, "judge")
	tool, _ := c.Tool(ctx, "weather")
	if ev.Config["rubric"] == "changed" || tool.Function.Parameters["type"] != "object" {
		t.Errorf("evaluator %+v, tool %+v after the caller changed its copies", ev.Config, tool.Function.Parameters)
	}
}

// TestLoadSync: Sync reads the file system again; reads racing with it see
// the old definitions or the new ones, never a mix or an error.
func TestLoadSync(t *testing.T) {
	t.Parallel()
	level := func(answer string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("tests:\n  - id: a\n    prompt: What is 1 + 1?\n    expected: {answer: '" + answer + "', type: numeric}\n")}
	}
	fsys := fstest.MapFS{
		"domains/math/domain.yaml":  {Data: []byte("name: Math\n")},
		"domains/math/level-1.yaml": level("2"),
	}
	c, _ := loadAt(t, fsys)
	ctx := context.Background()
	// MapFS is not safe for concurrent change: the new file is in place
	// before readers start.
	fsys["domains/math/level-1.yaml"] = level("3")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				tests, err := c.Tests(ctx, TestFilter{})
				if err != nil || len(tests) != 1 || (tests[0].Expected.Answer != "2" && tests[0].Expected.Answer != "3") {
					t.Errorf("read during sync: %+v %v", tests, err)
					return
				}
			}
		})
	}
	res, err := c.Sync(ctx)
	wg.Wait()
	if err != nil || res.Loaded.Tests != 1 {
		t.Fatalf("sync: %+v %v", res, err)
	}
	if tc, _ := c.Test(ctx, "a"); tc.Expected.Answer != "3" {
		t.Errorf("after sync: %+v", tc)
	}
}

// TestLoadWrongRoot: a file system with no definitions folder at its root
// (an embed.FS not narrowed with fs.Sub, say) is an error, not an empty
// catalog.
func TestLoadWrongRoot(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"suite/domains/math/domain.yaml": {Data: []byte("name: Math\n")}}
	_, _, err := Load(context.Background(), fsys, LoadOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("load of the wrong root: %v, want fs.ErrNotExist", err)
	}
	sub, _ := fs.Sub(fsys, "suite")
	c, res, err := Load(context.Background(), sub, LoadOptions{})
	if err != nil || res.Loaded.Domains != 1 {
		t.Fatalf("load of fs.Sub: %+v %v", res, err)
	}
	if _, err := c.Domain(context.Background(), "math"); err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Load(ctx, sub, LoadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("load with a cancelled context: %v", err)
	}
}
