package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// ErrMalformedResponse is matched, with errors.Is, by an *Error whose
// endpoint answered with a success status but a body that is not what was
// asked for: not JSON, cut short, or a chat completion with no choice.
var ErrMalformedResponse = errors.New("malformed response")

// Error is a failed call to the endpoint. Its text says what happened (the
// HTTP status and the endpoint's message, the timeout, the connection
// error) and never contains the API key. It unwraps to
// ErrMalformedResponse, context.DeadlineExceeded for a timeout, or the
// caller's context error when the call was cancelled.
type Error struct {
	// Op is what was attempted: "chat completion" or "list models".
	Op string
	// StatusCode is the HTTP status of the last attempt; 0 when there was
	// no response (timeout, connection error, cancellation).
	StatusCode int
	// Message says what went wrong: the endpoint's error message, the
	// timeout, the connection error.
	Message string
	// Attempts is the number of requests sent.
	Attempts int
	// RetryAfter is the wait the endpoint asked for in its last answer
	// (Retry-After or retry-after-ms, else for a rate limit the provider's
	// reset headers), 0 when it asked for none.
	RetryAfter time.Duration

	retryable bool
	err       error
}

// Error returns e.g. "llm: chat completion: HTTP 503 Service Unavailable:
// overloaded (after 3 attempts)".
func (e *Error) Error() string { return "llm: " + e.Op + ": " + e.detail() }

// detail is the error's text without the "llm: op: " prefix.
func (e *Error) detail() string {
	var b strings.Builder
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteString(" " + t)
		}
		if e.Message != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the cause: ErrMalformedResponse, ErrResponseTooLarge, a
// context error, an error matching harness.ErrUnreachable, or nil.
func (e *Error) Unwrap() error { return e.err }

// AttemptStatus classifies the failure for harness.Attempt.Status (see
// harness.AttemptStatusOf): the caller's cancellation, a timeout, an
// unreachable endpoint, an answer too large, a malformed one, an HTTP
// error status (returned too), else harness.AttemptFailed.
func (e *Error) AttemptStatus() (string, int) {
	switch {
	case errors.Is(e.err, context.Canceled):
		return harness.AttemptCancelled, 0
	case errors.Is(e.err, context.DeadlineExceeded):
		return harness.AttemptTimeout, 0
	case errors.Is(e.err, harness.ErrUnreachable):
		return harness.AttemptUnreachable, 0
	case errors.Is(e.err, ErrResponseTooLarge):
		return harness.AttemptTooLarge, e.StatusCode
	case errors.Is(e.err, ErrMalformedResponse):
		return harness.AttemptMalformed, e.StatusCode
	case e.StatusCode >= 400:
		return harness.AttemptHTTPError, e.StatusCode
	}
	return harness.AttemptFailed, 0
}

// Retryable reports whether another attempt might succeed: a 408, 409,
// 429 or 5xx status other than 501, a timeout, a refused or lost
// connection, or a malformed body.
func (e *Error) Retryable() bool { return e.retryable }

