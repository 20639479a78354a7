// Package llm talks to an OpenAI-compatible model endpoint (OpenAI, Ollama,
// vLLM, llama.cpp's server, LiteLLM...) through the official OpenAI Go SDK.
//
// A [Client] implements [harness.ChatModel] (chat completions with tools,
// streamed when the request asks for it), [harness.ModelLister] (GET /models) and [harness.Embedder]
// (POST /embeddings). It is safe for
// concurrent use; make one per endpoint and share it.
//
// # Bounds
//
// Each attempt of a call is bounded by [Options.Timeout] (120 s by
// default), or by the request's own harness.ChatRequest.Timeout when it
// sets one; the time spent reading the answer counts. An answer's body is
// read up to [Options.MaxResponseBytes] (4 MiB by default): a larger one
// fails the call with an error matching [ErrResponseTooLarge] as soon as
// one byte more than the limit has arrived, so a runaway endpoint costs
// about the limit in memory, whatever it sends (a Content-Length above the
// limit fails the call before the body is read).
//
// # Retries
//
// A failed attempt is retried, up to [Options.MaxRetries] times or the
// request's own harness.ChatRequest.MaxRetries, when another one might
// succeed: a 408 or 409 answer, a 5xx other than 501, a timeout, a
// refused or lost connection, or a malformed body. Other 4xx answers, 501
// (the endpoint does not implement the call), an answer too large and a
// host name that does not exist fail at once. Retries wait with
// exponential backoff and jitter, and at least as long as a Retry-After (or
// retry-after-ms) header asks; after an attempt that timed out, the retry
// goes at once: the timeout was the wait, and a hung request should cost
// one timeout, not a timeout and a backoff.
//
// # Rate limits
//
// A 429, 529 or 503 answer is a rate limit: it is waited out (Retry-After,
// retry-after-ms or the provider's reset headers, else a backoff) and sent
// again without counting as a retry, for at most [Options.RateLimitWait]
// per request. [Options.MaxConcurrency] bounds the requests in flight and
// adapts to rate limits (halved on one, +1 per 20 successes);
// [Options.RPM] and [Options.TPM] pace requests. [Client.RateLimits]
// reports the state.
//
// # Errors
//
// Errors are [*Error] values that say what happened and never contain the
// API key. When the endpoint could not be reached at all (connection
// refused, host name not resolved) they match harness.ErrUnreachable, so
// that a caller can tell an endpoint that is down from one that answers
// badly.
//
// # Configuration
//
// Only [Options] configure a Client: the SDK's OPENAI_* environment
// variables are ignored, so that a key meant for one endpoint never goes to
// another.
//
// The core harness package does not import this one, so a program that
// brings its own harness.ChatModel does not compile the SDK. For tests,
// harness/llm/llmtest serves a fake endpoint on loopback.
//
// # Anthropic
//
// With Kind KindAnthropic the Client speaks Anthropic's Messages API
// through Anthropic's official Go SDK: POST {BaseURL}/v1/messages with the
// key in x-api-key and anthropic-version 2023-06-01 ([AnthropicVersion]).
// System messages become the top-level system; max_tokens is always sent
// (the request's MaxTokens, else [DefaultAnthropicMaxTokens]); tools go as
// tools with an input_schema, tool calls as tool_use blocks and tool
// results as tool_result blocks, the consecutive ones in one user message.
// Temperature and top_p are sent when set (some models refuse both at
// once); Seed is ignored: the API has none. Reasoning asks for thinking
// with a budget of max(1024, Budget()) tokens, added to max_tokens; the
// thinking comes back as reasoning parts (redacted thinking too, its data
// in Signature), never in Content, and goes back with its signature before
// the text in the next request, as tool loops require. Usage: prompt
// tokens are input_tokens plus the tokens read from and written to the
// cache, cached tokens those read; completion tokens are output_tokens,
// thinking included; reasoning tokens are reported only when the API
// reports them apart (output_tokens_details). A streamed answer is read
// through the SDK's event stream, TTFT at its first content delta; a stream
// cut short or that does not parse fails as [ErrMalformedResponse], and an
// error event in it (overloaded_error...) counts as the HTTP status of that
// error. A 529 overloaded_error is retried like a 5xx, honouring its
// Retry-After. The ANTHROPIC_* environment variables and profiles are
// ignored, as OPENAI_* are.
//
// # Gemini
//
// With [KindGemini], a Client speaks Google's Gemini API through its
// official SDK (google.golang.org/genai): POST
// {BaseURL}/v1beta/models/{model}:generateContent, or
// :streamGenerateContent?alt=sse when the request asks for a stream, with
// the key in x-goog-api-key. System messages become the system
// instruction, assistant messages model turns (tool calls as function
// calls), tool messages function responses ({"output": text}) named after
// the call they answer; tools are declared with their JSON Schema as it
// is. Reasoning parameters ask for a thinking budget (Budget) and the
// thoughts: they come back as reasoning parts, never in the content, with
// their signatures, and go back with the next turn as Gemini requires.
// Calls Gemini gives no id get one ("gemini-call-T-N", never sent back).
// Usage: the prompt includes the cached tokens, the completion the
// thoughts. Errors keep their meaning: 429 RESOURCE_EXHAUSTED and 503
// UNAVAILABLE are retried (honouring Retry-After), 400 INVALID_ARGUMENT
// is not, and a stream cut short or with a malformed event is a malformed
// response. The SDK reads no GEMINI_API_KEY, GOOGLE_API_KEY or
// GOOGLE_GENAI_* variable: Options alone configure it, and it never uses
// Vertex AI.
package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Default settings of a Client, used for the Options left at zero.
const (
	// DefaultTimeout bounds each attempt of a request: long enough for a
	// local model to write a long answer on a slow machine.
	DefaultTimeout = 120 * time.Second
	// DefaultMaxRetries is the number of retries after a first attempt.
	DefaultMaxRetries = 2
	// DefaultRetryBaseDelay is the backoff before the first retry.
	DefaultRetryBaseDelay = 500 * time.Millisecond
	// DefaultRetryMaxDelay caps the backoff and the Retry-After honoured.
	DefaultRetryMaxDelay = 30 * time.Second
	// DefaultMaxResponseBytes is the largest response body read: far above
	// any real chat completion, far below what would strain memory when
	// many tests run at once.
	DefaultMaxResponseBytes = 4 << 20
)

