package runs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// searchFragments make the texts of TestSearchIndexMatchesLike: letters
// of both cases, letters whose case only Unicode folds (É, ß, the Kelvin
// sign, dotted İ, long ſ), FTS5 and LIKE syntax, a NUL, invalid UTF-8
// (a lone continuation byte reads as U+0080–U+00BF, a truncated sequence
// as U+FFFD), U+FFFD itself, an emoji and CJK.
var searchFragments = []string{"a", "B", "ab", "AB", "Abc", "abc", "xyz", "hello", "HeLLo", "é", "É", "école", "ÉCOLE",
	"ß", "SS", "ss", "\u212a", "k", "K", "İ", "i", "I", "ſ", "s", `"`, `""`, "'", "%", "_", `\`, "*", "NEAR", "near(",
	"AND", "OR", "NOT", "(", ")", ":", "^", "-", "+", " ", "  ", "\x00", "\xff", "\xc3", "\x80", "\xa9", "©", "\uFFFD",
	"😀", "日本語", "100%", "_x_", "t-1"}

// searchText is up to n fragments.
func searchText(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for range rng.IntN(n + 1) {
		sb.WriteString(searchFragments[rng.IntN(len(searchFragments))])
	}
	return sb.String()
}

// flipCase changes the case of some ASCII letters.
func flipCase(rng *rand.Rand, s string) string {
	b := []byte(s)
	for i, c := range b {
		if rng.IntN(2) == 0 {
			switch {
			case 'a' <= c && c <= 'z':
				b[i] = c - 'a' + 'A'
			case 'A' <= c && c <= 'Z':
				b[i] = c - 'A' + 'a'
			}
		}
	}
	return string(b)
}

// likeIDs is the reference: the ids of a run's results that the LIKE
// scan keeps, in id order.
func likeIDs(t *testing.T, s *Store, runID string, q ResultQuery) []int64 {
	t.Helper()
	var ids []int64
	if err := filter(s.db.NewSelect().Model((*resultRow)(nil)).Column("id"), runID, q).Order("id").Scan(context.Background(), &ids); err != nil {
		t.Fatal(err)
	}
	return ids
}

// pageIDs reads every page of a query and returns the ids, sorted;
// idOf gives a result's id by its test id (unique in the test's runs).
func pageIDs(t *testing.T, s *Store, runID string, q ResultQuery, idOf map[string]int64) ([]int64, int) {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	total := -1
	for {
		p, err := s.QueryResults(ctx, runID, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if total >= 0 && p.Total != total {
			t.Fatalf("%+v: total %d, then %d", q, total, p.Total)
		}
		total = p.Total
		for _, r := range p.Results {
			id, ok := idOf[r.TestID]
			if !ok {
				t.Fatalf("%+v: unknown result %s", q, r.TestID)
			}
			ids = append(ids, id)
		}
		if p.NextCursor == "" {
			break
		}
		q.Cursor = p.NextCursor
	}
	slices.Sort(ids)
	return ids, total
}

// TestSearchIndexMatchesLike checks, on texts made to trip it up, that a
// search the index answers keeps exactly the results the LIKE scan
// keeps: under every plan, alone and with filters, sorted and paged, its
// total included.
func TestSearchIndexMatchesLike(t *testing.T) {
	// Not parallel: it moves the package's joinCount.
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { joinCount = n }(joinCount)
	rng := rand.New(rand.NewPCG(7, 11))
	// Run "a" is written in two parts with run "b" between them, so that
	// other results lie among its ids; run "c" holds all of its ids.
	for _, id := range []string{"a", "b", "c"} {
		if err := s.CreateRun(ctx, Info{RunID: id, StartedAt: "2026-01-02 03:04:05", Status: StatusCompleted, TotalTests: 200}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var texts []string
	n := 0
	save := func(runID string, count int) {
		batch := make([]Result, count)
		for i := range batch {
			n++
			status, score := TestPassed, 1.0
			if i%3 == 1 {
				status, score = TestFailed, float64(i%4)/4
			} else if i%7 == 2 {
				status, score = TestError, 0
			}
			prompt := searchText(rng, 6)
			if i%10 == 0 {
				prompt = ""
			}
			batch[i] = Result{RunID: runID, TestID: fmt.Sprintf("T-%d-%s", n, strings.Repeat("x", i%3)), Domain: "d", Level: 1 + i%2,
				Prompt: prompt, Response: searchText(rng, 10), Score: score, Status: status, DurationMS: int64(i % 5)}
			texts = append(texts, batch[i].Prompt, batch[i].Response, batch[i].TestID)
		}
		if err := s.SaveResults(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	save("a", 120)
	save("b", 60)
	save("a", 80)
	save("c", 150)
	// First the index holds the first 200 results: run "a"'s first part,
	// "b" and a little of "a"'s second part; "c" has none of its results in
	// it. Then the indexer catches up, in chunks smaller than the runs.
	if n, err := s.IndexSearch(ctx, 200); n != 200 || err != nil {
		t.Fatalf("indexed %d, %v; want 200", n, err)
	}

	idOf := map[string]int64{}
	var rows []resultRow
	if err := s.db.NewSelect().Model(&rows).Column("id", "test_id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		idOf[r.TestID] = r.ID
	}

	needles := []string{`"`, `""`, `a"b`, `"hello"`, "NEAR(a b)", "a AND b", "a OR b", "NOT a", "*", "abc*", "col:abc", "^abc",
		"%", "_", `\`, "100%", "_x_", "%_%", "a", "ab", "é", "éc", "\u212a", "KKK", "kkk", "ss", "SSS", "ß", "İi", "ſss",
		"\uFFFD", "©", "😀", "日本", "日本語", "t-1", "T-1", "xyz", "XYZ", "hello", "HELLO", "ÉCOLE", "école", "abcxyz"}
	// Random pieces of the texts besides: 55 of them, or 5 with -short
	// (make test's race pass; its exhaustive pass runs them all).
	nNeedles := 100
	if testing.Short() {
		nNeedles = len(needles) + 5
	}
	for len(needles) < nNeedles {
		text := texts[rng.IntN(len(texts))]
		if text == "" {
			continue
		}
		i := rng.IntN(len(text))
		j := min(len(text), i+1+rng.IntN(16))
		needle := flipCase(rng, text[i:j])
		if strings.ContainsRune(needle, 0) || !utf8.ValidString(needle) {
			continue // refused: TestSearchRefusesBadText
		}
		needles = append(needles, needle)
	}
	for _, phase := range []string{"index behind", "index caught up"} {
		if phase == "index caught up" {
			added := 0
			for {
				n, err := s.IndexSearch(ctx, 70)
				if err != nil {
					t.Fatal(err)
				}
				if added += n; n == 0 {
					break
				}
			}
			if added != 210 {
				t.Fatalf("the indexer indexed %d results; want the 210 left", added)
			}
		}
		t.Run(phase, func(t *testing.T) { searchAlikeByPlan(t, s, needles, idOf) })
	}
}

// searchAlikeByPlan checks that each search of needles finds through
// every plan exactly what the LIKE scan finds, in runs "a" and "c".
func searchAlikeByPlan(t *testing.T, s *Store, needles []string, idOf map[string]int64) {
	ctx := context.Background()
	indexed := 0
	for k, needle := range needles {
		// Every other search is counted as a large one would be: the rows
		// the other filters keep are counted and the smaller set read; a
		// search alone asks whether the run holds all of its ids (run "c"
		// does, run "a" not). The others are counted through their rows.
		joinCount = 2000
		if k%2 == 0 {
			joinCount = 0
		}
		if searchIndexed(s.db, needle) {
			indexed++
		}
		for _, c := range []struct {
			runID string
			q     ResultQuery
		}{
			{"a", ResultQuery{Search: needle}}, {"c", ResultQuery{Search: needle}},
			{"a", ResultQuery{Search: needle, Status: TestFailed}}, {"a", ResultQuery{Search: needle, Level: new(2)}},
		} {
			runID, q := c.runID, c.q
			want := likeIDs(t, s, runID, q)
			for _, sort := range []string{"-id", "duration_ms"} {
				q := q
				q.Sort, q.Limit = sort, 25
				got, total := pageIDs(t, s, runID, q, idOf)
				if total != len(want) || !slices.Equal(got, want) {
					t.Fatalf("run %s, %+v: total %d, ids %v; the LIKE scan keeps %d: %v", runID, q, total, got, len(want), want)
				}
			}
			// Each plan alone: through the search index, through the
			// filter's index, in the sort's order; the last two test each
			// row with LIKE.
			sort, _ := parseSort("-score")
			for _, selective := range []selectivity{{search: true}, {filter: true}, {}} {
				rows, err := s.page(ctx, runID, q, sort, nil, 1000, selective)
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, r := range rows {
					got = append(got, r.ID)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("run %s, %+v, selective %v: ids %v; the LIKE scan keeps %v", runID, q, selective, got, want)
				}
			}
		}
	}
	if indexed < len(needles)/2 {
		t.Fatalf("only %d of %d searches went through the index", indexed, len(needles))
	}
}

// TestSearchRefusesBadText: a search holding NUL or invalid UTF-8 is a
// validation error naming q.
func TestSearchRefusesBadText(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"a\x00b", "\xff\xfe", "abc\xc3"} {
		err := ResultQuery{Search: q}.Check()
		if err == nil || !strings.Contains(err.Error(), "q") {
			t.Errorf("search %q: %v", q, err)
		}
	}
}

// TestSearchIndexFollowsWrites: every way results are written, changed
// or removed reaches the index: a batch, a single result, the deletion of
// errors when a run is reopened, a change of the text, a run's deletion.
func TestSearchIndexFollowsWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, Info{RunID: "w", StartedAt: "2026-01-02 03:04:05", Status: StatusCompleted, TotalTests: 4}, nil); err != nil {
		t.Fatal(err)
	}
	res := func(test, response, status string) Result {
		return Result{RunID: "w", TestID: test, Domain: "d", Level: 1, Prompt: "p", Response: response, Status: status}
	}
	if err := s.SaveResults(ctx, []Result{res("t1", "Alpha one", TestPassed), res("t2", "gamma two", TestError)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveResult(ctx, res("t3", "beta three", TestFailed)); err != nil {
		t.Fatal(err)
	}
	// indexed counts what the index holds for a search, whatever the run.
	indexed := func(search string) int64 {
		t.Helper()
		n, err := countMatches(ctx, s.db, search, 0, 1<<62, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// check searches before the indexer has run (the results it has not
	// indexed are read instead, and the page says how many) and after.
	check := func(search string, want int) {
		t.Helper()
		p, err := s.QueryResults(ctx, "w", ResultQuery{Search: search})
		if err != nil {
			t.Fatal(err)
		}
		pending, err := s.pendingOf(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != want || len(p.Results) != want || p.SearchIndex == nil || p.SearchIndex.Pending != pending {
			t.Errorf("search %q before indexing: total %d, %d results, index %+v (%d pending); want %d",
				search, p.Total, len(p.Results), p.SearchIndex, pending, want)
		}
		if _, err := s.IndexSearch(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		if p, err = s.QueryResults(ctx, "w", ResultQuery{Search: search}); err != nil {
			t.Fatal(err)
		}
		if p.Total != want || len(p.Results) != want || indexed(search) != int64(want) || *p.SearchIndex != (SearchIndexState{}) {
			t.Errorf("search %q: total %d, %d results, %d in the index, index %+v; want %d",
				search, p.Total, len(p.Results), indexed(search), p.SearchIndex, want)
		}
	}
	check("ALPHA", 1)
	check("gamma", 1)
	check("beta", 1)
	if _, err := s.ReopenRun(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	check("gamma", 0)
	if err := s.SaveResult(ctx, res("t2", "gamma again", TestPassed)); err != nil {
		t.Fatal(err)
	}
	check("gamma", 1)
	if _, err := s.db.ExecContext(ctx, `UPDATE "run_results" SET "response" = 'delta' WHERE "test_id" = 't1'`); err != nil {
		t.Fatal(err)
	}
	check("alpha", 0)
	check("delta", 1)
	if _, err := s.db.ExecContext(ctx, `UPDATE "run_results" SET "prompt" = 'epsilon' WHERE "test_id" = 't3'`); err != nil {
		t.Fatal(err)
	}
	check("beta", 1)
	check("epsilon", 1)
	if err := s.Delete(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	for _, search := range []string{"delta", "gamma", "epsilon", "t1"} {
		if n := indexed(search); n != 0 {
			t.Errorf("%q: %d rows left in the index after the run's deletion", search, n)
		}
	}
}

// TestSearchMigrationFrom030 opens a copy of the database 0.3.0 made
// (runs schema 6, no search index): the migration indexes the results
// stored before, and searching them goes through the index, finding what
// the LIKE scan finds.
func TestSearchMigrationFrom030(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := dbtest.OpenFixture(t, "gauntlet-0.3.0.db")
	if v, err := store.Version(ctx, db, "runs"); v != 6 || err != nil {
		t.Fatalf("the fixture's runs schema = %d, %v; want 6", v, err)
	}
	s, err := Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the 0.3.0 database: %v", err)
	}
	if v, err := store.Version(ctx, db, "runs"); v != len(migrations) || err != nil {
		t.Fatalf("runs schema after opening = %d, %v; want %d", v, err, len(migrations))
	}
	list, _, err := s.List(ctx, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var repeats string
	for _, in := range list {
		if in.ModelName == "fixture-repeats" && in.RescoredFrom == "" {
			repeats = in.RunID
		}
	}
	if repeats == "" {
		t.Fatal("no run fixture-repeats in the fixture")
	}
	var all int
	if err := s.db.NewSelect().Model((*resultRow)(nil)).ColumnExpr("COUNT(*)").Scan(ctx, &all); err != nil {
		t.Fatal(err)
	}
	var inIndex int
	if err := s.db.NewSelect().TableExpr(`"run_results_search"`).ColumnExpr("COUNT(*)").Scan(ctx, &inIndex); err != nil {
		t.Fatal(err)
	}
	if all == 0 || inIndex != all {
		t.Errorf("the index holds %d rows; the fixture %d results", inIndex, all)
	}
	for _, search := range []string{"paris", "PARIS", "Paris"} {
		p, err := s.QueryResults(ctx, repeats, ResultQuery{Search: search})
		if err != nil {
			t.Fatal(err)
		}
		n, _, indexed, err := s.countSearch(ctx, repeats, ResultQuery{Search: search}, Info{TotalTests: 26}, false)
		if err != nil || !indexed {
			t.Fatalf("count through the index: %v, indexed %v", err, indexed)
		}
		want := likeIDs(t, s, repeats, ResultQuery{Search: search})
		if p.Total != 4 || len(p.Results) != 4 || n != 4 || len(want) != 4 {
			t.Errorf("search %q in fixture-repeats: total %d, %d results, %d through the index, %d by LIKE; want 4",
				search, p.Total, len(p.Results), n, len(want))
		}
		for _, r := range p.Results {
			if !strings.Contains(strings.ToLower(r.Prompt+"\n"+r.Response+"\n"+r.TestID), "paris") {
				t.Errorf("search %q found %s: %q / %q", search, r.TestID, r.Prompt, r.Response)
			}
		}
	}
}
