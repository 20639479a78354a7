package runs

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// migrations are the runs tables' schema versions. Released migrations
// are never edited; a change is a new migration at the end.
var migrations = []sqldb.Migration{
	{Version: 1, Name: "runs, results and cells as released in 0.1.0", Up: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE IF NOT EXISTS "runs" ("run_id" VARCHAR NOT NULL, "seq" INTEGER NOT NULL, "started_at" VARCHAR NOT NULL, "completed_at" VARCHAR, "model_name" VARCHAR NOT NULL, "model" VARCHAR NOT NULL, "status" VARCHAR NOT NULL, "overall_score" DOUBLE PRECISION, "total_tokens" INTEGER NOT NULL, "total_duration_ms" INTEGER NOT NULL, "total_tests" INTEGER NOT NULL, "domains" text, PRIMARY KEY ("run_id"))`,
			`CREATE TABLE IF NOT EXISTS "run_results" ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "run_id" VARCHAR NOT NULL, "test_id" VARCHAR NOT NULL, "domain" VARCHAR NOT NULL, "level" INTEGER NOT NULL, "name" VARCHAR NOT NULL, "prompt" VARCHAR NOT NULL, "response" VARCHAR NOT NULL, "expected" text, "score" DOUBLE PRECISION NOT NULL, "status" VARCHAR NOT NULL, "details" text, "duration_ms" INTEGER NOT NULL, "model_name" VARCHAR NOT NULL, "system_prompt" VARCHAR NOT NULL, "prompt_tokens" INTEGER NOT NULL, "completion_tokens" INTEGER NOT NULL, "created_at" VARCHAR NOT NULL)`,
			`CREATE TABLE IF NOT EXISTS "run_cells" ("run_id" VARCHAR NOT NULL, "domain" VARCHAR NOT NULL, "level" INTEGER NOT NULL, "position" INTEGER NOT NULL, "status" VARCHAR NOT NULL, "score" DOUBLE PRECISION, "duration_ms" INTEGER, "tests" INTEGER NOT NULL, "done" INTEGER NOT NULL, "passed" INTEGER NOT NULL, PRIMARY KEY ("run_id", "domain", "level"))`,
			`CREATE INDEX IF NOT EXISTS "run_results_cell" ON "run_results" ("run_id", "domain", "level", "id")`,
			`CREATE INDEX IF NOT EXISTS "runs_seq" ON "runs" ("seq")`,
		)
	}, Postgres: pgBaseline},
	{Version: 2, Name: "errors apart from failures, partial cells, provenance, one result per test", Up: migrateCounts,
		Postgres: sqldb.AlreadyInBaseline},
	{Version: 3, Name: "repeats: one result per test and repeat", Up: migrateRepeats, Postgres: sqldb.AlreadyInBaseline},
	{Version: 4, Name: "cell standard error and 95% interval", Up: func(ctx context.Context, tx bun.Tx) error {
		// Cells stored before have none: they read as null.
		return sqldb.ExecAll(ctx, tx,
			`ALTER TABLE "run_cells" ADD COLUMN "stderr" DOUBLE PRECISION`,
			`ALTER TABLE "run_cells" ADD COLUMN "ci95_low" DOUBLE PRECISION`,
			`ALTER TABLE "run_cells" ADD COLUMN "ci95_high" DOUBLE PRECISION`,
		)
	}, Postgres: sqldb.AlreadyInBaseline},
	{Version: 5, Name: "response cache and rescored runs", Up: func(ctx context.Context, tx bun.Tx) error {
		// Runs stored before had no cache and were never rescored: 0 and ''.
		return sqldb.ExecAll(ctx, tx,
			`ALTER TABLE "runs" ADD COLUMN "cache_hits" INTEGER NOT NULL DEFAULT 0`,
			`ALTER TABLE "runs" ADD COLUMN "rescored_from" VARCHAR NOT NULL DEFAULT ''`,
			`CREATE TABLE "response_cache" ("key" VARCHAR NOT NULL, "content" BLOB NOT NULL, "tool_calls" text, "model" VARCHAR NOT NULL, "finish_reason" VARCHAR NOT NULL, "prompt_tokens" INTEGER NOT NULL, "completion_tokens" INTEGER NOT NULL, "total_tokens" INTEGER NOT NULL, "created_at" VARCHAR NOT NULL, PRIMARY KEY ("key"))`,
		)
	}, Postgres: sqldb.AlreadyInBaseline},
	{Version: 6, Name: "transcripts and calls of results; indexes to filter and sort a run's results", Up: func(ctx context.Context, tx bun.Tx) error {
		// Results stored before have neither: null, read as none.
		return sqldb.ExecAll(ctx, tx,
			`ALTER TABLE "run_results" ADD COLUMN "transcript" text`,
			`ALTER TABLE "run_results" ADD COLUMN "calls" text`,
			`CREATE INDEX "run_results_score" ON "run_results" ("run_id", "score", "id")`,
			`CREATE INDEX "run_results_duration" ON "run_results" ("run_id", "duration_ms", "id")`,
			`CREATE INDEX "run_results_status" ON "run_results" ("run_id", "status", "id")`,
		)
	}, Postgres: sqldb.AlreadyInBaseline},
	{Version: 7, Name: "full-text search index of results' prompts, responses and test ids", Up: migrateSearch,
		Postgres: migrateSearchPG},
	{Version: 8, Name: "a run's definitions stored test by test", Up: func(ctx context.Context, tx bun.Tx) error {
		// Sets stored before keep their tests inside their blob: tests is
		// null for them.
		return sqldb.ExecAll(ctx, tx,
			`ALTER TABLE "run_definitions" ADD COLUMN "tests" INTEGER`,
			`CREATE TABLE "run_definition_tests" ("hash" VARCHAR NOT NULL, "test_id" VARCHAR NOT NULL, "position" INTEGER NOT NULL, "domain_id" VARCHAR NOT NULL, "level" INTEGER NOT NULL, "data" text NOT NULL, PRIMARY KEY ("hash", "test_id"))`,
			`CREATE INDEX "run_definition_tests_order" ON "run_definition_tests" ("hash", "position")`,
			`CREATE INDEX "run_definition_tests_domain" ON "run_definition_tests" ("hash", "domain_id", "position")`,
		)
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`ALTER TABLE "run_definitions" ADD COLUMN "tests" BIGINT`,
			`CREATE TABLE "run_definition_tests" ("hash" TEXT NOT NULL, "test_id" TEXT NOT NULL, "position" BIGINT NOT NULL,
				"domain_id" TEXT NOT NULL, "level" INTEGER NOT NULL, "data" TEXT NOT NULL, PRIMARY KEY ("hash", "test_id"))`,
			`CREATE INDEX "run_definition_tests_order" ON "run_definition_tests" ("hash", "position")`,
			`CREATE INDEX "run_definition_tests_domain" ON "run_definition_tests" ("hash", "domain_id", "position")`,
		)
	}},
	{Version: 9, Name: "cell retrieval figures: results with details.retrieval, their recall sum and hits", Up: func(ctx context.Context, tx bun.Tx) error {
		// Cells stored before measured no retrieval: 0 tests, read as none.
		return sqldb.ExecAll(ctx, tx,
			`ALTER TABLE "run_cells" ADD COLUMN "retrieval_tests" INTEGER NOT NULL DEFAULT 0`,
			`ALTER TABLE "run_cells" ADD COLUMN "retrieval_recall" DOUBLE PRECISION NOT NULL DEFAULT 0`,
			`ALTER TABLE "run_cells" ADD COLUMN "retrieval_hits" INTEGER NOT NULL DEFAULT 0`,
		)
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`ALTER TABLE "run_cells" ADD COLUMN "retrieval_tests" BIGINT NOT NULL DEFAULT 0`,
			`ALTER TABLE "run_cells" ADD COLUMN "retrieval_recall" DOUBLE PRECISION NOT NULL DEFAULT 0`,
			`ALTER TABLE "run_cells" ADD COLUMN "retrieval_hits" BIGINT NOT NULL DEFAULT 0`,
		)
	}},
	{Version: 10, Name: "indexes of results by cell and status", Up: migrateCellStatus, Postgres: migrateCellStatus},
	{Version: 11, Name: "runs whose cell counters are kept in step with their results", Up: migrateCounted, Postgres: migrateCounted},
	{Version: 12, Name: "process leases: the process that owns a run, and when a run was resumed", Up: func(ctx context.Context, tx bun.Tx) error {
		// Runs stored before have no owner (''): left running, they are
		// closed by the next process, as before. Never resumed: NULL.
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE "processes" ("id" VARCHAR NOT NULL, "pid" INTEGER NOT NULL, "host" VARCHAR NOT NULL, "kind" VARCHAR NOT NULL, "command" VARCHAR NOT NULL, "definitions" VARCHAR NOT NULL, "started_at" VARCHAR NOT NULL, "heartbeat_at" VARCHAR NOT NULL, "timeout_ms" BIGINT NOT NULL, PRIMARY KEY ("id"))`,
			`ALTER TABLE "runs" ADD COLUMN "owner" VARCHAR NOT NULL DEFAULT ''`,
			`ALTER TABLE "runs" ADD COLUMN "resumed" text`,
		)
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE "processes" ("id" TEXT NOT NULL, "pid" INTEGER NOT NULL, "host" TEXT NOT NULL, "kind" TEXT NOT NULL, "command" TEXT NOT NULL, "definitions" TEXT NOT NULL, "started_at" TEXT NOT NULL, "heartbeat_at" TEXT NOT NULL, "timeout_ms" BIGINT NOT NULL, PRIMARY KEY ("id"))`,
			`ALTER TABLE "runs" ADD COLUMN "owner" TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE "runs" ADD COLUMN "resumed" TEXT`,
		)
	}},
	{Version: 13, Name: "what results, cells and runs cost, and their four token counts", Up: func(ctx context.Context, tx bun.Tx) error {
		return migrateSpend(ctx, tx, "INTEGER")
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return migrateSpend(ctx, tx, "BIGINT")
	}},
	{Version: 14, Name: "results' time to first token and output speed; cells' latency percentiles", Up: func(ctx context.Context, tx bun.Tx) error {
		return migrateLatency(ctx, tx, "INTEGER")
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return migrateLatency(ctx, tx, "BIGINT")
	}},
	{Version: 15, Name: "the search index kept by an indexer after results are stored, not by a trigger as each is stored", Up: migrateSearchLag,
		// PostgreSQL's trigram indexes are kept as rows are written.
		Postgres: func(context.Context, bun.Tx) error { return nil }},
}

// migrateSpend adds the cost and the cached and reasoning tokens of
// results, and the spend counters of cells and runs (spendColumns).
// Results stored before have no cost (null) and no cached or reasoning
// tokens (0); their cells and runs count their prompt and completion
// tokens, summed here once, and no cost (null).
func migrateSpend(ctx context.Context, tx bun.Tx, bigint string) error {
	stmts := []string{
		`ALTER TABLE "run_results" ADD COLUMN "cached_tokens" ` + bigint + ` NOT NULL DEFAULT 0`,
		`ALTER TABLE "run_results" ADD COLUMN "reasoning_tokens" ` + bigint + ` NOT NULL DEFAULT 0`,
		`ALTER TABLE "run_results" ADD COLUMN "cost_usd" DOUBLE PRECISION`,
		`ALTER TABLE "run_results" ADD COLUMN "judge_cost_usd" DOUBLE PRECISION`,
	}
	for _, table := range []string{"run_cells", "runs"} {
		stmts = append(stmts,
			`ALTER TABLE "`+table+`" ADD COLUMN "cost_usd" DOUBLE PRECISION NOT NULL DEFAULT 0`,
			`ALTER TABLE "`+table+`" ADD COLUMN "judge_cost_usd" DOUBLE PRECISION NOT NULL DEFAULT 0`,
			`ALTER TABLE "`+table+`" ADD COLUMN "priced" `+bigint+` NOT NULL DEFAULT 0`,
			`ALTER TABLE "`+table+`" ADD COLUMN "prompt_tokens" `+bigint+` NOT NULL DEFAULT 0`,
			`ALTER TABLE "`+table+`" ADD COLUMN "completion_tokens" `+bigint+` NOT NULL DEFAULT 0`,
			`ALTER TABLE "`+table+`" ADD COLUMN "cached_tokens" `+bigint+` NOT NULL DEFAULT 0`,
			`ALTER TABLE "`+table+`" ADD COLUMN "reasoning_tokens" `+bigint+` NOT NULL DEFAULT 0`,
		)
	}
	const cellOf = `FROM "run_results" r WHERE r."run_id" = "run_cells"."run_id" AND r."domain" = "run_cells"."domain" AND r."level" = "run_cells"."level"`
	const runOf = `FROM "run_results" r WHERE r."run_id" = "runs"."run_id"`
	stmts = append(stmts,
		`UPDATE "run_cells" SET "prompt_tokens" = (SELECT COALESCE(SUM(r."prompt_tokens"), 0) `+cellOf+`),
			"completion_tokens" = (SELECT COALESCE(SUM(r."completion_tokens"), 0) `+cellOf+`)`,
		`UPDATE "runs" SET "prompt_tokens" = (SELECT COALESCE(SUM(r."prompt_tokens"), 0) `+runOf+`),
			"completion_tokens" = (SELECT COALESCE(SUM(r."completion_tokens"), 0) `+runOf+`)`,
	)
	return sqldb.ExecAll(ctx, tx, stmts...)
}

// migrateCounted adds the runs' "counted" flag: true for a run whose
// cells' done, passed, failed and errors, and the sum of their scored
// results' scores (the cells' new "score_sum"), are at every commit those
// of its stored results by cell and status (see Store.SaveBatch), so that
// a count of its results by domain, level and status, or its mean score,
// is a sum over its cells. Runs stored before made no such promise: they
// keep false and are counted from their results, as before, until resumed
// (ReopenRun recounts their cells and sets it). The statements are the
// same on both databases.
func migrateCounted(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx, `ALTER TABLE "runs" ADD COLUMN "counted" BOOLEAN NOT NULL DEFAULT FALSE`,
		`ALTER TABLE "run_cells" ADD COLUMN "score_sum" DOUBLE PRECISION NOT NULL DEFAULT 0`)
}

// migrateCellStatus adds the indexes that a run's results filtered by
// domain and status (and level) are counted and read through: (run_id,
// domain, level, status, id) and the same with the score before the id.
// A domain's results of one status are counted from a range of the
// first, checked entry by entry, never a row read; a cell's of one
// status are one range of each, in storage order and by score. The
// statements are the same on both databases.
func migrateCellStatus(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`CREATE INDEX "run_results_cell_status" ON "run_results" ("run_id", "domain", "level", "status", "id")`,
		`CREATE INDEX "run_results_cell_score" ON "run_results" ("run_id", "domain", "level", "status", "score", "id")`)
}

// pgBaseline creates the runs tables on PostgreSQL as they are at version
// 6. Counts, tokens and durations are BIGINT: a run of a million tests
// passes the 32-bit range in tokens and in milliseconds.
func pgBaseline(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`CREATE TABLE "runs" ("run_id" TEXT NOT NULL, "seq" BIGINT NOT NULL, "started_at" TEXT NOT NULL, "completed_at" TEXT,
			"model_name" TEXT NOT NULL, "model" TEXT NOT NULL, "status" TEXT NOT NULL, "overall_score" DOUBLE PRECISION,
			"total_tokens" BIGINT NOT NULL, "total_duration_ms" BIGINT NOT NULL, "total_tests" BIGINT NOT NULL, "domains" TEXT,
			"done_tests" BIGINT NOT NULL DEFAULT 0, "passed" BIGINT NOT NULL DEFAULT 0, "failed" BIGINT NOT NULL DEFAULT 0,
			"errors" BIGINT NOT NULL DEFAULT 0, "error" TEXT NOT NULL DEFAULT '', "config" TEXT,
			"definitions_hash" TEXT NOT NULL DEFAULT '', "cache_hits" BIGINT NOT NULL DEFAULT 0,
			"rescored_from" TEXT NOT NULL DEFAULT '', PRIMARY KEY ("run_id"))`,
		`CREATE TABLE "run_results" ("id" BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "run_id" TEXT NOT NULL,
			"test_id" TEXT NOT NULL, "domain" TEXT NOT NULL, "level" INTEGER NOT NULL, "name" TEXT NOT NULL,
			"prompt" TEXT NOT NULL, "response" TEXT NOT NULL, "expected" TEXT, "score" DOUBLE PRECISION NOT NULL,
			"status" TEXT NOT NULL, "details" TEXT, "duration_ms" BIGINT NOT NULL, "model_name" TEXT NOT NULL,
			"system_prompt" TEXT NOT NULL, "prompt_tokens" BIGINT NOT NULL, "completion_tokens" BIGINT NOT NULL,
			"created_at" TEXT NOT NULL, "repeat" INTEGER NOT NULL DEFAULT 0, "transcript" TEXT, "calls" TEXT)`,
		`CREATE TABLE "run_cells" ("run_id" TEXT NOT NULL, "domain" TEXT NOT NULL, "level" INTEGER NOT NULL,
			"position" INTEGER NOT NULL, "status" TEXT NOT NULL, "score" DOUBLE PRECISION, "duration_ms" BIGINT,
			"tests" BIGINT NOT NULL, "done" BIGINT NOT NULL, "passed" BIGINT NOT NULL, "failed" BIGINT NOT NULL DEFAULT 0,
			"errors" BIGINT NOT NULL DEFAULT 0, "stderr" DOUBLE PRECISION, "ci95_low" DOUBLE PRECISION,
			"ci95_high" DOUBLE PRECISION, PRIMARY KEY ("run_id", "domain", "level"))`,
		`CREATE TABLE "run_definitions" ("hash" TEXT NOT NULL, "data" BYTEA NOT NULL, "size" BIGINT NOT NULL,
			"created_at" TEXT NOT NULL, PRIMARY KEY ("hash"))`,
		`CREATE TABLE "response_cache" ("key" TEXT NOT NULL, "content" BYTEA NOT NULL, "tool_calls" TEXT,
			"model" TEXT NOT NULL, "finish_reason" TEXT NOT NULL, "prompt_tokens" BIGINT NOT NULL,
			"completion_tokens" BIGINT NOT NULL, "total_tokens" BIGINT NOT NULL, "created_at" TEXT NOT NULL,
			PRIMARY KEY ("key"))`,
		`CREATE INDEX "run_results_cell" ON "run_results" ("run_id", "domain", "level", "id")`,
		`CREATE UNIQUE INDEX "run_results_test_repeat" ON "run_results" ("run_id", "test_id", "repeat")`,
		`CREATE INDEX "run_results_score" ON "run_results" ("run_id", "score", "id")`,
		`CREATE INDEX "run_results_duration" ON "run_results" ("run_id", "duration_ms", "id")`,
		`CREATE INDEX "run_results_status" ON "run_results" ("run_id", "status", "id")`,
		`CREATE INDEX "runs_seq" ON "runs" ("seq")`,
		`CREATE INDEX "runs_definitions_hash" ON "runs" ("definitions_hash")`,
	)
}

// migrateRepeats numbers each result's repeat (0-based) so that a test
// asked several times in one run keeps one result per repeat. Results are
// keyed by an auto-increment id, with (run, test) unique through an index:
// the column is added (every stored result becomes repeat 0, nothing else
// changes) and the unique index is replaced by one over (run, test,
// repeat).
func migrateRepeats(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`ALTER TABLE "run_results" ADD COLUMN "repeat" INTEGER NOT NULL DEFAULT 0`,
		`DROP INDEX "run_results_test"`,
		`CREATE UNIQUE INDEX "run_results_test_repeat" ON "run_results" ("run_id", "test_id", "repeat")`,
	)
}

// migrateCounts adds the counts that keep errors apart from failures, the
// run's error and provenance, the definitions
// snapshots, and a unique result per (run, test); then recounts the runs
// and cells already stored, so that old runs read as new ones do: errors
// no longer scored as 0, and a cell an ended run left half done partial.
func migrateCounts(ctx context.Context, tx bun.Tx) error {
	if err := sqldb.ExecAll(ctx, tx,
		`ALTER TABLE "runs" ADD COLUMN "done_tests" INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE "runs" ADD COLUMN "passed" INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE "runs" ADD COLUMN "failed" INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE "runs" ADD COLUMN "errors" INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE "runs" ADD COLUMN "error" VARCHAR NOT NULL DEFAULT ''`,
		`ALTER TABLE "runs" ADD COLUMN "config" text`,
		`ALTER TABLE "runs" ADD COLUMN "definitions_hash" VARCHAR NOT NULL DEFAULT ''`,
		`ALTER TABLE "run_cells" ADD COLUMN "failed" INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE "run_cells" ADD COLUMN "errors" INTEGER NOT NULL DEFAULT 0`,
		`CREATE TABLE "run_definitions" ("hash" VARCHAR NOT NULL, "data" BLOB NOT NULL, "size" INTEGER NOT NULL, "created_at" VARCHAR NOT NULL, PRIMARY KEY ("hash"))`,
		`CREATE INDEX "runs_definitions_hash" ON "runs" ("definitions_hash")`,
		// 0.1.0 never stored two results of one test in a run; should a
		// database hold some anyway, the first is kept.
		`DELETE FROM "run_results" WHERE "id" NOT IN (SELECT MIN("id") FROM "run_results" GROUP BY "run_id", "test_id")`,
		`CREATE UNIQUE INDEX "run_results_test" ON "run_results" ("run_id", "test_id")`,
	); err != nil {
		return err
	}
	if err := recountCells(ctx, tx, ""); err != nil {
		return err
	}
	if err := recountRuns(ctx, tx, ""); err != nil {
		return err
	}
	// Finished cells of finished runs get the statuses of the new rules.
	// The pass threshold comes from the definitions cache when it still
	// has the level; otherwise the old verdict stands.
	if err := sqldb.ExecAll(ctx, tx,
		`UPDATE "run_cells" SET "status" = 'error' WHERE "done" = "tests" AND "done" > 0 AND "errors" = "done"
			AND "status" IN ('passed', 'failed')`,
		`UPDATE "run_cells" SET "status" = 'partial' WHERE "done" > 0 AND "done" < "tests"
			AND "status" IN ('passed', 'failed', 'skipped')
			AND "run_id" IN (SELECT "run_id" FROM "runs" WHERE "status" <> 'running')`,
	); err != nil {
		return err
	}
	if ok, err := sqldb.HasTable(ctx, tx, "def_levels"); err != nil || !ok {
		return err
	}
	return sqldb.ExecAll(ctx, tx,
		`UPDATE "run_cells" SET "status" = CASE WHEN "score" >= (SELECT "pass_threshold" FROM "def_levels" l
				WHERE l."domain_id" = "run_cells"."domain" AND l."level" = "run_cells"."level") THEN 'passed' ELSE 'failed' END
			WHERE "done" = "tests" AND "errors" > 0 AND "errors" < "done" AND "status" IN ('passed', 'failed')
			AND EXISTS (SELECT 1 FROM "def_levels" l WHERE l."domain_id" = "run_cells"."domain" AND l."level" = "run_cells"."level")`,
	)
}

// recountCells sets the counts and scores of the cells of one run (all
// runs when runID is empty) from the results stored: done, passed,
// failed, errors, and the score as the mean over the scored results (null
// when none was scored).
func recountCells(ctx context.Context, db bun.IDB, runID string) error {
	const of = `FROM "run_results" r WHERE r."run_id" = "run_cells"."run_id" AND r."domain" = "run_cells"."domain" AND r."level" = "run_cells"."level"`
	q := `UPDATE "run_cells" SET
		"done" = (SELECT COUNT(*) ` + of + `),
		"passed" = (SELECT COUNT(*) ` + of + ` AND r."status" = 'passed'),
		"failed" = (SELECT COUNT(*) ` + of + ` AND r."status" = 'failed'),
		"errors" = (SELECT COUNT(*) ` + of + ` AND r."status" = 'error'),
		"score" = (SELECT AVG(r."score") ` + of + ` AND r."status" IN ('passed', 'failed'))`
	var err error
	if runID == "" {
		_, err = db.ExecContext(ctx, q)
	} else {
		_, err = db.ExecContext(ctx, q+` WHERE "run_id" = ?`, runID)
	}
	return err
}

// recountCounters is recountCells and, since runs schema 11, the cells'
// score sums: every counter a counted run keeps, from its results.
func recountCounters(ctx context.Context, db bun.IDB, runID string) error {
	if err := recountCells(ctx, db, runID); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `UPDATE "run_cells" SET "score_sum" = (SELECT COALESCE(SUM(r."score"), 0) FROM "run_results" r
		WHERE r."run_id" = "run_cells"."run_id" AND r."domain" = "run_cells"."domain" AND r."level" = "run_cells"."level"
		AND r."status" IN ('passed', 'failed')) WHERE "run_id" = ?`, runID)
	return err
}

// recountRuns sets the counts of one run (all runs when runID is empty)
// from its results; a finished run's overall score becomes the mean over
// its scored results.
func recountRuns(ctx context.Context, db bun.IDB, runID string) error {
	const of = `FROM "run_results" r WHERE r."run_id" = "runs"."run_id"`
	q := `UPDATE "runs" SET
		"done_tests" = (SELECT COUNT(*) ` + of + `),
		"passed" = (SELECT COUNT(*) ` + of + ` AND r."status" = 'passed'),
		"failed" = (SELECT COUNT(*) ` + of + ` AND r."status" = 'failed'),
		"errors" = (SELECT COUNT(*) ` + of + ` AND r."status" = 'error'),
		"overall_score" = CASE WHEN "status" = 'running' THEN "overall_score"
			ELSE (SELECT AVG(r."score") ` + of + ` AND r."status" IN ('passed', 'failed')) END`
	var err error
	if runID == "" {
		_, err = db.ExecContext(ctx, q)
	} else {
		_, err = db.ExecContext(ctx, q+` WHERE "run_id" = ?`, runID)
	}
	return err
}

// Migrate brings the runs tables in db to the newest schema, as Open
// does: for a command that prepares a database.
func Migrate(ctx context.Context, db *store.DB) error {
	_, err := Open(ctx, db)
	return err
}