// Options configure a Client. Only these settings are used: the SDK's
// OPENAI_* environment variables are ignored, so that a key meant for
// one endpoint never goes to another.
type Options struct {
	// Name names the provider in messages and in the rate-limit state
	// (RateLimits); default the Kind.
	Name string
	// Kind is the provider kind the endpoint speaks: KindOpenAI (the
	// default when empty), KindAnthropic or KindGemini.
	Kind string
	// BaseURL is the endpoint, e.g. "http://127.0.0.1:11434/v1" for an
	// OpenAI-compatible server, "https://api.anthropic.com" for Anthropic,
	// "https://generativelanguage.googleapis.com" for Gemini.
	BaseURL string
	// APIKey is sent as a bearer token when not empty. It never appears in
	// an error.
	APIKey string
	// Model is the default model name, used when a request names none.
	Model string
	// Timeout bounds each attempt of a request, reading the answer
	// included (default 120 s). A request's own Timeout replaces it.
	Timeout time.Duration
	// MaxRetries is the number of retries of a chat completion on 408,
	// 409, 429, 5xx other than 501, timeouts, connection errors and
	// malformed responses (default 2; negative means none). A request's
	// own MaxRetries replaces it. Models is never retried.
	MaxRetries int
	// MaxResponseBytes is the largest response body read (default 4 MiB;
	// negative means no limit). A larger body fails the call with an error
	// matching ErrResponseTooLarge, which is not retried, after reading at
	// most one byte more than the limit.
	MaxResponseBytes int64
	// RetryBaseDelay is the backoff before the first retry (default
	// 500 ms); it doubles at each retry, up to RetryMaxDelay, and a random
	// part of up to half of it is taken off (jitter).
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the backoff, and the wait a Retry-After header may
	// ask for (default 30 s): an endpoint asking for a longer wait gets no
	// retry, and the call fails with its status.
	RetryMaxDelay time.Duration
	// RateLimitWait bounds the time one request spends waiting out rate
	// limits (429, 529 and 503 answers), which are retried without
	// counting against MaxRetries (default DefaultRateLimitWait, 10 min).
	// A wait asked for beyond what is left of it fails the request at
	// once, saying so. Waiting at the concurrency gate or for RPM / TPM
	// pacing does not count.
	RateLimitWait time.Duration
	// MaxConcurrency bounds the requests in flight to the provider (0: no
	// bound). A rate-limited answer halves the bound (floor 1); it grows
	// back by one per 20 successful answers, up to MaxConcurrency.
	MaxConcurrency int
	// RPM and TPM, when positive, pace requests before they are sent:
	// at most RPM requests a minute, evenly spaced, and TPM tokens a
	// minute, a request's tokens estimated from its size (a token per
	// four bytes, plus its max_tokens) and corrected by the usage its
	// answer reports.
	RPM, TPM int
	// OnRetry, when set, is called before each retry with the number of
	// the attempt that failed (1 for the first), the wait before the next
	// one, and why the attempt failed. It must be safe for concurrent use.
	OnRetry func(attempt int, delay time.Duration, err error)
	// HTTPClient replaces the default HTTP client, whose transport keeps up
	// to 256 idle connections to the endpoint so that many concurrent
	// requests reuse them.
	HTTPClient *http.Client
}

