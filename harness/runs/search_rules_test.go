package runs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestSearchRulesEveryDatabase: on SQLite and on PostgreSQL alike a
// search keeps the results whose prompt, response or test id contains it
// with the case of ASCII letters ignored and no other (é and É differ),
// every other character taken as it is; on PostgreSQL the trigram indexes
// that answer it exist.
func TestSearchRulesEveryDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t)
	s, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if dbtest.Postgres() {
		var n int
		if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'run_results_search_%'`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("trigram indexes = %d, %v; want 3", n, err)
		}
	}
	fragments := []string{"a", "B", "Abc", "hello", "HeLLo", "é", "É", "école", "ÉCOLE", "ß", "SS", "\u212a", "K", "İ", "i",
		"%", "_", `\`, "*", `"`, "'", "100%", "_x_", "😀", "日本語", " ", "-"}
	rng := rand.New(rand.NewPCG(3, 5))
	text := func() string {
		var sb strings.Builder
		for range rng.IntN(7) {
			sb.WriteString(fragments[rng.IntN(len(fragments))])
		}
		return sb.String()
	}
	if err := s.CreateRun(ctx, runs.Info{RunID: "r", StartedAt: "2026-01-02 03:04:05", Status: runs.StatusCompleted, TotalTests: 300}, nil); err != nil {
		t.Fatal(err)
	}
	batch := make([]runs.Result, 300)
	for i := range batch {
		batch[i] = runs.Result{RunID: "r", TestID: fmt.Sprintf("t%d-%s", i, text()), Domain: "d", Level: 1,
			Prompt: text(), Response: text(), Status: runs.TestPassed, Score: 1}
	}
	if err := s.SaveResults(ctx, batch); err != nil {
		t.Fatal(err)
	}
	lower := func(s string) string {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	for _, needle := range []string{"hello", "HELLO", "é", "É", "école", "ÉCOLE", "ss", "SS", "ß", "k", "\u212a", "i", "İ",
		"%", "_", `\`, "100%", "_x_", `"`, "'", "😀", "日本", "abc", "ABC", "lo é", "t1", "T1-"} {
		want := 0
		for _, r := range batch {
			if strings.Contains(lower(r.Prompt), lower(needle)) || strings.Contains(lower(r.Response), lower(needle)) ||
				strings.Contains(lower(r.TestID), lower(needle)) {
				want++
			}
		}
		page, err := s.QueryResults(ctx, "r", runs.ResultQuery{Search: needle, Limit: 1000})
		if err != nil {
			t.Fatalf("search %q: %v", needle, err)
		}
		if page.Total != want || len(page.Results) != want {
			t.Errorf("search %q = %d results (total %d); want %d", needle, len(page.Results), page.Total, want)
		}
	}
}
