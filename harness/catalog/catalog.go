package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// Options configure a Catalog.
type Options struct {
	// Dir is the definitions directory; it is created if missing, unless
	// MustExist is set.
	Dir string
	// MustExist makes a missing Dir an error (one wrapping fs.ErrNotExist)
	// rather than an empty directory to create: a mistyped path given to a
	// one-off command should not look like a directory with nothing in it.
	MustExist bool
	// DB is the database holding the cache (see store.Open).
	DB *store.DB
	// Registry knows the evaluator and expected answer types; nil means
	// harness.NewRegistry().
	Registry *harness.Registry
}

// Catalog is the definitions store: files on disk, cached in the database
// (Open), or a read-only set of definitions read from a file system and
// kept in memory (Load).
type Catalog struct {
	dir string
	// key identifies the directory's part of the cache (the dir column of
	// every cache table): its absolute path with symbolic links resolved.
	// Catalogs of different directories share a database without touching
	// each other's cache.
	key string
	db  *bun.DB
	reg *harness.Registry
	// src and mem are set by Load: the file system the definitions come
	// from, and the definitions read from it. Reads use mem instead of db.
	src fs.FS
	mem atomic.Pointer[memDefs]
	// pricing is what pricing.yaml held at the last sync or import; nil
	// without one.
	pricing atomic.Pointer[harness.Pricing]

	// mu serialises writes and guards the fields below.
	mu sync.Mutex
	// hashes holds the sha256 of every file the cache reflects.
	hashes map[string]string
	refs   *refSet
	// toolUsers are checks from outside the catalog (agents) that name who
	// still uses a tool.
	toolUsers []func(ctx context.Context, toolID string) ([]string, error)
	// lastSync is the result of the last sync (Open runs one).
	lastSync *SyncResult
	// syncCtx is the context the level files were checked in at the last
	// sync or import (see syncContext).
	syncCtx string
}

// AddToolUsers adds a check that DeleteTool consults: it names the users
// of a tool outside the definitions (the agents that list it). A tool
// with users is not deleted.
func (c *Catalog) AddToolUsers(check func(ctx context.Context, toolID string) ([]string, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.toolUsers = append(c.toolUsers, check)
}

type levelKey struct {
	domain string
	level  int
}

// Open creates the cache tables if needed and loads the definitions
// directory into the cache. Files that fail to load are reported in the
// returned SyncResult; they do not make Open fail.
//
// Before loading, Open repairs what a crash of a writer can leave in the
// directory: it finishes a multi-file change that had passed its commit
// point (so that the directory holds all of it) and removes temporary files
// and staging directories (names starting with ".tmp-").
func Open(ctx context.Context, opts Options) (*Catalog, *SyncResult, error) {
	if opts.Dir == "" || opts.DB == nil {
		return nil, nil, errors.New("catalog: Dir and DB are required")
	}
	if err := checkDir(opts.Dir, !opts.MustExist); err != nil {
		return nil, nil, fmt.Errorf("catalog: %w", err)
	}
	if _, err := recoverDir(opts.Dir); err != nil {
		return nil, nil, fmt.Errorf("catalog: %w", err)
	}
	reg := opts.Registry
	if reg == nil {
		reg = harness.NewRegistry()
	}
	key, err := dirKey(opts.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: %w", err)
	}
	c := &Catalog{dir: opts.Dir, key: key, db: sqldb.Bun(opts.DB), reg: reg}
	if err := sqldb.Migrate(ctx, c.db, "catalog", migrations); err != nil {
		return nil, nil, fmt.Errorf("catalog: %w", err)
	}
	res, err := c.Sync(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, res, nil
}

// dirKey returns the key of a definitions directory's cache: its
// absolute path, symbolic links resolved, so that two spellings of one
// directory share a cache.
func dirKey(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}

// checkDir makes sure dir is a directory, creating it when create is set.
func checkDir(dir string, create bool) error {
	if create {
		return os.MkdirAll(dir, 0o755)
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("definitions directory %s does not exist: %w", dir, fs.ErrNotExist)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("definitions directory %s is not a directory", dir)
	}
	return nil
}

// Dir returns the definitions directory; "" for a catalog made by Load.
func (c *Catalog) Dir() string { return c.dir }

// Registry returns the registry the catalog validates against.
func (c *Catalog) Registry() *harness.Registry { return c.reg }

// validator returns a validator whose reference checks see the catalog's
// current definitions. Callers hold c.mu.
func (c *Catalog) validator() harness.Validator {
	return harness.Validator{Registry: c.reg, Refs: c.refs}
}

// setIndex replaces the in-memory index with one built from a snapshot:
// the ids of the domains, evaluators and tools (the references a
// definition may make). Tests are looked up in the cache (testLevel):
// an index of a million test ids would hold tens of megabytes for the
// life of the process.
// Callers hold c.mu.
func (c *Catalog) setIndex(s *harness.Snapshot, hashes map[string]string) {
	refs := newRefSet()
	for _, d := range s.Domains {
		refs.domains[d.ID] = true
	}
	for _, e := range s.Evaluators {
		refs.evaluators[e.ID] = true
	}
	for _, t := range s.Tools {
		refs.tools[t.ID] = true
	}
	c.refs, c.hashes = refs, hashes
	c.pricing.Store(clonePricing(s.Pricing))
}

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, harness.ErrNotFound)
}

