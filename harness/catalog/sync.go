package catalog

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Counts counts definitions by kind.
type Counts struct {
	Domains    int `json:"domains"`
	Levels     int `json:"levels"`
	Tests      int `json:"tests"`
	Evaluators int `json:"evaluators"`
	Tools      int `json:"tools"`
	Targets    int `json:"targets"`
}

func countsOf(s *harness.Snapshot) Counts {
	return Counts{Domains: len(s.Domains), Levels: len(s.Levels), Tests: len(s.Tests),
		Evaluators: len(s.Evaluators), Tools: len(s.Tools), Targets: len(s.Targets)}
}

// SyncResult reports what a sync loaded and which files it refused.
type SyncResult struct {
	Loaded Counts      `json:"loaded"`
	Errors []FileError `json:"errors"`
}

// Sync rebuilds the cache from the definitions directory. A file that fails
// to decode or validate is reported in the result and loads nothing; the
// other files load. The error is for failures of the directory or the
// database as a whole.
//
// On a catalog made by Load, Sync reads its file system again.
func (c *Catalog) Sync(ctx context.Context) (*SyncResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.src != nil {
		return c.syncMem(ctx)
	}
	return c.syncDB(ctx)
}

// LastSync returns the result of the last sync: the one Open ran, or a
// later call of Sync. It tells a client which files did not load without
// reading the directory again.
func (c *Catalog) LastSync() *SyncResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastSync == nil {
		return &SyncResult{Errors: []FileError{}}
	}
	return c.lastSync.clone()
}

func (r *SyncResult) clone() *SyncResult {
	out := *r
	out.Errors = append([]FileError{}, r.Errors...)
	return &out
}

// CheckResult is what Check found in a definitions directory.
type CheckResult struct {
	// Files counts the definition files read.
	Files int `json:"files"`
	// Loaded counts the definitions of the files that loaded.
	Loaded Counts `json:"loaded"`
	// Errors lists what is wrong, file by file, as sync reports it.
	Errors []FileError `json:"errors"`
}

// Check reads a definitions directory as sync does, without a database and
// without changing anything on disk, and reports every file that would not
// load. reg knows the evaluator and expected answer types (nil:
// harness.NewRegistry()). A missing directory is an error wrapping
// fs.ErrNotExist.
func Check(dir string, reg *harness.Registry) (*CheckResult, error) {
	if err := checkDir(dir, false); err != nil {
		return nil, err
	}
	if reg == nil {
		reg = harness.NewRegistry()
	}
	// The definitions are counted, not kept: a suite of any size is
	// checked with one file's definitions at a time in memory (and the
	// ids of its tests).
	o, err := readOutline(os.DirFS(dir), reg)
	if err != nil {
		return nil, err
	}
	sink := newMemSink()
	sink.countOnly = true
	levelErrs, err := readLevels(os.DirFS(dir), o, sink)
	if err != nil {
		return nil, err
	}
	errs := append(o.errs, levelErrs...)
	files, err := layoutFiles(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(dir, pendingName)); err == nil {
		errs = append(errs, FileError{File: pendingName,
			Error: "a change of several files was interrupted; it is finished when gauntlet serve or run next opens this directory"})
	}
	loaded := Counts{Domains: len(o.snap.Domains), Levels: sink.nLevels, Tests: sink.nTests,
		Evaluators: len(o.snap.Evaluators), Tools: len(o.snap.Tools), Targets: len(o.snap.Targets)}
	res := &CheckResult{Files: len(files), Loaded: loaded, Errors: errs}
	if res.Errors == nil {
		res.Errors = []FileError{}
	}
	return res, nil
}

// ImportResult reports what an import stored.
type ImportResult struct {
	Merge bool `json:"merge"`
	// Imported counts the definitions of the import.
	Imported Counts `json:"imported"`
	// Total counts every definition after the import.
	Total Counts `json:"total"`
}

