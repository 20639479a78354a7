package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/agent/kbdoc"
	"github.com/gauntlet-eval/gauntlet/internal/dbtest"
	"github.com/gauntlet-eval/gauntlet/internal/testbin"
)

// TestMain stops the PostgreSQL server the tests may have started and
// removes the programs they built. First, as main does, a copy of the
// test binary started to extract a knowledge-base document (by a helper
// process running main) does that.
func TestMain(m *testing.M) {
	kbdoc.RunIfChild()
	code := dbtest.Main(m)
	testbin.Cleanup()
	os.Exit(code)
}

// versionLines are the "component  before → after" lines of migrate's
// output, spaces squeezed.
func versionLines(out string) []string {
	var lines []string
	space := regexp.MustCompile(` +`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		lines = append(lines, space.ReplaceAllString(l, " "))
	}
	return lines
}

// TestMigrateCommand: migrate creates every table in an empty database
// (SQLite, or PostgreSQL with GAUNTLET_TEST_DATABASE=postgres), says
// which versions it went from and to, and changes nothing when run again.
// (A database of a newer Gauntlet is refused: see the store's tests.)
func TestMigrateCommand(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	var out bytes.Buffer
	if err := run(ctx, []string{"migrate", "--database", url}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []string{"catalog 0 → 7 migrated (7 steps)", "runs 0 → 15 migrated (15 steps)", "agent 0 → 3 migrated (3 steps)"}
	// On PostgreSQL the job queue's tables too.
	queue := []string{}
	if dbtest.Postgres() {
		queue = append(queue, "job queue River's tables up to date")
	}
	want = append(want, queue...)
	if got := versionLines(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("first migrate:\n%s\nwant the lines %q", out.String(), want)
	}
	out.Reset()
	if err := run(ctx, []string{"migrate", "--database", url}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want = append([]string{"catalog 7 → 7 up to date", "runs 15 → 15 up to date", "agent 3 → 3 up to date"}, queue...)
	if got := versionLines(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("second migrate:\n%s\nwant the lines %q", out.String(), want)
	}

}

// TestMigrateOldSQLiteDatabase: a database made by 0.1.0 (in --data)
// goes from the versions it had to today's.
func TestMigrateOldSQLiteDatabase(t *testing.T) {
	dbtest.SkipOnPostgres(t, "the fixture is a SQLite file made by 0.1.0")
	data := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "harness", "store", "testdata", "gauntlet-0.1.0.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "gauntlet.db"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "--data", data}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	want := []string{"catalog 0 → 7 migrated (7 steps)", "runs 0 → 15 migrated (15 steps)", "agent 0 → 3 migrated (3 steps)"}
	if got := versionLines(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("migrate 0.1.0:\n%s\nwant the lines %q", out.String(), want)
	}
}

// TestMigrateCommandFailures: a bad flag is a usage error; a server that
// is not there is an error naming it, never the password.
func TestMigrateCommandFailures(t *testing.T) {
	ctx := context.Background()
	if err := run(ctx, []string{"migrate", "--nope"}, io.Discard, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("bad flag: %v", err)
	}
	if err := run(ctx, []string{"migrate", "extra"}, io.Discard, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("an argument: %v", err)
	}
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"migrate", "--database", "postgres://gauntlet:hunter2-secret@127.0.0.1:1/gauntlet?connect_timeout=5"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("no server: %v", err)
	}
	if all := err.Error() + out.String() + errOut.String(); strings.Contains(all, "hunter2") {
		t.Errorf("the password shows: %s", all)
	}
}

func TestRedactedURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db":          "postgres://u:xxxxx@h:5432/db",
		"postgres://u@h/db?password=pw":      "postgres://u@h/db?password=xxxxx",
		"sqlite:///tmp/x.db":                 "sqlite:///tmp/x.db",
		"data/gauntlet.db":                   "data/gauntlet.db",
		"postgresql://u@/db?host=/run/pg&x=": "postgresql://u@/db?host=/run/pg&x=",
	} {
		if got := redactedURL(in); got != want {
			t.Errorf("redactedURL(%q) = %q, want %q", in, got, want)
		}
	}
}
