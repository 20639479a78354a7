package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// postJSON sends a JSON body and returns the status and the answer.
func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 300 {
		b = append(b[:300], "…"...)
	}
	return resp.StatusCode, string(b)
}

// TestServeBodyLimitFlags starts gauntlet serve with a small --max-body,
// and a small import limit from GAUNTLET_MAX_IMPORT_BODY: a body over
// either is a 413 naming the limit, and a body under it is taken.
func TestServeBodyLimitFlags(t *testing.T) {
	t.Setenv("GAUNTLET_MAX_IMPORT_BODY", "6KiB")
	dir := t.TempDir()
	base := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "defs"),
		"--llm-base-url", "http://127.0.0.1:1/v1", "--max-body", "2KiB", "--read-header-timeout", "5s", "--webhook-rate", "2.5"}).base
	domain := func(id string, n int) string {
		return `{"id": "` + id + `", "name": "D", "description": "` + strings.Repeat("x", n) + `"}`
	}
	if status, body := postJSON(t, base+"/api/settings/domains", domain("small", 1000)); status != http.StatusCreated {
		t.Fatalf("a 1 KB body: %d %s", status, body)
	}
	status, body := postJSON(t, base+"/api/settings/domains", domain("big", 3000))
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "2 KiB") {
		t.Fatalf("a 3 KB body over --max-body 2KiB: %d %s", status, body)
	}
	// The import has its own limit: over --max-body, under the import's.
	if status, body := postJSON(t, base+"/api/settings/import", `{"domains": [`+domain("imported", 4000)+`]}`); status != http.StatusOK {
		t.Fatalf("a 4 KB import: %d %s", status, body)
	}
	status, body = postJSON(t, base+"/api/settings/import", `{"domains": [`+domain("imported2", 7000)+`]}`)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "6 KiB") {
		t.Fatalf("a 7 KB import over GAUNTLET_MAX_IMPORT_BODY=6KiB: %d %s", status, body)
	}
}

// TestServeBadLimitFlags: a limit that is zero, negative, not a size or
// out of range is refused before the server starts, naming the flag or
// the variable, as the other settings are (gauntlet exits 2).
func TestServeBadLimitFlags(t *testing.T) {
	dir := t.TempDir()
	common := []string{"--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "defs")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-body", "0"}, "--max-body must be above 0, not 0B"},
		{[]string{"--max-import-body", "-1MiB"}, "--max-import-body must be above 0"},
		{[]string{"--max-upload", "0KiB"}, "--max-upload must be above 0"},
		{[]string{"--max-upload", "1GiB"}, "--max-upload must be at most"},
		{[]string{"--read-header-timeout", "0s"}, "--read-header-timeout must be above 0"},
		{[]string{"--read-body-timeout", "-5s"}, "--read-body-timeout must be above 0"},
		{[]string{"--idle-timeout", "0s"}, "--idle-timeout must be above 0"},
		{[]string{"--webhook-rate", "0"}, "--webhook-rate must be a number above 0"},
		{[]string{"--webhook-burst", "0"}, "--webhook-burst must be at least 1"},
		{[]string{"--webhook-in-flight", "-1"}, "--webhook-in-flight must be at least 1"},
		{[]string{"--webhook-in-flight-total", "0"}, "--webhook-in-flight-total must be at least 1"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), append(append([]string{"serve"}, common...), c.args...), io.Discard, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	// Not a size: a usage error, with the flag's message.
	var stderr bytes.Buffer
	err := run(context.Background(), append(append([]string{"serve"}, common...), "--max-body", "lots"), io.Discard, &stderr)
	if !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), `"lots" is not a size`) {
		t.Errorf("--max-body lots: %v, stderr %q", err, stderr.String())
	}
	t.Setenv("GAUNTLET_MAX_UPLOAD", "huge")
	err = run(context.Background(), append([]string{"serve"}, common...), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `GAUNTLET_MAX_UPLOAD="huge"`) {
		t.Errorf("GAUNTLET_MAX_UPLOAD=huge: %v", err)
	}
}

func TestParseByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"1048576", 1 << 20}, {"1MiB", 1 << 20}, {"64MiB", 64 << 20}, {"512 KiB", 512 << 10}, {"1.5mib", 3 << 19},
		{"2GiB", 2 << 30}, {"1MB", 1e6}, {"3kb", 3000}, {"100B", 100}, {"0", 0}, {"-1MiB", -(1 << 20)},
	} {
		if got, err := parseByteSize(c.in); err != nil || got != c.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "MiB", "lots", "1.5B", "1 TiB", "NaN", "1e30GiB", "0x10"} {
		if n, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", in, n)
		}
	}
	for _, c := range []struct {
		n    byteSize
		want string
	}{{1 << 20, "1MiB"}, {64 << 20, "64MiB"}, {1000, "1000B"}, {0, "0B"}, {3 << 30, "3GiB"}} {
		if got := c.n.String(); got != c.want {
			t.Errorf("%d: %q, want %q", c.n, got, c.want)
		}
	}
}
