package catalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// change is one file of a write: new content, or removal.
type change struct {
	rel    string
	data   []byte
	remove bool
}

// checkFresh refuses to touch a file whose content is not what the cache
// reflects: someone edited it by hand (or it failed to load) since the
// last sync. Callers hold c.mu.
func (c *Catalog) checkFresh(rel string, cur []byte, exists bool) error {
	want, known := c.hashes[rel]
	if exists == known && (!exists || hashOf(cur) == want) {
		return nil
	}
	return fmt.Errorf("definitions file %s changed on disk since the last sync; sync first: %w", rel, harness.ErrConflict)
}

// commit writes the files of a change set, then runs the cache update in a
// transaction. If anything fails, the files are put back as they were and
// the transaction is rolled back. Callers hold c.mu.
func (c *Catalog) commit(ctx context.Context, changes []change, fresh bool, cache func(context.Context, bun.Tx) error) error {
	// A write that passed validation completes even if the caller goes
	// away: half of it would be worse than all of it.
	ctx = context.WithoutCancel(ctx)
	if len(changes) > 1 {
		return c.commitSwitch(ctx, changes, fresh, cache)
	}
	check := c.checkFresh
	if !fresh {
		check = nil
	}
	tx := newFileTx(c.dir, check)
	fail := func(err error) error {
		if rerr := tx.rollback(); rerr != nil {
			return fmt.Errorf("%w (and rolling back the files failed: %v)", err, rerr)
		}
		return err
	}
	for _, ch := range changes {
		var err error
		if ch.remove {
			err = tx.remove(ch.rel)
		} else {
			err = tx.write(ch.rel, ch.data)
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := c.db.RunInTx(ctx, nil, c.cacheAndFiles(changes, cache)); err != nil {
		return fail(fmt.Errorf("update cache: %w", err))
	}
	for _, ch := range changes {
		if ch.remove {
			delete(c.hashes, ch.rel)
			if strings.HasSuffix(ch.rel, "/"+domainFile) {
				tx.removeEmptyDir(strings.TrimSuffix(ch.rel, "/"+domainFile))
			}
		} else {
			c.hashes[ch.rel] = hashOf(ch.data)
		}
	}
	return nil
}

// commitSwitch is commit for a change of several files: they are switched
// as one (see switchFiles), so that a crash leaves the old files or the
// new, and switched back the same way if the cache update fails. Callers
// hold c.mu.
func (c *Catalog) commitSwitch(ctx context.Context, changes []change, fresh bool, cache func(context.Context, bun.Tx) error) error {
	// What is there now: to check it is what the cache reflects, and to
	// put it back on failure.
	var undo []change
	var newDirs []string
	for _, ch := range changes {
		abs := filepath.Join(c.dir, filepath.FromSlash(ch.rel))
		cur, err := os.ReadFile(abs)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read %s: %w", ch.rel, err)
		}
		if fresh {
			if err := c.checkFresh(ch.rel, cur, exists); err != nil {
				return err
			}
		}
		switch {
		case exists:
			undo = append(undo, change{rel: ch.rel, data: cur})
		case !ch.remove:
			undo = append(undo, change{rel: ch.rel, remove: true})
			for dir := filepath.Dir(abs); dir != c.dir && dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
				if _, err := os.Stat(dir); err == nil {
					break
				}
				newDirs = append(newDirs, dir)
			}
		}
	}
	if err := switchFiles(c.dir, changes); err != nil {
		return err
	}
	if err := c.db.RunInTx(ctx, nil, c.cacheAndFiles(changes, cache)); err != nil {
		err = fmt.Errorf("update cache: %w", err)
		if rerr := switchFiles(c.dir, undo); rerr != nil {
			return fmt.Errorf("%w (and rolling back the files failed: %v)", err, rerr)
		}
		for _, dir := range newDirs { // innermost first
			os.Remove(dir) // only if empty
		}
		return err
	}
	for _, ch := range changes {
		if ch.remove {
			delete(c.hashes, ch.rel)
		} else {
			c.hashes[ch.rel] = hashOf(ch.data)
		}
	}
	return nil
}

// cacheAndFiles is a write's transaction: the cache update, then the
// record of the files it changed (noteFiles).
func (c *Catalog) cacheAndFiles(changes []change, cache func(context.Context, bun.Tx) error) func(context.Context, bun.Tx) error {
	return func(ctx context.Context, tx bun.Tx) error {
		if err := cache(ctx, tx); err != nil {
			return err
		}
		return c.noteFiles(ctx, tx, changes)
	}
}

