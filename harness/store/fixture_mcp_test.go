package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestFixtureToolMCP: catalog migration 6 gives the 0.7.0 database's
// tools cache the column of a tool's MCP server; the tools cached before
// keep theirs (none), and a tool with an mcp block goes through the
// migrated cache with its ${VAR} references as written.
func TestFixtureToolMCP(t *testing.T) {
	ctx := context.Background()
	db, _ := openFixtureFile(t, "gauntlet-0.7.0.db")
	if v, err := store.Version(ctx, db, "catalog"); v != 4 || err != nil {
		t.Fatalf("the fixture's catalog schema version = %d, %v; want 4", v, err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"tools/calc.yaml": "id: calc\nname: Calculator\nfunction:\n  name: calc\n" +
			"mcp:\n  command: [./bin/mcp-calc, --precise]\n  env:\n    CALC_TOKEN: ${CALC_TOKEN}\n  tool: evaluate\n",
		"tools/remote.yaml": "id: remote\nname: Remote\nfunction:\n  name: remote\nmcp:\n  url: http://127.0.0.1:9/mcp\n",
		"tools/clock.yaml":  "id: clock\nname: Clock\nfunction:\n  name: now\nmock_response: {time: noon}\n",
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
		t.Fatalf("catalog on the 0.7.0 database: %v %+v", err, res)
	}
	if v, err := store.Version(ctx, db, "catalog"); v != currentVersions["catalog"] || err != nil {
		t.Errorf("catalog schema version after opening = %d, %v; want %d", v, err, currentVersions["catalog"])
	}
	var before int
	if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT COUNT(*) FROM def_tools WHERE mcp IS NULL AND id IN ('get_weather', 'convert_currency')`).Scan(&before); err != nil || before == 0 {
		t.Errorf("the fixture's cached tools after the migration: %d, %v; want them kept, without an MCP server", before, err)
	}
	calc, err := cat.Tool(ctx, "calc")
	if err != nil || calc.MCP == nil || len(calc.MCP.Command) != 2 || calc.MCP.Command[1] != "--precise" ||
		calc.MCP.Env["CALC_TOKEN"] != "${CALC_TOKEN}" || calc.MCP.Tool != "evaluate" || calc.MockResponse != nil {
		t.Fatalf("calc = %+v (mcp %+v), %v", calc, calc.MCP, err)
	}
	if remote, err := cat.Tool(ctx, "remote"); err != nil || remote.MCP == nil || remote.MCP.URL != "http://127.0.0.1:9/mcp" {
		t.Errorf("remote = %+v, %v", remote, err)
	}
	if clock, err := cat.Tool(ctx, "clock"); err != nil || clock.MCP != nil {
		t.Errorf("clock = %+v, %v; want no MCP server", clock, err)
	}
	var stored string
	if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT mcp FROM def_tools WHERE id = 'calc'`).Scan(&stored); err != nil ||
		stored != `{"command":["./bin/mcp-calc","--precise"],"env":{"CALC_TOKEN":"${CALC_TOKEN}"},"tool":"evaluate"}` {
		t.Errorf("stored mcp = %s, %v", stored, err)
	}
	var null int
	if err := sqldb.Bun(db).QueryRowContext(ctx, `SELECT COUNT(*) FROM def_tools WHERE id = 'clock' AND mcp IS NULL`).Scan(&null); err != nil || null != 1 {
		t.Errorf("a tool without an MCP server stores NULL: %d, %v", null, err)
	}
}
