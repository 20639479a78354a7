package catalog

import (
	"context"
	"fmt"
)

// CountTests returns how many tests each level of each domain holds, by
// domain id and level, without reading the tests: what a run's plan
// needs before its tests are read (see EachTest).
func (c *Catalog) CountTests(ctx context.Context) (map[string]map[int]int, error) {
	out := map[string]map[int]int{}
	add := func(domain string, level, n int) {
		if out[domain] == nil {
			out[domain] = map[int]int{}
		}
		out[domain][level] += n
	}
	if m := c.mem.Load(); m != nil {
		rows, err := rowsOf[testRow](m.tests)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			add(rows[i].DomainID, rows[i].Level, 1)
		}
		return out, nil
	}
	var rows []struct {
		DomainID string `bun:"domain_id"`
		Level    int    `bun:"level"`
		N        int    `bun:"n"`
	}
	if err := c.db.NewSelect().Model((*testRow)(nil)).Column("domain_id", "level").ColumnExpr("COUNT(*) AS n").
		Group("domain_id", "level").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("count tests: %w", err)
	}
	for _, r := range rows {
		add(r.DomainID, r.Level, r.N)
	}
	return out, nil
}
