// Package llm talks to an OpenAI-compatible model endpoint (OpenAI, Ollama,
// vLLM, llama.cpp's server, LiteLLM...) through the official OpenAI Go SDK.
//
// A [Client] implements [harness.ChatModel] (non-streaming chat completions
// with tools) and [harness.ModelLister] (GET /models). It is safe for
// concurrent use; make one per endpoint and share it.
//
// Each attempt of a call is bounded by [Options.Timeout]. Attempts that fail
// with 408, 409, 429 or 5xx, time out, lose their connection or get a
// malformed body are retried up to [Options.MaxRetries] times, with
// exponential backoff and jitter, waiting at least as long as a Retry-After
// (or retry-after-ms) header asks. Errors are [*Error] values that say what
// happened and never contain the API key.
//
// Only [Options] configure a Client: the SDK's OPENAI_* environment
// variables are ignored, so that a key meant for one endpoint never goes to
// another.
//
// The core harness package does not import this one, so a program that
// brings its own harness.ChatModel does not compile the SDK. For tests,
// harness/llm/llmtest serves a fake endpoint on loopback.
package llm

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Default settings of a Client, used for the Options left at zero.
const (
	// DefaultTimeout bounds each attempt of a request.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxRetries is the number of retries after a first attempt.
	DefaultMaxRetries = 2
	// DefaultRetryBaseDelay is the backoff before the first retry.
	DefaultRetryBaseDelay = 500 * time.Millisecond
	// DefaultRetryMaxDelay caps the backoff and the Retry-After honoured.
	DefaultRetryMaxDelay = 30 * time.Second
)

// Options configure a Client. Only these settings are used: the SDK's
// OPENAI_* environment variables are ignored, so that a key meant for
// one endpoint never goes to another.
type Options struct {
	// BaseURL is the endpoint, e.g. "http://127.0.0.1:11434/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty. It never appears in
	// an error.
	APIKey string
	// Model is the default model name, used when a request names none.
	Model string
	// Timeout bounds each attempt of a request (default 60 s).
	Timeout time.Duration
	// MaxRetries is the number of retries of a chat completion on 408,
	// 409, 429, 5xx, timeouts, connection errors and malformed responses
	// (default 2; negative means none). Models is never retried.
	MaxRetries int
	// RetryBaseDelay is the backoff before the first retry (default
	// 500 ms); it doubles at each retry, up to RetryMaxDelay, and a random
	// part of up to half of it is taken off (jitter).
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the backoff, and the wait a Retry-After header may
	// ask for (default 30 s): an endpoint asking for a longer wait gets no
	// retry, and the call fails with its status.
	RetryMaxDelay time.Duration
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
	opts   Options
	chat   openai.ChatCompletionService
	models openai.ModelService
	stats  struct {
		calls, attempts, retries, failures atomic.Int64
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
	hc := opts.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
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
	return &Client{
		opts:   opts,
		chat:   openai.NewChatCompletionService(ro...),
		models: openai.NewModelService(ro...),
	}, nil
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
}

// Stats returns the counts of the chat completions made so far.
func (c *Client) Stats() Stats {
	return Stats{
		Calls:    c.stats.calls.Load(),
		Attempts: c.stats.attempts.Load(),
		Retries:  c.stats.retries.Load(),
		Failures: c.stats.failures.Load(),
	}
}

// Models lists the names of the models the endpoint serves (GET /models).
// It makes a single attempt, bounded by the Timeout: it answers a settings
// page, where a quick "unreachable" beats a patient retry.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	actx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var hres *http.Response
	page, err := c.models.List(actx, option.WithResponseInto(&hres))
	if err != nil {
		e := c.classify(ctx, actx, "list models", hres, err)
		e.Attempts = 1
		return nil, e
	}
	names := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		names = append(names, m.ID)
	}
	return names, nil
}
