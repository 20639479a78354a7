package main

import (
	"context"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeTables returns the rows of the flag tables in the README's
// Configuration section, by flag name: the cells after the flag's, and
// whether the flag is marked as serve's only.
func readmeTables(t *testing.T) (map[string][]string, map[string]bool) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n## Configuration\n")
	if start < 0 {
		t.Fatal("the README has no Configuration section")
	}
	s = s[start+1:]
	if end := strings.Index(s, "\n## "); end >= 0 {
		s = s[:end]
	}
	rows, serveOnly := map[string][]string{}, map[string]bool{}
	name := regexp.MustCompile("^`--([a-z0-9-]+)`")
	for _, line := range strings.Split(s, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if m := name.FindStringSubmatch(cells[1]); m != nil {
			rows[m[1]] = cells[2 : len(cells)-1]
			serveOnly[m[1]] = strings.Contains(cells[1], "(*serve*)")
		}
	}
	return rows, serveOnly
}

// TestREADMEConfiguration: the README's configuration tables list every
// flag of serve and run, no other, with the environment variable and the
// default the code has, and mark the flags run does not take.
func TestREADMEConfiguration(t *testing.T) {
	rows, serveOnly := readmeTables(t)
	appFlags := flagsOf(t, appSettings)
	envRE := regexp.MustCompile(`\(([A-Z0-9_]+)[;)]`)
	settingsFlags := flagsOf(t, serverSettings)
	for name, f := range settingsFlags {
		row, ok := rows[name]
		if !ok {
			t.Errorf("--%s is missing from the README's configuration table", name)
			continue
		}
		env := ""
		if m := envRE.FindStringSubmatch(f.Usage); m != nil {
			env = m[1]
		}
		if serveOnly[name] != (appFlags[name] == nil) {
			t.Errorf("--%s: marked serve's only in the README: %v; the code: %v", name, serveOnly[name], appFlags[name] == nil)
		}
		if got := strings.Trim(row[0], "`"); got != env {
			t.Errorf("--%s: the README gives the variable %q, the code %q", name, got, env)
		}
		want := "`" + f.DefValue + "`"
		switch {
		case name == "database":
			want = "`sqlite://<data>/gauntlet.db`"
		case f.DefValue == "":
			want = "empty"
		}
		if row[1] != want {
			t.Errorf("--%s: the README gives the default %s, the code %s", name, row[1], want)
		}
	}

	var help strings.Builder
	if err := run(context.Background(), []string{"run", "-h"}, io.Discard, &help); err != nil {
		t.Fatal(err)
	}
	var runOwn []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(help.String(), -1) {
		if settingsFlags[m[1]] == nil {
			runOwn = append(runOwn, m[1])
		}
	}
	if len(runOwn) < 9 {
		t.Fatalf("run's own flags: %v\n%s", runOwn, help.String())
	}
	for _, name := range runOwn {
		if _, ok := rows[name]; !ok {
			t.Errorf("gauntlet run's --%s is missing from the README", name)
		}
	}
	for name := range rows {
		if settingsFlags[name] == nil && !slices.Contains(runOwn, name) {
			t.Errorf("the README lists --%s, which neither serve nor run has", name)
		}
	}
}
