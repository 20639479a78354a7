package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
)

// mockllm serves the fake OpenAI-compatible endpoint of harness/llm/llmtest
// until ctx ends. The first line on stdout is the base URL to give
// --llm-base-url.
func mockllm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		addr                   string
		opts                   llmtest.Options
		answers, answersPreset string
		skill                  = skillFlag{}
	)
	fs := flag.NewFlagSet("gauntlet mockllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: gauntlet mockllm [flags]

Serves a deterministic OpenAI-compatible endpoint (GET /v1/models, POST
/v1/chat/completions, POST /v1/embeddings) for demos and tests: "What is
A + B?" is answered "The answer is <sum>.", a request to restate the final
answer gets its bare value, a prompt naming an offered tool gets a tool
call, a question after an agent's knowledge base gets the sentence of it
that shares the most words with the question, anything else is echoed.
Embeddings are hashed bags of words. The first line printed is the base URL.

Faults, for manual and CI benchmarks of a client's bounds: each --*-rate
picks that fraction of chat completions by a seeded hash of the request's
number (retries are requests too), so the same --seed gives the same faults.
  --hang-rate         never answered until the client gives up (its timeout)
  --rate-limit-every  every n-th answered 429 with Retry-After (--retry-after)
  --error-rate        answered 500
  --garbage-rate      answered 200 with malformed JSON
  --huge-rate         answered 200 with a valid answer whose text is
                      --huge-bytes long, generated while it is sent and with
                      no Content-Length: it trips a client's response limit
                      (gauntlet serve --llm-max-response-bytes, 4 MiB)
  --nul-rate          answered with a NUL byte after the answer's first word
When several pick one request, the first of this list wins.

Throttling like a real provider:
  --rate-limit RPM    at most RPM chat requests a minute (a bucket of a
                      second's worth, refilled continuously); beyond it,
                      429 with Retry-After, retry-after-ms and
                      x-ratelimit-reset-requests
  --max-in-flight N   429 to a chat request that arrives while N are being
                      answered

Models of different skill, to try repeats, sweeps and comparisons:
  --answers FILE      a dataset (.jsonl or .csv, as gauntlet import-tests
                      reads it; --answers-preset gsm8k or mmlu) whose
                      questions the mock knows the answers to
  --skill MODEL=P     MODEL answers a question it knows (a row of --answers,
                      or "What is A + B?") right with probability P, else
                      wrong (a number off by one, another letter); models
                      not named are always right. Repeatable. The draw is a
                      hash of --seed, the model, the question and how often
                      that model was asked it, so runs are reproducible.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&addr, "addr", "127.0.0.1:8081", "listen address")
	fs.StringVar(&opts.Model, "model", llmtest.DefaultModel, "model name listed by /v1/models")
	fs.IntVar(&opts.EmbeddingDims, "embedding-dims", 1024, "length of the vectors of /v1/embeddings: hashed bags of words, whose words collide less the longer they are")
	fs.DurationVar(&opts.Latency, "latency", 0, "delay of every chat completion, e.g. 50ms")
	fs.DurationVar(&opts.Jitter, "jitter", 0, "random extra delay, up to this much")
	fs.Float64Var(&opts.ServerErrors.Rate, "error-rate", 0, "fraction of chat completions answered 500, from 0 to 1")
	fs.IntVar(&opts.RateLimits.Every, "rate-limit-every", 0, "answer every n-th chat completion 429 with Retry-After (0: never)")
	fs.IntVar(&opts.RPM, "rate-limit", 0, "throttle like a provider: at most `RPM` chat requests a minute, 429 beyond (0: no limit)")
	fs.IntVar(&opts.MaxInFlight, "max-in-flight", 0, "answer 429 to a chat request that arrives while `n` are being answered (0: no limit)")
	fs.DurationVar(&opts.RetryAfter, "retry-after", llmtest.DefaultRetryAfter, "wait asked for by 429 answers")
	fs.Float64Var(&opts.Timeouts.Rate, "hang-rate", 0, "fraction of chat completions never answered until the client gives up, from 0 to 1")
	fs.Float64Var(&opts.Timeouts.Rate, "timeout-rate", 0, "the same as --hang-rate")
	fs.Float64Var(&opts.Garbage.Rate, "garbage-rate", 0, "fraction of chat completions answered with malformed JSON, from 0 to 1")
	fs.Float64Var(&opts.Huge.Rate, "huge-rate", 0, "fraction of chat completions answered with --huge-bytes of text, from 0 to 1")
	fs.Int64Var(&opts.HugeBytes, "huge-bytes", llmtest.DefaultHugeBytes, "length of the text of the answers --huge-rate picks")
	fs.Float64Var(&opts.NUL.Rate, "nul-rate", 0, "fraction of chat completions whose answer holds a NUL byte, from 0 to 1")
	fs.Uint64Var(&opts.Seed, "seed", 0, "seed of the random faults and jitter")
	fs.StringVar(&opts.APIKey, "api-key", "", "when set, require this bearer token")
	fs.StringVar(&answers, "answers", "", "a dataset `file` (.jsonl or .csv) whose questions the mock answers")
	fs.StringVar(&answersPreset, "answers-preset", "", "preset of --answers: gsm8k or mmlu")
	fs.Var(skill, "skill", "`MODEL=P`: MODEL answers known questions right with probability P (repeatable)")
	if err := parseFlags(fs, args, stderr, ""); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return err
	}
	for _, r := range []struct {
		name string
		rate float64
	}{
		{"--error-rate", opts.ServerErrors.Rate}, {"--hang-rate", opts.Timeouts.Rate}, {"--garbage-rate", opts.Garbage.Rate},
		{"--huge-rate", opts.Huge.Rate}, {"--nul-rate", opts.NUL.Rate},
	} {
		if !(r.rate >= 0 && r.rate <= 1) { // NaN too
			return fmt.Errorf("%s must be between 0 and 1, not %v", r.name, r.rate)
		}
	}
	if opts.Latency < 0 || opts.Jitter < 0 || opts.RateLimits.Every < 0 || opts.RPM < 0 || opts.MaxInFlight < 0 {
		return errors.New("--latency, --jitter, --rate-limit-every, --rate-limit and --max-in-flight cannot be negative")
	}
	if opts.HugeBytes < 1 {
		return fmt.Errorf("--huge-bytes must be at least 1, not %d", opts.HugeBytes)
	}

	respond, err := newSkilled(answers, answersPreset, skill, opts.Seed)
	if err != nil {
		return err
	}
	opts.Respond = respond
	for m := range skill {
		opts.Models = append(opts.Models, m)
	}
	slices.Sort(opts.Models)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h := llmtest.NewHandler(opts)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "http://%s/v1\n", ln.Addr())
	fmt.Fprintf(stderr, "gauntlet mockllm: serving model %q; point Gauntlet at it with --llm-base-url http://%s/v1 --llm-model %s\n",
		opts.Model, ln.Addr(), opts.Model)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	h.Close() // release requests hung by --hang-rate
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shutdownCtx)
}
