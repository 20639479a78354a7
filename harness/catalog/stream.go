package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// eachTestPage is how many tests EachTest reads per query.
const eachTestPage = 500

// Outline returns every definition but the tests (Tests is nil): what a
// run needs besides its tests, which it reads with EachTest.
func (c *Catalog) Outline(ctx context.Context) (*harness.Snapshot, error) {
	var s harness.Snapshot
	var err error
	if s.Domains, err = c.Domains(ctx); err != nil {
		return nil, err
	}
	if s.Levels, err = c.Levels(ctx, ""); err != nil {
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

// EachTest calls fn with every test of a domain (of all domains when
// domainID is empty) in the order of Tests: by domain, level, and order
// in the level's file. It reads a few hundred tests at a time and calls
// fn between reads (no query is open while fn runs), so that a suite of
// any size streams in constant memory and fn may take its time. It stops
// at fn's first error and returns it.
func (c *Catalog) EachTest(ctx context.Context, domainID string, fn func(harness.Test) error) error {
	if m := c.mem.Load(); m != nil {
		tests, err := m.testList(TestFilter{DomainID: domainID})
		if err != nil {
			return err
		}
		for _, t := range tests {
			if err := fn(t); err != nil {
				return err
			}
		}
		return nil
	}
	// The levels that hold tests, then each level a page at a time along
	// the (domain_id, level, position) index.
	var levels []struct {
		DomainID string `bun:"domain_id"`
		Level    int    `bun:"level"`
	}
	q := c.db.NewSelect().Model((*testRow)(nil)).Column("domain_id", "level").Where("dir = ?", c.key).Group("domain_id", "level").Order("domain_id", "level")
	if domainID != "" {
		q = q.Where("domain_id = ?", domainID)
	}
	if err := q.Scan(ctx, &levels); err != nil {
		return fmt.Errorf("list tests: %w", err)
	}
	for _, l := range levels {
		after := -1
		for {
			var rows []testRow
			if err := c.db.NewSelect().Model(&rows).Where("dir = ? AND domain_id = ? AND level = ? AND position > ?", c.key, l.DomainID, l.Level, after).
				Order("position").Limit(eachTestPage).Scan(ctx); err != nil {
				return fmt.Errorf("list tests: %w", err)
			}
			for i := range rows {
				if err := fn(rows[i].test()); err != nil {
					return err
				}
			}
			if len(rows) < eachTestPage {
				break
			}
			after = rows[len(rows)-1].Position
		}
	}
	return nil
}

// testLevel returns the domain and level of a test of the cache; ok is
// false when there is no such test. Callers hold c.mu.
func (c *Catalog) testLevel(ctx context.Context, id string) (k levelKey, ok bool, err error) {
	var row testRow
	err = c.db.NewSelect().Model(&row).Column("domain_id", "level").Where("dir = ? AND id = ?", c.key, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return k, false, nil
	}
	if err != nil {
		return k, false, fmt.Errorf("read test %q: %w", id, err)
	}
	return levelKey{row.DomainID, row.Level}, true, nil
}
