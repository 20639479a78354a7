package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// DefaultAPIURL is the Bot API server used when config.api_url is empty.
const DefaultAPIURL = "https://api.telegram.org"

// MaxMessageLength is the longest text one Telegram message may carry, in
// UTF-16 code units (a character of the Basic Multilingual Plane counts
// once, an emoji outside it twice). Longer replies are sent in parts.
const MaxMessageLength = 4096

const (
	defaultPollTimeout     = time.Minute
	minPollTimeout         = 2 * time.Second
	defaultMinPollInterval = time.Second
	defaultMaxPollFailures = 8
	getMeTimeout           = 30 * time.Second
)

// Errors Run returns, wrapped with details; match them with errors.Is.
var (
	// ErrTokenRefused reports that the Bot API server refused the bot
	// token (401 Unauthorized, or 404 Not Found for a malformed one).
	ErrTokenRefused = errors.New("telegram refused the bot token")
	// ErrPolling reports that getUpdates failed too many times in a row.
	ErrPolling = errors.New("telegram polling failed")
)

// Options configures a Channel. The zero value is ready to use.
type Options struct {
	// Logger receives the channel's log lines; nil means slog.Default().
	// Lines carry channel_id and agent_id; the bot token never appears.
	Logger *slog.Logger
	// PollTimeout is how long one getUpdates long poll may wait for an
	// update (default one minute). The Bot API counts it in whole seconds
	// and waits one second less; values under two seconds are raised to
	// two. Tests shorten it; stopping never waits for it.
	PollTimeout time.Duration
	// HTTPClient makes the Bot API calls; nil means a client with a
	// timeout of PollTimeout plus ten seconds. A client's Timeout must
	// exceed PollTimeout, or every long poll fails.
	HTTPClient *http.Client
	// MaxPollFailures is how many getUpdates calls in a row may fail
	// before Run gives up with ErrPolling (default 8: about 15 seconds of
	// outage with the client library's back-off of 0.1 s doubling to 5 s).
	MaxPollFailures int
	// MinPollInterval is the least time between the starts of two
	// getUpdates calls when the first came back empty or failed (default
	// one second). A Bot API server that answers an empty long poll at once
	// would otherwise be asked thousands of times a second.
	MinPollInterval time.Duration
}

// Channel is the "telegram" channel type. It implements harness.Channel
// and harness.ChannelConfigValidator; create it with New.
type Channel struct {
	log             *slog.Logger
	pollTimeout     time.Duration
	client          *http.Client
	maxPollFailures int
	minPollInterval time.Duration
}

var (
	_ harness.Channel                = (*Channel)(nil)
	_ harness.ChannelConfigValidator = (*Channel)(nil)
	_ harness.ConfigSecrets          = (*Channel)(nil)
)

// SecretFields declares the config key that holds a secret: the bot
// token.
func (c *Channel) SecretFields() []string { return []string{"bot_token"} }

