package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/agent"
	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
)

// TestMain stops the PostgreSQL server the tests may have started.
func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// openFixture copies the database made by 0.1.0 (never opened in place:
// it stands for what users' disks hold) and opens the copy.
func openFixture(t *testing.T) (*store.DB, string) {
	t.Helper()
	return openFixtureFile(t, "gauntlet-0.1.0.db")
}

// openFixtureFile copies a fixture database of testdata and opens the
// copy.
func openFixtureFile(t *testing.T, name string) (*store.DB, string) {
	t.Helper()
	dbtest.SkipOnPostgres(t, "the fixture databases are SQLite files made by old releases")
	return dbtest.OpenFixture(t, name)
}

func byLabel(t *testing.T, list []runs.Info) map[string]runs.Info {
	t.Helper()
	out := map[string]runs.Info{}
	for _, in := range list {
		out[in.ModelName] = in
	}
	return out
}

// TestFixtureDatabase opens a database made by the last version before
// migrations and finds its runs, results, agents, channels and
// conversations intact, with the counts and statuses of today's rules.
func TestFixtureDatabase(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixture(t)

	if _, _, err := catalog.Open(ctx, catalog.Options{Dir: t.TempDir(), DB: db}); err != nil {
		t.Fatalf("catalog on the old database: %v", err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatalf("runs on the old database: %v", err)
	}
	list, total, err := rs.List(ctx, 100, 0)
	if err != nil || total != 4 {
		t.Fatalf("runs = %d, %v; want the fixture's 4", total, err)
	}
	got := byLabel(t, list)

	complete := got["fixture-complete"]
	if complete.Status != runs.StatusCompleted || !complete.Complete || complete.TotalTests != 12 ||
		complete.DoneTests != 12 || complete.Passed != 7 || complete.Failed != 5 || complete.Errors != 0 ||
		complete.OverallScore == nil || *complete.OverallScore < 0.58 || *complete.OverallScore > 0.59 || complete.Config != nil {
		t.Errorf("complete run = %+v", complete)
	}
	results, err := rs.Results(ctx, complete.RunID)
	if err != nil || len(results) != 12 {
		t.Fatalf("complete run results = %d, %v", len(results), err)
	}
	for _, r := range results {
		if r.Response == "" || r.Prompt == "" || r.Expected.Type == "" || r.CreatedAt == "" || r.Repeat != 0 {
			t.Errorf("result lost a field: %+v", r)
		}
	}

	// The endpoint was down: every result is an error, nothing is scored,
	// and the run says it is not complete.
	errored := got["fixture-errors"]
	if errored.Errors != 6 || errored.Failed != 0 || errored.OverallScore != nil || errored.Complete {
		t.Errorf("errored run = %+v", errored)
	}
	m, err := rs.Matrix(ctx, errored.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for l, c := range m["arithmetic"] {
		if c.Status != runs.CellError || c.Errors != 2 || c.Score != nil || c.Failed != 0 {
			t.Errorf("errored run cell arithmetic/%s = %+v", l, c)
		}
	}

	stopped := got["fixture-stopped"]
	if stopped.Status != runs.StatusStopped || stopped.Complete || stopped.DoneTests != 8 || stopped.Passed != 6 ||
		stopped.OverallScore == nil || *stopped.OverallScore != 0.75 {
		t.Errorf("stopped run = %+v", stopped)
	}
	m, _ = rs.Matrix(ctx, stopped.RunID)
	if c := m["knowledge"]["2"]; c.Status != runs.CellSkipped || c.Done != 0 {
		t.Errorf("stopped run, cell not reached = %+v", c)
	}

	// The crashed run is still "running" until a process marks it.
	crashed := got["fixture-crashed"]
	if crashed.Status != runs.StatusRunning {
		t.Fatalf("crashed run = %+v", crashed)
	}
	if n, err := rs.MarkInterrupted(ctx); n != 1 || err != nil {
		t.Fatalf("MarkInterrupted = %d, %v", n, err)
	}
	crashed, _ = rs.Run(ctx, crashed.RunID)
	if crashed.Status != runs.StatusInterrupted || crashed.Complete || crashed.DoneTests != 8 || crashed.Error == "" ||
		crashed.CompletedAt == nil {
		t.Errorf("interrupted run = %+v", crashed)
	}
	m, _ = rs.Matrix(ctx, crashed.RunID)
	if c := m["knowledge"]["1"]; c.Status != runs.CellFailed || c.Done != 2 {
		t.Errorf("interrupted run, finished cell = %+v", c)
	}
	if c := m["tool_use"]["1"]; c.Status != runs.CellSkipped {
		t.Errorf("interrupted run, cell not reached = %+v", c)
	}
	var n int
	if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT COUNT(*) FROM run_results`).Scan(&n); err != nil || n != 34 {
		t.Errorf("results = %d, %v; want the fixture's 34", n, err)
	}

	svc, err := agent.Open(ctx, agent.Options{DB: db, DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("agents on the old database: %v", err)
	}
	defer svc.Close()
	agents, err := svc.List(ctx)
	if err != nil || len(agents) != 2 {
		t.Fatalf("agents = %+v, %v", agents, err)
	}
	tools, err := svc.Tools(ctx, "support")
	if err != nil || len(tools) != 1 || tools[0] != "get_weather" {
		t.Errorf("support's tools = %v, %v", tools, err)
	}
	chans, err := svc.Supervisor().List(ctx, "support")
	if err != nil || len(chans) != 2 {
		t.Fatalf("channels = %+v, %v", chans, err)
	}
	for _, c := range chans {
		switch c.Type {
		case "webhook":
			if c.Config["callback_url"] != "http://127.0.0.1:9/cb" || c.Config["secret"] == "" {
				t.Errorf("webhook channel = %+v", c)
			}
		case "telegram":
			if c.Config["api_url"] != "http://127.0.0.1:9" || c.Config["bot_token"] == "" {
				t.Errorf("telegram channel = %+v", c)
			}
		default:
			t.Errorf("unexpected channel %+v", c)
		}
	}
	var secret string
	if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT config FROM agent_channels WHERE type = 'webhook'`).Scan(&secret); err != nil ||
		!strings.Contains(secret, `"s3cret"`) {
		t.Errorf("webhook secret kept = %q, %v", secret, err)
	}
	for user, first := range map[string]string{"alice": "What is 2 + 2?", "bob": "How long do refunds take?"} {
		h, err := svc.History(ctx, "support", user)
		if err != nil || len(h) != 2 || h[0].Content != first || h[0].Role != harness.RoleUser {
			t.Errorf("%s's conversation = %+v, %v", user, h, err)
		}
	}

	checkCurrentVersions(t, db)
}

// currentVersions are the schema versions of today's code, by component:
// every database it opens ends there. A new migration changes this line.
var currentVersions = map[string]int{"catalog": 5, "runs": 15, "agent": 3}

// checkCurrentVersions checks that db, opened by today's code, is at
// currentVersions.
func checkCurrentVersions(t *testing.T, db *store.DB) {
	t.Helper()
	for component, want := range currentVersions {
		if v, err := store.Version(context.Background(), db, component); v != want || err != nil {
			t.Errorf("%s schema version after opening = %d, %v; want %d", component, v, err, want)
		}
	}
}

// TestFixtureLevelParams: the catalog's migration from the 0.1.0 schema
// adds the column of level sampling parameters, and a level's parameters
// go through the migrated cache.
func TestFixtureLevelParams(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixture(t)
	dir := t.TempDir()
	files := map[string]string{
		"domains/math/domain.yaml":  "id: math\nname: Math\nenabled: true\n",
		"domains/math/level-1.yaml": "params:\n  temperature: 0.3\n  seed: 9007199254740993\ntests:\n  - id: m1\n    prompt: What is 1 + 1?\n    expected:\n      answer: \"2\"\n",
		"domains/math/level-2.yaml": "tests: []\n",
	}
	for rel, text := range files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, res, err := catalog.Open(ctx, catalog.Options{Dir: dir, DB: db})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("catalog on the old database: %v %+v", err, res)
	}
	l, err := cat.Level(ctx, "math", 1)
	if err != nil || l.Params == nil || l.Params.Temperature == nil || *l.Params.Temperature != 0.3 ||
		l.Params.Seed == nil || *l.Params.Seed != 9007199254740993 || l.Params.TopP != nil || l.Params.MaxTokens != nil {
		t.Fatalf("level 1 = %+v, %v", l, err)
	}
	if l, err := cat.Level(ctx, "math", 2); err != nil || l.Params != nil {
		t.Errorf("level 2 without params = %+v, %v", l.Params, err)
	}
	var stored string
	if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT params FROM def_levels WHERE domain_id = 'math' AND level = 1`).Scan(&stored); err != nil ||
		stored != `{"temperature":0.3,"seed":9007199254740993}` {
		t.Errorf("stored params = %s, %v", stored, err)
	}
}

// TestMigrateTwice: opening a migrated database again changes nothing.
func TestMigrateTwice(t *testing.T) {
	ctx := context.Background()
	db, path := openFixture(t)
	if _, err := runs.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db2, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	rs, err := runs.Open(ctx, db2)
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	if _, total, err := rs.List(ctx, 10, 0); total != 4 || err != nil {
		t.Errorf("runs after a second open = %d, %v", total, err)
	}
	var n int
	if err := sqldb.Bun(db2).QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE component = 'runs'`).Scan(&n); err != nil || n != currentVersions["runs"] {
		t.Errorf("runs migrations recorded = %d, %v", n, err)
	}
}

