package runs

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// A run's definitions are stored once per content, under the hex SHA-256
// of their JSON (the JSON of a harness.Snapshot), in two forms:
//
//   - whole (as versions before 0.4 stored them): one gzip-compressed
//     snapshot in run_definitions, tests included;
//   - test by test (every set stored today): the snapshot without its
//     tests in run_definitions (tests holds how many there are), and each
//     test a row of run_definition_tests, in the order of the snapshot,
//     so that a set of a million tests is never in memory at once.
//
// Every reader reads both.

type definitionTestRow struct {
	bun.BaseModel `bun:"table:run_definition_tests"`
	Hash          string `bun:"hash,pk"`
	TestID        string `bun:"test_id,pk"`
	Position      int    `bun:"position,notnull"`
	DomainID      string `bun:"domain_id,notnull"`
	Level         int    `bun:"level,notnull"`
	Data          string `bun:"data,notnull"` // the test's JSON
}

// definitionsBatch is how many tests one INSERT of a set carries, and how
// many a reader reads per query.
const definitionsBatch = 500

// EachTest calls fn with each test of a set of definitions, in order,
// and stops at fn's first error, which it returns.
type EachTest func(fn func(harness.Test) error) error

// SaveDefinitions stores a definitions snapshot, once per content, and
// returns its hash (hex SHA-256 of its JSON): a thousand runs of the same
// suite store it once. It is SaveDefinitionsFrom with the snapshot's
// tests.
func (s *Store) SaveDefinitions(ctx context.Context, snap *harness.Snapshot) (string, error) {
	return s.SaveDefinitionsFrom(ctx, snap, func(fn func(harness.Test) error) error {
		for _, t := range snap.Tests {
			if err := fn(t); err != nil {
				return err
			}
		}
		return nil
	})
}

// SaveDefinitionsFrom stores a set of definitions without holding its
// tests in memory: outline holds every definition but the tests (its
// Tests are ignored), and tests gives them, in order, each time it is
// called. It returns the set's hash, the hex SHA-256 of the JSON of the
// whole snapshot (the same as for a set stored whole). A set already
// stored test by test is not stored again. tests is called once to hash
// the set, and once more to store it when it is new; when it gives other
// tests the second time (the definitions changed meanwhile) the error
// wraps harness.ErrConflict and the set is not stored.
//
// The rows of a set's tests are keyed by its hash and hold what the hash
// covers, so that two writers of one set write the same rows, and rows
// left by a writer that died are those the next one would write: neither
// is an error, and nothing is ever deleted here. What the second read
// gives is checked against the first every batch, before the batch is
// written: a row under a hash never holds other content. The set's own
// row is written last, once every test is there.
func (s *Store) SaveDefinitionsFrom(ctx context.Context, outline *harness.Snapshot, tests EachTest) (string, error) {
	head, tail, err := outlineJSON(outline)
	if err != nil {
		return "", fmt.Errorf("store definitions: %w", err)
	}
	// The first read hashes the set, and notes the hash of what came so
	// far every batch of tests.
	var marks [][]byte
	sum, _, err := hashSet(head, tail, tests, func(_ *harness.Test, _ []byte, pos int, h hash.Hash) error {
		if (pos+1)%definitionsBatch == 0 {
			marks = append(marks, h.Sum(nil))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("store definitions: %w", err)
	}
	var row definitionsRow
	err = s.db.NewSelect().Model(&row).Column("hash", "tests").Where("hash = ?", sum).Scan(ctx)
	switch {
	case err == nil && row.Tests != nil:
		return sum, nil // stored test by test already
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return "", fmt.Errorf("store definitions: %w", err)
	}
	// New, or stored whole by an older version: stored test by test now.
	changed := fmt.Errorf("the definitions changed while the run was starting; start it again: %w", harness.ErrConflict)
	batch := make([]*definitionTestRow, 0, definitionsBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := s.db.NewInsert().Model(&batch).On("CONFLICT (hash, test_id) DO NOTHING").Exec(ctx)
		batch = batch[:0]
		return err
	}
	again, n, err := hashSet(head, tail, tests, func(t *harness.Test, data []byte, pos int, h hash.Hash) error {
		batch = append(batch, &definitionTestRow{Hash: sum, TestID: t.ID, Position: pos, DomainID: t.DomainID, Level: t.Level, Data: string(data)})
		if len(batch) < cap(batch) {
			return nil
		}
		if k := (pos+1)/definitionsBatch - 1; k >= len(marks) || !bytes.Equal(h.Sum(nil), marks[k]) {
			return changed
		}
		return flush()
	})
	if err == nil && again != sum {
		err = changed
	}
	if err == nil {
		err = flush() // the last tests: the whole hash was checked
	}
	if err != nil {
		return "", fmt.Errorf("store definitions: %w", err)
	}
	bare := *outline
	bare.Tests = nil
	data, size, err := gzipJSON(&bare)
	if err != nil {
		return "", fmt.Errorf("store definitions: %w", err)
	}
	set := &definitionsRow{Hash: sum, Data: data, Size: size, CreatedAt: Now(), Tests: &n}
	_, err = s.db.NewInsert().Model(set).On("CONFLICT (hash) DO UPDATE").
		Set("data = EXCLUDED.data, size = EXCLUDED.size, tests = EXCLUDED.tests").Exec(ctx)
	if err != nil {
		return "", fmt.Errorf("store definitions: %w", err)
	}
	return sum, nil
}

// outlineJSON returns the JSON of a snapshot around its tests: what comes
// before the first test and what follows the last, as json.Marshal writes
// the whole snapshot.
func outlineJSON(o *harness.Snapshot) (head, tail []byte, err error) {
	part := func(buf *bytes.Buffer, key string, v any) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			buf.WriteString(key)
			buf.Write(b)
		}
	}
	var h, t bytes.Buffer
	part(&h, `{"domains":`, o.Domains)
	part(&h, `,"levels":`, o.Levels)
	h.WriteString(`,"tests":`)
	part(&t, `,"evaluators":`, o.Evaluators)
	part(&t, `,"tools":`, o.Tools)
	t.WriteString("}")
	return h.Bytes(), t.Bytes(), err
}

