package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// queryLog keeps the SELECTs a store runs, as sent to the database.
type queryLog struct {
	mu      sync.Mutex
	queries []string
}

func (l *queryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (l *queryLog) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if strings.HasPrefix(strings.TrimSpace(ev.Query), "SELECT") {
		l.mu.Lock()
		l.queries = append(l.queries, ev.Query)
		l.mu.Unlock()
	}
}

func (l *queryLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queries
	l.queries = nil
	return q
}

// explain returns the database's plan of a query as text: EXPLAIN QUERY
// PLAN on SQLite, EXPLAIN on PostgreSQL.
func explain(t *testing.T, db bun.IDB, query string) string {
	t.Helper()
	prefix := "EXPLAIN QUERY PLAN "
	if sqldb.IsPG(db) {
		prefix = "EXPLAIN "
	}
	rows, err := db.QueryContext(context.Background(), prefix+query)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var sb strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&sb, vals[len(vals)-1])
	}
	return sb.String()
}

// sqliteOnly is index on SQLite, "" on PostgreSQL, which plans with
// statistics of its own.
func sqliteOnly(db bun.IDB, index string) string {
	if sqldb.IsPG(db) {
		return ""
	}
	return index
}

// TestCellStatusIndexPlans: a run's results filtered by domain and status,
// with a level or without, are counted through the index of cell and
// status, and a page of them is read through it (or, for a domain's
// common status sorted by score, through the score index first), on
// SQLite and on PostgreSQL, as the databases' own plans show.
func TestCellStatusIndexPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	b := sqldb.Bun(db)
	// Three runs of 4,000 results: 20 domains × 5 levels, 40 results a
	// cell: 28 passed, 8 failed, 4 errors.
	const n = 4000
	for _, run := range []string{"a", "p", "z"} {
		if err := s.CreateRun(ctx, Info{RunID: run, StartedAt: "2026-01-02 03:04:05", ModelName: "m", Model: "m",
			Status: StatusCompleted, TotalTests: n}, nil); err != nil {
			t.Fatal(err)
		}
		batch := make([]Result, 0, 1000)
		for i := range n {
			status, score := TestPassed, 1.0
			switch i / 100 % 10 {
			case 7, 8:
				status, score = TestFailed, float64(i%4)/4
			case 9:
				status, score = TestError, 0
			}
			batch = append(batch, Result{RunID: run, TestID: fmt.Sprintf("t%05d", i), Domain: fmt.Sprintf("d%02d", i%20),
				Level: 1 + i/20%5, Name: "n", Prompt: "p", Response: "r", Score: score, Status: status,
				DurationMS: int64(i * 7 % 1000), ModelName: "m", CreatedAt: "2026-01-02 03:04:07"})
			if len(batch) == cap(batch) {
				if err := s.SaveResults(ctx, batch); err != nil {
					t.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	if sqldb.IsPG(b) {
		if _, err := b.ExecContext(ctx, `ANALYZE "run_results"`); err != nil {
			t.Fatal(err)
		}
	}
	const index, scoreIndex = "run_results_cell_status", "run_results_cell_score"
	// uses says whether a plan uses an index; for index, either index of
	// cell and status will do.
	uses := func(plan, want string) bool {
		return strings.Contains(plan, want) || (want == index && strings.Contains(plan, scoreIndex))
	}
	// The store reads through a handle that logs its statements.
	log := &queryLog{}
	s = &Store{db: b.WithQueryHook(log)}
	level := 3
	for _, tc := range []struct {
		name string
		q    ResultQuery
		want int
		// count is the index the total is counted through; page one that
		// a query of the page uses, "" when it is the database's choice
		// among several good ones (see uses).
		count, page string
	}{
		// On SQLite a domain's results of one status in storage order or
		// by score are read level by level, each level's range of an index
		// of cell and status in the sort's order.
		{"domain and status", ResultQuery{Domain: "d07", Status: TestFailed}, 40, index, sqliteOnly(b, index)},
		{"domain and status by score", ResultQuery{Domain: "d07", Status: TestPassed, Sort: "-score"}, 140, index, sqliteOnly(b, scoreIndex)},
		{"domain, level and status", ResultQuery{Domain: "d07", Level: &level, Status: TestPassed}, 28, index, index},
		{"domain, level and status by score", ResultQuery{Domain: "d07", Level: &level, Status: TestPassed, Sort: "-score"}, 28, index, sqliteOnly(b, scoreIndex)},
		{"domain and a rare status by duration", ResultQuery{Domain: "d09", Status: TestError, Sort: "duration_ms"}, 20, index, index},
		// A status that keeps many rows: the sort's index is walked first,
		// a bounded number of rows. Durations are spread evenly: the page
		// is there. Failed results score below every passed one: it is
		// not, and the rows are read through the status's index.
		{"a common status by duration", ResultQuery{Status: TestFailed, Sort: "-duration_ms"}, 800, "run_results_status", sqliteOnly(b, "run_results_duration")},
		{"a common status by score", ResultQuery{Status: TestFailed, Sort: "-score"}, 800, "run_results_status", sqliteOnly(b, "run_results_status")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log.take()
			q := tc.q
			q.Limit = 10
			p, err := s.QueryResults(ctx, "p", q)
			if err != nil || p.Total != tc.want || len(p.Results) != 10 {
				t.Fatalf("total %d, %d results, %v; want %d", p.Total, len(p.Results), err, tc.want)
			}
			var counted, paged bool
			var pagePlans []string
			for _, query := range log.take() {
				if !strings.Contains(query, "run_results") || strings.Contains(query, `FROM "runs"`) {
					continue
				}
				plan := explain(t, b, query)
				t.Logf("%s\n%s", query, plan)
				switch {
				case strings.Contains(strings.ToLower(query), "count("):
					counted = true
					if !uses(plan, tc.count) {
						t.Errorf("the total is not counted through %s:\n%s\n%s", tc.count, query, plan)
					}
				case strings.Contains(query, `"prompt"`):
					paged = true
					pagePlans = append(pagePlans, plan)
				}
			}
			if !counted || !paged {
				t.Fatalf("queries seen: count %v, page %v", counted, paged)
			}
			if tc.page != "" && !slices.ContainsFunc(pagePlans, func(p string) bool { return uses(p, tc.page) }) {
				t.Errorf("the page is not read through %s", tc.page)
			}
		})
	}
}
