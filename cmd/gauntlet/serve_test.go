package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
	"github.com/gauntlet-eval/gauntlet/harness/store"
)

func TestCheckExposure(t *testing.T) {
	cases := []struct {
		name     string
		addr     string
		token    string
		insecure bool
		ok       bool
	}{
		{"loopback v4", "127.0.0.1:8080", "", false, true},
		{"loopback v6", "[::1]:8080", "", false, true},
		{"localhost", "localhost:8080", "", false, true},
		{"all interfaces", "0.0.0.0:8080", "", false, false},
		{"empty host", ":8080", "", false, false},
		{"lan address", "192.168.1.10:8080", "", false, false},
		{"all interfaces with token", "0.0.0.0:8080", "s3cret", false, true},
		{"all interfaces insecure", "0.0.0.0:8080", "", true, true},
		{"no port", "127.0.0.1", "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkExposure(c.addr, c.token, c.insecure)
			if (err == nil) != c.ok {
				t.Fatalf("checkExposure(%q) = %v, want ok=%v", c.addr, err, c.ok)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	var out, errOut strings.Builder
	if err := run(context.Background(), nil, &out, &errOut); err != errUsage {
		t.Fatalf("no command: %v", err)
	}
	if err := run(context.Background(), []string{"bogus"}, &out, &errOut); err != errUsage {
		t.Fatalf("unknown command: %v", err)
	}
	if !strings.Contains(errOut.String(), `unknown command "bogus"`) {
		t.Fatalf("stderr: %s", errOut.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"version"}, &out, &errOut); err != nil || !strings.HasPrefix(out.String(), "gauntlet ") {
		t.Fatalf("version: %v %q", err, out.String())
	}
}

// TestPositionalArgumentsRefused: no command takes positional arguments;
// "gauntlet run arithmetic" must not silently run every domain.
func TestPositionalArgumentsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"run", "arithmetic"}, {"serve", "extra"}, {"validate", "defs"}, {"plugins", "dir"}, {"mockllm", "x"},
		{"run", "--domains", "arithmetic", "knowledge"},
	} {
		var errOut strings.Builder
		err := run(context.Background(), args, io.Discard, &errOut)
		if !errors.Is(err, errUsage) || !strings.Contains(errOut.String(), "unexpected argument") {
			t.Errorf("%v: %v, stderr %q", args, err, errOut.String())
		}
	}
	var errOut strings.Builder
	run(context.Background(), []string{"run", "arithmetic"}, io.Discard, &errOut)
	if !strings.Contains(errOut.String(), "--domains") {
		t.Errorf("run's refusal does not say how to choose domains: %q", errOut.String())
	}
}

func TestServeRefusesExposedAddressWithoutToken(t *testing.T) {
	dir := t.TempDir()
	err := run(context.Background(), []string{"serve", "--addr", "0.0.0.0:0",
		"--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "defs")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "without an API token") {
		t.Fatalf("err = %v", err)
	}
}

func TestServeBadSettings(t *testing.T) {
	t.Setenv("GAUNTLET_CONCURRENCY", "many")
	err := run(context.Background(), []string{"serve"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "GAUNTLET_CONCURRENCY") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("GAUNTLET_CONCURRENCY", "0")
	err = run(context.Background(), []string{"serve"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "concurrency") {
		t.Fatalf("err = %v", err)
	}
	t.Setenv("GAUNTLET_CONCURRENCY", "2")
	dir := t.TempDir()
	err = run(context.Background(), []string{"serve", "--cors-origins", "https://ok.example,ftp://files.example",
		"--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "defs")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ftp://files.example") {
		t.Fatalf("err = %v", err)
	}
}

// TestServe starts the real command on a free port, with settings from
// both flags and the environment, and stops it through its context.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LLM_MODEL", "env-model")
	t.Setenv("LLM_API_KEY", "sk-never-shown")
	t.Setenv("GAUNTLET_DEBUG", "true")
	t.Setenv("DEBUG", "express:*") // another tool's: ignored
	t.Setenv("GAUNTLET_CORS_ORIGINS", "https://dash.example, http://localhost:5173")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"),
			"--definitions", filepath.Join(dir, "defs"), "--llm-base-url", "http://127.0.0.1:1/v1"}, pw, logs)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no start-up line: %v (%v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	base := strings.Fields(strings.SplitAfter(line, "listening on ")[1])[0]

	req, _ := http.NewRequest(http.MethodGet, base+"/api/config", nil)
	req.Header.Set("Origin", "http://localhost:5173")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "http://localhost:5173" {
		t.Errorf("Access-Control-Allow-Origin %q: GAUNTLET_CORS_ORIGINS not applied", got)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var cfg map[string]any
	if err := json.Unmarshal(body, &cfg); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := map[string]any{"llm_base_url": "http://127.0.0.1:1/v1", "llm_model": "env-model", "debug": true}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("%s = %v, want %v", k, cfg[k], v)
		}
	}
	if strings.Contains(string(body), "sk-never-shown") {
		t.Error("the API key is in /api/config")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(logs.String(), "sk-never-shown") {
		t.Errorf("the API key is in the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "definitions loaded") {
		t.Errorf("log lacks the start-up line:\n%s", logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeIndexesSearch: results stored while no server ran (as
// `gauntlet run` stores them, without their search index) are indexed
// by the server once it starts: searches find them before (pending) and
// after.
func TestServeIndexesSearch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite://"+filepath.Join(data, "gauntlet.db"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := runs.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	const n = runs.SearchIndexChunk + 100 // more than the indexer takes at once
	if err := rs.CreateRun(ctx, runs.Info{RunID: "stored-before", StartedAt: runs.Now(), Status: runs.StatusCompleted, TotalTests: n}, nil); err != nil {
		t.Fatal(err)
	}
	var batch []runs.Result
	for i := range n {
		resp := "no"
		if i%100 == 0 {
			resp = "a needle"
		}
		batch = append(batch, runs.Result{RunID: "stored-before", TestID: fmt.Sprintf("t%d", i), Domain: "d", Level: 1,
			Prompt: "p", Response: resp, Status: runs.TestPassed, Score: 1})
	}
	if err := rs.SaveResults(ctx, batch); err != nil {
		t.Fatal(err)
	}
	db.Close()

	p := startServe(t, []string{"--addr", "127.0.0.1:0", "--data", data, "--definitions", filepath.Join(dir, "defs"),
		"--llm-base-url", "http://127.0.0.1:1/v1"})
	var page struct {
		Total       int `json:"total"`
		SearchIndex struct {
			Pending int `json:"pending"`
		} `json:"search_index"`
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		p.call(t, http.MethodGet, "/api/run/stored-before/results?q=needle", nil, http.StatusOK, &page)
		if page.Total != (n+99)/100 {
			t.Fatalf("search total %d (index %+v); want %d", page.Total, page.SearchIndex, (n+99)/100)
		}
		if page.SearchIndex.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d results are still pending", page.SearchIndex.Pending)
		}
	}
}
