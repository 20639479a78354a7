package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMain stops the PostgreSQL server the tests may have started.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// ----- helpers shared by the catalog's tests -----

// judge is an evaluator type registered in the tests' registry; its records
// need config.rubric.
type judge struct{}

func (judge) Evaluate(context.Context, *harness.EvalRequest) (*harness.EvalResult, error) {
	return &harness.EvalResult{Score: 1, Passed: true}, nil
}

func (judge) ValidateConfig(cfg harness.EvaluatorConfig) error {
	if s, _ := cfg.Config["rubric"].(string); s == "" {
		return harness.Invalid("config.rubric", "is required")
	}
	return nil
}

func testRegistry(t testing.TB) *harness.Registry {
	t.Helper()
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator("judge", judge{}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// injectFailure makes the database fail the statements a trigger's event
// ("BEFORE INSERT ON def_tests") names with "injected failure".
func injectFailure(ctx context.Context, db bun.IDB, event string) error {
	if db.Dialect().Name() != dialect.PG {
		_, err := db.ExecContext(ctx, "CREATE TRIGGER fail "+event+" BEGIN SELECT RAISE(ABORT, 'injected failure'); END")
		return err
	}
	_, err := db.ExecContext(ctx, `CREATE OR REPLACE FUNCTION fail() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected failure'; END $$`)
	if err == nil {
		_, err = db.ExecContext(ctx, "CREATE TRIGGER fail "+event+" FOR EACH ROW EXECUTE FUNCTION fail()")
	}
	return err
}

// removeFailure removes the trigger of injectFailure.
func removeFailure(ctx context.Context, db bun.IDB, event string) error {
	q := "DROP TRIGGER fail"
	if db.Dialect().Name() == dialect.PG {
		q += " ON " + event[strings.LastIndex(event, " ")+1:]
	}
	_, err := db.ExecContext(ctx, q)
	return err
}

// openDB opens a fresh database: a SQLite file in a temporary directory,
// or a PostgreSQL database (see dbtest).
func openDB(t testing.TB) *store.DB {
	t.Helper()
	return dbtest.Open(t)
}

// openAt opens a catalog over a definitions directory with a fresh
// database.
func openAt(t testing.TB, defs string) (*Catalog, *SyncResult) {
	t.Helper()
	c, res, err := Open(context.Background(), Options{Dir: defs, DB: openDB(t), Registry: testRegistry(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c, res
}

// newCatalog opens a catalog over an empty definitions directory.
func newCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, _ := openAt(t, filepath.Join(t.TempDir(), "definitions"))
	return c
}

func ptr[T any](v T) *T { return &v }

// seed stores a small set of definitions of every kind through the API.
func seed(t testing.TB, c *Catalog) {
	t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "number", Name: "Number",
		ExtractionRegex: `Answer:\s*(?<answer>-?[\d,./%]+)`, UsesPass2: true}))
	must(c.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "strict", Name: "Strict judge", Type: "judge",
		Config: map[string]any{"rubric": "Correct and brief.", "weights": map[string]any{"accuracy": 0.7, "style": 0.3}}}))
	must(c.CreateTool(ctx, harness.ToolDefinition{ID: "weather", Name: "Weather",
		Function: harness.FunctionDef{Name: "get_weather", Description: "Returns the weather.",
			Parameters: map[string]any{"type": "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required":   []any{"city"}}},
		MockResponse: map[string]any{"city": "Paris", "temperature": 21.5,
			"conditions": []any{"sunny", map[string]any{"wind": 12.0}}}}))
	must(c.CreateDomain(ctx, harness.Domain{ID: "math", Name: "Mathematics", EvaluatorID: "number",
		Enabled: true, SystemPrompt: "You are a mathematician.\nEnd with \"Answer: <n>\".", Color: "#1a2b3c"}))
	must(c.CreateDomain(ctx, harness.Domain{ID: "geo", Name: "Geography", Enabled: false, Icon: "globe"}))
	must(c.UpdateLevel(ctx, "math", 2, func(l *harness.LevelConfig) error {
		l.SystemPrompt, l.SystemPromptMode, l.PassThreshold = "Show your work.", harness.PromptPrepend, 0.75
		l.Tools = []string{"weather"}
		return nil
	}))
	must(c.CreateTest(ctx, harness.Test{ID: "add", DomainID: "math", Level: 1, Name: "Sum",
		Prompt: "What is 2 + 2?", Expected: harness.Expected{Answer: "4", Type: "numeric", Tolerance: ptr(0.001)}}))
	must(c.CreateTest(ctx, harness.Test{ID: "half", DomainID: "math", Level: 1,
		Prompt: "What is one half?\n  Reply: \"1/2\" # not a comment", Expected: harness.Expected{Answer: "1/2", Type: "numeric"}}))
	must(c.CreateTest(ctx, harness.Test{ID: "call", DomainID: "math", Level: 2, Prompt: "Weather in Paris?",
		Expected: harness.Expected{Answer: "get_weather", Type: "tool_call", Arguments: map[string]any{"city": "Paris"}},
		Tools:    []string{"weather"}}))
	must(c.CreateTest(ctx, harness.Test{ID: "capital", DomainID: "geo", Level: 1, Prompt: "Capital of France? A) Paris B) Rome",
		Expected: harness.Expected{Answer: "A", Type: "choice"}, EvaluatorID: "strict"}))
}

