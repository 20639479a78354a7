package runs

// The full-text search of results, and all of its SQL that is particular
// to one database: on SQLite the FTS5 index table and the triggers that
// keep it in step with run_results (runs migration 7), the LIKE scan with
// SQLite's case rules, and the queries of the index; on PostgreSQL the
// trigram indexes of the same migration and the LIKE that matches by the
// same rules. The rest of the store reaches the search only through the
// functions of this file.

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

// migrateSearch creates the search index of results (runs migration 7):
// an FTS5 table with the trigram tokenizer over each result's prompt,
// response and test id, keyed by the result's id. It keeps no copy of the
// text (a contentless table) and deletes by id (contentless_delete).
// Triggers keep it in step with every insert, delete and change of those
// columns, whoever makes them; the results already stored are indexed
// here. (Migration 15 moved the inserts' indexing off the result path:
// see searchindex.go.)
func migrateSearch(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`CREATE VIRTUAL TABLE "run_results_search" USING fts5("prompt", "response", "test_id",
			content='', contentless_delete=1, tokenize='trigram case_sensitive 1')`,
		`CREATE TRIGGER "run_results_search_insert" AFTER INSERT ON "run_results" BEGIN `+indexInsert+indexSelect("new")+`; END`,
		`CREATE TRIGGER "run_results_search_delete" AFTER DELETE ON "run_results" BEGIN
			DELETE FROM "run_results_search" WHERE "rowid" = old."id"; END`,
		`CREATE TRIGGER "run_results_search_update" AFTER UPDATE OF "id", "prompt", "response", "test_id" ON "run_results" BEGIN
			DELETE FROM "run_results_search" WHERE "rowid" = old."id"; `+indexInsert+indexSelect("new")+`; END`,
		backfill(),
	)
}

// asciiUpper and asciiLowerSet are the letters translate() maps on
// PostgreSQL to ignore the case of ASCII letters and no other, as
// SQLite's LIKE does.
const (
	asciiUpper    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	asciiLowerSet = "abcdefghijklmnopqrstuvwxyz"
)

// pgSearchable is the text a search sees of a column on PostgreSQL: the
// column with its ASCII letters in lower case. translate() is immutable,
// so an index can hold it.
func pgSearchable(col string) string {
	return `translate(` + col + `, '` + asciiUpper + `', '` + asciiLowerSet + `')`
}

// pgSearchColumns are the columns a search reads.
var pgSearchColumns = []string{"prompt", "response", "test_id"}

// migrateSearchPG is runs migration 7 on PostgreSQL: trigram indexes
// (the pg_trgm extension, shipped with PostgreSQL) over each searched
// column as a search sees it (pgSearchable), which answer the LIKE of a
// search of three characters or more. Creating the extension needs the
// right to (a database owner has it since PostgreSQL 13); without it the
// migration still succeeds, with no index: every search then reads the
// run's results, slower and with the same answers.
func migrateSearchPG(ctx context.Context, tx bun.Tx) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT "search_extension"`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pg_trgm`); err != nil {
		_, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT "search_extension"`)
		return rerr
	}
	// The extension may live in any schema (another database user's
	// search_path put it there): its operator class is named with it.
	var schema string
	if err := tx.NewRaw(`SELECT n.nspname FROM pg_opclass c JOIN pg_namespace n ON n.oid = c.opcnamespace
		JOIN pg_am a ON a.oid = c.opcmethod WHERE c.opcname = 'gin_trgm_ops' AND a.amname = 'gin' LIMIT 1`).Scan(ctx, &schema); err != nil {
		return err
	}
	for _, col := range pgSearchColumns {
		if _, err := tx.ExecContext(ctx, `CREATE INDEX "run_results_search_`+col+`" ON "run_results" USING gin (`+
			pgSearchable(`"`+col+`"`)+` ?)`, bun.Safe(`"`+strings.ReplaceAll(schema, `"`, `""`)+`".gin_trgm_ops`)); err != nil {
			return err
		}
	}
	return nil
}

// backfill indexes every result already stored.
func backfill() string {
	return indexInsert + indexSelect("r") + ` FROM "run_results" r`
}

// likeEscaper escapes the wildcards of LIKE (with ESCAPE '\').
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// likeSearch keeps the rows of a select of run_results whose prompt,
// response or test id contains search, ignoring the case of ASCII letters
// only. SQLite's LIKE does so itself, and reads a text up to its first NUL
// character; the index holds the text so that it finds exactly the same
// rows (searchableExpr). PostgreSQL's LIKE heeds case: there the columns
// and the pattern have their ASCII letters put in lower case
// (pgSearchable), which the trigram indexes of migration 7 answer.
func likeSearch(sel *bun.SelectQuery, search string) *bun.SelectQuery {
	if sqldb.IsPG(sel.DB()) {
		p := "%" + likeEscaper.Replace(asciiLower(search)) + "%"
		return sel.Where(`(`+pgSearchable("prompt")+` LIKE ? ESCAPE '\' OR `+pgSearchable("response")+` LIKE ? ESCAPE '\' OR `+
			pgSearchable("test_id")+` LIKE ? ESCAPE '\')`, p, p, p)
	}
	p := "%" + likeEscaper.Replace(search) + "%"
	return sel.Where(`(prompt LIKE ? ESCAPE '\' OR response LIKE ? ESCAPE '\' OR test_id LIKE ? ESCAPE '\')`, p, p, p)
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

// searchIndexed says whether the FTS5 index answers a search: one of at
// least minIndexedSearch characters, on SQLite. On PostgreSQL every
// search is likeSearch, which the planner answers from the trigram
// indexes when they help.
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
