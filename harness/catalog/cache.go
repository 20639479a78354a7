package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// The cache tables. They mirror the definition files and are rebuilt from
// them by Sync; nothing else is the source of truth.

type domainRow struct {
	bun.BaseModel `bun:"table:def_domains"`
	Dir           string `bun:"dir,pk"` // the definitions directory (Catalog.key)
	ID            string `bun:"id,pk"`
	Name          string `bun:"name,notnull"`
	Description   string `bun:"description,notnull"`
	EvaluatorID   string `bun:"evaluator_id,notnull"`
	Enabled       bool   `bun:"enabled,notnull"`
	SystemPrompt  string `bun:"system_prompt,notnull"`
	Icon          string `bun:"icon,notnull"`
	Color         string `bun:"color,notnull"`
}

type levelRow struct {
	bun.BaseModel    `bun:"table:def_levels"`
	Dir              string          `bun:"dir,pk"` // the definitions directory (Catalog.key)
	DomainID         string          `bun:"domain_id,pk"`
	Level            int             `bun:"level,pk"`
	SystemPrompt     string          `bun:"system_prompt,notnull"`
	SystemPromptMode string          `bun:"system_prompt_mode,notnull"`
	PassThreshold    float64         `bun:"pass_threshold,notnull"`
	Tools            []string        `bun:"tools,type:text"`
	Params           *harness.Params `bun:"params,type:text"` // NULL: the level sets none
}

type testRow struct {
	bun.BaseModel `bun:"table:def_tests"`
	Dir           string           `bun:"dir,pk"` // the definitions directory (Catalog.key)
	ID            string           `bun:"id,pk"`
	DomainID      string           `bun:"domain_id,notnull"`
	Level         int              `bun:"level,notnull"`
	Position      int              `bun:"position,notnull"`
	Name          string           `bun:"name,notnull"`
	Prompt        string           `bun:"prompt,notnull"`
	Expected      harness.Expected `bun:"expected,type:text"`
	EvaluatorID   string           `bun:"evaluator_id,notnull"`
	Tools         []string         `bun:"tools,type:text"`
	// Turns and SimulatedUser hold a conversation test's, as JSON; NULL
	// for a test with a prompt. They are read as text and decoded only
	// when there: a JSON column costs allocations on every row read.
	Turns         *string `bun:"turns"`
	SimulatedUser *string `bun:"simulated_user"`
}

type evaluatorRow struct {
	bun.BaseModel   `bun:"table:def_evaluators"`
	Dir             string         `bun:"dir,pk"` // the definitions directory (Catalog.key)
	ID              string         `bun:"id,pk"`
	Name            string         `bun:"name,notnull"`
	Description     string         `bun:"description,notnull"`
	Type            string         `bun:"type,notnull"`
	ExtractionRegex string         `bun:"extraction_regex,notnull"`
	UsesPass2       bool           `bun:"uses_pass2,notnull"`
	Config          map[string]any `bun:"config,type:text"`
}

type toolRow struct {
	bun.BaseModel `bun:"table:def_tools"`
	Dir           string              `bun:"dir,pk"` // the definitions directory (Catalog.key)
	ID            string              `bun:"id,pk"`
	Name          string              `bun:"name,notnull"`
	Description   string              `bun:"description,notnull"`
	Function      harness.FunctionDef `bun:"function,type:text"`
	MockResponse  string              `bun:"mock_response,notnull"`
	// MCP is the tool's MCP block as JSON; NULL for a tool without one.
	MCP *harness.ToolMCP `bun:"mcp,type:text"`
}

// fileRow is a definitions file the cache holds: the hash of the content
// it holds, and for a level file the context it was checked in (see
// syncContext) and how many tests it holds. A sync that finds a level
// file with the same hash, checked in the same context, keeps its rows
// instead of decoding it again.
type fileRow struct {
	bun.BaseModel `bun:"table:def_files"`
	Dir           string `bun:"dir,pk"` // the definitions directory (Catalog.key)
	Path          string `bun:"path,pk"`
	Hash          string `bun:"hash,notnull"`
	Context       string `bun:"context,notnull"`
	Tests         int    `bun:"tests,notnull"`
}