// Import stores a set of definitions. With merge, each definition replaces
// the one with the same id (a level: the same domain and level) and the
// others stay. Without merge, the import replaces the kinds it carries:
// domains, levels and tests always; evaluators only when in.Evaluators is
// not nil, tools only when in.Tools is not nil, targets only when
// in.Targets is not nil (an empty, non-nil list removes them all), so
// that an import of domains and tests keeps the evaluators and tools they
// refer to. The files of a replace are switched
// as one: after a crash at any point the directory holds the old tree or
// the new one, never a mix (see Open). The whole
// import is validated first: on any error nothing is written and the error
// (wrapping harness.ErrInvalid) names each offending field, such as
// "tests[3].expected.type".
func (c *Catalog) Import(ctx context.Context, in *harness.Snapshot, merge bool) (*ImportResult, error) {
	if err := c.writable("import"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	result, err := c.imported(ctx, in, merge)
	if err != nil {
		return nil, err
	}
	files, err := render(result)
	if err != nil {
		return nil, err
	}
	var changes []change
	for _, rel := range sortedKeys(files) {
		if h, ok := c.hashes[rel]; ok && h == hashOf(files[rel]) {
			continue
		}
		changes = append(changes, change{rel: rel, data: files[rel]})
	}
	if !merge {
		present, err := layoutFiles(os.DirFS(c.dir))
		if err != nil {
			return nil, err
		}
		for _, rel := range present {
			// The files of a kind the import keeps stay, even one that
			// did not load.
			kept := (strings.HasPrefix(rel, evaluatorsDir+"/") && in.Evaluators == nil) ||
				(strings.HasPrefix(rel, toolsDir+"/") && in.Tools == nil) ||
				(strings.HasPrefix(rel, targetsDir+"/") && in.Targets == nil) ||
				(rel == pricingFile && in.Pricing == nil)
			if _, keep := files[rel]; !keep && !kept {
				changes = append(changes, change{rel: rel, remove: true})
			}
		}
	}
	// A merge must not overwrite hand edits; a replace is asked to.
	hashes := make(map[string]string, len(files))
	for rel, data := range files {
		hashes[rel] = hashOf(data)
	}
	// The files are held, after the import, in the context of its
	// evaluators, tools and domains.
	oldCtx := c.syncCtx
	c.syncCtx = syncContext(hashes, c.reg)
	err = c.commit(ctx, changes, merge, func(ctx context.Context, tx bun.Tx) error {
		if err := rebuildCache(ctx, tx, c.key, result); err != nil {
			return err
		}
		return saveFiles(ctx, tx, c.key, hashes, fileRows(c.key, hashes, levelTests(result), c.syncCtx))
	})
	if err != nil {
		c.syncCtx = oldCtx
		return nil, err
	}
	c.setIndex(result, hashes)
	return &ImportResult{Merge: merge, Imported: countsOf(in), Total: countsOf(result)}, nil
}

// CheckImport validates in as Import would, without writing anything: nil
// when Import would accept it.
func (c *Catalog) CheckImport(ctx context.Context, in *harness.Snapshot, merge bool) error {
	if err := c.writable("import"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.imported(ctx, in, merge)
	return err
}

// imported returns the definitions an import of in would leave, validated:
// in upserted into the current ones with merge, else in with the current
// evaluators and tools of the kinds in does not carry. c.mu is held.
func (c *Catalog) imported(ctx context.Context, in *harness.Snapshot, merge bool) (*harness.Snapshot, error) {
	base, err := snapshot(ctx, c)
	if err != nil {
		return nil, err
	}
	if !merge {
		base.Domains, base.Levels, base.Tests = nil, nil, nil
		if in.Evaluators != nil {
			base.Evaluators = nil
		}
		if in.Tools != nil {
			base.Tools = nil
		}
		if in.Targets != nil {
			base.Targets = nil
		}
		if in.Pricing != nil {
			base.Pricing = nil
		}
	}
	return c.mergeSnapshot(base, in)
}

// mergeSnapshot upserts in into base, validating every imported
// definition against the result.
func (c *Catalog) mergeSnapshot(base, in *harness.Snapshot) (*harness.Snapshot, error) {
	ve := &harness.ValidationError{}
	out := &harness.Snapshot{}
	refs := newRefSet()
	v := harness.Validator{Registry: c.reg, Refs: refs}

	// Evaluators and tools first: domains and tests refer to them.
	out.Evaluators = upsertByKey(ve, "evaluators", base.Evaluators, in.Evaluators,
		func(e harness.EvaluatorConfig) string { return e.ID },
		func(e *harness.EvaluatorConfig) error { return v.Evaluator(e) })
	for _, e := range out.Evaluators {
		refs.evaluators[e.ID] = true
	}
	out.Tools = upsertByKey(ve, "tools", base.Tools, in.Tools,
		func(t harness.ToolDefinition) string { return t.ID },
		func(t *harness.ToolDefinition) error { return v.Tool(t) })
	for _, t := range out.Tools {
		refs.tools[t.ID] = true
	}
	out.Targets = upsertByKey(ve, "targets", base.Targets, in.Targets,
		func(t harness.TargetDefinition) string { return t.ID },
		func(t *harness.TargetDefinition) error { return v.Target(t) })
	out.Domains = upsertByKey(ve, "domains", base.Domains, in.Domains,
		func(d harness.Domain) string { return d.ID },
		func(d *harness.Domain) error { return v.Domain(d) })
	for _, d := range out.Domains {
		refs.domains[d.ID] = true
	}
	out.Levels = upsertByKey(ve, "levels", base.Levels, in.Levels,
		func(l harness.LevelConfig) string { return l.DomainID + "\x00" + strconv.Itoa(l.Level) },
		func(l *harness.LevelConfig) error {
			if l.DomainID == "" {
				return harness.Invalid("domain_id", "is required")
			}
			return v.Level(l)
		})
	tests := slices.Clone(in.Tests) // ids are generated in a copy: the caller's import stays as given
	for i := range tests {
		if tests[i].ID == "" {
			tests[i].ID = NewTestID()
		}
	}
	out.Tests = upsertByKey(ve, "tests", base.Tests, tests,
		func(t harness.Test) string { return t.ID },
		func(t *harness.Test) error { return v.Test(t) })
	out.Pricing = mergePricing(ve, base.Pricing, in.Pricing)
	if err := ve.Err(); err != nil {
		return nil, err
	}
	// Every test's level has a configuration, as after a sync.
	hasLevel := map[levelKey]bool{}
	for _, l := range out.Levels {
		hasLevel[levelKey{l.DomainID, l.Level}] = true
	}
	for _, t := range out.Tests {
		if k := (levelKey{t.DomainID, t.Level}); !hasLevel[k] {
			hasLevel[k] = true
			out.Levels = append(out.Levels, defaultLevel(t.DomainID, t.Level))
		}
	}
	return out, nil
}

// upsertByKey returns base with each item of in replacing the item with the
// same key, or appended; items of in are validated (with their index in
// in as the field prefix), and a key repeated within in is refused.
func upsertByKey[T any](ve *harness.ValidationError, field string, base, in []T, key func(T) string, check func(*T) error) []T {
	out := append([]T(nil), base...)
	at := make(map[string]int, len(out))
	for i, x := range out {
		at[key(x)] = i
	}
	seen := map[string]bool{}
	for i := range in {
		x := in[i]
		prefix := field + "[" + strconv.Itoa(i) + "]"
		if err := check(&x); err != nil {
			ve.Merge(prefix, err)
			continue
		}
		k := key(x)
		if seen[k] {
			ve.Add(prefix, "duplicates an earlier item of %s", field)
			continue
		}
		seen[k] = true
		if j, ok := at[k]; ok {
			out[j] = x
		} else {
			at[k] = len(out)
			out = append(out, x)
		}
	}
	return out
}
