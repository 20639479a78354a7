package target

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/internal/limitio"
)

// Defaults of a Client, used for the Options left at zero. They are a
// model endpoint's (harness/llm's), so that a target is held to what a
// model is.
const (
	// DefaultTimeout bounds each attempt of a turn.
	DefaultTimeout = 120 * time.Second
	// DefaultMaxRetries is the number of retries after a first attempt.
	DefaultMaxRetries = 2
	// DefaultMaxResponseBytes is the largest reply body read: the answer
	// limit of a model's reply.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultRetryBaseDelay is the backoff before the first retry.
	DefaultRetryBaseDelay = 500 * time.Millisecond
	// DefaultRetryMaxDelay caps the backoff and a Retry-After honoured.
	DefaultRetryMaxDelay = 30 * time.Second
)

// Options configure a Client.
type Options struct {
	// Timeout bounds each attempt, reading the reply included (default
	// DefaultTimeout). A turn's own Timeout replaces it.
	Timeout time.Duration
	// MaxRetries is the number of retries of a turn whose attempt might
	// succeed again (default DefaultMaxRetries; negative: none). A
	// turn's own MaxRetries replaces it.
	MaxRetries int
	// MaxResponseBytes is the largest reply body read (default
	// DefaultMaxResponseBytes; negative: no limit).
	MaxResponseBytes int64
	// RetryBaseDelay is the backoff before the first retry (default
	// 500 ms), doubled at each retry up to RetryMaxDelay (default 30 s),
	// less a random part of up to half of it.
	RetryBaseDelay, RetryMaxDelay time.Duration
	// Getenv reads the variables the definition names (default
	// os.Getenv).
	Getenv func(string) string
	// HTTPClient replaces the shared HTTP client. Its CheckRedirect is
	// the caller's to choose; the shared one follows no redirect.
	HTTPClient *http.Client
}

// Turn is one user turn sent to a target.
type Turn struct {
	// ConversationID names the conversation: the same for every turn of
	// one test and repeat (see ConversationID).
	ConversationID string
	// Messages are the conversation so far, OpenAI-shaped, the user's
	// message last: its content is {{prompt}}. Only role and content are
	// sent.
	Messages []harness.Message
	// Timeout, when positive, bounds each attempt instead of
	// Options.Timeout (a run's timeout).
	Timeout time.Duration
	// MaxRetries, when not nil, replaces Options.MaxRetries (0: a single
	// attempt).
	MaxRetries *int
	// OnAttempt, when set, is told of every attempt as it ends, retries
	// included, in order, from the goroutine of Send: what a model
	// client reports to harness.ChatRequest.OnAttempt.
	OnAttempt func(harness.Attempt)
}

// Reply is a target's answer to a turn.
type Reply struct {
	// Answer is the text at the definition's answer pointer.
	Answer string
	// ToolCalls are the calls the target reports at its tool_calls
	// pointer, in order (nil without that pointer); Arguments is a JSON
	// object's text.
	ToolCalls []harness.ToolCall
	// Sources are what the target reports at its sources pointer (nil
	// without that pointer), as an agent's retrieval gives them: a
	// source given as a bare file name has score 1.
	Sources []harness.Source
	// StatusCode is the HTTP status of the reply.
	StatusCode int
	// Latency is the time of the attempt that answered, from sending the
	// request to the end of the reply's body.
	Latency time.Duration
	// Attempts is the number of requests sent.
	Attempts int
}

// Client sends turns to one target. It is safe for concurrent use.
type Client struct {
	def       harness.TargetDefinition
	url       string
	header    http.Header
	sigHeader string
	secret    []byte
	secrets   []string // resolved values, scrubbed from messages
	opts      Options
	hc        *http.Client
}

// shared is the HTTP client of every Client without its own: a pool
// sized for an evaluation's concurrency, no redirects (a target that
// moved is an error saying where to).
var shared = sync.OnceValue(func() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 256
	tr.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
})