func upsert(ctx context.Context, tx bun.IDB, row any, conflict string) error {
	_, err := tx.NewInsert().Model(row).On("CONFLICT (" + conflict + ") DO UPDATE").Exec(ctx)
	return err
}

// ----- domains -----

// CreateDomain validates and stores a new domain. A duplicate id is an
// error wrapping harness.ErrConflict; invalid input wraps ErrInvalid.
func (c *Catalog) CreateDomain(ctx context.Context, d harness.Domain) (harness.Domain, error) {
	if err := c.writable("create domain"); err != nil {
		return harness.Domain{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.validator().Domain(&d); err != nil {
		return harness.Domain{}, err
	}
	if c.refs.domains[d.ID] {
		return harness.Domain{}, fmt.Errorf("domain %q already exists: %w", d.ID, harness.ErrConflict)
	}
	if err := c.writeDomain(ctx, d); err != nil {
		return harness.Domain{}, err
	}
	c.refs.domains[d.ID] = true
	return d, nil
}

func (c *Catalog) writeDomain(ctx context.Context, d harness.Domain) error {
	data, err := encodeDomain(d)
	if err != nil {
		return err
	}
	return c.commit(ctx, []change{{rel: domainPath(d.ID), data: data}}, true, func(ctx context.Context, tx bun.Tx) error {
		return upsert(ctx, tx, toDomainRow(c.key, d), `"dir", "id"`)
	})
}

// UpdateDomain applies a change to a stored domain and stores the result.
// apply must not change the id.
func (c *Catalog) UpdateDomain(ctx context.Context, id string, apply func(*harness.Domain) error) (harness.Domain, error) {
	if err := c.writable("update domain"); err != nil {
		return harness.Domain{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := getDomain(ctx, c.db, c.key, id)
	if err != nil {
		return harness.Domain{}, err
	}
	if err := apply(&d); err != nil {
		return harness.Domain{}, err
	}
	if d.ID != id {
		return harness.Domain{}, harness.Invalid("id", "must equal the id in the path, %q", id)
	}
	if err := c.validator().Domain(&d); err != nil {
		return harness.Domain{}, err
	}
	return d, c.writeDomain(ctx, d)
}

// DeleteDomain removes a domain with its level configurations and tests.
func (c *Catalog) DeleteDomain(ctx context.Context, id string) error {
	return c.DeleteDomainIf(ctx, id, nil)
}

// DeleteDomainIf is DeleteDomain when check, given the stored domain,
// returns nil; otherwise it deletes nothing and returns check's error. No
// other change of the catalog comes between the check and the delete.
func (c *Catalog) DeleteDomainIf(ctx context.Context, id string, check func(harness.Domain) error) error {
	if err := c.writable("delete domain"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.refs.domains[id] {
		return notFound("domain", id)
	}
	if check != nil {
		d, err := getDomain(ctx, c.db, c.key, id)
		if err != nil {
			return err
		}
		if err := check(d); err != nil {
			return err
		}
	}
	levels, err := levelFiles(os.DirFS(c.dir), id)
	if err != nil {
		return err
	}
	var changes []change
	for _, n := range levels {
		changes = append(changes, change{rel: levelPath(id, n), remove: true})
	}
	for rel := range c.hashes {
		if strings.HasPrefix(rel, domainDir(id)+"/level-") && !containsRel(changes, rel) {
			changes = append(changes, change{rel: rel, remove: true})
		}
	}
	changes = append(changes, change{rel: domainPath(id), remove: true})
	err = c.commit(ctx, changes, true, func(ctx context.Context, tx bun.Tx) error {
		for _, m := range []any{(*testRow)(nil), (*levelRow)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("dir = ? AND domain_id = ?", c.key, id).Exec(ctx); err != nil {
				return err
			}
		}
		_, err := tx.NewDelete().Model((*domainRow)(nil)).Where("dir = ? AND id = ?", c.key, id).Exec(ctx)
		return err
	})
	if err != nil {
		return err
	}
	delete(c.refs.domains, id)
	return nil
}

func containsRel(changes []change, rel string) bool {
	for _, ch := range changes {
		if ch.rel == rel {
			return true
		}
	}
	return false
}

// ----- levels -----

// UpdateLevel applies a change to a level's configuration (the default
// configuration when the level has no file yet) and stores it. The domain
// must exist.
func (c *Catalog) UpdateLevel(ctx context.Context, domainID string, level int, apply func(*harness.LevelConfig) error) (harness.LevelConfig, error) {
	if err := c.writable("update level"); err != nil {
		return harness.LevelConfig{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.refs.domains[domainID] {
		return harness.LevelConfig{}, notFound("domain", domainID)
	}
	if level < 0 || level > harness.MaxLevel {
		return harness.LevelConfig{}, harness.Invalid("level", "must be between 0 and %d", harness.MaxLevel)
	}
	l, err := getLevel(ctx, c.db, c.key, domainID, level)
	if err != nil {
		return harness.LevelConfig{}, err
	}
	if err := apply(&l); err != nil {
		return harness.LevelConfig{}, err
	}
	l.DomainID, l.Level = domainID, level
	if err := c.validator().Level(&l); err != nil {
		return harness.LevelConfig{}, err
	}
	tests, err := listTests(ctx, c.db, c.key, TestFilter{DomainID: domainID, Level: &level})
	if err != nil {
		return harness.LevelConfig{}, err
	}
	data, err := encodeLevel(l, tests)
	if err != nil {
		return harness.LevelConfig{}, err
	}
	err = c.commit(ctx, []change{{rel: levelPath(domainID, level), data: data}}, true, func(ctx context.Context, tx bun.Tx) error {
		return upsert(ctx, tx, toLevelRow(c.key, l), `"dir", "domain_id", "level"`)
	})
	if err != nil {
		return harness.LevelConfig{}, err
	}
	l.Tools = nonNil(l.Tools)
	return l, nil
}

// ----- tests -----

// NewTestID returns a fresh random test id.
func NewTestID() string {
	var b [6]byte
	rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
}

// levelChange renders a level file after replacing, adding or removing a
// test. Callers hold c.mu.
func (c *Catalog) levelChange(ctx context.Context, domainID string, level int, edit func([]harness.Test) []harness.Test) (change, harness.LevelConfig, error) {
	l, err := getLevel(ctx, c.db, c.key, domainID, level)
	if err != nil {
		return change{}, l, err
	}
	tests, err := listTests(ctx, c.db, c.key, TestFilter{DomainID: domainID, Level: &level})
	if err != nil {
		return change{}, l, err
	}
	tests = edit(tests)
	data, err := encodeLevel(l, tests)
	if err != nil {
		return change{}, l, err
	}
	return change{rel: levelPath(domainID, level), data: data}, l, nil
}

// CreateTest validates and stores a new test at the end of its level. A
// test without an id gets a generated one.
func (c *Catalog) CreateTest(ctx context.Context, t harness.Test) (harness.Test, error) {
	if err := c.writable("create test"); err != nil {
		return harness.Test{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.ID == "" {
		for t.ID = NewTestID(); ; t.ID = NewTestID() {
			if _, taken, err := c.testLevel(ctx, t.ID); err != nil {
				return harness.Test{}, err
			} else if !taken {
				break
			}
		}
	}
	if err := c.validator().Test(&t); err != nil {
		return harness.Test{}, err
	}
	if _, dup, err := c.testLevel(ctx, t.ID); err != nil {
		return harness.Test{}, err
	} else if dup {
		return harness.Test{}, fmt.Errorf("test %q already exists: %w", t.ID, harness.ErrConflict)
	}
	ch, l, err := c.levelChange(ctx, t.DomainID, t.Level, func(ts []harness.Test) []harness.Test { return append(ts, t) })
	if err != nil {
		return harness.Test{}, err
	}
	err = c.commit(ctx, []change{ch}, true, func(ctx context.Context, tx bun.Tx) error {
		if err := upsert(ctx, tx, toLevelRow(c.key, l), `"dir", "domain_id", "level"`); err != nil {
			return err
		}
		pos, err := nextPosition(ctx, tx, c.key, t.DomainID, t.Level)
		if err != nil {
			return err
		}
		_, err = tx.NewInsert().Model(toTestRow(c.key, t, pos)).Exec(ctx)
		return err
	})
	if err != nil {
		return harness.Test{}, err
	}
	return withSlices(t), nil
}

// nextPosition returns the position after the last test of a level.
func nextPosition(ctx context.Context, tx bun.IDB, dir, domainID string, level int) (int, error) {
	var next int
	err := tx.NewSelect().Model((*testRow)(nil)).ColumnExpr("COALESCE(MAX(position), -1) + 1").
		Where("dir = ? AND domain_id = ? AND level = ?", dir, domainID, level).Scan(ctx, &next)
	return next, err
}

func withSlices(t harness.Test) harness.Test {
	t.Tools = nonNil(t.Tools)
	return t
}

// UpdateTest applies a change to a stored test and stores the result. A
// change of domain_id or level moves the test to the end of that level.
// apply must not change the id.
func (c *Catalog) UpdateTest(ctx context.Context, id string, apply func(*harness.Test) error) (harness.Test, error) {
	if err := c.writable("update test"); err != nil {
		return harness.Test{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, err := c.Test(ctx, id)
	if err != nil {
		return harness.Test{}, err
	}
	t := old
	t.Tools = append([]string(nil), old.Tools...)
	if err := apply(&t); err != nil {
		return harness.Test{}, err
	}
	if t.ID != id {
		return harness.Test{}, harness.Invalid("id", "must equal the id in the path, %q", id)
	}
	if err := c.validator().Test(&t); err != nil {
		return harness.Test{}, err
	}
	if t.DomainID == old.DomainID && t.Level == old.Level {
		ch, _, err := c.levelChange(ctx, t.DomainID, t.Level, func(ts []harness.Test) []harness.Test {
			for i := range ts {
				if ts[i].ID == id {
					ts[i] = t
				}
			}
			return ts
		})
		if err != nil {
			return harness.Test{}, err
		}
		err = c.commit(ctx, []change{ch}, true, func(ctx context.Context, tx bun.Tx) error {
			row := toTestRow(c.key, t, 0)
			_, err := tx.NewUpdate().Model(row).ExcludeColumn("position").WherePK().Exec(ctx)
			return err
		})
		if err != nil {
			return harness.Test{}, err
		}
		return withSlices(t), nil
	}
	return c.move(ctx, old, t)
}

// move takes a test out of its level's file and appends it to another's.
// Callers hold c.mu.
func (c *Catalog) move(ctx context.Context, old, t harness.Test) (harness.Test, error) {
	from, _, err := c.levelChange(ctx, old.DomainID, old.Level, func(ts []harness.Test) []harness.Test {
		out := ts[:0]
		for _, x := range ts {
			if x.ID != old.ID {
				out = append(out, x)
			}
		}
		return out
	})
	if err != nil {
		return harness.Test{}, err
	}
	to, l, err := c.levelChange(ctx, t.DomainID, t.Level, func(ts []harness.Test) []harness.Test { return append(ts, t) })
	if err != nil {
		return harness.Test{}, err
	}
	err = c.commit(ctx, []change{to, from}, true, func(ctx context.Context, tx bun.Tx) error {
		if err := upsert(ctx, tx, toLevelRow(c.key, l), `"dir", "domain_id", "level"`); err != nil {
			return err
		}
		pos, err := nextPosition(ctx, tx, c.key, t.DomainID, t.Level)
		if err != nil {
			return err
		}
		_, err = tx.NewUpdate().Model(toTestRow(c.key, t, pos)).WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return harness.Test{}, err
	}
	return withSlices(t), nil
}

// MoveTest moves a test to the end of another level, possibly of another
// domain. An unknown target domain is an error wrapping ErrInvalid.
func (c *Catalog) MoveTest(ctx context.Context, id, domainID string, level int) (harness.Test, error) {
	if err := c.writable("move test"); err != nil {
		return harness.Test{}, err
	}
	return c.UpdateTest(ctx, id, func(t *harness.Test) error {
		t.DomainID, t.Level = domainID, level
		return nil
	})
}

// DeleteTest removes a test from its level.
func (c *Catalog) DeleteTest(ctx context.Context, id string) error {
	return c.DeleteTestIf(ctx, id, nil)
}

// DeleteTestIf is DeleteTest when check, given the stored test, returns
// nil; otherwise it deletes nothing and returns check's error. No other
// change of the catalog comes between the check and the delete.
func (c *Catalog) DeleteTestIf(ctx context.Context, id string, check func(harness.Test) error) error {
	if err := c.writable("delete test"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok, err := c.testLevel(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("test", id)
	}
	if check != nil {
		t, err := c.Test(ctx, id)
		if err != nil {
			return err
		}
		if err := check(t); err != nil {
			return err
		}
	}
	ch, _, err := c.levelChange(ctx, k.domain, k.level, func(ts []harness.Test) []harness.Test {
		out := ts[:0]
		for _, x := range ts {
			if x.ID != id {
				out = append(out, x)
			}
		}
		return out
	})
	if err != nil {
		return err
	}
	err = c.commit(ctx, []change{ch}, true, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewDelete().Model((*testRow)(nil)).Where("dir = ? AND id = ?", c.key, id).Exec(ctx)
		return err
	})
	return err
}

// ----- evaluators -----

// CreateEvaluator validates and stores a new evaluator record.
func (c *Catalog) CreateEvaluator(ctx context.Context, e harness.EvaluatorConfig) (harness.EvaluatorConfig, error) {
	if err := c.writable("create evaluator"); err != nil {
		return harness.EvaluatorConfig{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.validator().Evaluator(&e); err != nil {
		return e, err
	}
	if c.refs.evaluators[e.ID] {
		return e, fmt.Errorf("evaluator %q already exists: %w", e.ID, harness.ErrConflict)
	}
	if err := c.writeEvaluator(ctx, e); err != nil {
		return e, err
	}
	c.refs.evaluators[e.ID] = true
	return e, nil
}

func (c *Catalog) writeEvaluator(ctx context.Context, e harness.EvaluatorConfig) error {
	data, err := encodeEvaluator(e)
	if err != nil {
		return err
	}
	return c.commit(ctx, []change{{rel: evaluatorPath(e.ID), data: data}}, true, func(ctx context.Context, tx bun.Tx) error {
		return upsert(ctx, tx, toEvaluatorRow(c.key, e), `"dir", "id"`)
	})
}

// UpdateEvaluator applies a change to a stored evaluator record and stores
// the result. apply must not change the id.
func (c *Catalog) UpdateEvaluator(ctx context.Context, id string, apply func(*harness.EvaluatorConfig) error) (harness.EvaluatorConfig, error) {
	if err := c.writable("update evaluator"); err != nil {
		return harness.EvaluatorConfig{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, err := c.Evaluator(ctx, id)
	if err != nil {
		return e, err
	}
	if err := apply(&e); err != nil {
		return e, err
	}
	if e.ID != id {
		return e, harness.Invalid("id", "must equal the id in the path, %q", id)
	}
	if err := c.validator().Evaluator(&e); err != nil {
		return e, err
	}
	return e, c.writeEvaluator(ctx, e)
}

// DeleteEvaluator removes an evaluator record. One still named by a domain
// or a test is an error wrapping harness.ErrConflict.
func (c *Catalog) DeleteEvaluator(ctx context.Context, id string) error {
	return c.DeleteEvaluatorIf(ctx, id, nil)
}

// DeleteEvaluatorIf is DeleteEvaluator when check, given the stored
// record, returns nil; otherwise it deletes nothing and returns check's
// error. No other change of the catalog comes between the check and the
// delete.
func (c *Catalog) DeleteEvaluatorIf(ctx context.Context, id string, check func(harness.EvaluatorConfig) error) error {
	if err := c.writable("delete evaluator"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.refs.evaluators[id] {
		return notFound("evaluator", id)
	}
	if check != nil {
		e, err := c.Evaluator(ctx, id)
		if err != nil {
			return err
		}
		if err := check(e); err != nil {
			return err
		}
	}
	var users []string
	if err := c.db.NewSelect().Model((*domainRow)(nil)).Column("id").Where("dir = ? AND evaluator_id = ?", c.key, id).
		Order("id").Limit(5).Scan(ctx, &users); err != nil {
		return fmt.Errorf("delete evaluator %q: %w", id, err)
	}
	for i := range users {
		users[i] = "domain " + users[i]
	}
	var tests []string
	if err := c.db.NewSelect().Model((*testRow)(nil)).Column("id").Where("dir = ? AND evaluator_id = ?", c.key, id).
		Order("id").Limit(5).Scan(ctx, &tests); err != nil {
		return fmt.Errorf("delete evaluator %q: %w", id, err)
	}
	for _, t := range tests {
		users = append(users, "test "+t)
	}
	if len(users) > 0 {
		return fmt.Errorf("evaluator %q is used by %s: %w", id, strings.Join(users, ", "), harness.ErrConflict)
	}
	err := c.commit(ctx, []change{{rel: evaluatorPath(id), remove: true}}, true, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewDelete().Model((*evaluatorRow)(nil)).Where("dir = ? AND id = ?", c.key, id).Exec(ctx)
		return err
	})
	if err != nil {
		return err
	}
	delete(c.refs.evaluators, id)
	return nil
}

// ----- tools -----

// CreateTool validates and stores a new tool record.
func (c *Catalog) CreateTool(ctx context.Context, t harness.ToolDefinition) (harness.ToolDefinition, error) {
	if err := c.writable("create tool"); err != nil {
		return harness.ToolDefinition{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.validator().Tool(&t); err != nil {
		return t, err
	}
	if c.refs.tools[t.ID] {
		return t, fmt.Errorf("tool %q already exists: %w", t.ID, harness.ErrConflict)
	}
	if err := c.writeTool(ctx, t); err != nil {
		return t, err
	}
	c.refs.tools[t.ID] = true
	return t, nil
}

func (c *Catalog) writeTool(ctx context.Context, t harness.ToolDefinition) error {
	data, err := encodeTool(t)
	if err != nil {
		return err
	}
	row, err := toToolRow(c.key, t)
	if err != nil {
		return harness.Invalid("mock_response", "%v", err)
	}
	return c.commit(ctx, []change{{rel: toolPath(t.ID), data: data}}, true, func(ctx context.Context, tx bun.Tx) error {
		return upsert(ctx, tx, row, `"dir", "id"`)
	})
}

// UpdateTool applies a change to a stored tool record and stores the
// result. apply must not change the id.
func (c *Catalog) UpdateTool(ctx context.Context, id string, apply func(*harness.ToolDefinition) error) (harness.ToolDefinition, error) {
	if err := c.writable("update tool"); err != nil {
		return harness.ToolDefinition{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.Tool(ctx, id)
	if err != nil {
		return t, err
	}
	if err := apply(&t); err != nil {
		return t, err
	}
	if t.ID != id {
		return t, harness.Invalid("id", "must equal the id in the path, %q", id)
	}
	if err := c.validator().Tool(&t); err != nil {
		return t, err
	}
	return t, c.writeTool(ctx, t)
}

// DeleteTool removes a tool record. One still listed by a test or a level
// is an error wrapping harness.ErrConflict.
func (c *Catalog) DeleteTool(ctx context.Context, id string) error {
	return c.DeleteToolIf(ctx, id, nil)
}

// DeleteToolIf is DeleteTool when check, given the stored record, returns
// nil; otherwise it deletes nothing and returns check's error. No other
// change of the catalog comes between the check and the delete.
func (c *Catalog) DeleteToolIf(ctx context.Context, id string, check func(harness.ToolDefinition) error) error {
	if err := c.writable("delete tool"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.refs.tools[id] {
		return notFound("tool", id)
	}
	if check != nil {
		t, err := c.Tool(ctx, id)
		if err != nil {
			return err
		}
		if err := check(t); err != nil {
			return err
		}
	}
	users, err := c.usersOfTool(ctx, id)
	if err != nil {
		return err
	}
	for _, check := range c.toolUsers {
		more, err := check(ctx, id)
		if err != nil {
			return fmt.Errorf("delete tool %q: %w", id, err)
		}
		users = append(users, more...)
	}
	if len(users) > 0 {
		return fmt.Errorf("tool %q is used by %s: %w", id, strings.Join(users, ", "), harness.ErrConflict)
	}
	err = c.commit(ctx, []change{{rel: toolPath(id), remove: true}}, true, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewDelete().Model((*toolRow)(nil)).Where("dir = ? AND id = ?", c.key, id).Exec(ctx)
		return err
	})
	if err != nil {
		return err
	}
	delete(c.refs.tools, id)
	return nil
}

// usersOfTool names up to five tests and levels that list a tool.
func (c *Catalog) usersOfTool(ctx context.Context, id string) ([]string, error) {
	pattern := "%" + `"` + id + `"` + "%"
	var tests []testRow
	if err := c.db.NewSelect().Model(&tests).Where("dir = ? AND tools LIKE ?", c.key, pattern).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("delete tool %q: %w", id, err)
	}
	var users []string
	for _, t := range tests {
		if contains(t.Tools, id) && len(users) < 5 {
			users = append(users, "test "+t.ID)
		}
	}
	var levels []levelRow
	if err := c.db.NewSelect().Model(&levels).Where("dir = ? AND tools LIKE ?", c.key, pattern).Scan(ctx); err != nil {
		return nil, fmt.Errorf("delete tool %q: %w", id, err)
	}
	for _, l := range levels {
		if contains(l.Tools, id) && len(users) < 5 {
			users = append(users, fmt.Sprintf("level %s/%d", l.DomainID, l.Level))
		}
	}
	return users, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
