package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	"github.com/gauntlet-eval/gauntlet/internal/perf/bare"
	"github.com/gauntlet-eval/gauntlet/internal/testbin"
)

// BenchmarkEndToEnd is the project's speed yardstick: gauntlet run, the
// binary as a user runs it (a cold data directory each time, so the
// catalog's sync counts, then the run and its text report), beside the
// bare client of internal/perf/bare on the same "What is A + B?" tests
// against the same fake endpoint (gauntlet mockllm, a process of its
// own), one after the other in each iteration so that the machine's
// noise falls on both. The figure is the ratio, not a time:
//
//   - A: 5,000 tests in 5 level files, no latency, 64 in flight:
//     x-limit is gauntlet's tests/s over the bare client's (goal 0.5 or more);
//   - B: 2,000 tests in 2 level files, 100 ms latency, 256 in flight:
//     x-limit-wall is gauntlet's wall time over the bare client's (goal 1.10 or less).
//
// make bench runs it; docs/performance.md says what the figures were.
func BenchmarkEndToEnd(b *testing.B) {
	bin := testbin.Build(b, ".")
	for _, w := range []struct {
		name         string
		tests, files int
		latency      time.Duration
		concurrency  int
		wallRatio    bool
	}{
		{name: "A", tests: 5000, files: 5, concurrency: 64},
		{name: "B", tests: 2000, files: 2, latency: 100 * time.Millisecond, concurrency: 256, wallRatio: true},
	} {
		b.Run(w.name, func(b *testing.B) {
			url := startMock(b, bin, w.latency)
			defs := b.TempDir()
			sums := writeSums(b, defs, w.tests, w.files)
			var limitWall, runWall time.Duration
			n := 0
			for b.Loop() {
				res, err := bare.Run(context.Background(), url, llmtest.DefaultModel, sums, w.concurrency)
				if err != nil || res.Failures > 0 {
					b.Fatalf("bare client: %+v, %v", res, err)
				}
				limitWall += res.Wall
				runWall += coldRun(b, bin, url, defs, w.concurrency)
				n++
			}
			b.ReportMetric(float64(w.tests*n)/runWall.Seconds(), "tests/s")
			b.ReportMetric(float64(w.tests*n)/limitWall.Seconds(), "limit-tests/s")
			if w.wallRatio {
				b.ReportMetric(runWall.Seconds()/limitWall.Seconds(), "x-limit-wall")
			} else {
				b.ReportMetric(limitWall.Seconds()/runWall.Seconds(), "x-limit")
			}
		})
	}
}

// startMock starts gauntlet mockllm on a free loopback port with latency
// and returns its API's base URL; it is stopped when b ends.
func startMock(b *testing.B, bin string, latency time.Duration) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "mockllm", "--addr", addr, "--latency", latency.String())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := "http://" + addr + "/v1"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(url + "/models")
		if err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			b.Fatalf("mockllm did not answer: %v", err)
		}
	}
}

// writeSums writes definitions of one domain, arith, with n seeded sums
// in files level files and a regex evaluator of the number after "answer
// is", and returns the sums.
func writeSums(b *testing.B, dir string, n, files int) []bare.Sum {
	b.Helper()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("evaluators/num.yaml", "id: num\nname: Number after \"answer is\"\ntype: regex\n"+
		"extraction_regex: \"answer is (-?\\\\d+)\"\nuses_pass2: false\n")
	write("domains/arith/domain.yaml", "id: arith\nname: Arithmetic\ndescription: A + B\nevaluator_id: num\nenabled: true\n"+
		"system_prompt: You add numbers.\n")
	rng := rand.New(rand.NewPCG(42, 1))
	sums := make([]bare.Sum, 0, n)
	k := 0
	for f := range files {
		var sb strings.Builder
		sb.WriteString("system_prompt: Answer with 'The answer is N.'\nsystem_prompt_mode: append\ntests:\n")
		for range n/files + btoi(f < n%files) {
			s := bare.Sum{A: 1 + rng.IntN(1_000_000), B: 1 + rng.IntN(1_000_000)}
			sums = append(sums, s)
			fmt.Fprintf(&sb, "  - id: t%06d\n    name: add %d\n    prompt: \"What is %d + %d?\"\n    expected: {answer: \"%d\", type: numeric}\n",
				k, k, s.A, s.B, s.A+s.B)
			k++
		}
		write(fmt.Sprintf("domains/arith/level-%d.yaml", f+1), sb.String())
	}
	return sums
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// coldRun runs gauntlet run over defs on a data directory of its own,
// as a user's first run, and returns its wall time, process start to
// exit.
func coldRun(b *testing.B, bin, url, defs string, concurrency int) time.Duration {
	b.Helper()
	data := filepath.Join(b.TempDir(), "data")
	cmd := exec.Command(bin, "run", "--domains", "arith", "--model-name", "yardstick", "--format", "text")
	cmd.Env = append(os.Environ(), "GAUNTLET_DATA="+data, "GAUNTLET_DEFINITIONS="+defs,
		"GAUNTLET_PLUGINS="+filepath.Join(data, "no-plugins"), "LLM_BASE_URL="+url, "LLM_MODEL="+llmtest.DefaultModel,
		"LLM_API_KEY=sk-yardstick", fmt.Sprintf("GAUNTLET_CONCURRENCY=%d", concurrency), "GAUNTLET_DATABASE=")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil || !strings.Contains(string(out), "0 failed, 0 errors") {
		b.Fatalf("gauntlet run: %v\n%s", err, out)
	}
	os.RemoveAll(data)
	return wall
}