// New returns a client for a target. The definition is checked as the
// catalog checks it, and the environment variables it names are read now:
// one that is not set is an error wrapping harness.ErrEnvNotSet that
// names it; a definition that is not valid, or a URL that is not one once
// its variables are read, is an error wrapping harness.ErrInvalid.
func New(def harness.TargetDefinition, opts Options) (*Client, error) {
	if err := (harness.Validator{}).Target(&def); err != nil {
		return nil, fmt.Errorf("target %s: %w", def.ID, err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	opts.MaxRetries = max(opts.MaxRetries, 0)
	if opts.MaxResponseBytes == 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.RetryBaseDelay <= 0 {
		opts.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if opts.RetryMaxDelay <= 0 {
		opts.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	c := &Client{def: def, opts: opts, hc: opts.HTTPClient, header: http.Header{}}
	if c.hc == nil {
		c.hc = shared()
	}
	// resolve reads the variables of one field; those of headers and of
	// the signing secret are secrets, scrubbed from every message.
	resolve := func(field, s string, secret bool) (string, error) {
		out, err := harness.ResolveEnv(s, opts.Getenv)
		if err != nil {
			return "", fmt.Errorf("target %s: %s: %w", def.ID, field, err)
		}
		if secret {
			for _, name := range mustRefs(s) {
				if v := opts.Getenv(name); len(v) >= 4 {
					c.secrets = append(c.secrets, v)
				}
			}
		}
		return out, nil
	}
	var err error
	if c.url, err = resolve("url", def.URL, false); err != nil {
		return nil, err
	}
	ve := &harness.ValidationError{}
	if u, perr := parseHTTPURL(c.url); perr != nil {
		ve.Add("url", "%s once its variables are read: %v", c.scrub(u), perr)
		return nil, fmt.Errorf("target %s: %w", def.ID, ve)
	}
	c.header.Set("Content-Type", "application/json")
	c.header.Set("Accept", "application/json")
	for name, v := range def.Headers {
		if v, err = resolve("headers."+name, v, true); err != nil {
			return nil, err
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			ve.Add("headers."+name, "holds a line break or NUL once its variables are read")
			return nil, fmt.Errorf("target %s: %w", def.ID, ve)
		}
		c.header.Set(name, v)
	}
	if s := def.Signature; s != nil {
		secret, err := resolve("signature.secret", s.Secret, true)
		if err != nil {
			return nil, err
		}
		c.sigHeader, c.secret = s.Header, []byte(secret)
	}
	return c, nil
}

func mustRefs(s string) []string {
	refs, _ := harness.EnvRefs(s)
	return refs
}

// Definition returns the target's definition, as given to New (its
// ${VAR} references unresolved).
func (c *Client) Definition() harness.TargetDefinition { return c.def }

// ConversationID returns the conversation id of one test and repeat of a
// run: the same for each of its turns, different in every other run, so
// that a target keeping its own history (per user, per session) starts
// each test afresh.
func ConversationID(runID, testID string, repeat int) string {
	id := "gauntlet-" + runID + "-" + testID
	if repeat > 0 {
		id += "-r" + strconv.Itoa(repeat)
	}
	return id
}

// scrub removes the resolved secrets from a message.
func (c *Client) scrub(s string) string {
	for _, v := range c.secrets {
		s = strings.ReplaceAll(s, v, "********")
	}
	return s
}

// Send sends one turn and returns the target's reply. A failure is an
// *Error (see the package documentation); a cancelled ctx ends the turn
// with an *Error that unwraps to ctx's error.
func (c *Client) Send(ctx context.Context, turn *Turn) (*Reply, error) {
	body, err := c.render(turn)
	if err != nil {
		return nil, &Error{Target: c.def.ID, Message: err.Error(), status: harness.AttemptFailed, err: harness.ErrInvalid}
	}
	timeout := c.opts.Timeout
	if turn.Timeout > 0 {
		timeout = turn.Timeout
	}
	retries := c.opts.MaxRetries
	if turn.MaxRetries != nil {
		retries = max(*turn.MaxRetries, 0)
	}
	for n := 1; ; n++ {
		start := time.Now()
		reply, e := c.attempt(ctx, body, timeout)
		took := time.Since(start)
		if turn.OnAttempt != nil {
			a := harness.Attempt{N: n, Start: start, Duration: took}
			if e == nil {
				a.Status, a.HTTPStatus = harness.AttemptOK, reply.StatusCode
			} else {
				a.Status, a.HTTPStatus = e.AttemptStatus()
				a.Err = e
			}
			turn.OnAttempt(a)
		}
		if e == nil {
			reply.Latency, reply.Attempts = took, n
			return reply, nil
		}
		e.Attempts = n
		if !e.retryable || n > retries || ctx.Err() != nil {
			return nil, e
		}
		wait := c.backoff(n, e.retryAfter)
		if e.status == harness.AttemptTimeout {
			wait = 0 // the timeout was the wait
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, &Error{Target: c.def.ID, Message: ctx.Err().Error(), Attempts: n, status: harness.AttemptCancelled, err: ctx.Err()}
			case <-t.C:
			}
		}
	}
}

// backoff is the wait before retry n (from 1): the base doubled n-1
// times, capped, less up to half of it at random; at least what the
// target asked for, when it asked for no more than the cap.
func (c *Client) backoff(n int, asked time.Duration) time.Duration {
	d := c.opts.RetryBaseDelay << min(n-1, 20)
	d = min(d, c.opts.RetryMaxDelay)
	d -= time.Duration(rand.Int64N(int64(d/2) + 1))
	if asked > d && asked <= c.opts.RetryMaxDelay {
		d = asked
	}
	return d
}

// attempt sends the request once and reads the reply.
func (c *Client) attempt(ctx context.Context, body []byte, timeout time.Duration) (*Reply, *Error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, c.def.Method, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, c.fail(0, c.scrub(err.Error()), harness.AttemptFailed, false, harness.ErrInvalid)
	}
	req.Header = c.header.Clone()
	if c.sigHeader != "" {
		mac := hmac.New(sha256.New, c.secret)
		mac.Write(body)
		req.Header.Set(c.sigHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, actx, timeout, err)
	}
	defer res.Body.Close()
	limit := c.opts.MaxResponseBytes
	if limit > 0 && res.ContentLength > limit {
		return nil, c.tooLarge(res.StatusCode, limit)
	}
	var rd = res.Body
	if limit > 0 {
		rd = limitio.New(res.Body, limit, errTooLarge)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rd); err != nil {
		switch {
		case errors.Is(err, errTooLarge):
			return nil, c.tooLarge(res.StatusCode, limit)
		case ctx.Err() != nil, errors.Is(actx.Err(), context.DeadlineExceeded):
			return nil, c.transportError(ctx, actx, timeout, err)
		}
		e := c.fail(res.StatusCode, "connection lost while reading the reply: "+err.Error(), harness.AttemptFailed, true, nil)
		return nil, e
	}
	data := buf.Bytes()
	if res.StatusCode >= 300 {
		return nil, c.statusError(res, data)
	}
	reply, e := c.parse(res, data)
	if e != nil {
		return nil, e
	}
	reply.StatusCode = res.StatusCode
	return reply, nil
}

// errTooLarge is what the limited body returns past the limit.
var errTooLarge = errors.New("too large")

func (c *Client) tooLarge(status int, limit int64) *Error {
	return c.fail(status, fmt.Sprintf("response too large: more than %d bytes (the answer limit)", limit), harness.AttemptTooLarge, false, ErrResponseTooLarge)
}

func (c *Client) fail(status int, msg, class string, retryable bool, cause error) *Error {
	return &Error{Target: c.def.ID, StatusCode: status, Message: c.scrub(msg), status: class, retryable: retryable, err: cause}
}

// render builds the request body of a turn.
func (c *Client) render(turn *Turn) ([]byte, error) {
	if len(turn.Messages) == 0 || turn.Messages[len(turn.Messages)-1].Role != harness.RoleUser {
		return nil, errors.New("a turn ends with the user's message")
	}
	msgs := make([]wireMessage, len(turn.Messages))
	for i, m := range turn.Messages {
		msgs[i] = wireMessage{Role: m.Role, Content: m.Content}
	}
	msgsJSON, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	prompt := turn.Messages[len(turn.Messages)-1].Content
	values := map[string]any{"prompt": prompt, "messages": msgs, "conversation_id": turn.ConversationID}
	texts := map[string]string{"prompt": prompt, "messages": string(msgsJSON), "conversation_id": turn.ConversationID}
	return json.Marshal(fill(c.def.Body, values, texts))
}

// wireMessage is a message as {{messages}} sends it.
type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

var (
	placeholder     = regexp.MustCompile(`\{\{\s*(prompt|messages|conversation_id)\s*\}\}`)
	onlyPlaceholder = regexp.MustCompile(`^\{\{\s*(prompt|messages|conversation_id)\s*\}\}$`)
)

// fill returns v with its placeholders replaced: a string that is one is
// its value, a longer string gets the values' text.
func fill(v any, values map[string]any, texts map[string]string) any {
	switch x := v.(type) {
	case string:
		if m := onlyPlaceholder.FindStringSubmatch(x); m != nil {
			return values[m[1]]
		}
		if !strings.Contains(x, "{{") {
			return x
		}
		return placeholder.ReplaceAllStringFunc(x, func(s string) string {
			return texts[placeholder.FindStringSubmatch(s)[1]]
		})
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fill(e, values, texts)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fill(e, values, texts)
		}
		return out
	}
	return v
}