// TestSchemaTooNew: a database migrated by a newer Gauntlet is refused,
// not misread.
func TestSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixture(t)
	if _, err := runs.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := sqldb.Bun(db).ExecContext(ctx, `INSERT INTO schema_migrations (component, version, name, applied_at) VALUES ('runs', 99, 'future', '')`); err != nil {
		t.Fatal(err)
	}
	_, err := runs.Open(ctx, db)
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") {
		t.Errorf("open a newer database: %v", err)
	}
}

// TestMigrationFailsWhole: a migration that fails leaves the database as
// it was, and its version unrecorded.
func TestMigrationFailsWhole(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixture(t)
	ms := []sqldb.Migration{
		{Version: 1, Name: "one", Up: func(ctx context.Context, tx bun.Tx) error {
			return sqldb.ExecAll(ctx, tx, `CREATE TABLE t1 (x INTEGER)`)
		}},
		{Version: 2, Name: "two", Up: func(ctx context.Context, tx bun.Tx) error {
			return sqldb.ExecAll(ctx, tx, `CREATE TABLE t2 (x INTEGER)`, `INSERT INTO nowhere VALUES (1)`)
		}},
	}
	if err := sqldb.Migrate(ctx, sqldb.Bun(db), "test", ms); err == nil || !strings.Contains(err.Error(), "two") {
		t.Fatalf("failing migration: %v", err)
	}
	if v, _ := store.Version(ctx, db, "test"); v != 1 {
		t.Errorf("version after a failed migration = %d, want 1", v)
	}
	if ok, _ := sqldb.HasTable(ctx, sqldb.Bun(db), "t2"); ok {
		t.Error("the failed migration left its table")
	}
	if ok, _ := sqldb.HasTable(ctx, sqldb.Bun(db), "t1"); !ok {
		t.Error("the first migration was not kept")
	}
	bad := []sqldb.Migration{{Version: 2, Name: "gap"}}
	if err := sqldb.Migrate(ctx, sqldb.Bun(db), "gap", bad); err == nil {
		t.Error("a migration list with a gap was accepted")
	}
}