// New returns a telegram channel type configured by opts.
func New(opts Options) *Channel {
	c := &Channel{
		log:             opts.Logger,
		pollTimeout:     opts.PollTimeout,
		client:          opts.HTTPClient,
		maxPollFailures: opts.MaxPollFailures,
		minPollInterval: opts.MinPollInterval,
	}
	if c.minPollInterval <= 0 {
		c.minPollInterval = defaultMinPollInterval
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.pollTimeout <= 0 {
		c.pollTimeout = defaultPollTimeout
	}
	c.pollTimeout = max(c.pollTimeout, minPollTimeout)
	if c.client == nil {
		c.client = &http.Client{Timeout: c.pollTimeout + 10*time.Second}
	}
	if c.maxPollFailures <= 0 {
		c.maxPollFailures = defaultMaxPollFailures
	}
	return c
}

// ValidateChannelConfig checks a telegram channel's config before it is
// stored: it decodes into a Config with harness.DecodeConfig, so bot_token
// is required, api_url, when set, must be an http or https URL,
// show_sources, when set, a boolean, and any other key is an error. Errors
// are *harness.ValidationError naming "config.bot_token",
// "config.api_url", "config.show_sources" or the unknown key; they never
// quote the token.
func (c *Channel) ValidateChannelConfig(config map[string]any) error {
	_, err := parseConfig(config, true)
	return err
}

// Run connects to the Bot API and answers the bot's messages until ctx is
// cancelled; it returns nil then. It returns an error when the config is
// invalid, the token is refused (ErrTokenRefused), the server cannot be
// reached at start, or polling keeps failing (ErrPolling).
func (c *Channel) Run(ctx context.Context, run *harness.ChannelRun) error {
	if run == nil || run.Host == nil {
		return errors.New("telegram: run has no channel host")
	}
	cfg, err := parseConfig(run.Channel.Config, false)
	if err != nil {
		return err
	}
	r := newRunner(c, run, cfg)
	return r.run(ctx)
}

// Config is the config of a telegram channel record.
type Config struct {
	// BotToken is the bot's token, as @BotFather gives it
	// ("123456:ABC-DEF..."). Required. A secret: the API returns it
	// masked, and it never appears in errors or logs.
	BotToken string `json:"bot_token"`
	// APIURL is the Bot API server, for a self-hosted one: an absolute
	// http or https URL without query or fragment. Empty means
	// DefaultAPIURL.
	APIURL string `json:"api_url,omitempty"`
	// ShowSources, when true, ends each reply with the knowledge-base
	// chunks it drew on (see SourcesLine). Default false.
	ShowSources bool `json:"show_sources,omitempty"`
}

// Validate checks the settings' values: BotToken is set and holds no
// white space, control character, /, ?, # or % (a real token is digits, a
// colon and [A-Za-z0-9_-]; these characters would also break the request
// path), and APIURL, when set, is an absolute http or https URL without
// query or fragment. Field names are relative to the config ("bot_token").
// harness.DecodeConfig calls it.
func (c *Config) Validate() error {
	ve := &harness.ValidationError{}
	switch {
	case strings.TrimSpace(c.BotToken) == "":
		ve.Add("bot_token", "is required")
	case strings.ContainsFunc(c.BotToken, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("/?#%", r)
	}):
		ve.Add("bot_token", "must not contain spaces or the characters / ? # %%")
	}
	if v := strings.TrimSpace(c.APIURL); v != "" {
		u, err := url.Parse(v)
		switch {
		case err != nil || u.Host == "":
			ve.Add("api_url", "must be an absolute http or https URL")
		case u.Scheme != "http" && u.Scheme != "https":
			ve.Add("api_url", "must use http or https")
		case u.RawQuery != "" || u.Fragment != "":
			ve.Add("api_url", "must not have a query or fragment")
		}
	}
	return ve.Err()
}

// config is a channel's Config, ready to run.
type config struct {
	token       string
	apiURL      string
	showSources bool
}

// parseConfig reads a channel record's config: strict (an unknown key is
// an error) when the record is checked before it is stored, lenient when a
// stored record is run, so that a channel saved by another version, with
// a key this one does not know, still starts.
func parseConfig(m map[string]any, strict bool) (config, error) {
	var c Config
	if err := (harness.ConfigDecoder{IgnoreUnknown: !strict}).Decode(m, &c); err != nil {
		return config{}, err
	}
	cfg := config{token: c.BotToken, apiURL: DefaultAPIURL, showSources: c.ShowSources}
	if v := strings.TrimSpace(c.APIURL); v != "" {
		cfg.apiURL = strings.TrimRight(v, "/")
	}
	return cfg, nil
}

// redactor removes the bot token from text that may quote it: URLs in
// client errors, response bodies, anything the client library reports.
type redactor struct{ r *strings.Replacer }

const redacted = "[REDACTED]"

func newRedactor(token string) redactor {
	pairs := []string{token, redacted}
	if esc := url.PathEscape(token); esc != token {
		pairs = append(pairs, esc, redacted)
	}
	if _, secret, ok := strings.Cut(token, ":"); ok && len(secret) >= 8 {
		pairs = append(pairs, secret, redacted)
	}
	return redactor{strings.NewReplacer(pairs...)}
}

// String returns s without the token, cut to a readable length.
func (r redactor) String(s string) string {
	s = r.r.Replace(s)
	const maxLen = 500
	if len(s) > maxLen {
		cut := maxLen
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Error returns err's text without the token, as a new error: the result
// deliberately does not wrap err, whose text may hold the token.
func (r redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(r.String(err.Error()))
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// describe turns an error of the client library into a short text without
// the token.
func (r redactor) describe(err error) string {
	return r.String(err.Error())
}

func channelAttrs(ch harness.ChannelConfig) []any {
	return []any{slog.String("channel_id", ch.ID), slog.String("agent_id", ch.AgentID)}
}

func fmtUserID(id int64) string { return fmt.Sprintf("telegram:%d", id) }