// migrations are the cache tables' schema versions. Released migrations
// are never edited; a change is a new migration at the end.
var migrations = []sqldb.Migration{
	{Version: 1, Name: "definitions cache as released in 0.1.0", Up: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE IF NOT EXISTS "def_domains" ("id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "evaluator_id" VARCHAR NOT NULL, "enabled" BOOLEAN NOT NULL, "system_prompt" VARCHAR NOT NULL, "icon" VARCHAR NOT NULL, "color" VARCHAR NOT NULL, PRIMARY KEY ("id"))`,
			`CREATE TABLE IF NOT EXISTS "def_levels" ("domain_id" VARCHAR NOT NULL, "level" INTEGER NOT NULL, "system_prompt" VARCHAR NOT NULL, "system_prompt_mode" VARCHAR NOT NULL, "pass_threshold" DOUBLE PRECISION NOT NULL, "tools" text, PRIMARY KEY ("domain_id", "level"))`,
			`CREATE TABLE IF NOT EXISTS "def_tests" ("id" VARCHAR NOT NULL, "domain_id" VARCHAR NOT NULL, "level" INTEGER NOT NULL, "position" INTEGER NOT NULL, "name" VARCHAR NOT NULL, "prompt" VARCHAR NOT NULL, "expected" text, "evaluator_id" VARCHAR NOT NULL, "tools" text, PRIMARY KEY ("id"))`,
			`CREATE TABLE IF NOT EXISTS "def_evaluators" ("id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "type" VARCHAR NOT NULL, "extraction_regex" VARCHAR NOT NULL, "uses_pass2" BOOLEAN NOT NULL, "config" text, PRIMARY KEY ("id"))`,
			`CREATE TABLE IF NOT EXISTS "def_tools" ("id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "function" text, "mock_response" VARCHAR NOT NULL, PRIMARY KEY ("id"))`,
			`CREATE INDEX IF NOT EXISTS "def_tests_domain_level" ON "def_tests" ("domain_id", "level", "position")`,
			`CREATE INDEX IF NOT EXISTS "def_tests_evaluator" ON "def_tests" ("evaluator_id")`,
		)
	}, Postgres: pgBaseline},
	{Version: 2, Name: "level sampling parameters", Up: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx, `ALTER TABLE "def_levels" ADD COLUMN "params" text`)
	}, Postgres: sqldb.AlreadyInBaseline},
	{Version: 3, Name: "the files the cache holds, with their hashes", Up: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE "def_files" ("path" VARCHAR NOT NULL, "hash" VARCHAR NOT NULL, "context" VARCHAR NOT NULL, "tests" INTEGER NOT NULL, PRIMARY KEY ("path"))`)
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx,
			`CREATE TABLE "def_files" ("path" TEXT NOT NULL, "hash" TEXT NOT NULL, "context" TEXT NOT NULL, "tests" INTEGER NOT NULL, PRIMARY KEY ("path"))`)
	}},
	{Version: 4, Name: "a cache per definitions directory", Up: func(ctx context.Context, tx bun.Tx) error {
		return perDirectory(ctx, tx, "VARCHAR")
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return perDirectory(ctx, tx, "TEXT")
	}},
	{Version: 5, Name: "conversation tests: turns and simulated users", Up: conversationColumns, Postgres: conversationColumns},
	{Version: 6, Name: "a tool's MCP server", Up: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx, `ALTER TABLE "def_tools" ADD COLUMN "mcp" text`)
	}, Postgres: func(ctx context.Context, tx bun.Tx) error {
		return sqldb.ExecAll(ctx, tx, `ALTER TABLE "def_tools" ADD COLUMN "mcp" TEXT`)
	}},
	{Version: 7, Name: "black-box targets", Up: targetsTable("VARCHAR"), Postgres: targetsTable("TEXT")},
}

// conversationColumns is catalog migration 5: a test's scripted turns
// and its simulated user, each a JSON column, NULL for the tests cached
// before (they all have a prompt). The level files the cache holds are
// kept: none of them could hold a conversation test.
func conversationColumns(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`ALTER TABLE "def_tests" ADD COLUMN "turns" TEXT`,
		`ALTER TABLE "def_tests" ADD COLUMN "simulated_user" TEXT`)
}

// perDirectory is catalog migration 4: every cache table gains the
// definitions directory its rows mirror, first in its primary key, so
// that processes with different directories share one database without
// touching each other's cache. The cache is only a mirror of files, so
// the tables are made again empty: the next sync of each directory fills
// its part. text is the dialect's string type.
func perDirectory(ctx context.Context, tx bun.Tx, text string) error {
	stmts := []string{
		`DROP TABLE "def_domains"`, `DROP TABLE "def_levels"`, `DROP TABLE "def_tests"`,
		`DROP TABLE "def_evaluators"`, `DROP TABLE "def_tools"`, `DROP TABLE "def_files"`,
		`CREATE TABLE "def_domains" ("dir" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "evaluator_id" VARCHAR NOT NULL, "enabled" BOOLEAN NOT NULL, "system_prompt" VARCHAR NOT NULL, "icon" VARCHAR NOT NULL, "color" VARCHAR NOT NULL, PRIMARY KEY ("dir", "id"))`,
		`CREATE TABLE "def_levels" ("dir" VARCHAR NOT NULL, "domain_id" VARCHAR NOT NULL, "level" INTEGER NOT NULL, "system_prompt" VARCHAR NOT NULL, "system_prompt_mode" VARCHAR NOT NULL, "pass_threshold" DOUBLE PRECISION NOT NULL, "tools" TEXT, "params" TEXT, PRIMARY KEY ("dir", "domain_id", "level"))`,
		`CREATE TABLE "def_tests" ("dir" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "domain_id" VARCHAR NOT NULL, "level" INTEGER NOT NULL, "position" INTEGER NOT NULL, "name" VARCHAR NOT NULL, "prompt" VARCHAR NOT NULL, "expected" TEXT, "evaluator_id" VARCHAR NOT NULL, "tools" TEXT, PRIMARY KEY ("dir", "id"))`,
		`CREATE TABLE "def_evaluators" ("dir" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "type" VARCHAR NOT NULL, "extraction_regex" VARCHAR NOT NULL, "uses_pass2" BOOLEAN NOT NULL, "config" TEXT, PRIMARY KEY ("dir", "id"))`,
		`CREATE TABLE "def_tools" ("dir" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "name" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "function" TEXT, "mock_response" VARCHAR NOT NULL, PRIMARY KEY ("dir", "id"))`,
		`CREATE TABLE "def_files" ("dir" VARCHAR NOT NULL, "path" VARCHAR NOT NULL, "hash" VARCHAR NOT NULL, "context" VARCHAR NOT NULL, "tests" INTEGER NOT NULL, PRIMARY KEY ("dir", "path"))`,
		`CREATE INDEX "def_tests_domain_level" ON "def_tests" ("dir", "domain_id", "level", "position")`,
		`CREATE INDEX "def_tests_evaluator" ON "def_tests" ("dir", "evaluator_id")`,
	}
	for i, q := range stmts {
		stmts[i] = strings.ReplaceAll(q, "VARCHAR", text)
	}
	return sqldb.ExecAll(ctx, tx, stmts...)
}

// pgBaseline creates the cache tables on PostgreSQL as they are at
// version 2.
func pgBaseline(ctx context.Context, tx bun.Tx) error {
	return sqldb.ExecAll(ctx, tx,
		`CREATE TABLE "def_domains" ("id" TEXT NOT NULL, "name" TEXT NOT NULL, "description" TEXT NOT NULL, "evaluator_id" TEXT NOT NULL, "enabled" BOOLEAN NOT NULL, "system_prompt" TEXT NOT NULL, "icon" TEXT NOT NULL, "color" TEXT NOT NULL, PRIMARY KEY ("id"))`,
		`CREATE TABLE "def_levels" ("domain_id" TEXT NOT NULL, "level" INTEGER NOT NULL, "system_prompt" TEXT NOT NULL, "system_prompt_mode" TEXT NOT NULL, "pass_threshold" DOUBLE PRECISION NOT NULL, "tools" TEXT, "params" TEXT, PRIMARY KEY ("domain_id", "level"))`,
		`CREATE TABLE "def_tests" ("id" TEXT NOT NULL, "domain_id" TEXT NOT NULL, "level" INTEGER NOT NULL, "position" INTEGER NOT NULL, "name" TEXT NOT NULL, "prompt" TEXT NOT NULL, "expected" TEXT, "evaluator_id" TEXT NOT NULL, "tools" TEXT, PRIMARY KEY ("id"))`,
		`CREATE TABLE "def_evaluators" ("id" TEXT NOT NULL, "name" TEXT NOT NULL, "description" TEXT NOT NULL, "type" TEXT NOT NULL, "extraction_regex" TEXT NOT NULL, "uses_pass2" BOOLEAN NOT NULL, "config" TEXT, PRIMARY KEY ("id"))`,
		`CREATE TABLE "def_tools" ("id" TEXT NOT NULL, "name" TEXT NOT NULL, "description" TEXT NOT NULL, "function" TEXT, "mock_response" TEXT NOT NULL, PRIMARY KEY ("id"))`,
		`CREATE INDEX "def_tests_domain_level" ON "def_tests" ("domain_id", "level", "position")`,
		`CREATE INDEX "def_tests_evaluator" ON "def_tests" ("evaluator_id")`,
	)
}

func toDomainRow(dir string, d harness.Domain) *domainRow {
	return &domainRow{Dir: dir, ID: d.ID, Name: d.Name, Description: d.Description, EvaluatorID: d.EvaluatorID,
		Enabled: d.Enabled, SystemPrompt: d.SystemPrompt, Icon: d.Icon, Color: d.Color}
}

func (r *domainRow) domain() harness.Domain {
	return harness.Domain{ID: r.ID, Name: r.Name, Description: r.Description, EvaluatorID: r.EvaluatorID,
		Enabled: r.Enabled, SystemPrompt: r.SystemPrompt, Icon: r.Icon, Color: r.Color}
}

func toLevelRow(dir string, l harness.LevelConfig) *levelRow {
	return &levelRow{Dir: dir, DomainID: l.DomainID, Level: l.Level, SystemPrompt: l.SystemPrompt,
		SystemPromptMode: string(l.SystemPromptMode), PassThreshold: l.PassThreshold, Tools: l.Tools,
		Params: nonZero(l.Params)}
}

// nonZero returns p, or nil when it sets nothing: a level without
// parameters stores NULL and answers none.
func nonZero(p *harness.Params) *harness.Params {
	if p == nil || p.IsZero() {
		return nil
	}
	return p
}

func (r *levelRow) level() harness.LevelConfig {
	return harness.LevelConfig{DomainID: r.DomainID, Level: r.Level, SystemPrompt: r.SystemPrompt,
		SystemPromptMode: harness.PromptMode(r.SystemPromptMode), PassThreshold: r.PassThreshold,
		Tools: nonNil(r.Tools), Params: nonZero(r.Params)}
}

func toTestRow(dir string, t harness.Test, pos int) *testRow {
	return &testRow{Dir: dir, ID: t.ID, DomainID: t.DomainID, Level: t.Level, Position: pos, Name: t.Name,
		Prompt: t.Prompt, Expected: t.Expected, EvaluatorID: t.EvaluatorID, Tools: t.Tools,
		Turns: jsonColumn(t.Turns != nil, t.Turns), SimulatedUser: jsonColumn(t.SimulatedUser != nil, t.SimulatedUser)}
}

// jsonColumn is v as a JSON column's text, nil (NULL) unless set.
func jsonColumn(set bool, v any) *string {
	if !set {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	s := string(b)
	return &s
}

func (r *testRow) test() harness.Test {
	t := harness.Test{ID: r.ID, DomainID: r.DomainID, Level: r.Level, Name: r.Name, Prompt: r.Prompt,
		Expected: r.Expected, EvaluatorID: r.EvaluatorID, Tools: nonNil(r.Tools)}
	// Written by toTestRow: text that does not decode is left out, and
	// validation then refuses the test when it is used.
	if r.Turns != nil {
		json.Unmarshal([]byte(*r.Turns), &t.Turns)
	}
	if r.SimulatedUser != nil {
		json.Unmarshal([]byte(*r.SimulatedUser), &t.SimulatedUser)
	}
	return t
}

func toEvaluatorRow(dir string, e harness.EvaluatorConfig) *evaluatorRow {
	return &evaluatorRow{Dir: dir, ID: e.ID, Name: e.Name, Description: e.Description, Type: e.Type,
		ExtractionRegex: e.ExtractionRegex, UsesPass2: e.UsesPass2, Config: e.Config}
}

func (r *evaluatorRow) evaluator() harness.EvaluatorConfig {
	return harness.EvaluatorConfig{ID: r.ID, Name: r.Name, Description: r.Description, Type: r.Type,
		ExtractionRegex: r.ExtractionRegex, UsesPass2: r.UsesPass2, Config: r.Config}
}

func toToolRow(dir string, t harness.ToolDefinition) (*toolRow, error) {
	r := &toolRow{Dir: dir, ID: t.ID, Name: t.Name, Description: t.Description, Function: t.Function, MCP: t.MCP}
	if t.MockResponse != nil {
		b, err := json.Marshal(t.MockResponse)
		if err != nil {
			return nil, fmt.Errorf("tool %s: mock_response: %w", t.ID, err)
		}
		r.MockResponse = string(b)
	}
	return r, nil
}

func (r *toolRow) tool() (harness.ToolDefinition, error) {
	t := harness.ToolDefinition{ID: r.ID, Name: r.Name, Description: r.Description, Function: r.Function, MCP: r.MCP}
	if r.MockResponse != "" {
		if err := json.Unmarshal([]byte(r.MockResponse), &t.MockResponse); err != nil {
			return t, fmt.Errorf("tool %s: mock_response: %w", r.ID, err)
		}
	}
	return t, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// batchSize bounds the rows of one INSERT (SQLite limits the variables of
// a statement; batches are also much faster than row-by-row inserts).
const batchSize = 500

func insertBatches[T any](ctx context.Context, db bun.IDB, rows []T) error {
	for start := 0; start < len(rows); start += batchSize {
		end := min(start+batchSize, len(rows))
		chunk := rows[start:end]
		if _, err := db.NewInsert().Model(&chunk).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// rebuildCache replaces the whole cache of the definitions directory dir
// with a snapshot, in one transaction.
func rebuildCache(ctx context.Context, tx bun.IDB, dir string, s *harness.Snapshot) error {
	if err := replaceOutline(ctx, tx, dir, s); err != nil {
		return err
	}
	for _, m := range []any{(*levelRow)(nil), (*testRow)(nil)} {
		if _, err := tx.NewDelete().Model(m).Where("dir = ?", dir).Exec(ctx); err != nil {
			return err
		}
	}
	levels := make([]*levelRow, len(s.Levels))
	for i, l := range s.Levels {
		levels[i] = toLevelRow(dir, l)
	}
	if err := insertBatches(ctx, tx, levels); err != nil {
		return err
	}
	// The tests' rows are made a batch at a time: a second copy of a
	// million tests would double what an import holds.
	pos := map[levelKey]int{}
	batch := make([]*testRow, 0, batchSize)
	for start := 0; start < len(s.Tests); start += batchSize {
		batch = batch[:0]
		for _, t := range s.Tests[start:min(start+batchSize, len(s.Tests))] {
			k := levelKey{t.DomainID, t.Level}
			batch = append(batch, toTestRow(dir, t, pos[k]))
			pos[k]++
		}
		if _, err := tx.NewInsert().Model(&batch).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Migrate brings the definitions cache's tables in db to the newest
// schema, as Open does, without opening a catalog: for a command that
// prepares a database. The cache's contents are rebuilt by the next
// Open's sync.
func Migrate(ctx context.Context, db *store.DB) error {
	if err := sqldb.Migrate(ctx, sqldb.Bun(db), "catalog", migrations); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}