// hashSet hashes the JSON of a snapshot made of head, the tests and tail,
// calling each with every test, its JSON, its position and the hash of
// everything up to it. It returns the hex SHA-256 and the number of tests.
func hashSet(head, tail []byte, tests EachTest, each func(t *harness.Test, data []byte, pos int, h hash.Hash) error) (string, int, error) {
	h := sha256.New()
	h.Write(head)
	n := 0
	err := tests(func(t harness.Test) error {
		data, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("test %s: %w", t.ID, err)
		}
		if n == 0 {
			h.Write([]byte("["))
		} else {
			h.Write([]byte(","))
		}
		h.Write(data)
		if err := each(&t, data, n, h); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	if n == 0 {
		h.Write([]byte("null")) // as json.Marshal writes no tests
	} else {
		h.Write([]byte("]"))
	}
	h.Write(tail)
	return hexSum(h), n, nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

func gzipJSON(v any) ([]byte, int, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, 0, err
	}
	if err := zw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), len(raw), nil
}

// definitionsHash returns the hash of the definitions a run stored, or an
// error wrapping harness.ErrNotFound.
func (s *Store) definitionsHash(ctx context.Context, runID string) (string, error) {
	info, err := s.Run(ctx, runID)
	if err != nil {
		return "", err
	}
	if info.Config == nil || info.Config.DefinitionsHash == "" {
		return "", fmt.Errorf("run %q recorded no definitions: %w", runID, harness.ErrNotFound)
	}
	return info.Config.DefinitionsHash, nil
}

// readSet reads a set's row and decodes its snapshot: the whole snapshot
// for a set stored whole (tests is nil), the snapshot without its tests
// and their number otherwise.
func (s *Store) readSet(ctx context.Context, hash string) (*harness.Snapshot, *int, error) {
	var row definitionsRow
	err := s.db.NewSelect().Model(&row).Where("hash = ?", hash).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("definitions %s are missing: %w", hash, harness.ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read definitions %s: %w", hash, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(row.Data))
	if err != nil {
		return nil, nil, fmt.Errorf("read definitions %s: %w", hash, err)
	}
	var snap harness.Snapshot
	if err := json.NewDecoder(zr).Decode(&snap); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("read definitions %s: %w", hash, err)
	}
	return &snap, row.Tests, nil
}

