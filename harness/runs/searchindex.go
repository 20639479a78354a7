package runs

// The search index kept apart from the result path (runs migration 15,
// SQLite). Storing a result used to index its text in the same
// transaction, by a trigger: every trigram of its prompt, response and
// test id, on the path every result takes. Results are now stored alone,
// and an indexer adds them to the index later, oldest first, many in one
// transaction (IndexSearch, KeepSearchIndexed). The index holds every
// result up to the one it names (run_results_search_state); a result
// stored after is "pending". A search of a run is answered from the index
// for the results it holds, and by reading the pending ones (the LIKE
// scan that short searches use, over the few results of the last moment:
// ids only grow, so they are the table's last rows). A run none of whose
// results the index holds yet is searched by the LIKE scan alone, as a
// short search is. Either way a search finds every result stored, and its
// answer says how many of the run's results were pending
// (SearchIndexState).
//
// Ids only grow (AUTOINCREMENT never gives an id again), and SQLite
// writes one transaction at a time, so a result stored after the indexer
// read the newest id always has a greater one: nothing is skipped. The
// delete and update triggers touch the index only for results it holds.
//
// On PostgreSQL the trigram indexes of migration 7 are the table's own
// indexes, kept by PostgreSQL as rows are written (GIN's pending list
// already defers their work): nothing is pending there, and the indexer
// does nothing.

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// searchIndexedThrough is the newest result id the index holds.
const searchIndexedThrough = `(SELECT "indexed_through" FROM "run_results_search_state")`

// migrateSearchLag is runs migration 15 on SQLite: the search index is no
// longer kept by a trigger on every insert of a result, but by the
// indexer. What is stored at the migration is indexed already: the
// watermark starts at the newest result.
func migrateSearchLag(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`DROP TRIGGER "run_results_search_insert"`,
		`DROP TRIGGER "run_results_search_delete"`,
		`DROP TRIGGER "run_results_search_update"`,
		`CREATE TABLE "run_results_search_state" ("id" INTEGER NOT NULL PRIMARY KEY CHECK ("id" = 1), "indexed_through" INTEGER NOT NULL)`,
		`INSERT INTO "run_results_search_state" ("id", "indexed_through") VALUES (1, COALESCE((SELECT MAX("id") FROM "run_results"), 0))`,
		`CREATE TRIGGER "run_results_search_delete" AFTER DELETE ON "run_results" WHEN old."id" <= `+searchIndexedThrough+` BEGIN
			DELETE FROM "run_results_search" WHERE "rowid" = old."id"; END`,
		// An indexed result whose text changes is indexed again; one not
		// indexed yet is left to the indexer.
		`CREATE TRIGGER "run_results_search_update" AFTER UPDATE OF "id", "prompt", "response", "test_id" ON "run_results"
			WHEN old."id" <= `+searchIndexedThrough+` BEGIN
			DELETE FROM "run_results_search" WHERE "rowid" = old."id";
			`+indexInsert+indexSelect("new")+` WHERE new."id" <= `+searchIndexedThrough+`; END`,
	)
}

// indexInsert and indexSelect make the insert of results' text into the
// index: indexSelect selects it from the row named ref ("new" in a
// trigger, "r" in the indexer's select).
const indexInsert = `INSERT INTO "run_results_search" ("rowid", "prompt", "response", "test_id") `

func indexSelect(ref string) string {
	return `SELECT ` + ref + `."id", ` + searchableExpr(ref+`."prompt"`) + `, ` + searchableExpr(ref+`."response"`) + `, ` +
		searchableExpr(ref+`."test_id"`)
}

// SearchIndexChunk is how many results IndexSearch indexes at most in one
// transaction when KeepSearchIndexed calls it: large enough that each
// result costs little, small enough that a result writer waits for it
// only briefly.
const SearchIndexChunk = 2000

// IndexSearch adds up to limit results not yet in the search index to it,
// the oldest first, in one transaction, and returns how many it added. 0
// means the index holds every result (and always on PostgreSQL). Any
// process may call it at any time: two calls at once index each result
// once.
func (s *Store) IndexSearch(ctx context.Context, limit int) (int, error) {
	if sqldb.IsPG(s.db) || limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var from int64
		var to sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT `+searchIndexedThrough+`, (SELECT MAX("id") FROM (SELECT "id" FROM "run_results"
			WHERE "id" > `+searchIndexedThrough+` ORDER BY "id" LIMIT ?))`, limit).Scan(&from, &to); err != nil {
			return err
		}
		if !to.Valid {
			return nil
		}
		res, err := tx.ExecContext(ctx, indexInsert+indexSelect("r")+` FROM "run_results" r WHERE r."id" > ? AND r."id" <= ?`, from, to.Int64)
		if err != nil {
			return err
		}
		added, err := res.RowsAffected()
		if err != nil {
			return err
		}
		n = int(added)
		_, err = tx.ExecContext(ctx, `UPDATE "run_results_search_state" SET "indexed_through" = ?`, to.Int64)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("index results for search: %w", err)
	}
	return n, nil
}

// SearchIndexState says how far the search index has caught up with a
// run's results (ResultPage.SearchIndex).
type SearchIndexState struct {
	// Pending counts the run's results not in the index yet. A search
	// reads them one by one (all of the run's, when the index holds none
	// of them): it finds the same results, slower.
	Pending int
}

// pendingOf counts the run's results past the index's watermark: a walk
// of the table from it, which the indexer keeps short.
func (s *Store) pendingOf(ctx context.Context, runID string) (int, error) {
	if sqldb.IsPG(s.db) {
		return 0, nil
	}
	var n int
	// + keeps SQLite on the table's ids rather than an index of runs.
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM "run_results" WHERE "id" > `+searchIndexedThrough+` AND +"run_id" = ?`, runID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read results of %q: %w", runID, err)
	}
	return n, nil
}

// indexedThrough is the newest result id the search index holds.
func (s *Store) indexedThrough(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.QueryRowContext(ctx, `SELECT `+searchIndexedThrough).Scan(&id); err != nil {
		return 0, fmt.Errorf("read the search index's state: %w", err)
	}
	return id, nil
}

// searchIndexEvery is how often KeepSearchIndexed looks for results to
// index once it has caught up: the most a result waits before the index
// holds it, when the indexer keeps up.
const searchIndexEvery = 500 * time.Millisecond

// KeepSearchIndexed indexes results for search in the background, in
// chunks of SearchIndexChunk, until ctx ends: whatever any process
// stores in the database is in the index about searchIndexEvery later.
// A long-lived process that answers searches (the server) runs it; a
// command that only runs an evaluation leaves its results to the next
// one, and their searches read them meanwhile. It returns at once; the
// returned function stops the indexer and waits for it. Errors are
// logged (to log, when not nil), at most once a minute, and tried again.
func (s *Store) KeepSearchIndexed(ctx context.Context, log *slog.Logger) (stop func()) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var logged time.Time
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n, err := s.IndexSearch(ctx, SearchIndexChunk)
			switch {
			case err != nil && ctx.Err() == nil && time.Since(logged) > time.Minute:
				log.Warn("index results for search (searches read the results not indexed meanwhile)", slog.Any("error", err))
				logged = time.Now()
			case err == nil && n == SearchIndexChunk:
				t.Reset(0) // more are waiting
				continue
			}
			t.Reset(searchIndexEvery)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
