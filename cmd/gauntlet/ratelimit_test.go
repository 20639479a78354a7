package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm"
	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// TestRateLimitSettings: --llm-rate-limit-wait comes from its flag, else
// GAUNTLET_LLM_RATE_LIMIT_WAIT, else 10 min; a bad value is refused; the
// model client gets it, and --concurrency as its concurrency bound.
func TestRateLimitSettings(t *testing.T) {
	parse := func(args ...string) (*settings, error) {
		var s settings
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if err := s.register(fs, appSettings); err != nil {
			return nil, err
		}
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return &s, s.check()
	}
	t.Setenv("GAUNTLET_LLM_RATE_LIMIT_WAIT", "")
	s, err := parse()
	if err != nil || s.llmRateLimitWait != llm.DefaultRateLimitWait {
		t.Fatalf("default: %v, %v", s, err)
	}
	t.Setenv("GAUNTLET_LLM_RATE_LIMIT_WAIT", "90s")
	if s, err = parse(); err != nil || s.llmRateLimitWait != 90*time.Second {
		t.Fatalf("from the environment: %v, %v", s, err)
	}
	if s, err = parse("--llm-rate-limit-wait", "2m", "--concurrency", "5"); err != nil || s.llmRateLimitWait != 2*time.Minute {
		t.Fatalf("flag over the environment: %v, %v", s, err)
	}
	c, err := s.modelClient()
	if err != nil {
		t.Fatal(err)
	}
	if rl := c.RateLimits()[llm.KindOpenAI]; rl.ConcurrencyMax != 5 || rl.Concurrency != 5 {
		t.Fatalf("client rate-limit state %+v, want a bound of 5", rl)
	}
	for _, bad := range []string{"0s", "-1m", "1000h"} {
		if _, err := parse("--llm-rate-limit-wait", bad); err == nil || !strings.Contains(err.Error(), "--llm-rate-limit-wait") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	t.Setenv("GAUNTLET_LLM_RATE_LIMIT_WAIT", "soon")
	if _, err := parse(); err == nil || !strings.Contains(err.Error(), "GAUNTLET_LLM_RATE_LIMIT_WAIT") {
		t.Errorf("a bad GAUNTLET_LLM_RATE_LIMIT_WAIT: %v", err)
	}
}

// TestRunShowsThrottling: the progress of gauntlet run (not on a
// terminal) says when the endpoint starts rate limiting and when it
// stops, and the rate-limited requests end in no error.
func TestRunShowsThrottling(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "defs"), os.DirFS("../../examples/definitions")); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	mock := llmtest.NewServer(llmtest.Options{Respond: func(*llmtest.Request) *llmtest.Reply {
		if i := n.Add(1); i <= 10 && i%2 == 1 {
			return &llmtest.Reply{Status: http.StatusTooManyRequests, Content: "Rate limit reached"}
		}
		return nil
	}})
	t.Cleanup(mock.Close)
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"run", "--domains", "arithmetic", "--repeats", "15", "--concurrency", "2",
		"--llm-retries", "0", "--format", "json", "--data", filepath.Join(dir, "data"), "--definitions", filepath.Join(dir, "defs"),
		"--llm-base-url", mock.URL, "--llm-model", "mock"}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	progress := errOut.String()
	if !strings.Contains(progress, "openai is rate limiting: 1 of 2 requests at once") || !strings.Contains(progress, "openai is no longer rate limiting: 2 of 2") {
		t.Errorf("progress does not show the throttling:\n%s", progress)
	}
	if !strings.Contains(out.String(), `"errors": 0`) && !strings.Contains(out.String(), `"errors":0`) {
		t.Errorf("report has errors:\n%.2000s", out.String())
	}
}
