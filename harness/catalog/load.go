package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// ErrReadOnly is wrapped by every write to a Catalog made by Load: its
// definitions come from a file system the catalog cannot write to. It
// also matches harness.ErrConflict (the catalog's state does not allow
// the change), so that code mapping the harness sentinels needs no new
// case.
var ErrReadOnly error = readOnlyError{}

type readOnlyError struct{}

func (readOnlyError) Error() string { return "the catalog is read-only (it was loaded from an fs.FS)" }

// Is makes ErrReadOnly match harness.ErrConflict too.
func (readOnlyError) Is(target error) bool { return target == harness.ErrConflict }

// LoadOptions configure Load.
type LoadOptions struct {
	// Registry knows the evaluator and expected answer types; nil means
	// harness.NewRegistry(). Register an evaluator type here before Load
	// for its records to load.
	Registry *harness.Registry
}

// Load reads definitions from a file system, in the layout of a
// definitions directory at its root, into a read-only Catalog that needs
// no database: the definitions are kept in memory. fsys may be an
// embed.FS (use fs.Sub to start at the folder that holds evaluators/,
// tools/, targets/ and domains/), os.DirFS, or a testing/fstest.MapFS.
//
// The files are read exactly as Open and Sync read a directory: strict
// keys, validation, a file that fails reported in the SyncResult (its
// line, its key) and loading nothing, the others loading. A file system
// with none of these folders at its root is an error wrapping
// fs.ErrNotExist, since it is most likely the wrong root.
//
// Reads work as on any Catalog; Export makes it an engine's
// Options.Definitions. Every write (Create…, Update…, Delete…, MoveTest,
// Import, CheckImport) fails with an error wrapping ErrReadOnly. Sync
// reads fsys again. The Catalog holds nothing that needs closing.
func Load(ctx context.Context, fsys fs.FS, opts LoadOptions) (*Catalog, *SyncResult, error) {
	if fsys == nil {
		return nil, nil, errors.New("catalog: Load needs a file system")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	found := false
	for _, dir := range []string{evaluatorsDir, toolsDir, targetsDir, domainsDir} {
		if fi, err := fs.Stat(fsys, dir); err == nil && fi.IsDir() {
			found = true
		}
	}
	if !found {
		return nil, nil, fmt.Errorf("catalog: no definitions at the root of the file system (no %s/, %s/, %s/ or %s/ folder; fs.Sub starts it at a subfolder): %w",
			evaluatorsDir, toolsDir, targetsDir, domainsDir, fs.ErrNotExist)
	}
	reg := opts.Registry
	if reg == nil {
		reg = harness.NewRegistry()
	}
	c := &Catalog{src: fsys, reg: reg}
	res, err := c.Sync(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, res, nil
}

// ReadOnly reports whether the catalog refuses writes: whether Load made
// it.
func (c *Catalog) ReadOnly() bool { return c.src != nil }

// writable returns nil when the catalog takes writes, else an error
// wrapping ErrReadOnly that names the operation.
func (c *Catalog) writable(op string) error {
	if c.src != nil {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	return nil
}

// syncMem reads the catalog's file system again and replaces the
// definitions held in memory. c.mu is held.
func (c *Catalog) syncMem(ctx context.Context) (*SyncResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l, err := readDir(c.src, c.reg)
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	m, err := newMemDefs(&l.snap)
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	c.mem.Store(m)
	c.setIndex(&l.snap, l.hashes)
	errs := l.errs
	if errs == nil {
		errs = []FileError{}
	}
	res := &SyncResult{Loaded: countsOf(&l.snap), Errors: errs}
	c.lastSync = res
	return res.clone(), nil
}

// memDefs are the definitions of a loaded catalog, held as the cache
// holds them: each kind in the cache's row form, sorted as the cache's
// queries sort it, and encoded as JSON, the form the cache's JSON columns
// take. Every read decodes a fresh copy, so a read returns what a
// database-backed catalog would return (numbers in free-form maps are
// float64, lists are never nil) and nothing a caller changes in it reaches
// the catalog. A memDefs is never changed: Sync replaces it.
type memDefs struct {
	domains, levels, tests, evaluators, tools, targets []byte
}

func newMemDefs(s *harness.Snapshot) (*memDefs, error) {
	domains := make([]*domainRow, len(s.Domains))
	for i, d := range s.Domains {
		domains[i] = toDomainRow("", d)
	}
	slices.SortFunc(domains, func(a, b *domainRow) int { return cmp.Compare(a.ID, b.ID) })
	levels := make([]*levelRow, len(s.Levels))
	for i, l := range s.Levels {
		levels[i] = toLevelRow("", l)
	}
	slices.SortFunc(levels, func(a, b *levelRow) int {
		return cmp.Or(cmp.Compare(a.DomainID, b.DomainID), cmp.Compare(a.Level, b.Level))
	})
	pos := map[levelKey]int{}
	tests := make([]*testRow, len(s.Tests))
	for i, t := range s.Tests {
		k := levelKey{t.DomainID, t.Level}
		tests[i] = toTestRow("", t, pos[k])
		pos[k]++
	}
	slices.SortStableFunc(tests, func(a, b *testRow) int {
		return cmp.Or(cmp.Compare(a.DomainID, b.DomainID), cmp.Compare(a.Level, b.Level), cmp.Compare(a.Position, b.Position))
	})
	evaluators := make([]*evaluatorRow, len(s.Evaluators))
	for i, e := range s.Evaluators {
		evaluators[i] = toEvaluatorRow("", e)
	}
	slices.SortFunc(evaluators, func(a, b *evaluatorRow) int { return cmp.Compare(a.ID, b.ID) })
	tools := make([]*toolRow, len(s.Tools))
	for i, t := range s.Tools {
		r, err := toToolRow("", t)
		if err != nil {
			return nil, err
		}
		tools[i] = r
	}
	slices.SortFunc(tools, func(a, b *toolRow) int { return cmp.Compare(a.ID, b.ID) })
	targets, err := targetRows(s.Targets)
	if err != nil {
		return nil, err
	}

	m := &memDefs{}
	for _, kind := range []struct {
		dst *[]byte
		v   any
	}{{&m.domains, domains}, {&m.levels, levels}, {&m.tests, tests}, {&m.evaluators, evaluators}, {&m.tools, tools}, {&m.targets, targets}} {
		b, err := json.Marshal(kind.v)
		if err != nil {
			return nil, err
		}
		*kind.dst = b
	}
	return m, nil
}

// rowsOf decodes a fresh copy of the rows of one kind.
func rowsOf[T any](data []byte) ([]T, error) {
	var rows []T
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("read definitions: %w", err)
	}
	return rows, nil
}

func (m *memDefs) domainList() ([]harness.Domain, error) {
	rows, err := rowsOf[domainRow](m.domains)
	if err != nil {
		return nil, err
	}
	out := make([]harness.Domain, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

func (m *memDefs) domain(id string) (harness.Domain, error) {
	all, err := m.domainList()
	if err != nil {
		return harness.Domain{}, err
	}
	if i := slices.IndexFunc(all, func(d harness.Domain) bool { return d.ID == id }); i >= 0 {
		return all[i], nil
	}
	return harness.Domain{}, notFound("domain", id)
}

func (m *memDefs) levelList(domainID string) ([]harness.LevelConfig, error) {
	rows, err := rowsOf[levelRow](m.levels)
	if err != nil {
		return nil, err
	}
	out := make([]harness.LevelConfig, 0, len(rows))
	for i := range rows {
		if domainID == "" || rows[i].DomainID == domainID {
			out = append(out, rows[i].level())
		}
	}
	return out, nil
}

// level returns a level's configuration, or the default one when the
// level has no file.
func (m *memDefs) level(domainID string, level int) (harness.LevelConfig, error) {
	all, err := m.levelList(domainID)
	if err != nil {
		return harness.LevelConfig{}, err
	}
	if i := slices.IndexFunc(all, func(l harness.LevelConfig) bool { return l.Level == level }); i >= 0 {
		return all[i], nil
	}
	return defaultLevel(domainID, level), nil
}

func (m *memDefs) testList(f TestFilter) ([]harness.Test, error) {
	rows, err := rowsOf[testRow](m.tests)
	if err != nil {
		return nil, err
	}
	out := make([]harness.Test, 0, len(rows))
	for i := range rows {
		if (f.DomainID == "" || rows[i].DomainID == f.DomainID) && (f.Level == nil || rows[i].Level == *f.Level) {
			out = append(out, rows[i].test())
		}
	}
	return out, nil
}

func (m *memDefs) test(id string) (harness.Test, error) {
	all, err := m.testList(TestFilter{})
	if err != nil {
		return harness.Test{}, err
	}
	if i := slices.IndexFunc(all, func(t harness.Test) bool { return t.ID == id }); i >= 0 {
		return all[i], nil
	}
	return harness.Test{}, notFound("test", id)
}

func (m *memDefs) evaluatorList() ([]harness.EvaluatorConfig, error) {
	rows, err := rowsOf[evaluatorRow](m.evaluators)
	if err != nil {
		return nil, err
	}
	out := make([]harness.EvaluatorConfig, len(rows))
	for i := range rows {
		out[i] = rows[i].evaluator()
	}
	return out, nil
}

func (m *memDefs) evaluator(id string) (harness.EvaluatorConfig, error) {
	all, err := m.evaluatorList()
	if err != nil {
		return harness.EvaluatorConfig{}, err
	}
	if i := slices.IndexFunc(all, func(e harness.EvaluatorConfig) bool { return e.ID == id }); i >= 0 {
		return all[i], nil
	}
	return harness.EvaluatorConfig{}, notFound("evaluator", id)
}

func (m *memDefs) toolList() ([]harness.ToolDefinition, error) {
	rows, err := rowsOf[toolRow](m.tools)
	if err != nil {
		return nil, err
	}
	out := make([]harness.ToolDefinition, len(rows))
	for i := range rows {
		if out[i], err = rows[i].tool(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *memDefs) tool(id string) (harness.ToolDefinition, error) {
	all, err := m.toolList()
	if err != nil {
		return harness.ToolDefinition{}, err
	}
	if i := slices.IndexFunc(all, func(t harness.ToolDefinition) bool { return t.ID == id }); i >= 0 {
		return all[i], nil
	}
	return harness.ToolDefinition{}, notFound("tool", id)
}