func wrapNotFound(err error, kind, id string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(kind, id)
	}
	if err != nil {
		return fmt.Errorf("read %s %q: %w", kind, id, err)
	}
	return nil
}

// Domains lists every domain, ordered by id.
func (c *Catalog) Domains(ctx context.Context) ([]harness.Domain, error) {
	if m := c.mem.Load(); m != nil {
		return m.domainList()
	}
	var rows []domainRow
	if err := c.db.NewSelect().Model(&rows).Where("dir = ?", c.key).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	out := make([]harness.Domain, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// Domain returns one domain, or an error wrapping harness.ErrNotFound.
func (c *Catalog) Domain(ctx context.Context, id string) (harness.Domain, error) {
	if m := c.mem.Load(); m != nil {
		return m.domain(id)
	}
	return getDomain(ctx, c.db, c.key, id)
}

func getDomain(ctx context.Context, db bun.IDB, dir, id string) (harness.Domain, error) {
	var row domainRow
	err := db.NewSelect().Model(&row).Where("dir = ? AND id = ?", dir, id).Scan(ctx)
	if err := wrapNotFound(err, "domain", id); err != nil {
		return harness.Domain{}, err
	}
	return row.domain(), nil
}

// Level returns the configuration of a level of a domain. A level with no
// file yet has the default configuration. An unknown domain is an error
// wrapping harness.ErrNotFound.
func (c *Catalog) Level(ctx context.Context, domainID string, level int) (harness.LevelConfig, error) {
	if _, err := c.Domain(ctx, domainID); err != nil {
		return harness.LevelConfig{}, err
	}
	var l harness.LevelConfig
	var err error
	if m := c.mem.Load(); m != nil {
		l, err = m.level(domainID, level)
	} else {
		l, err = getLevel(ctx, c.db, c.key, domainID, level)
	}
	// A default configuration lists no tools: [], as a stored one does.
	l.Tools = nonNil(l.Tools)
	return l, err
}

func getLevel(ctx context.Context, db bun.IDB, dir, domainID string, level int) (harness.LevelConfig, error) {
	var row levelRow
	err := db.NewSelect().Model(&row).Where("dir = ? AND domain_id = ? AND level = ?", dir, domainID, level).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return defaultLevel(domainID, level), nil
	}
	if err != nil {
		return harness.LevelConfig{}, fmt.Errorf("read level %s/%d: %w", domainID, level, err)
	}
	return row.level(), nil
}

// Levels lists the level configurations of a domain (every level that has
// a file), ascending; an empty domainID lists those of all domains.
func (c *Catalog) Levels(ctx context.Context, domainID string) ([]harness.LevelConfig, error) {
	if m := c.mem.Load(); m != nil {
		return m.levelList(domainID)
	}
	var rows []levelRow
	q := c.db.NewSelect().Model(&rows).Where("dir = ?", c.key).Order("domain_id", "level")
	if domainID != "" {
		q = q.Where("domain_id = ?", domainID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list levels: %w", err)
	}
	out := make([]harness.LevelConfig, len(rows))
	for i := range rows {
		out[i] = rows[i].level()
	}
	return out, nil
}

// TestFilter selects tests. Zero fields select everything.
type TestFilter struct {
	DomainID string
	// Level, when not nil, selects one level.
	Level *int
}

// Tests lists the tests that match f, ordered by domain, level and their
// order in the level's file.
func (c *Catalog) Tests(ctx context.Context, f TestFilter) ([]harness.Test, error) {
	if m := c.mem.Load(); m != nil {
		return m.testList(f)
	}
	return listTests(ctx, c.db, c.key, f)
}

func listTests(ctx context.Context, db bun.IDB, dir string, f TestFilter) ([]harness.Test, error) {
	var rows []testRow
	q := db.NewSelect().Model(&rows).Where("dir = ?", dir).Order("domain_id", "level", "position")
	if f.DomainID != "" {
		q = q.Where("domain_id = ?", f.DomainID)
	}
	if f.Level != nil {
		q = q.Where("level = ?", *f.Level)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list tests: %w", err)
	}
	out := make([]harness.Test, len(rows))
	for i := range rows {
		out[i] = rows[i].test()
	}
	return out, nil
}

// Test returns one test, or an error wrapping harness.ErrNotFound.
func (c *Catalog) Test(ctx context.Context, id string) (harness.Test, error) {
	if m := c.mem.Load(); m != nil {
		return m.test(id)
	}
	var row testRow
	err := c.db.NewSelect().Model(&row).Where("dir = ? AND id = ?", c.key, id).Scan(ctx)
	if err := wrapNotFound(err, "test", id); err != nil {
		return harness.Test{}, err
	}
	return row.test(), nil
}

// Evaluators lists every evaluator record, ordered by id.
func (c *Catalog) Evaluators(ctx context.Context) ([]harness.EvaluatorConfig, error) {
	if m := c.mem.Load(); m != nil {
		return m.evaluatorList()
	}
	var rows []evaluatorRow
	if err := c.db.NewSelect().Model(&rows).Where("dir = ?", c.key).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list evaluators: %w", err)
	}
	out := make([]harness.EvaluatorConfig, len(rows))
	for i := range rows {
		out[i] = rows[i].evaluator()
	}
	return out, nil
}

// Evaluator returns one evaluator record, or an error wrapping
// harness.ErrNotFound.
func (c *Catalog) Evaluator(ctx context.Context, id string) (harness.EvaluatorConfig, error) {
	if m := c.mem.Load(); m != nil {
		return m.evaluator(id)
	}
	var row evaluatorRow
	err := c.db.NewSelect().Model(&row).Where("dir = ? AND id = ?", c.key, id).Scan(ctx)
	if err := wrapNotFound(err, "evaluator", id); err != nil {
		return harness.EvaluatorConfig{}, err
	}
	return row.evaluator(), nil
}

// Tools lists every tool record, ordered by id.
func (c *Catalog) Tools(ctx context.Context) ([]harness.ToolDefinition, error) {
	if m := c.mem.Load(); m != nil {
		return m.toolList()
	}
	var rows []toolRow
	if err := c.db.NewSelect().Model(&rows).Where("dir = ?", c.key).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	out := make([]harness.ToolDefinition, len(rows))
	for i := range rows {
		t, err := rows[i].tool()
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// Tool returns one tool record, or an error wrapping harness.ErrNotFound.
func (c *Catalog) Tool(ctx context.Context, id string) (harness.ToolDefinition, error) {
	if m := c.mem.Load(); m != nil {
		return m.tool(id)
	}
	var row toolRow
	err := c.db.NewSelect().Model(&row).Where("dir = ? AND id = ?", c.key, id).Scan(ctx)
	if err := wrapNotFound(err, "tool", id); err != nil {
		return harness.ToolDefinition{}, err
	}
	return row.tool()
}

// Export returns every definition.
func (c *Catalog) Export(ctx context.Context) (*harness.Snapshot, error) {
	return snapshot(ctx, c)
}

func snapshot(ctx context.Context, c *Catalog) (*harness.Snapshot, error) {
	var s harness.Snapshot
	var err error
	if s.Domains, err = c.Domains(ctx); err != nil {
		return nil, err
	}
	if s.Levels, err = c.Levels(ctx, ""); err != nil {
		return nil, err
	}
	if s.Tests, err = c.Tests(ctx, TestFilter{}); err != nil {
		return nil, err
	}
	if s.Evaluators, err = c.Evaluators(ctx); err != nil {
		return nil, err
	}
	if s.Tools, err = c.Tools(ctx); err != nil {
		return nil, err
	}
	if s.Targets, err = c.Targets(ctx); err != nil {
		return nil, err
	}
	s.Pricing = c.Pricing()
	return &s, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
