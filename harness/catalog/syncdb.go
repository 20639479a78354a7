package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// A database-backed catalog syncs a directory as a stream: the
// evaluators, tools and domains (small) are read first; then each level
// file is read, decoded, checked and inserted, and dropped before the
// next, so that a sync of a million tests holds one file at a time. The
// whole sync is one transaction: readers see the old cache or the new.
//
// The cache remembers each level file it holds by the hash of its content
// and the context it was checked in (table def_files). A sync keeps the
// rows of a file whose hash and context are unchanged, without decoding
// it: a restart over an unchanged suite reads and hashes the files, and
// decodes none. The context (syncContext) is everything else a level
// file's check depends on: the evaluators, tools and domains that loaded,
// the evaluator and expected answer types registered, and the program's
// build. When it changes, every level file is decoded again.
//
// Test ids are unique across files. The cache's primary key finds a
// repeated id: a file's tests are inserted in a savepoint, and a conflict
// rolls the file back and names the file that defines the id. The first
// file in the directory's order keeps an id, as when the whole directory
// is decoded at once: when a changed file repeats an id of a kept file
// later in the order, the sync starts the levels again from an empty
// cache, decoding every file.

// errRestart asks syncLevels to decode every level file again from an
// empty cache (see above).
var errRestart = errors.New("catalog: a changed file repeats a test id of a later one")

// syncDB rebuilds a database-backed catalog's cache from its directory.
// c.mu is held.
func (c *Catalog) syncDB(ctx context.Context) (*SyncResult, error) {
	// A multi-file change that failed half-way through in this process is
	// finished first: the files then hold all of it.
	if err := finishPending(c.dir); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	root := os.DirFS(c.dir)
	o, err := readOutline(root, c.reg)
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	sctx := syncContext(o.hashes, c.reg)
	var s *dbSink
	var levelErrs []FileError
	err = c.db.RunInTx(context.WithoutCancel(ctx), nil, func(ctx context.Context, tx bun.Tx) error {
		if err := replaceOutline(ctx, tx, c.key, &o.snap); err != nil {
			return err
		}
		var err error
		if s, err = newDBSink(ctx, tx, c.key, root, o, sctx, false); err != nil {
			return err
		}
		levelErrs, err = readLevels(root, o, s)
		if errors.Is(err, errRestart) {
			if s, err = newDBSink(ctx, tx, c.key, root, o, sctx, true); err != nil {
				return err
			}
			levelErrs, err = readLevels(root, o, s)
		}
		if err != nil {
			return err
		}
		return saveFiles(ctx, tx, c.key, o.hashes, s.files)
	})
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	hashes := o.hashes
	for _, f := range s.files {
		hashes[f.Path] = f.Hash
	}
	c.refs, c.hashes, c.syncCtx = o.refs, hashes, sctx
	c.pricing.Store(clonePricing(o.snap.Pricing))
	errs := append(o.errs, levelErrs...)
	if errs == nil {
		errs = []FileError{}
	}
	loaded := Counts{Domains: len(o.snap.Domains), Levels: len(s.files), Tests: s.tests,
		Evaluators: len(o.snap.Evaluators), Tools: len(o.snap.Tools), Targets: len(o.snap.Targets)}
	res := &SyncResult{Loaded: loaded, Errors: errs}
	c.lastSync = res
	return res.clone(), nil
}

