package runs

// The full-text search of results, and all of its SQL that is particular
// to SQLite: the index table and the triggers that keep it in step with
// run_results (runs migration 7), the LIKE scan with SQLite's case rules,
// and the queries of the index. The rest of the store reaches the search
// only through the functions of this file, so that a port of the store to
// another database replaces them and nothing else.

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// minIndexedSearch is the shortest search, in characters, that the index
// answers: it holds every three-character sequence of the text (its
// trigrams), so a shorter string has none to look up, and is found by
// reading the run's results instead.
const minIndexedSearch = 3

// searchableExpr is the text the index holds of a column: what a LIKE
// pattern sees of it (the text up to its first NUL character, since LIKE
// reads no further) with ASCII letters in lower case (lower() changes no
// other letter and leaves every other byte as it is). Searches are put in
// lower case the same way, so the index ignores ASCII case exactly as
// LIKE does and no other; it is case-sensitive itself.
func searchableExpr(col string) string {
	blob := `CAST(` + col + ` AS BLOB)`
	return `lower(CAST(CASE WHEN instr(` + blob + `, x'00') > 0 THEN substr(` + blob + `, 1, instr(` + blob + `, x'00') - 1) ELSE ` + blob + ` END AS TEXT))`
}

// indexRow is the insert of one result's text into the index, from the
// row named by ref ("new" in a trigger, "r" in the back-fill).
func indexRow(ref string) string {
	return `INSERT INTO "run_results_search" ("rowid", "prompt", "response", "test_id") VALUES (` + ref + `."id", ` +
		searchableExpr(ref+`."prompt"`) + `, ` + searchableExpr(ref+`."response"`) + `, ` + searchableExpr(ref+`."test_id"`) + `)`
}

// migrateSearch creates the search index of results (runs migration 7):
// an FTS5 table with the trigram tokenizer over each result's prompt,
// response and test id, keyed by the result's id. It keeps no copy of the
// text (a contentless table) and deletes by id (contentless_delete).
// Triggers keep it in step with every insert, delete and change of those
// columns, whoever makes them; the results already stored are indexed
// here.
func migrateSearch(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`CREATE VIRTUAL TABLE "run_results_search" USING fts5("prompt", "response", "test_id",
			content='', contentless_delete=1, tokenize='trigram case_sensitive 1')`,
		`CREATE TRIGGER "run_results_search_insert" AFTER INSERT ON "run_results" BEGIN `+indexRow("new")+`; END`,
		`CREATE TRIGGER "run_results_search_delete" AFTER DELETE ON "run_results" BEGIN
			DELETE FROM "run_results_search" WHERE "rowid" = old."id"; END`,
		`CREATE TRIGGER "run_results_search_update" AFTER UPDATE OF "id", "prompt", "response", "test_id" ON "run_results" BEGIN
			DELETE FROM "run_results_search" WHERE "rowid" = old."id"; `+indexRow("new")+`; END`,
		backfill(),
	)
}

// migrateSearchPG is runs migration 7 on PostgreSQL: nothing yet. There
// a search is the ILIKE scan (searchIndexed); an index of its own (pg_trgm)
// belongs in this migration's PostgreSQL form.
func migrateSearchPG(context.Context, bun.Tx) error { return nil }

// backfill indexes every result already stored.
func backfill() string {
	return `INSERT INTO "run_results_search" ("rowid", "prompt", "response", "test_id") SELECT r."id", ` +
		searchableExpr(`r."prompt"`) + `, ` + searchableExpr(`r."response"`) + `, ` + searchableExpr(`r."test_id"`) +
		` FROM "run_results" r`
}

// likeEscaper escapes the wildcards of LIKE (with ESCAPE '\').
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// likeSearch keeps the rows of a select of run_results whose prompt,
// response or test id contains search, read row by row: SQLite's LIKE
// ignores the case of ASCII letters only, and reads a text up to its
// first NUL character. The index holds the text so that it finds
// exactly the same rows (searchableExpr). PostgreSQL's LIKE heeds case:
// there it is ILIKE (which ignores the case of every letter), and the
// only search (no index yet: searchIndexed).
func likeSearch(sel *bun.SelectQuery, search string) *bun.SelectQuery {
	p := "%" + likeEscaper.Replace(search) + "%"
	op := "LIKE"
	if sqldb.IsPG(sel.DB()) {
		op = "ILIKE"
	}
	return sel.Where(`(prompt `+op+` ? ESCAPE '\' OR response `+op+` ? ESCAPE '\' OR test_id `+op+` ? ESCAPE '\')`, p, p, p)
}

// matchIDs selects the ids, from lo to hi, of the results whose prompt,
// response or test id contains search (searchIndexed).
func matchIDs(db bun.IDB, search string, lo, hi int64) *bun.SelectQuery {
	return db.NewSelect().TableExpr(`"run_results_search"`).ColumnExpr(`"rowid"`).
		Where(`"run_results_search" MATCH ?`, matchPhrase(search)).Where(`"rowid" BETWEEN ? AND ?`, lo, hi)
}

// countMatches counts the ids, from lo to hi, of the results whose text
// holds search (searchIndexed), stopping at most: the index alone, no row
// read.
func countMatches(ctx context.Context, db bun.IDB, search string, lo, hi, most int64) (int64, error) {
	var n int64
	err := db.NewSelect().TableExpr("(?) AS m", matchIDs(db, search, lo, hi).Limit(most)).ColumnExpr("COUNT(*)").Scan(ctx, &n)
	return n, err
}

// countMatchesKept counts the results of a run, among ids lo to hi, whose
// text holds q's search (searchIndexed) and that q's other filters keep:
// each match the index finds, its row read for the filters. CROSS JOIN
// keeps SQLite from the other way round, which would ask the index once
// for every result of the run.
func countMatchesKept(ctx context.Context, db bun.IDB, runID string, q ResultQuery, lo, hi int64) (int64, error) {
	sel := db.NewSelect().TableExpr(`"run_results_search" AS f CROSS JOIN "run_results" AS r ON r."id" = f."rowid"`).
		Where(`f."run_results_search" MATCH ?`, matchPhrase(q.Search)).Where(`f."rowid" BETWEEN ? AND ?`, lo, hi).
		Where(`r."run_id" = ?`, runID)
	return filterFields(sel, q, "r.").Count(ctx)
}

// searchIndexed says whether the index answers a search: one of at
// least minIndexedSearch characters, on SQLite (PostgreSQL has no search
// index yet: migration 7 leaves it as it was, and every search there is
// the ILIKE scan).
func searchIndexed(db bun.IDB, search string) bool {
	return !sqldb.IsPG(db) && utf8.RuneCountInString(search) >= minIndexedSearch
}

// matchPhrase is the FTS5 query that finds a search string: one phrase,
// in double quotes (a quote inside doubled), so that nothing in it is
// read as query syntax (AND, NEAR, *, column names…), its ASCII letters
// in lower case as the index holds them.
func matchPhrase(search string) string {
	return `"` + strings.ReplaceAll(asciiLower(search), `"`, `""`) + `"`
}

// asciiLower puts ASCII letters in lower case and leaves every other byte
// as it is, as SQLite's lower() does.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
