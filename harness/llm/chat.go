package llm

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/openai/openai-go/v3/option"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Chat performs one chat completion (POST /chat/completions, not
// streamed): every message of req, its tools offered as function tools,
// temperature, top_p, max_tokens and seed when set. The answer carries the first
// choice's message (text, tool calls with their raw JSON arguments), its
// finish reason, the token usage and the model that answered.
//
// An empty req.Model means the client's default Model. A positive
// req.Timeout bounds each attempt instead of Options.Timeout, and a non-nil
// req.MaxRetries replaces Options.MaxRetries (0 or less: a single
// attempt). Failures are retried as the package documentation says; the
// error is an *Error, or one matching harness.ErrInvalid when req cannot be
// sent at all.
func (c *Client) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	c.stats.calls.Add(1)
	resp, err := c.chatCompletion(ctx, req)
	if err != nil {
		c.stats.failures.Add(1)
	}
	return resp, err
}

func (c *Client) chatCompletion(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	const op = "chat completion"
	if req == nil {
		return nil, fmt.Errorf("llm: %s: %w", op, harness.Invalid("request", "is nil"))
	}
	model := req.Model
	if model == "" {
		model = c.opts.Model
	}
	send, err := c.backend.prepare(model, req)
	if err != nil {
		return nil, fmt.Errorf("llm: %s: %w", op, err)
	}
	timeout, retries := c.opts.Timeout, c.opts.MaxRetries
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	if req.MaxRetries != nil {
		retries = max(*req.MaxRetries, 0)
	}
	var resp *harness.ChatResponse
	tokens := 0
	if c.limit.tpm != nil {
		tokens = estimateTokens(req)
	}
	err = c.do(ctx, op, timeout, retries, tokens, func(actx context.Context, n int, hres **http.Response) error {
		r, err := send(actx, n, hres)
		if err != nil {
			return err
		}
		resp = r
		return nil
	}, observer(req, &resp))
	if err != nil {
		return nil, err
	}
	c.limit.settle(tokens, resp.Usage.PromptTokens+resp.Usage.CompletionTokens)
	return resp, nil
}

// observer reports each attempt of a request to its OnAttempt; nil when
// the request has none. *resp is the answer once an attempt succeeded.
func observer(req *harness.ChatRequest, resp **harness.ChatResponse) func(int, time.Time, time.Duration, *Error) {
	if req.OnAttempt == nil {
		return nil
	}
	return func(n int, start time.Time, d time.Duration, e *Error) {
		a := harness.Attempt{N: n, Start: start, Duration: d, Status: harness.AttemptOK}
		if e != nil {
			a.Status, a.HTTPStatus = e.AttemptStatus()
			a.Err = e
		} else if *resp != nil {
			a.Usage, a.TTFT = (*resp).Usage, (*resp).TTFT
		}
		req.OnAttempt(a)
	}
}

// attemptOptions are the SDK options of attempt n of a request: the HTTP
// response is stored in *hres, and a retry says which it is.
func attemptOptions(n int, hres **http.Response) []option.RequestOption {
	opts := []option.RequestOption{option.WithResponseInto(hres)}
	if n > 1 {
		opts = append(opts, option.WithHeader("X-Stainless-Retry-Count", strconv.Itoa(n-1)))
	}
	return opts
}

// malformed is the error of an answer whose body could not be understood:
// retryable, matching ErrMalformedResponse, with the answer's status.
func malformed(op string, hres *http.Response, err error) *Error {
	e := &Error{Op: op, Message: "malformed response: " + err.Error(), retryable: true, err: ErrMalformedResponse}
	if hres != nil {
		e.StatusCode = hres.StatusCode
	}
	return e
}
