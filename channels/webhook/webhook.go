package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// SignatureHeader is the header that carries a body's signature, in both
// directions.
const SignatureHeader = "X-Gauntlet-Signature"

const signaturePrefix = "sha256="

const (
	defaultCallbackTimeout = 10 * time.Second
	defaultCallbackRetries = 2
	defaultRetryDelay      = time.Second
	defaultMaxPending      = 64
	// detachedTimeout bounds a callback reply when Receive is called for a
	// channel whose Run is not active, so nothing else would end it.
	detachedTimeout = 10 * time.Minute
)

// Sign returns the X-Gauntlet-Signature value for body: "sha256=" and the
// hex HMAC-SHA256 of body keyed with secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether signature, an X-Gauntlet-Signature value, is
// body's signature with secret. It compares in constant time, accepts
// upper-case hex, and is always false for an empty secret. A callback
// receiver uses it to check that a reply comes from the channel.
func Verify(secret string, body []byte, signature string) bool {
	if secret == "" {
		return false
	}
	signature = strings.TrimSpace(signature)
	if len(signature) < len(signaturePrefix) || !strings.EqualFold(signature[:len(signaturePrefix)], signaturePrefix) {
		return false
	}
	got, err := hex.DecodeString(signature[len(signaturePrefix):])
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Message is the body of an inbound webhook request.
type Message struct {
	UserID  string `json:"user_id"` // whose conversation the message belongs to
	Message string `json:"message"` // the text for the agent
}

// Callback is the body POSTed to config.callback_url: the reply to the
// request RequestID (as its 202 response named it), or the reason there is
// none.
type Callback struct {
	ChannelID string `json:"channel_id"`
	RequestID string `json:"request_id"`         // as in the 202 response
	UserID    string `json:"user_id"`            // as in the request
	Success   bool   `json:"success"`            // whether the agent answered
	Response  string `json:"response,omitempty"` // the agent's reply, on success
	// Sources are the knowledge-base chunks the agent was given, best
	// first, on success ([] when its knowledge base gave nothing).
	Sources []harness.Source `json:"sources,omitempty"`
	Error   string           `json:"error,omitempty"` // why there is no reply, on failure
}

// Options configures a Channel. The zero value is ready to use.
type Options struct {
	// Logger receives the channel's log lines; nil means slog.Default().
	// Lines never hold the secret or message texts.
	Logger *slog.Logger
	// HTTPClient delivers callbacks; nil means a default client (each
	// attempt is bounded by CallbackTimeout).
	HTTPClient *http.Client
	// CallbackTimeout bounds one delivery attempt (default 10 s).
	CallbackTimeout time.Duration
	// CallbackRetries is how many times a failed delivery is tried again
	// (default 2; negative for none).
	CallbackRetries int
	// RetryDelay is the wait before the first retry, doubled before each
	// next one (default 1 s).
	RetryDelay time.Duration
	// MaxPending bounds the replies being prepared or delivered in
	// callback mode, over all channels (default 64). Beyond it requests
	// are answered 429.
	MaxPending int
}

// Channel is the "webhook" channel type. It implements harness.Channel,
// harness.ChannelConfigValidator and harness.Receiver; create it with New.
type Channel struct {
	log        *slog.Logger
	client     *http.Client
	timeout    time.Duration
	retries    int
	retryDelay time.Duration
	pending    chan struct{} // semaphore of callback replies

	mu   sync.Mutex
	runs map[string]*runState // by channel id
}

// runState is one active Run: callback replies of its channel live within
// its context.
type runState struct {
	ctx      context.Context
	wg       sync.WaitGroup
	stopping bool // set under Channel.mu; no more wg.Add after it
}

var (
	_ harness.Channel                = (*Channel)(nil)
	_ harness.ChannelConfigValidator = (*Channel)(nil)
	_ harness.Receiver               = (*Channel)(nil)
	_ harness.ConfigSecrets          = (*Channel)(nil)
)

// SecretFields declares the config key that holds a secret: the signing
// secret.
func (c *Channel) SecretFields() []string { return []string{"secret"} }

// New returns a webhook channel type configured by opts.
func New(opts Options) *Channel {
	c := &Channel{
		log:        opts.Logger,
		client:     opts.HTTPClient,
		timeout:    opts.CallbackTimeout,
		retries:    opts.CallbackRetries,
		retryDelay: opts.RetryDelay,
		runs:       map[string]*runState{},
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.client == nil {
		c.client = &http.Client{}
	}
	if c.timeout <= 0 {
		c.timeout = defaultCallbackTimeout
	}
	switch {
	case c.retries == 0:
		c.retries = defaultCallbackRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.retryDelay <= 0 {
		c.retryDelay = defaultRetryDelay
	}
	maxPending := opts.MaxPending
	if maxPending <= 0 {
		maxPending = defaultMaxPending
	}
	c.pending = make(chan struct{}, maxPending)
	return c
}

// ValidateChannelConfig checks a webhook channel's config before it is
// stored: it decodes into a Config with harness.DecodeConfig, so secret is
// a required, non-empty string, callback_url, when set, an http or https
// URL, and any other key is an error. Errors are *harness.ValidationError
// naming "config.secret", "config.callback_url" or the unknown key.
func (c *Channel) ValidateChannelConfig(config map[string]any) error {
	_, err := parseConfig(config, true)
	return err
}

// Config is the config of a webhook channel record.
type Config struct {
	// Secret is the key both sides sign bodies with (HMAC-SHA256).
	// Required. A secret: the API returns it masked, and it is never
	// logged nor put in an error.
	Secret string `json:"secret"`
	// CallbackURL, when set, is the absolute http or https URL replies are
	// POSTed to, signed with Secret, instead of being returned in the
	// response.
	CallbackURL string `json:"callback_url,omitempty"`
}

// Validate checks the settings' values: Secret is not empty and
// CallbackURL, when set, is an absolute http or https URL. Field names are
// relative to the config ("secret"). harness.DecodeConfig calls it.
func (c *Config) Validate() error {
	ve := &harness.ValidationError{}
	if c.Secret == "" {
		ve.Add("secret", "is required")
	}
	if v := strings.TrimSpace(c.CallbackURL); v != "" {
		u, err := url.Parse(v)
		switch {
		case err != nil || u.Host == "":
			ve.Add("callback_url", "must be an absolute http or https URL")
		case u.Scheme != "http" && u.Scheme != "https":
			ve.Add("callback_url", "must use http or https")
		}
	}
	return ve.Err()
}

// config is a channel's Config, ready to use.
type config struct {
	secret      string
	callbackURL string
}

// parseConfig reads a channel record's config: strict (an unknown key is
// an error) when the record is checked before it is stored, lenient when a
// stored record is used, so that a channel saved by another version, with
// a key this one does not know, still works. The secret is returned even
// when the config has another problem.
func parseConfig(m map[string]any, strict bool) (config, error) {
	var c Config
	err := (harness.ConfigDecoder{IgnoreUnknown: !strict}).Decode(m, &c)
	return config{secret: c.Secret, callbackURL: strings.TrimSpace(c.CallbackURL)}, err
}

// Run validates the channel's config and blocks until ctx is cancelled.
// Then it cancels the channel's callback replies still in progress, waits
// for them, and returns nil.
func (c *Channel) Run(ctx context.Context, run *harness.ChannelRun) error {
	if run == nil {
		return errors.New("webhook: no channel run")
	}
	if _, err := parseConfig(run.Channel.Config, false); err != nil {
		return err
	}
	id := run.Channel.ID
	log := c.log.With(channelAttrs(run.Channel)...)
	st := &runState{ctx: ctx}
	c.mu.Lock()
	c.runs[id] = st
	c.mu.Unlock()
	log.Info("webhook channel started")

	<-ctx.Done()

	c.mu.Lock()
	st.stopping = true
	if c.runs[id] == st {
		delete(c.runs, id)
	}
	c.mu.Unlock()
	st.wg.Wait()
	log.Info("webhook channel stopped")
	return nil
}

// Receive answers one webhook request; see the package documentation for
// the wire format. It returns an error wrapping harness.ErrUnauthorized
// for a missing or wrong signature, harness.ErrInvalid for a bad body.
func (c *Channel) Receive(ctx context.Context, run *harness.ChannelRun, req *harness.InboundRequest) (*harness.InboundResponse, error) {
	if run == nil || run.Host == nil || req == nil {
		return nil, errors.New("webhook: Receive needs a run with a host and a request")
	}
	log := c.log.With(channelAttrs(run.Channel)...)

	// The signature is checked before anything else is said about the
	// config.
	cfg, cfgErr := parseConfig(run.Channel.Config, false)
	secret := cfg.secret
	if secret == "" {
		return nil, fmt.Errorf("webhook channel has no secret configured: %w", harness.ErrUnauthorized)
	}
	sig := req.Header.Get(SignatureHeader)
	if sig == "" {
		return nil, fmt.Errorf("missing %s header: %w", SignatureHeader, harness.ErrUnauthorized)
	}
	if !Verify(secret, req.Body, sig) {
		log.Warn("webhook request with a wrong signature refused")
		return nil, fmt.Errorf("%s does not match the body: %w", SignatureHeader, harness.ErrUnauthorized)
	}

	msg, err := parseMessage(req.Body)
	if err != nil {
		return nil, err
	}
	if cfgErr != nil {
		// Only callback_url can be wrong here: the secret worked.
		return nil, fmt.Errorf("webhook channel misconfigured: %s", cfgErr.Error())
	}
	in := &harness.InboundMessage{UserID: msg.UserID, Text: msg.Message}

	if cfg.callbackURL != "" {
		return c.queue(ctx, run, cfg, in, log)
	}

	reply, err := run.Host.Chat(ctx, in)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, harness.ErrInvalid) || errors.Is(err, harness.ErrNotFound) {
			return nil, err
		}
		log.Warn("agent chat failed", "user_id", in.UserID, "error", err.Error())
		return &harness.InboundResponse{
			Status: http.StatusBadGateway,
			Body:   map[string]any{"success": false, "error": err.Error()},
		}, nil
	}
	return &harness.InboundResponse{
		Status: http.StatusOK,
		Body:   map[string]any{"success": true, "response": replyText(reply), "sources": replySources(reply)},
	}, nil
}

// parseMessage decodes and checks an inbound body.
func parseMessage(body []byte) (Message, error) {
	var raw struct {
		UserID  json.RawMessage `json:"user_id"`
		Message json.RawMessage `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return Message{}, harness.Invalid("body", "must be a JSON object with user_id and message")
	}
	if dec.More() {
		return Message{}, harness.Invalid("body", "must hold a single JSON object")
	}
	var m Message
	ve := &harness.ValidationError{}
	switch id := bytes.TrimSpace(raw.UserID); {
	case len(id) == 0 || string(id) == "null":
		ve.Add("user_id", "is required")
	case id[0] == '"':
		if json.Unmarshal(id, &m.UserID) != nil || strings.TrimSpace(m.UserID) == "" {
			ve.Add("user_id", "is required")
		}
	case id[0] == '-' || (id[0] >= '0' && id[0] <= '9'):
		m.UserID = string(id) // a numeric id, taken as its digits
	default:
		ve.Add("user_id", "must be a string")
	}
	switch text := bytes.TrimSpace(raw.Message); {
	case len(text) == 0 || string(text) == "null":
		ve.Add("message", "is required")
	case json.Unmarshal(text, &m.Message) != nil:
		ve.Add("message", "must be a string")
	case strings.TrimSpace(m.Message) == "":
		ve.Add("message", "must not be empty")
	}
	return m, ve.Err()
}

// queue answers 202 at once and prepares and delivers the reply in the
// background, within the channel's Run.
func (c *Channel) queue(ctx context.Context, run *harness.ChannelRun, cfg config, in *harness.InboundMessage, log *slog.Logger) (*harness.InboundResponse, error) {
	select {
	case c.pending <- struct{}{}:
	default:
		log.Warn("webhook request refused: too many replies pending")
		return &harness.InboundResponse{
			Status: http.StatusTooManyRequests,
			Body:   map[string]any{"success": false, "error": "too many replies waiting for delivery; try again later"},
		}, nil
	}

	base, done := c.background(ctx, run.Channel.ID)
	id := newRequestID()
	go func() {
		defer func() { <-c.pending }()
		defer done()
		c.answer(base, run, cfg, id, in, log.With("request_id", id, "user_id", in.UserID))
	}()
	return &harness.InboundResponse{
		Status: http.StatusAccepted,
		Body:   map[string]any{"success": true, "queued": true, "request_id": id},
	}, nil
}

// background returns the context a callback reply runs in, and the
// function to call when it ends: the channel's Run context, or, when Run
// is not active, a detached copy of ctx with a deadline.
func (c *Channel) background(ctx context.Context, channelID string) (context.Context, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.runs[channelID]; st != nil && !st.stopping {
		st.wg.Add(1)
		return st.ctx, st.wg.Done
	}
	return context.WithTimeout(context.WithoutCancel(ctx), detachedTimeout)
}

func (c *Channel) answer(ctx context.Context, run *harness.ChannelRun, cfg config, id string, in *harness.InboundMessage, log *slog.Logger) {
	payload := map[string]any{"channel_id": run.Channel.ID, "request_id": id, "user_id": in.UserID}
	reply, err := run.Host.Chat(ctx, in)
	switch {
	case ctx.Err() != nil:
		log.Info("webhook reply dropped: channel stopped")
		return
	case err != nil:
		log.Warn("agent chat failed", "error", err.Error())
		payload["success"] = false
		payload["error"] = err.Error()
	default:
		payload["success"] = true
		payload["response"] = replyText(reply)
		payload["sources"] = replySources(reply)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		log.Error("webhook callback not encoded", "error", err.Error())
		return
	}
	c.deliver(ctx, cfg, body, log)
}

// deliver POSTs a signed callback body, retrying network errors and 408,
// 429 and 5xx answers.
func (c *Channel) deliver(ctx context.Context, cfg config, body []byte, log *slog.Logger) {
	host := ""
	if u, err := url.Parse(cfg.callbackURL); err == nil {
		host = u.Host // logged instead of the URL, which may hold credentials
	}
	log = log.With("callback_host", host)
	sig := Sign(cfg.secret, body)
	delay := c.retryDelay
	var last string
	attempts := 0
	for attempt := 0; attempt <= c.retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				log.Info("webhook callback abandoned: channel stopped", "attempts", attempts)
				return
			case <-time.After(delay):
			}
			delay *= 2
		}
		attempts++
		status, err := c.post(ctx, cfg.callbackURL, body, sig)
		switch {
		case err == nil && status >= 200 && status < 300:
			log.Debug("webhook callback delivered", "status", status, "attempts", attempts)
			return
		case ctx.Err() != nil:
			log.Info("webhook callback abandoned: channel stopped", "attempts", attempts)
			return
		case err != nil:
			last = err.Error()
		default:
			last = fmt.Sprintf("answered %d %s", status, http.StatusText(status))
			if status != http.StatusRequestTimeout && status != http.StatusTooManyRequests && status < 500 {
				attempt = c.retries // the receiver refused it: retrying will not help
			}
		}
	}
	log.Warn("webhook callback failed", "attempts", attempts, "error", last)
}

func (c *Channel) post(ctx context.Context, target string, body []byte, sig string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, errors.New("cannot build the callback request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gauntlet-webhook")
	req.Header.Set(SignatureHeader, sig)
	resp, err := c.client.Do(req)
	if err != nil {
		// The url.Error's text holds the URL; keep only the cause.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func replyText(r *harness.Reply) string {
	if r == nil {
		return ""
	}
	return r.Text
}

// replySources are a reply's sources, [] when it has none.
func replySources(r *harness.Reply) []harness.Source {
	if r == nil || r.Sources == nil {
		return []harness.Source{}
	}
	return r.Sources
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func channelAttrs(ch harness.ChannelConfig) []any {
	return []any{slog.String("channel_id", ch.ID), slog.String("agent_id", ch.AgentID)}
}
