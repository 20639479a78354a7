package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Sentinels an *Error unwraps to, as a model client's do.
var (
	// ErrMalformedResponse: the target answered with a success status
	// but not with what its definition reads: not JSON, or nothing (or
	// not a string) at the answer's pointer.
	ErrMalformedResponse = errors.New("malformed response")
	// ErrResponseTooLarge: the reply's body was larger than the client
	// reads. Not retried.
	ErrResponseTooLarge = errors.New("response too large")
)

// Error is a failed turn. Its text says why, names the target, and never
// holds a resolved secret. It unwraps to ErrMalformedResponse,
// ErrResponseTooLarge, an error matching harness.ErrUnreachable,
// context.DeadlineExceeded for a timeout, or the caller's context error.
type Error struct {
	// Target is the target's id.
	Target string
	// StatusCode is the HTTP status of the last attempt; 0 without a
	// reply.
	StatusCode int
	// Message says what went wrong.
	Message string
	// Attempts is the number of requests sent.
	Attempts int

	status     string // harness.Attempt… class
	retryable  bool
	retryAfter time.Duration
	err        error
}

// Error returns e.g. "target support: HTTP 500 Internal Server Error:
// overloaded (after 3 attempts)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("target " + e.Target + ": ")
	if e.StatusCode >= 300 {
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

// Unwrap returns the cause (see Error).
func (e *Error) Unwrap() error { return e.err }

// AttemptStatus classifies the failure for harness.Attempt.Status, as a
// model client's errors do (harness.AttemptStatusOf reads it), with the
// HTTP status when the target answered.
func (e *Error) AttemptStatus() (string, int) {
	if e.status == harness.AttemptUnreachable || e.status == harness.AttemptTimeout || e.status == harness.AttemptCancelled {
		return e.status, 0
	}
	return e.status, e.StatusCode
}

// Retryable reports whether another attempt might succeed.
func (e *Error) Retryable() bool { return e.retryable }

// transportError classifies a request that got no reply (or lost it
// while reading): the caller's cancellation, the attempt's timeout, a
// target that cannot be reached, a connection lost.
func (c *Client) transportError(ctx, actx context.Context, timeout time.Duration, err error) *Error {
	switch {
	case ctx.Err() != nil:
		return c.fail(0, ctx.Err().Error(), harness.AttemptCancelled, false, ctx.Err())
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		return c.fail(0, fmt.Sprintf("no reply within %v (timeout)", timeout), harness.AttemptTimeout, true, context.DeadlineExceeded)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		// A name that does not exist will not a second later.
		return c.fail(0, "host name not resolved: "+dns.Error(), harness.AttemptUnreachable, !dns.IsNotFound,
			fmt.Errorf("%w: %w", harness.ErrUnreachable, dns))
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		var op *net.OpError
		cause := error(syscall.ECONNREFUSED)
		msg := "connection refused"
		if errors.As(err, &op) {
			cause, msg = op, "connection failed: "+op.Error()
		}
		return c.fail(0, msg, harness.AttemptUnreachable, true, fmt.Errorf("%w: %w", harness.ErrUnreachable, cause))
	}
	return c.fail(0, "connection failed: "+netMessage(err), harness.AttemptFailed, true, nil)
}

// netMessage is a transport error's text without the request's URL,
// which *url.Error adds (the URL may hold a resolved variable).
func netMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// statusError is the error of a reply with a status of 300 or more.
func (c *Client) statusError(res *http.Response, data []byte) *Error {
	code := res.StatusCode
	if code < 400 {
		msg := "the target redirects"
		if loc := res.Header.Get("Location"); loc != "" {
			msg += " to " + loc
		}
		return c.fail(code, msg+": set the target's url to the final address", harness.AttemptHTTPError, false, nil)
	}
	retryable := code == http.StatusRequestTimeout || code == http.StatusConflict || code == http.StatusTooManyRequests ||
		(code >= 500 && code != http.StatusNotImplemented)
	e := c.fail(code, replyMessage(res.Header.Get("Content-Type"), data), harness.AttemptHTTPError, retryable, nil)
	if s := res.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
			e.retryAfter = time.Duration(n) * time.Second
		}
	}
	return e
}

// replyMessage is what an error reply says: its JSON message (detail,
// error, message), else the start of its text.
func replyMessage(contentType string, data []byte) string {
	var v map[string]any
	if json.Unmarshal(data, &v) == nil {
		for _, k := range []string{"detail", "error", "message", "title"} {
			switch x := v[k].(type) {
			case string:
				if x != "" {
					return snippet([]byte(x), 300)
				}
			case map[string]any:
				if m, ok := x["message"].(string); ok && m != "" {
					return snippet([]byte(m), 300)
				}
			}
		}
	}
	if isHTML(contentType, data) {
		return "an HTML page (" + snippet(data, 80) + ")"
	}
	return snippet(data, 300)
}

// snippet is the start of data as one line of valid text, at most n
// bytes, with "…" when cut.
func snippet(data []byte, n int) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(data), "�")), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// isHTML reports whether a reply is an HTML page: its Content-Type, or
// its first bytes.
func isHTML(contentType string, data []byte) bool {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/html") {
		return true
	}
	head := strings.ToLower(strings.TrimSpace(snippet(data, 20)))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
}