// dirFiles returns every file under dir (hidden ones too), by slash path.
func dirFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// dirHash hashes the names and contents of every file and directory under
// dir.
func dirHash(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	var entries []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			entries = append(entries, "dir "+filepath.ToSlash(rel))
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		entries = append(entries, "file "+filepath.ToSlash(rel)+" "+hex.EncodeToString(sum[:]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(entries)
	for _, e := range entries {
		h.Write([]byte(e + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// exportJSON returns the catalog's export as JSON, the form clients see.
func exportJSON(t testing.TB, c *Catalog) string {
	t.Helper()
	s, err := c.Export(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// state is what a failed write must leave alone.
type state struct{ files, export string }

func stateOf(t testing.TB, c *Catalog) state {
	t.Helper()
	return state{dirHash(t, c.Dir()), exportJSON(t, c)}
}

func assertUnchanged(t testing.TB, c *Catalog, before state) {
	t.Helper()
	after := stateOf(t, c)
	if after.files != before.files {
		t.Errorf("the definitions directory changed:\n%v", dirFiles(t, c.Dir()))
	}
	if after.export != before.export {
		t.Errorf("the cache changed:\nbefore %s\nafter %s", before.export, after.export)
	}
}

// assertInvalid checks that err wraps ErrInvalid and is a
// *harness.ValidationError naming field.
func assertInvalid(t testing.TB, err error, field string) {
	t.Helper()
	if !errors.Is(err, harness.ErrInvalid) {
		t.Fatalf("err = %v, want one wrapping ErrInvalid", err)
	}
	var ve *harness.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v (%T), want a *harness.ValidationError", err, err)
	}
	var fields []string
	for _, f := range ve.Fields {
		fields = append(fields, f.Field)
	}
	if !slices.Contains(fields, field) {
		t.Fatalf("fields = %q, want %q among them (err: %v)", fields, field, err)
	}
}

func readFile(t testing.TB, c *Catalog, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(c *Catalog, rel string) bool {
	_, err := os.Stat(filepath.Join(c.Dir(), filepath.FromSlash(rel)))
	return err == nil
}

// ----- tests -----

func TestOpenValidatesOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, opts := range map[string]Options{
		"no dir": {DB: openDB(t)},
		"no db":  {Dir: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Open(ctx, opts); err == nil {
				t.Fatal("Open succeeded")
			}
		})
	}
	t.Run("creates the directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		c, res := openAt(t, dir)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("stat %s: %v", dir, err)
		}
		if res.Loaded != (Counts{}) || len(res.Errors) != 0 || res.Errors == nil {
			t.Fatalf("sync of an empty directory = %+v", res)
		}
		if c.Dir() != dir || c.Registry() == nil {
			t.Fatalf("Dir() = %q, Registry() = %v", c.Dir(), c.Registry())
		}
	})
}

func TestCreateAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)

	t.Run("domain", func(t *testing.T) {
		d, err := c.Domain(ctx, "math")
		if err != nil {
			t.Fatal(err)
		}
		want := harness.Domain{ID: "math", Name: "Mathematics", EvaluatorID: "number", Enabled: true,
			SystemPrompt: "You are a mathematician.\nEnd with \"Answer: <n>\".", Color: "#1a2b3c"}
		if d != want {
			t.Fatalf("got %+v, want %+v", d, want)
		}
		ds, err := c.Domains(ctx)
		if err != nil || len(ds) != 2 || ds[0].ID != "geo" || ds[1].ID != "math" || ds[0].Enabled {
			t.Fatalf("Domains = %+v, %v", ds, err)
		}
		if !exists(c, "domains/math/domain.yaml") {
			t.Fatal("domains/math/domain.yaml is missing")
		}
	})
	t.Run("level with a file", func(t *testing.T) {
		l, err := c.Level(ctx, "math", 2)
		if err != nil {
			t.Fatal(err)
		}
		want := harness.LevelConfig{DomainID: "math", Level: 2, SystemPrompt: "Show your work.",
			SystemPromptMode: harness.PromptPrepend, PassThreshold: 0.75, Tools: []string{"weather"}}
		if !reflect.DeepEqual(l, want) {
			t.Fatalf("got %+v, want %+v", l, want)
		}
	})
	t.Run("level without a file has the defaults", func(t *testing.T) {
		l, err := c.Level(ctx, "geo", 7)
		if err != nil {
			t.Fatal(err)
		}
		if l.SystemPromptMode != harness.PromptAppend || l.PassThreshold != harness.DefaultPassThreshold || l.Level != 7 {
			t.Fatalf("got %+v", l)
		}
	})
	t.Run("levels", func(t *testing.T) {
		ls, err := c.Levels(ctx, "math")
		if err != nil || len(ls) != 2 || ls[0].Level != 1 || ls[1].Level != 2 {
			t.Fatalf("Levels(math) = %+v, %v", ls, err)
		}
		all, err := c.Levels(ctx, "")
		if err != nil || len(all) != 3 {
			t.Fatalf("Levels() = %+v, %v", all, err)
		}
	})
	t.Run("test", func(t *testing.T) {
		got, err := c.Test(ctx, "call")
		if err != nil {
			t.Fatal(err)
		}
		if got.DomainID != "math" || got.Level != 2 || got.Expected.Type != "tool_call" ||
			got.Expected.Arguments["city"] != "Paris" || !reflect.DeepEqual(got.Tools, []string{"weather"}) {
			t.Fatalf("got %+v", got)
		}
		got, err = c.Test(ctx, "add")
		if err != nil || got.Expected.Tolerance == nil || *got.Expected.Tolerance != 0.001 || got.Tools == nil {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("test without an id gets one", func(t *testing.T) {
		got, err := c.CreateTest(ctx, harness.Test{DomainID: "geo", Level: 3, Prompt: "Largest ocean?",
			Expected: harness.Expected{Answer: "Pacific"}})
		if err != nil {
			t.Fatal(err)
		}
		if !harness.ValidID(got.ID) || got.Expected.Type != "exact" {
			t.Fatalf("got %+v", got)
		}
		if _, err := c.Test(ctx, got.ID); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteTest(ctx, got.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("evaluator", func(t *testing.T) {
		e, err := c.Evaluator(ctx, "strict")
		if err != nil {
			t.Fatal(err)
		}
		if e.Type != "judge" || e.Config["rubric"] != "Correct and brief." {
			t.Fatalf("got %+v", e)
		}
		e, err = c.Evaluator(ctx, "number")
		if err != nil || e.Type != harness.EvaluatorTypeRegex || !e.UsesPass2 {
			t.Fatalf("got %+v, %v", e, err)
		}
		es, err := c.Evaluators(ctx)
		if err != nil || len(es) != 2 {
			t.Fatalf("Evaluators = %+v, %v", es, err)
		}
	})
	t.Run("tool", func(t *testing.T) {
		tl, err := c.Tool(ctx, "weather")
		if err != nil {
			t.Fatal(err)
		}
		mock, _ := tl.MockResponse.(map[string]any)
		conds, _ := mock["conditions"].([]any)
		if tl.Function.Name != "get_weather" || len(conds) != 2 || mock["temperature"] != 21.5 {
			t.Fatalf("got %+v", tl)
		}
		ts, err := c.Tools(ctx)
		if err != nil || len(ts) != 1 {
			t.Fatalf("Tools = %+v, %v", ts, err)
		}
	})
}

func TestDuplicateIsConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	cases := []struct {
		name string
		op   func() error
	}{
		{"domain", func() error {
			_, err := c.CreateDomain(ctx, harness.Domain{ID: "math", Name: "Again"})
			return err
		}},
		{"test in the same level", func() error {
			_, err := c.CreateTest(ctx, harness.Test{ID: "add", DomainID: "math", Level: 1, Prompt: "p",
				Expected: harness.Expected{Answer: "1"}})
			return err
		}},
		{"test in another domain", func() error {
			_, err := c.CreateTest(ctx, harness.Test{ID: "add", DomainID: "geo", Level: 4, Prompt: "p",
				Expected: harness.Expected{Answer: "1"}})
			return err
		}},
		{"evaluator", func() error {
			_, err := c.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "number", Name: "Again"})
			return err
		}},
		{"tool", func() error {
			_, err := c.CreateTool(ctx, harness.ToolDefinition{ID: "weather", Function: harness.FunctionDef{Name: "w"}})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stateOf(t, c)
			err := tc.op()
			if !errors.Is(err, harness.ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
			assertUnchanged(t, c, before)
		})
	}
}

func TestUnknownIsNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	noop := func(any) error { return nil }
	cases := []struct {
		name string
		op   func() error
	}{
		{"get domain", func() error { _, err := c.Domain(ctx, "nope"); return err }},
		{"update domain", func() error {
			_, err := c.UpdateDomain(ctx, "nope", func(d *harness.Domain) error { return noop(d) })
			return err
		}},
		{"delete domain", func() error { return c.DeleteDomain(ctx, "nope") }},
		{"get level of an unknown domain", func() error { _, err := c.Level(ctx, "nope", 1); return err }},
		{"update level of an unknown domain", func() error {
			_, err := c.UpdateLevel(ctx, "nope", 1, func(l *harness.LevelConfig) error { return noop(l) })
			return err
		}},
		{"get test", func() error { _, err := c.Test(ctx, "nope"); return err }},
		{"update test", func() error {
			_, err := c.UpdateTest(ctx, "nope", func(x *harness.Test) error { return noop(x) })
			return err
		}},
		{"move test", func() error { _, err := c.MoveTest(ctx, "nope", "math", 1); return err }},
		{"delete test", func() error { return c.DeleteTest(ctx, "nope") }},
		{"get evaluator", func() error { _, err := c.Evaluator(ctx, "nope"); return err }},
		{"update evaluator", func() error {
			_, err := c.UpdateEvaluator(ctx, "nope", func(e *harness.EvaluatorConfig) error { return noop(e) })
			return err
		}},
		{"delete evaluator", func() error { return c.DeleteEvaluator(ctx, "nope") }},
		{"get tool", func() error { _, err := c.Tool(ctx, "nope"); return err }},
		{"update tool", func() error {
			_, err := c.UpdateTool(ctx, "nope", func(x *harness.ToolDefinition) error { return noop(x) })
			return err
		}},
		{"delete tool", func() error { return c.DeleteTool(ctx, "nope") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stateOf(t, c)
			err := tc.op()
			if !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
			if !strings.Contains(err.Error(), `"nope"`) {
				t.Errorf("error %q does not name the id", err)
			}
			assertUnchanged(t, c, before)
		})
	}
}

func TestInvalidWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	test := func(mod func(*harness.Test)) func() error {
		return func() error {
			x := harness.Test{ID: "new", DomainID: "math", Level: 1, Prompt: "p", Expected: harness.Expected{Answer: "a"}}
			mod(&x)
			_, err := c.CreateTest(ctx, x)
			return err
		}
	}
	domain := func(mod func(*harness.Domain)) func() error {
		return func() error {
			d := harness.Domain{ID: "new", Name: "New"}
			mod(&d)
			_, err := c.CreateDomain(ctx, d)
			return err
		}
	}
	evaluator := func(mod func(*harness.EvaluatorConfig)) func() error {
		return func() error {
			e := harness.EvaluatorConfig{ID: "new", Name: "New"}
			mod(&e)
			_, err := c.CreateEvaluator(ctx, e)
			return err
		}
	}
	tool := func(mod func(*harness.ToolDefinition)) func() error {
		return func() error {
			x := harness.ToolDefinition{ID: "new", Function: harness.FunctionDef{Name: "fn"}}
			mod(&x)
			_, err := c.CreateTool(ctx, x)
			return err
		}
	}
	level := func(mod func(*harness.LevelConfig)) func() error {
		return func() error {
			_, err := c.UpdateLevel(ctx, "math", 1, func(l *harness.LevelConfig) error { mod(l); return nil })
			return err
		}
	}
	cases := []struct {
		name  string
		op    func() error
		field string
	}{
		{"domain: bad id", domain(func(d *harness.Domain) { d.ID = "bad id" }), "id"},
		{"domain: path in id", domain(func(d *harness.Domain) { d.ID = "../evil" }), "id"},
		{"domain: missing id", domain(func(d *harness.Domain) { d.ID = "" }), "id"},
		{"domain: missing name", domain(func(d *harness.Domain) { d.Name = " " }), "name"},
		{"domain: bad colour", domain(func(d *harness.Domain) { d.Color = "red" }), "color"},
		{"domain: short colour", domain(func(d *harness.Domain) { d.Color = "#abc" }), "color"},
		{"domain: unknown evaluator", domain(func(d *harness.Domain) { d.EvaluatorID = "ghost" }), "evaluator_id"},
		{"domain update: unknown evaluator", func() error {
			_, err := c.UpdateDomain(ctx, "math", func(d *harness.Domain) error { d.EvaluatorID = "ghost"; return nil })
			return err
		}, "evaluator_id"},
		{"domain update: id changed", func() error {
			_, err := c.UpdateDomain(ctx, "math", func(d *harness.Domain) error { d.ID = "other"; return nil })
			return err
		}, "id"},
		{"level: bad system_prompt_mode", level(func(l *harness.LevelConfig) { l.SystemPromptMode = "sideways" }), "system_prompt_mode"},
		{"level: pass_threshold above 1", level(func(l *harness.LevelConfig) { l.PassThreshold = 1.5 }), "pass_threshold"},
		{"level: unknown tool", level(func(l *harness.LevelConfig) { l.Tools = []string{"ghost"} }), "tools[0]"},
		{"level: tool listed twice", level(func(l *harness.LevelConfig) { l.Tools = []string{"weather", "weather"} }), "tools[1]"},
		{"level: number out of range", func() error {
			_, err := c.UpdateLevel(ctx, "math", harness.MaxLevel+1, func(*harness.LevelConfig) error { return nil })
			return err
		}, "level"},
		{"test: bad id", test(func(x *harness.Test) { x.ID = "bad/id" }), "id"},
		{"test: missing prompt", test(func(x *harness.Test) { x.Prompt = "" }), "prompt"},
		{"test: unknown expected type", test(func(x *harness.Test) { x.Expected.Type = "telepathy" }), "expected.type"},
		{"test: numeric answer not a number", test(func(x *harness.Test) { x.Expected = harness.Expected{Answer: "abc", Type: "numeric"} }), "expected.answer"},
		{"test: regex answer does not compile", test(func(x *harness.Test) { x.Expected = harness.Expected{Answer: "(", Type: "regex"} }), "expected.answer"},
		{"test: negative tolerance", test(func(x *harness.Test) {
			x.Expected = harness.Expected{Answer: "1", Type: "numeric", Tolerance: ptr(-1.0)}
		}), "expected.tolerance"},
		{"test: unknown evaluator_id", test(func(x *harness.Test) { x.EvaluatorID = "ghost" }), "evaluator_id"},
		{"test: unknown tool id", test(func(x *harness.Test) { x.Tools = []string{"weather", "ghost"} }), "tools[1]"},
		{"test: unknown domain", test(func(x *harness.Test) { x.DomainID = "ghost" }), "domain_id"},
		{"test: level out of range", test(func(x *harness.Test) { x.Level = -1 }), "level"},
		{"test moved to a missing domain", func() error {
			_, err := c.MoveTest(ctx, "add", "ghost", 1)
			return err
		}, "domain_id"},
		{"test update: unknown expected type", func() error {
			_, err := c.UpdateTest(ctx, "add", func(x *harness.Test) error { x.Expected.Type = "telepathy"; return nil })
			return err
		}, "expected.type"},
		{"test update: id changed", func() error {
			_, err := c.UpdateTest(ctx, "add", func(x *harness.Test) error { x.ID = "other"; return nil })
			return err
		}, "id"},
		{"evaluator: bad regex in extraction_regex", evaluator(func(e *harness.EvaluatorConfig) { e.ExtractionRegex = "(?<answer>" }), "extraction_regex"},
		{"evaluator: unknown type", evaluator(func(e *harness.EvaluatorConfig) { e.Type = "oracle" }), "type"},
		{"evaluator: config refused by its type", evaluator(func(e *harness.EvaluatorConfig) { e.Type = "judge" }), "config.rubric"},
		{"evaluator: bad id", evaluator(func(e *harness.EvaluatorConfig) { e.ID = "-x" }), "id"},
		{"evaluator update: bad regex", func() error {
			_, err := c.UpdateEvaluator(ctx, "number", func(e *harness.EvaluatorConfig) error { e.ExtractionRegex = "[a-"; return nil })
			return err
		}, "extraction_regex"},
		{"tool: bad function name", tool(func(x *harness.ToolDefinition) { x.Function.Name = "get weather" }), "function.name"},
		{"tool: parameters not an object", tool(func(x *harness.ToolDefinition) {
			x.Function.Parameters = map[string]any{"type": "array"}
		}), "function.parameters.type"},
		{"tool: required names no property", tool(func(x *harness.ToolDefinition) {
			x.Function.Parameters = map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{"city"}}
		}), "function.parameters.required[0]"},
		{"tool: mock_response not JSON", tool(func(x *harness.ToolDefinition) { x.MockResponse = map[string]any{"f": func() {}} }), "mock_response"},
		{"tool update: bad function name", func() error {
			_, err := c.UpdateTool(ctx, "weather", func(x *harness.ToolDefinition) error { x.Function.Name = ""; return nil })
			return err
		}, "function.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stateOf(t, c)
			assertInvalid(t, tc.op(), tc.field)
			assertUnchanged(t, c, before)
		})
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)

	t.Run("domain", func(t *testing.T) {
		d, err := c.UpdateDomain(ctx, "geo", func(d *harness.Domain) error {
			d.Description, d.Enabled, d.EvaluatorID = "Places", true, "strict"
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := c.Domain(ctx, "geo")
		if got != d || got.Icon != "globe" || !got.Enabled || got.EvaluatorID != "strict" {
			t.Fatalf("got %+v, returned %+v", got, d)
		}
		if f := readFile(t, c, "domains/geo/domain.yaml"); !strings.Contains(f, "description: Places") {
			t.Fatalf("domain.yaml:\n%s", f)
		}
	})
	t.Run("level keeps its tests", func(t *testing.T) {
		l, err := c.UpdateLevel(ctx, "math", 1, func(l *harness.LevelConfig) error {
			l.SystemPrompt, l.SystemPromptMode = "Be brief.", harness.PromptReplace
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if l.Tools == nil || l.PassThreshold != harness.DefaultPassThreshold {
			t.Fatalf("returned %+v", l)
		}
		got, _ := c.Level(ctx, "math", 1)
		if !reflect.DeepEqual(got, l) {
			t.Fatalf("got %+v, returned %+v", got, l)
		}
		ts, _ := c.Tests(ctx, TestFilter{DomainID: "math", Level: ptr(1)})
		if ids := testIDs(ts); !slices.Equal(ids, []string{"add", "half"}) {
			t.Fatalf("tests of math/1 = %v", ids)
		}
		if f := readFile(t, c, "domains/math/level-1.yaml"); !strings.Contains(f, "system_prompt_mode: replace") ||
			!strings.Contains(f, "id: half") {
			t.Fatalf("level-1.yaml:\n%s", f)
		}
	})
	t.Run("test in place keeps its position", func(t *testing.T) {
		x, err := c.UpdateTest(ctx, "add", func(x *harness.Test) error {
			x.Prompt, x.Expected.Answer = "What is 3 + 3?", "6"
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := c.Test(ctx, "add")
		if !reflect.DeepEqual(got, x) || got.Expected.Tolerance == nil {
			t.Fatalf("got %+v, returned %+v", got, x)
		}
		ts, _ := c.Tests(ctx, TestFilter{DomainID: "math", Level: ptr(1)})
		if ids := testIDs(ts); !slices.Equal(ids, []string{"add", "half"}) {
			t.Fatalf("tests of math/1 = %v", ids)
		}
	})
	t.Run("evaluator", func(t *testing.T) {
		_, err := c.UpdateEvaluator(ctx, "strict", func(e *harness.EvaluatorConfig) error {
			e.Config["rubric"] = "Only correctness counts."
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := c.Evaluator(ctx, "strict")
		if got.Config["rubric"] != "Only correctness counts." || got.Config["weights"] == nil {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("tool", func(t *testing.T) {
		_, err := c.UpdateTool(ctx, "weather", func(x *harness.ToolDefinition) error {
			x.MockResponse = "always sunny"
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := c.Tool(ctx, "weather")
		if got.MockResponse != "always sunny" || got.Function.Parameters["type"] != "object" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("an error from apply is returned and changes nothing", func(t *testing.T) {
		before := stateOf(t, c)
		boom := errors.New("boom")
		_, err := c.UpdateTest(ctx, "add", func(x *harness.Test) error { x.Prompt = "changed"; return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		assertUnchanged(t, c, before)
	})
	t.Run("files agree with the cache", func(t *testing.T) {
		want := exportJSON(t, c)
		c2, res := openAt(t, c.Dir())
		if len(res.Errors) != 0 {
			t.Fatalf("sync errors: %+v", res.Errors)
		}
		if got := exportJSON(t, c2); got != want {
			t.Fatalf("after sync:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("domain removes its directory, levels and tests", func(t *testing.T) {
		c := newCatalog(t)
		seed(t, c)
		if err := c.DeleteDomain(ctx, "math"); err != nil {
			t.Fatal(err)
		}
		if exists(c, "domains/math") {
			t.Fatalf("domains/math still exists: %v", dirFiles(t, c.Dir()))
		}
		if _, err := c.Domain(ctx, "math"); !errors.Is(err, harness.ErrNotFound) {
			t.Fatalf("Domain(math) err = %v", err)
		}
		for _, id := range []string{"add", "half", "call"} {
			if _, err := c.Test(ctx, id); !errors.Is(err, harness.ErrNotFound) {
				t.Fatalf("Test(%s) err = %v", id, err)
			}
		}
		if ls, _ := c.Levels(ctx, "math"); len(ls) != 0 {
			t.Fatalf("levels left: %+v", ls)
		}
		// The test ids are free again and the other domain is untouched.
		if _, err := c.CreateTest(ctx, harness.Test{ID: "add", DomainID: "geo", Level: 1, Prompt: "p",
			Expected: harness.Expected{Answer: "a"}}); err != nil {
			t.Fatal(err)
		}
		if ts, _ := c.Tests(ctx, TestFilter{}); !slices.Equal(testIDs(ts), []string{"capital", "add"}) {
			t.Fatalf("tests = %v", testIDs(ts))
		}
		// The evaluator math used can go now.
		if err := c.DeleteEvaluator(ctx, "number"); err != nil {
			t.Fatal(err)
		}
		// The same id can be created again, empty.
		if _, err := c.CreateDomain(ctx, harness.Domain{ID: "math", Name: "Maths"}); err != nil {
			t.Fatal(err)
		}
		if ts, _ := c.Tests(ctx, TestFilter{DomainID: "math"}); len(ts) != 0 {
			t.Fatalf("tests of the new math: %v", testIDs(ts))
		}
	})
	t.Run("test", func(t *testing.T) {
		c := newCatalog(t)
		seed(t, c)
		if err := c.DeleteTest(ctx, "add"); err != nil {
			t.Fatal(err)
		}
		if f := readFile(t, c, "domains/math/level-1.yaml"); strings.Contains(f, "id: add") || !strings.Contains(f, "id: half") {
			t.Fatalf("level-1.yaml:\n%s", f)
		}
		if err := c.DeleteTest(ctx, "add"); !errors.Is(err, harness.ErrNotFound) {
			t.Fatalf("second delete err = %v", err)
		}
	})
	t.Run("evaluator and tool", func(t *testing.T) {
		c := newCatalog(t)
		seed(t, c)
		if _, err := c.CreateEvaluator(ctx, harness.EvaluatorConfig{ID: "spare", Name: "Spare"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateTool(ctx, harness.ToolDefinition{ID: "spare", Function: harness.FunctionDef{Name: "spare"}}); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteEvaluator(ctx, "spare"); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteTool(ctx, "spare"); err != nil {
			t.Fatal(err)
		}
		if exists(c, "evaluators/spare.yaml") || exists(c, "tools/spare.yaml") {
			t.Fatal("files left behind")
		}
	})
}

func TestDeleteReferencedIsConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	// A second tool, listed only by a level, and one whose id is a prefix
	// of a listed one.
	if _, err := c.CreateTool(ctx, harness.ToolDefinition{ID: "clock", Function: harness.FunctionDef{Name: "clock"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTool(ctx, harness.ToolDefinition{ID: "weath", Function: harness.FunctionDef{Name: "weath"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateLevel(ctx, "geo", 1, func(l *harness.LevelConfig) error { l.Tools = []string{"clock"}; return nil }); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, user string
		op         func() error
	}{
		{"evaluator used by a domain", "domain math", func() error { return c.DeleteEvaluator(ctx, "number") }},
		{"evaluator used by a test", "test capital", func() error { return c.DeleteEvaluator(ctx, "strict") }},
		{"tool used by a test and a level", "test call", func() error { return c.DeleteTool(ctx, "weather") }},
		{"tool used by a level", "level geo/1", func() error { return c.DeleteTool(ctx, "clock") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stateOf(t, c)
			err := tc.op()
			if !errors.Is(err, harness.ErrConflict) {
				t.Fatalf("err = %v, want ErrConflict", err)
			}
			if !strings.Contains(err.Error(), tc.user) {
				t.Errorf("error %q does not name %q", err, tc.user)
			}
			assertUnchanged(t, c, before)
		})
	}
	t.Run("a tool whose id is part of a listed one is free", func(t *testing.T) {
		if err := c.DeleteTool(ctx, "weath"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMoveTest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name     string
		domain   string
		level    int
		fromFile string
		toFile   string
	}{
		{"to another level", "math", 3, "domains/math/level-1.yaml", "domains/math/level-3.yaml"},
		{"to an existing level", "math", 2, "domains/math/level-1.yaml", "domains/math/level-2.yaml"},
		{"to another domain", "geo", 1, "domains/math/level-1.yaml", "domains/geo/level-1.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCatalog(t)
			seed(t, c)
			moved, err := c.MoveTest(ctx, "add", tc.domain, tc.level)
			if err != nil {
				t.Fatal(err)
			}
			if moved.DomainID != tc.domain || moved.Level != tc.level || moved.Prompt != "What is 2 + 2?" {
				t.Fatalf("moved = %+v", moved)
			}
			if f := readFile(t, c, tc.fromFile); strings.Contains(f, "id: add") {
				t.Fatalf("%s still has the test:\n%s", tc.fromFile, f)
			}
			if f := readFile(t, c, tc.toFile); !strings.Contains(f, "id: add") {
				t.Fatalf("%s lacks the test:\n%s", tc.toFile, f)
			}
			// It goes to the end of its new level.
			ts, _ := c.Tests(ctx, TestFilter{DomainID: tc.domain, Level: ptr(tc.level)})
			if ids := testIDs(ts); ids[len(ids)-1] != "add" {
				t.Fatalf("tests of the target level = %v", ids)
			}
			got, _ := c.Test(ctx, "add")
			if !reflect.DeepEqual(got, moved) {
				t.Fatalf("stored %+v, returned %+v", got, moved)
			}
			// Moving it back and deleting it use the new location.
			if _, err := c.UpdateTest(ctx, "add", func(x *harness.Test) error { x.Name = "renamed"; return nil }); err != nil {
				t.Fatal(err)
			}
			if f := readFile(t, c, tc.toFile); !strings.Contains(f, "name: renamed") {
				t.Fatalf("%s:\n%s", tc.toFile, f)
			}
			if err := c.DeleteTest(ctx, "add"); err != nil {
				t.Fatal(err)
			}
			if f := readFile(t, c, tc.toFile); strings.Contains(f, "id: add") {
				t.Fatalf("%s still has the test:\n%s", tc.toFile, f)
			}
			c2, res := openAt(t, c.Dir())
			if len(res.Errors) != 0 || exportJSON(t, c2) != exportJSON(t, c) {
				t.Fatalf("files and cache disagree: %+v", res.Errors)
			}
		})
	}
}

func TestTestFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	if _, err := c.CreateTest(ctx, harness.Test{ID: "river", DomainID: "geo", Level: 2, Prompt: "Longest river?",
		Expected: harness.Expected{Answer: "Nile"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTest(ctx, harness.Test{ID: "border", DomainID: "geo", Level: 1, Prompt: "Neighbours of Spain?",
		Expected: harness.Expected{Answer: "France", Type: "contains"}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    TestFilter
		want []string
	}{
		{"all, by domain, level and file order", TestFilter{}, []string{"capital", "border", "river", "add", "half", "call"}},
		{"one domain", TestFilter{DomainID: "geo"}, []string{"capital", "border", "river"}},
		{"one level across domains", TestFilter{Level: ptr(1)}, []string{"capital", "border", "add", "half"}},
		{"domain and level", TestFilter{DomainID: "math", Level: ptr(2)}, []string{"call"}},
		{"level without tests", TestFilter{DomainID: "math", Level: ptr(9)}, []string{}},
		{"unknown domain", TestFilter{DomainID: "nope"}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := c.Tests(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if ts == nil {
				t.Fatal("Tests returned nil, want an empty list")
			}
			if got := testIDs(ts); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, x := range ts {
				if (tc.f.DomainID != "" && x.DomainID != tc.f.DomainID) || (tc.f.Level != nil && x.Level != *tc.f.Level) {
					t.Fatalf("test %+v does not match the filter", x)
				}
			}
		})
	}
}

// TestCacheFailureRollsBackFiles makes the cache step of a write fail and
// checks that the files it had already written are put back.
func TestCacheFailureRollsBackFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		trigger string
		op      func(c *Catalog) error
	}{
		{"create test", "BEFORE INSERT ON def_tests", func(c *Catalog) error {
			_, err := c.CreateTest(ctx, harness.Test{ID: "new", DomainID: "math", Level: 5, Prompt: "p",
				Expected: harness.Expected{Answer: "a"}})
			return err
		}},
		{"create domain (new directory)", "BEFORE INSERT ON def_domains", func(c *Catalog) error {
			_, err := c.CreateDomain(ctx, harness.Domain{ID: "new", Name: "New"})
			return err
		}},
		{"move test (two files)", "BEFORE UPDATE ON def_tests", func(c *Catalog) error {
			_, err := c.MoveTest(ctx, "add", "geo", 1)
			return err
		}},
		{"delete domain (several files)", "BEFORE DELETE ON def_domains", func(c *Catalog) error {
			return c.DeleteDomain(ctx, "math")
		}},
		{"update evaluator", "BEFORE UPDATE ON def_evaluators", func(c *Catalog) error {
			_, err := c.UpdateEvaluator(ctx, "number", func(e *harness.EvaluatorConfig) error { e.Name = "N"; return nil })
			return err
		}},
		{"import", "BEFORE INSERT ON def_tools", func(c *Catalog) error {
			s, err := c.Export(ctx)
			if err != nil {
				return err
			}
			s.Domains = s.Domains[:1]
			s.Domains[0].Name = "changed"
			s.Tests = s.Tests[:1]
			s.Tests[0].DomainID, s.Levels = s.Domains[0].ID, nil
			_, err = c.Import(ctx, s, false)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCatalog(t)
			seed(t, c)
			before := stateOf(t, c)
			if err := injectFailure(ctx, c.db, tc.trigger); err != nil {
				t.Fatal(err)
			}
			err := tc.op(c)
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			assertUnchanged(t, c, before)
			if err := removeFailure(ctx, c.db, tc.trigger); err != nil {
				t.Fatal(err)
			}
			// The catalog still works, and its view of the files is right:
			// the same write now succeeds.
			if err := tc.op(c); err != nil {
				t.Fatal(err)
			}
			if res, err := c.Sync(ctx); err != nil || len(res.Errors) != 0 {
				t.Fatalf("sync: %+v, %v", res, err)
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	c := newCatalog(t)
	seed(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Tests(ctx, TestFilter{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Tests err = %v", err)
	}
	// A write either completes or changes nothing; it never stops half-way.
	before := stateOf(t, c)
	_, err := c.CreateTest(ctx, harness.Test{ID: "late", DomainID: "math", Level: 1, Prompt: "p",
		Expected: harness.Expected{Answer: "a"}})
	if err != nil {
		assertUnchanged(t, c, before)
	} else if _, err := c.Test(context.Background(), "late"); err != nil {
		t.Fatalf("the write succeeded but the test is not there: %v", err)
	}
	c2, res := openAt(t, c.Dir())
	if len(res.Errors) != 0 || exportJSON(t, c2) != exportJSON(t, c) {
		t.Fatalf("files and cache disagree: %+v", res.Errors)
	}
}

// TestConcurrentWriters runs many writers at once (run it with -race):
// every write that succeeded is in the files and in the cache, and the
// two agree.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCatalog(t)
	seed(t, c)
	const (
		testWorkers   = 6
		testOps       = 16
		domainWorkers = 3
		domainOps     = 4
	)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		want = map[string]harness.Test{} // the tests that must survive
	)
	for _, x := range export(t, c).Tests {
		want[x.ID] = x
	}
	record := func(x harness.Test) { mu.Lock(); want[x.ID] = x; mu.Unlock() }
	forget := func(id string) { mu.Lock(); delete(want, id); mu.Unlock() }

	// Test writers work in the seeded domains.
	for w := range testWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []string
			for i := range testOps {
				x, err := c.CreateTest(ctx, harness.Test{ID: fmt.Sprintf("w%d-%d", w, i),
					DomainID: []string{"math", "geo"}[(w+i)%2], Level: 1 + i%3,
					Prompt: fmt.Sprintf("worker %d, test %d", w, i), Expected: harness.Expected{Answer: "a"}})
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				record(x)
				mine = append(mine, x.ID)
				switch i % 4 {
				case 1:
					x, err = c.UpdateTest(ctx, x.ID, func(x *harness.Test) error { x.Prompt += " (updated)"; return nil })
					if err == nil {
						record(x)
					}
				case 2:
					x, err = c.MoveTest(ctx, x.ID, []string{"geo", "math"}[(w+i)%2], 4+w%2)
					if err == nil {
						record(x)
					}
				case 3:
					id := mine[len(mine)-2]
					if err = c.DeleteTest(ctx, id); err == nil {
						forget(id)
					}
				}
				if err != nil {
					t.Errorf("worker %d op %d: %v", w, i, err)
				}
				if _, err := c.Tests(ctx, TestFilter{DomainID: "math"}); err != nil {
					t.Errorf("list: %v", err)
				}
			}
		}()
	}
	// Domain writers create domains with tests, change them, and delete
	// every other one.
	for w := range domainWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range domainOps {
				id := fmt.Sprintf("tmp-%d-%d", w, i)
				if _, err := c.CreateDomain(ctx, harness.Domain{ID: id, Name: id}); err != nil {
					t.Errorf("create domain: %v", err)
					return
				}
				var ids []string
				for j := range 3 {
					x, err := c.CreateTest(ctx, harness.Test{ID: fmt.Sprintf("%s-t%d", id, j), DomainID: id, Level: j,
						Prompt: "p", Expected: harness.Expected{Answer: "a"}})
					if err != nil {
						t.Errorf("create test: %v", err)
						return
					}
					record(x)
					ids = append(ids, x.ID)
				}
				if _, err := c.UpdateDomain(ctx, id, func(d *harness.Domain) error { d.Enabled = true; return nil }); err != nil {
					t.Errorf("update domain: %v", err)
				}
				if i%2 == 0 {
					if err := c.DeleteDomain(ctx, id); err != nil {
						t.Errorf("delete domain: %v", err)
					}
					for _, x := range ids {
						forget(x)
					}
				}
			}
		}()
	}
	// A syncer rebuilds the cache from the files meanwhile.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 4 {
			res, err := c.Sync(ctx)
			if err != nil || len(res.Errors) != 0 {
				t.Errorf("sync: %+v, %v", res, err)
			}
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}

	pre := exportJSON(t, c)
	if res := doSync(t, c); len(res.Errors) != 0 {
		t.Fatalf("sync errors: %+v", res.Errors)
	}
	if post := exportJSON(t, c); post != pre {
		t.Fatalf("the cache and the files disagree:\nbefore sync %s\nafter %s", pre, post)
	}
	got := export(t, c).Tests
	if len(got) != len(want) {
		t.Errorf("%d tests, want %d", len(got), len(want))
	}
	for _, x := range got {
		w, ok := want[x.ID]
		if !ok {
			t.Errorf("unexpected test %s", x.ID)
			continue
		}
		if x.DomainID != w.DomainID || x.Level != w.Level || x.Prompt != w.Prompt {
			t.Errorf("test %s = %s/%d %q, want %s/%d %q", x.ID, x.DomainID, x.Level, x.Prompt, w.DomainID, w.Level, w.Prompt)
		}
	}
	ds, _ := c.Domains(ctx)
	if len(ds) != 2+domainWorkers*domainOps/2 {
		t.Errorf("%d domains", len(ds))
	}
	for rel := range dirFiles(t, c.Dir()) {
		if strings.Contains(rel, ".tmp-") {
			t.Errorf("temporary file left: %s", rel)
		}
	}
}
