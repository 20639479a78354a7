// Package llm talks to an OpenAI-compatible model endpoint (OpenAI, Ollama,
// vLLM, llama.cpp's server, LiteLLM...) through the official OpenAI Go SDK.
//
// The core harness package does not import this one, so a program that
// brings its own harness.ChatModel does not compile the SDK.
package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Options configure a Client. Only these settings are used: the SDK's
// OPENAI_* environment variables are overridden, so that a key meant for
// one endpoint never goes to another.
type Options struct {
	// BaseURL is the endpoint, e.g. "http://127.0.0.1:11434/v1".
	BaseURL string
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// Model is the default model name.
	Model string
	// Timeout bounds each request (default 60 s).
	Timeout time.Duration
	// MaxRetries is the number of retries on 429, 5xx and timeouts
	// (default 2; negative means none).
	MaxRetries int
	// HTTPClient replaces the default HTTP client.
	HTTPClient *http.Client
}

// Client is a model endpoint.
type Client struct {
	opts Options
	sdk  openai.Client
}

// New returns a client for an endpoint.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == "" {
		return nil, errors.New("llm: BaseURL is required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 2
	}
	ro := []option.RequestOption{
		option.WithBaseURL(opts.BaseURL),
		// Explicit, even when empty: otherwise the SDK would send
		// OPENAI_API_KEY from the environment to this endpoint.
		option.WithAPIKey(opts.APIKey),
		option.WithAdminAPIKey(""),
		option.WithOrganization(""),
		option.WithProject(""),
		option.WithRequestTimeout(opts.Timeout),
		option.WithMaxRetries(max(opts.MaxRetries, 0)),
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	return &Client{opts: opts, sdk: openai.NewClient(ro...)}, nil
}

// Model returns the default model name.
func (c *Client) Model() string { return c.opts.Model }

// Models lists the names of the models the endpoint serves (GET /models).
func (c *Client) Models(ctx context.Context) ([]string, error) {
	page, err := c.sdk.Models.List(ctx, option.WithMaxRetries(0))
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	names := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		names = append(names, m.ID)
	}
	return names, nil
}

var _ harness.ModelLister = (*Client)(nil)
