package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm"
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