// syncContext identifies what a level file's check depends on besides
// the file: the evaluators, tools and domains that loaded (their files'
// hashes), the registered evaluator and expected answer types, and the
// program's build (its checks may change from one build to the next).
func syncContext(hashes map[string]string, reg *harness.Registry) string {
	h := sha256.New()
	h.Write([]byte("gauntlet catalog sync 1\n"))
	h.Write([]byte(buildID() + "\n"))
	for _, rel := range sortedKeys(hashes) {
		if !isLevelPath(rel) {
			fmt.Fprintf(h, "file %s %s\n", rel, hashes[rel])
		}
	}
	for _, typ := range reg.EvaluatorTypes() {
		fmt.Fprintf(h, "evaluator type %q\n", typ)
	}
	for _, typ := range reg.ExpectedTypes() {
		fmt.Fprintf(h, "expected type %q\n", typ)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// buildID identifies the running program's build: its module version and
// version control revision when the build records them, and the
// executable's size and modification time (which tell apart two builds
// of a modified checkout, and test binaries, which record neither).
func buildID() string {
	var b strings.Builder
	if info, ok := debug.ReadBuildInfo(); ok {
		b.WriteString(info.GoVersion + " " + info.Main.Path + " " + info.Main.Version + " " + info.Main.Sum)
		for _, s := range info.Settings {
			if strings.HasPrefix(s.Key, "vcs.") {
				b.WriteString(" " + s.Key + "=" + s.Value)
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			fmt.Fprintf(&b, " exe %d %d", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// isLevelPath reports whether rel is a level file's path.
func isLevelPath(rel string) bool {
	_, ok := levelKeyOf(rel)
	return ok
}

// replaceOutline replaces the domains, evaluators and tools of the cache
// of the definitions directory dir.
func replaceOutline(ctx context.Context, tx bun.IDB, dir string, s *harness.Snapshot) error {
	for _, m := range []any{(*domainRow)(nil), (*evaluatorRow)(nil), (*toolRow)(nil)} {
		if _, err := tx.NewDelete().Model(m).Where("dir = ?", dir).Exec(ctx); err != nil {
			return err
		}
	}
	domains := make([]*domainRow, len(s.Domains))
	for i, d := range s.Domains {
		domains[i] = toDomainRow(dir, d)
	}
	evaluators := make([]*evaluatorRow, len(s.Evaluators))
	for i, e := range s.Evaluators {
		evaluators[i] = toEvaluatorRow(dir, e)
	}
	tools := make([]*toolRow, len(s.Tools))
	for i, t := range s.Tools {
		r, err := toToolRow(dir, t)
		if err != nil {
			return err
		}
		tools[i] = r
	}
	if err := insertBatches(ctx, tx, domains); err != nil {
		return err
	}
	if err := insertBatches(ctx, tx, evaluators); err != nil {
		return err
	}
	if err := insertBatches(ctx, tx, tools); err != nil {
		return err
	}
	return replaceTargets(ctx, tx, dir, s.Targets)
}

// saveFiles replaces the list of the files the cache of the definitions
// directory dir holds: the level files of a sync (with their context and
// tests) and the other files of hashes.
func saveFiles(ctx context.Context, tx bun.Tx, dir string, hashes map[string]string, levels []fileRow) error {
	if _, err := tx.NewDelete().Model((*fileRow)(nil)).Where("dir = ?", dir).Exec(ctx); err != nil {
		return err
	}
	rows := make([]fileRow, 0, len(hashes)+len(levels))
	for _, rel := range sortedKeys(hashes) {
		if !isLevelPath(rel) {
			rows = append(rows, fileRow{Dir: dir, Path: rel, Hash: hashes[rel]})
		}
	}
	rows = append(rows, levels...)
	return sqldb.Insert(ctx, tx, rows)
}

// dbSink is the sink of a database-backed catalog's sync: each level file
// goes into the cache within the sync's transaction.
type dbSink struct {
	ctx  context.Context
	tx   bun.Tx
	dir  string // the catalog's key: the rows of its directory
	sctx string
	// kept are the level files whose rows the cache keeps as they are:
	// stored with the same hash and context. Their rows are not touched,
	// and the files not read again. Read-only once newDBSink returns.
	kept map[string]fileRow
	// given are the level files given to the sink so far, kept or added.
	given map[string]bool
	// files are the level files the cache holds after the sync.
	files []fileRow
	tests int
}

// newDBSink prepares the cache for the level files of o: it finds which
// files it holds unchanged (unless full: then none) and removes the
// levels and tests of every other file.
func newDBSink(ctx context.Context, tx bun.Tx, dir string, root fs.FS, o *outline, sctx string, full bool) (*dbSink, error) {
	s := &dbSink{ctx: ctx, tx: tx, dir: dir, sctx: sctx, kept: map[string]fileRow{}, given: map[string]bool{}}
	if !full {
		var stored []fileRow
		if err := tx.NewSelect().Model(&stored).Where("dir = ? AND context = ?", dir, sctx).Scan(ctx); err != nil {
			return nil, err
		}
		byPath := make(map[string]fileRow, len(stored))
		for _, f := range stored {
			byPath[f.Path] = f
		}
		for _, folder := range o.folders {
			if !folder.ok {
				continue
			}
			for _, lv := range folder.levels {
				rel := levelPath(folder.id, lv)
				f, ok := byPath[rel]
				if !ok {
					continue
				}
				// A file that cannot be read now is left to readLevels
				// to report.
				if data, err := fs.ReadFile(root, rel); err == nil && hashOf(data) == f.Hash {
					s.kept[rel] = f
				}
			}
		}
	}
	if len(s.kept) == 0 {
		for _, m := range []any{(*levelRow)(nil), (*testRow)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("dir = ?", dir).Exec(ctx); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	var levels []levelRow
	if err := tx.NewSelect().Model(&levels).Column("domain_id", "level").Where("dir = ?", dir).Scan(ctx); err != nil {
		return nil, err
	}
	for _, l := range levels {
		if _, keep := s.kept[levelPath(l.DomainID, l.Level)]; !keep {
			if err := s.removeLevel(l.DomainID, l.Level); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// removeLevel removes a level's configuration and tests from the cache.
func (s *dbSink) removeLevel(domainID string, level int) error {
	for _, m := range []any{(*levelRow)(nil), (*testRow)(nil)} {
		if _, err := s.tx.NewDelete().Model(m).Where("dir = ? AND domain_id = ? AND level = ?", s.dir, domainID, level).Exec(s.ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s *dbSink) holds(f levelFile) bool {
	_, ok := s.kept[f.rel]
	return ok
}

func (s *dbSink) keep(f levelFile) {
	kept := s.kept[f.rel]
	s.given[f.rel] = true
	s.files = append(s.files, kept)
	s.tests += kept.Tests
}

// definedIn returns, of ids, those the cache holds, each with the path of
// the level file that defines it.
func (s *dbSink) definedIn(ids []string) (map[string]string, error) {
	var out map[string]string
	for start := 0; start < len(ids); start += batchSize {
		var rows []testRow
		err := s.tx.NewSelect().Model(&rows).Column("id", "domain_id", "level").
			Where("dir = ? AND id IN (?)", s.dir, bun.List(ids[start:min(start+batchSize, len(ids))])).Scan(s.ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if out == nil {
				out = map[string]string{}
			}
			out[r.ID] = levelPath(r.DomainID, r.Level)
		}
	}
	return out, nil
}

func (s *dbSink) defined(ids []string) (map[string]string, error) {
	all, err := s.definedIn(ids)
	if err != nil {
		return nil, err
	}
	// Only the files before this one count: a file that fails keeps no
	// id from the files after it.
	for id, rel := range all {
		if !s.given[rel] {
			delete(all, id)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

func (s *dbSink) add(f levelFile, hash string, l harness.LevelConfig, tests []harness.Test) error {
	if _, err := s.tx.ExecContext(s.ctx, "SAVEPOINT level_file"); err != nil {
		return err
	}
	n, err := s.insert(l, tests)
	if err == nil && n == len(tests) {
		if _, err := s.tx.ExecContext(s.ctx, "RELEASE SAVEPOINT level_file"); err != nil {
			return err
		}
		s.given[f.rel] = true
		s.files = append(s.files, fileRow{Dir: s.dir, Path: f.rel, Hash: hash, Context: s.sctx, Tests: len(tests)})
		s.tests += len(tests)
		return nil
	}
	if _, rerr := s.tx.ExecContext(s.ctx, "ROLLBACK TO SAVEPOINT level_file"); rerr != nil {
		return errors.Join(err, rerr)
	}
	if _, rerr := s.tx.ExecContext(s.ctx, "RELEASE SAVEPOINT level_file"); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err != nil {
		return err
	}
	// Some ids are defined elsewhere.
	dups, err := s.definedIn(testIDs(tests))
	if err != nil {
		return err
	}
	for _, rel := range dups {
		if !s.given[rel] {
			return errRestart
		}
	}
	return &dupError{files: dups}
}

// insert inserts a level and its tests, a test whose id the cache holds
// already left out; it returns how many tests it inserted.
func (s *dbSink) insert(l harness.LevelConfig, tests []harness.Test) (int, error) {
	if _, err := s.tx.NewInsert().Model(toLevelRow(s.dir, l)).Exec(s.ctx); err != nil {
		return 0, err
	}
	inserted := 0
	batch := make([]*testRow, 0, min(batchSize, len(tests)))
	for start := 0; start < len(tests); start += batchSize {
		batch = batch[:0]
		for i, t := range tests[start:min(start+batchSize, len(tests))] {
			batch = append(batch, toTestRow(s.dir, t, start+i))
		}
		n, err := sqldb.InsertNew(s.ctx, s.tx, batch, `"dir", "id"`)
		if err != nil {
			return 0, err
		}
		inserted += int(n)
	}
	return inserted, nil
}

// levelTests counts the tests of each level file of a snapshot, by path.
func levelTests(snap *harness.Snapshot) map[string]int {
	out := map[string]int{}
	for _, t := range snap.Tests {
		out[levelPath(t.DomainID, t.Level)]++
	}
	return out
}

// fileRows are the rows of def_files of the directory dir for a whole set
// of files (an import): the level files with their tests, checked in sctx.
func fileRows(dir string, hashes map[string]string, tests map[string]int, sctx string) []fileRow {
	var out []fileRow
	for _, rel := range sortedKeys(hashes) {
		if isLevelPath(rel) {
			out = append(out, fileRow{Dir: dir, Path: rel, Hash: hashes[rel], Context: sctx, Tests: tests[rel]})
		}
	}
	return out
}

// noteFiles records in def_files, within a write's transaction, the files
// the write changed: a removed file is no longer held; a written level
// file is held with its hash, its tests counted in the cache, in the
// context of the last sync (a write of an evaluator, tool or domain file
// changes the context, so that the next sync decodes every level file).
func (c *Catalog) noteFiles(ctx context.Context, tx bun.Tx, changes []change) error {
	for _, ch := range changes {
		if _, err := tx.NewDelete().Model((*fileRow)(nil)).Where("dir = ? AND path = ?", c.key, ch.rel).Exec(ctx); err != nil {
			return err
		}
		if ch.remove {
			continue
		}
		row := fileRow{Dir: c.key, Path: ch.rel, Hash: hashOf(ch.data)}
		if k, ok := levelKeyOf(ch.rel); ok {
			n, err := tx.NewSelect().Model((*testRow)(nil)).Where("dir = ? AND domain_id = ? AND level = ?", c.key, k.domain, k.level).Count(ctx)
			if err != nil {
				return err
			}
			row.Context, row.Tests = c.syncCtx, int(n)
		}
		if err := sqldb.Insert(ctx, tx, []fileRow{row}); err != nil {
			return err
		}
	}
	return nil
}

// levelKeyOf parses a level file's path: "domains/<id>/level-<n>.yaml".
func levelKeyOf(rel string) (levelKey, bool) {
	rest, ok := strings.CutPrefix(rel, domainsDir+"/")
	if !ok {
		return levelKey{}, false
	}
	domainID, name, ok := strings.Cut(rest, "/")
	if !ok || domainID == "" || strings.Contains(name, "/") {
		return levelKey{}, false
	}
	n, ok := parseLevelName(name)
	return levelKey{domainID, n}, ok
}