// Definitions returns the definitions snapshot a run used, tests
// included; an error wrapping harness.ErrNotFound when the run is unknown
// or recorded none (runs made before snapshots were stored). It holds the
// whole set in memory: for a large one, read it with DefinitionsOutline
// and EachDefinitionTest.
func (s *Store) Definitions(ctx context.Context, runID string) (*harness.Snapshot, error) {
	hash, err := s.definitionsHash(ctx, runID)
	if err != nil {
		return nil, err
	}
	snap, n, err := s.readSet(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", runID, err)
	}
	if n == nil {
		return snap, nil
	}
	snap.Tests = make([]harness.Test, 0, *n)
	if err := s.EachDefinitionTest(ctx, hash, "", func(t harness.Test) error {
		snap.Tests = append(snap.Tests, t)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("run %q: %w", runID, err)
	}
	if len(snap.Tests) == 0 {
		snap.Tests = nil // as the set was given
	}
	return snap, nil
}

// DefinitionsOutline returns a stored set of definitions (by its hash,
// runs.Config.DefinitionsHash) without its tests (Tests is nil), and how
// many tests each level of each domain holds. An unknown hash is an error
// wrapping harness.ErrNotFound.
func (s *Store) DefinitionsOutline(ctx context.Context, hash string) (*harness.Snapshot, map[string]map[int]int, error) {
	snap, n, err := s.readSet(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	counts := map[string]map[int]int{}
	add := func(domain string, level, k int) {
		if counts[domain] == nil {
			counts[domain] = map[int]int{}
		}
		counts[domain][level] += k
	}
	if n == nil {
		for _, t := range snap.Tests {
			add(t.DomainID, t.Level, 1)
		}
		snap.Tests = nil
		return snap, counts, nil
	}
	var rows []struct {
		DomainID string `bun:"domain_id"`
		Level    int    `bun:"level"`
		N        int    `bun:"n"`
	}
	if err := s.db.NewSelect().Model((*definitionTestRow)(nil)).Column("domain_id", "level").ColumnExpr("COUNT(*) AS n").
		Where("hash = ?", hash).Group("domain_id", "level").Scan(ctx, &rows); err != nil {
		return nil, nil, fmt.Errorf("read definitions %s: %w", hash, err)
	}
	for _, r := range rows {
		add(r.DomainID, r.Level, r.N)
	}
	return snap, counts, nil
}

// EachDefinitionTest calls fn with every test of a stored set (by its
// hash) in the set's order, only those of one domain when domainID is not
// empty. It reads a few hundred tests at a time and calls fn between
// reads, so fn may take its time; it stops at fn's first error and
// returns it.
func (s *Store) EachDefinitionTest(ctx context.Context, hash, domainID string, fn func(harness.Test) error) error {
	var exists struct {
		Tests *int `bun:"tests"`
	}
	err := s.db.NewSelect().Model((*definitionsRow)(nil)).Column("tests").Where("hash = ?", hash).Scan(ctx, &exists.Tests)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("definitions %s are missing: %w", hash, harness.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read definitions %s: %w", hash, err)
	}
	if exists.Tests == nil {
		// Stored whole: the set is read whole, as it was written.
		snap, _, err := s.readSet(ctx, hash)
		if err != nil {
			return err
		}
		for _, t := range snap.Tests {
			if domainID == "" || t.DomainID == domainID {
				if err := fn(t); err != nil {
					return err
				}
			}
		}
		return nil
	}
	after := -1
	for {
		var rows []definitionTestRow
		q := s.db.NewSelect().Model(&rows).Column("position", "data").Where("hash = ?", hash).Where("position > ?", after)
		if domainID != "" {
			q = q.Where("domain_id = ?", domainID)
		}
		if err := q.Order("position").Limit(definitionsBatch).Scan(ctx); err != nil {
			return fmt.Errorf("read definitions %s: %w", hash, err)
		}
		for i := range rows {
			var t harness.Test
			if err := json.Unmarshal([]byte(rows[i].Data), &t); err != nil {
				return fmt.Errorf("read definitions %s: test at %d: %w", hash, rows[i].Position, err)
			}
			if err := fn(t); err != nil {
				return err
			}
		}
		if len(rows) < definitionsBatch {
			return nil
		}
		after = rows[len(rows)-1].Position
	}
}

// ResultKey names one sample of a run: a test and its repeat.
type ResultKey struct {
	TestID string `bun:"test_id"`
	Repeat int    `bun:"repeat"`
}

// ResultKeys returns the tests and repeats that have a result in one cell
// of a run, without the results themselves: what a resumed run skips.
func (s *Store) ResultKeys(ctx context.Context, runID, domain string, level int) ([]ResultKey, error) {
	var out []ResultKey
	err := s.db.NewSelect().Model((*resultRow)(nil)).Column("test_id", "repeat").
		Where("run_id = ? AND domain = ? AND level = ?", runID, domain, level).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read results of %q: %w", runID, err)
	}
	return out, nil
}

// DefinitionTests returns the tests of a stored set (by its hash) that
// have the given ids, by id; ids the set does not hold are left out. An
// unknown set is an error wrapping harness.ErrNotFound.
func (s *Store) DefinitionTests(ctx context.Context, hash string, ids []string) (map[string]harness.Test, error) {
	out := make(map[string]harness.Test, len(ids))
	var n *int
	err := s.db.NewSelect().Model((*definitionsRow)(nil)).Column("tests").Where("hash = ?", hash).Scan(ctx, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("definitions %s are missing: %w", hash, harness.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read definitions %s: %w", hash, err)
	}
	if n == nil {
		// Stored whole: the set is read whole, as it was written.
		snap, _, err := s.readSet(ctx, hash)
		if err != nil {
			return nil, err
		}
		want := make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		for _, t := range snap.Tests {
			if want[t.ID] {
				out[t.ID] = t
			}
		}
		return out, nil
	}
	for start := 0; start < len(ids); start += definitionsBatch {
		var rows []definitionTestRow
		if err := s.db.NewSelect().Model(&rows).Column("test_id", "data").Where("hash = ?", hash).
			Where("test_id IN (?)", bun.List(ids[start:min(start+definitionsBatch, len(ids))])).Scan(ctx); err != nil {
			return nil, fmt.Errorf("read definitions %s: %w", hash, err)
		}
		for i := range rows {
			var t harness.Test
			if err := json.Unmarshal([]byte(rows[i].Data), &t); err != nil {
				return nil, fmt.Errorf("read definitions %s: test %s: %w", hash, rows[i].TestID, err)
			}
			out[t.ID] = t
		}
	}
	return out, nil
}