// Client is a model endpoint. It implements harness.ChatModel and
// harness.ModelLister.
type Client struct {
	opts    Options
	backend backend
	// embeddings serves Embed; floatEmbeddings is set once the endpoint
	// refused base64-encoded vectors.
	embeddings      openai.EmbeddingService
	floatEmbeddings atomic.Bool
	limit           *limiter
	stats           struct {
		calls, attempts, retries, failures, rateLimited atomic.Int64
	}
}

var (
	_ harness.ChatModel   = (*Client)(nil)
	_ harness.ModelLister = (*Client)(nil)
)

// New returns a client for an endpoint.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("llm: BaseURL is required")
	}
	if opts.Kind == "" {
		opts.Kind = KindOpenAI
	}
	if opts.Name == "" {
		opts.Name = opts.Kind
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	opts.MaxRetries = max(opts.MaxRetries, 0)
	if opts.RetryBaseDelay <= 0 {
		opts.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if opts.RetryMaxDelay <= 0 {
		opts.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if opts.MaxResponseBytes == 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.RateLimitWait <= 0 {
		opts.RateLimitWait = DefaultRateLimitWait
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	c := &Client{opts: opts, limit: newLimiter(opts)}
	var err error
	switch opts.Kind {
	case KindOpenAI:
	case KindAnthropic:
		c.backend, err = newAnthropic(opts, hc)
	case KindGemini:
		c.backend, err = newGemini(opts, hc)
	default:
		return nil, fmt.Errorf("llm: unknown provider kind %q (known: %s)", opts.Kind, strings.Join(Kinds, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %w", opts.Kind, err)
	}
	// The services are built directly rather than through openai.NewClient,
	// which would read OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID,
	// OPENAI_CUSTOM_HEADERS... from the environment. The SDK's own retries
	// are off: see retry.go for why this package retries itself.
	ro := []option.RequestOption{
		option.WithBaseURL(opts.BaseURL),
		option.WithAPIKey(opts.APIKey),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if opts.MaxResponseBytes > 0 {
		ro = append(ro, option.WithMiddleware(limitBody(opts.MaxResponseBytes)))
	}
	if c.backend == nil {
		c.backend = &openaiBackend{chat: openai.NewChatCompletionService(ro...), models: openai.NewModelService(ro...)}
	}
	// Embeddings are asked of an OpenAI-compatible endpoint whatever the
	// kind: neither Anthropic nor Gemini serve /embeddings.
	c.embeddings = openai.NewEmbeddingService(ro...)
	return c, nil
}

// defaultHTTPClient clones the default transport with a connection pool
// sized for an evaluation's concurrency: the default keeps two idle
// connections per host, which makes 64 concurrent tests open and close a
// connection per request.
func defaultHTTPClient() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return &http.Client{}
	}
	t = t.Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: t}
}

// Model returns the default model name.
func (c *Client) Model() string { return c.opts.Model }

// Stats counts a Client's chat completions since it was made.
type Stats struct {
	// Calls is the number of Chat calls.
	Calls int64
	// Attempts is the number of HTTP requests those calls sent.
	Attempts int64
	// Retries is the number of attempts after a first one: Attempts - Calls.
	Retries int64
	// Failures is the number of Chat calls that returned an error.
	Failures int64
	// RateLimited is the number of attempts answered with a rate limit
	// (429, 529 or 503), which were waited out.
	RateLimited int64
}

// Stats returns the counts of the chat completions made so far.
func (c *Client) Stats() Stats {
	return Stats{
		Calls:       c.stats.calls.Load(),
		Attempts:    c.stats.attempts.Load(),
		Retries:     c.stats.retries.Load(),
		Failures:    c.stats.failures.Load(),
		RateLimited: c.stats.rateLimited.Load(),
	}
}

// Models lists the names of the models the endpoint serves (GET /models).
// It makes a single attempt, bounded by the Timeout: it answers a settings
// page, where a quick "unreachable" beats a patient retry.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var hres *http.Response
	names, err := c.backend.listModels(actx, &hres)
	if err != nil {
		e := c.classify(ctx, actx, c.opts.Timeout, "list models", hres, err)
		e.Attempts = 1
		return nil, e
	}
	return names, nil
}

// Name returns the provider's name (Options.Name).
func (c *Client) Name() string { return c.opts.Name }

// Kind returns the provider kind the client speaks (Options.Kind).
func (c *Client) Kind() string { return c.opts.Kind }