// classify turns what an attempt returned into an *Error. ctx is the
// caller's context, actx the attempt's (with the timeout, for the message);
// hres is the response when one arrived.
func (c *Client) classify(ctx, actx context.Context, timeout time.Duration, op string, hres *http.Response, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	e = &Error{Op: op}
	var tooLarge *tooLargeError
	var unreachable error
	switch {
	case ctx.Err() != nil:
		e.Message = ctx.Err().Error()
		e.err = ctx.Err()
	case errors.As(err, &tooLarge):
		if hres != nil {
			e.StatusCode = hres.StatusCode
		}
		e.Message = tooLarge.Error()
		e.err = ErrResponseTooLarge
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		e.Message = fmt.Sprintf("no response within %v (timeout)", timeout)
		e.err = context.DeadlineExceeded
		e.retryable = true
	case hres != nil && hres.StatusCode >= 400:
		e.StatusCode = hres.StatusCode
		e.Message = endpointMessage(hres)
		e.RetryAfter = retryAfter(hres.Header, time.Now())
		if e.RetryAfter == 0 && rateLimited(hres.StatusCode) {
			e.RetryAfter = resetAfter(hres.Header, time.Now())
		}
		e.retryable = retryableStatus(hres.StatusCode)
	case hres != nil && isReadError(err):
		e.StatusCode = hres.StatusCode
		e.Message = "connection lost while reading the response: " + err.Error()
		e.retryable = true
	case hres != nil:
		e.StatusCode = hres.StatusCode
		e.Message = "malformed response: " + err.Error()
		e.err = ErrMalformedResponse
		e.retryable = true
	case unreachableError(err, &unreachable):
		var dns *net.DNSError
		if errors.As(err, &dns) {
			// A name that does not exist will not exist a second later;
			// a resolver that timed out may answer the next time.
			e.Message = "host name not resolved: " + err.Error()
			e.retryable = !dns.IsNotFound
		} else {
			e.Message = "connection failed: " + err.Error()
			e.retryable = true
		}
		e.err = unreachable
	case isConnError(err):
		e.Message = "connection failed: " + err.Error()
		e.retryable = true
	default:
		e.Message = err.Error()
	}
	e.Message = c.scrub(e.Message)
	return e
}

// retryableStatus reports whether a status is worth another attempt:
// request timeout, conflict (a lock timeout at some providers), too many
// requests, and server errors but 501, which says the endpoint does not
// implement the call at all.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests ||
		(code >= 500 && code != http.StatusNotImplemented)
}

// unreachableError reports whether err says the endpoint could not be
// reached at all: the connection was refused, or its host name did not
// resolve. It then sets *cause to an error matching harness.ErrUnreachable
// and wrapping the network error (which names addresses, never the URL
// with its possible credentials).
func unreachableError(err error, cause *error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		*cause = fmt.Errorf("%w: %w", harness.ErrUnreachable, dns)
		return true
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) {
		*cause = fmt.Errorf("%w: %w", harness.ErrUnreachable, op)
	} else {
		*cause = fmt.Errorf("%w: %w", harness.ErrUnreachable, syscall.ECONNREFUSED)
	}
	return true
}

// isReadError reports whether reading a response's body failed, as
// opposed to decoding it. The SDK's message is the only sign of it when the
// connection merely closed early (io.ErrUnexpectedEOF, as a cut JSON body
// gives too).
func isReadError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || strings.HasPrefix(err.Error(), "error reading response body")
}

func isConnError(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// endpointMessage extracts the error message from an error response's
// body: OpenAI's {"error": {"message": ...}}, Ollama's {"error": "..."},
// {"message": ...} or {"detail": ...}, else the start of the body as text.
// The SDK has read the body and put it back for inspection.
func endpointMessage(hres *http.Response) string {
	if hres.Body == nil {
		return ""
	}
	raw, _ := io.ReadAll(io.LimitReader(hres.Body, 64<<10))
	hres.Body = io.NopCloser(bytes.NewReader(raw))
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(raw, &body) == nil {
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		}
		var s string
		switch {
		case json.Unmarshal(body.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(body.Error, &obj) == nil && (obj.Type != "" || obj.Code != nil):
			return strings.TrimSpace(fmt.Sprintf("%s %v", obj.Type, orEmpty(obj.Code)))
		case json.Unmarshal(body.Error, &s) == nil && s != "":
			return s
		case body.Message != "":
			return body.Message
		case body.Detail != nil:
			if d, ok := body.Detail.(string); ok {
				return d
			}
			b, _ := json.Marshal(body.Detail)
			return truncate(string(b), 300)
		}
	}
	return truncate(strings.Join(strings.Fields(string(raw)), " "), 300)
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// scrub removes the API key from a message: some endpoints echo it in
// their errors ("Incorrect API key provided: ..."), and a base URL may carry
// it. Keys shorter than 4 bytes are not secrets worth garbling text for.
func (c *Client) scrub(s string) string {
	if k := c.opts.APIKey; len(k) >= 4 {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return s
}
