package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Provider is a named model provider: a kind of API at an address, with
// the environment variable its key is read from and its rate limits.
// Model references of the form "NAME/model" go to it (see Router).
type Provider struct {
	// Name is what model references start with: "anthropic" in
	// "anthropic/claude-sonnet-4-5". Letters, digits, '-', '_' and '.'.
	Name string
	// Kind is KindOpenAI, KindAnthropic or KindGemini.
	Kind string
	// BaseURL is the provider's address; empty means the kind's public
	// API (DefaultBaseURL), for the kinds that have one.
	BaseURL string
	// APIKeyEnv is the environment variable holding the key; empty means
	// the kind's usual variable (DefaultAPIKeyEnv), if any.
	APIKeyEnv string
	// RPM and TPM, when positive, bound the requests and the tokens sent
	// to the provider per minute.
	RPM, TPM int
	// builtIn marks the entries of BuiltInProviders: their key may be
	// missing until a run uses them.
	builtIn bool
}

// DefaultBaseURL is the public API of each provider kind that has one.
var DefaultBaseURL = map[string]string{
	KindAnthropic: "https://api.anthropic.com",
	KindGemini:    "https://generativelanguage.googleapis.com",
}

// DefaultAPIKeyEnv is the environment variable each provider kind reads
// its key from when a provider names none. The OpenAI kind has none:
// OpenAI-compatible servers often need no key, and --llm-api-key serves
// the default endpoint.
var DefaultAPIKeyEnv = map[string]string{
	KindAnthropic: "ANTHROPIC_API_KEY",
	KindGemini:    "GEMINI_API_KEY",
}

// BuiltInProviders are the providers every program knows without being
// told: "anthropic" and "gemini", at their public APIs, with their keys in
// ANTHROPIC_API_KEY and GEMINI_API_KEY. A provider of the same name given
// explicitly replaces one.
func BuiltInProviders() []Provider {
	return []Provider{
		{Name: "anthropic", Kind: KindAnthropic, BaseURL: DefaultBaseURL[KindAnthropic], APIKeyEnv: DefaultAPIKeyEnv[KindAnthropic], builtIn: true},
		{Name: "gemini", Kind: KindGemini, BaseURL: DefaultBaseURL[KindGemini], APIKeyEnv: DefaultAPIKeyEnv[KindGemini], builtIn: true},
	}
}

// ParseProvider reads a provider from its command-line form,
// NAME=KIND[,base_url=URL][,api_key_env=VAR][,rpm=N][,tpm=N]. Its errors
// say what is wrong and what is expected; they never hold a key.
func ParseProvider(spec string) (Provider, error) {
	const form = "NAME=KIND[,base_url=URL][,api_key_env=VAR][,rpm=N][,tpm=N]"
	spec = strings.TrimSpace(spec)
	name, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return Provider{}, fmt.Errorf("provider %q: expected %s", spec, form)
	}
	fields := strings.Split(rest, ",")
	p := Provider{Name: strings.TrimSpace(name), Kind: strings.TrimSpace(fields[0])}
	if err := validName(p.Name); err != nil {
		return Provider{}, fmt.Errorf("provider %q: %w", spec, err)
	}
	if !slices.Contains(Kinds, p.Kind) {
		return Provider{}, fmt.Errorf("provider %s: unknown kind %q (known: %s)", p.Name, p.Kind, strings.Join(Kinds, ", "))
	}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return Provider{}, fmt.Errorf("provider %s: %q is not key=value (expected %s)", p.Name, f, form)
		}
		if seen[k] {
			return Provider{}, fmt.Errorf("provider %s: %s is given twice", p.Name, k)
		}
		seen[k] = true
		switch k {
		case "base_url":
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Provider{}, fmt.Errorf("provider %s: base_url must be an http or https URL, not %q", p.Name, harness.RedactURL(v))
			}
			p.BaseURL = v
		case "api_key_env":
			if !envName(v) {
				return Provider{}, fmt.Errorf("provider %s: api_key_env must name an environment variable (letters, digits and '_'), not %q", p.Name, v)
			}
			p.APIKeyEnv = v
		case "rpm", "tpm":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Provider{}, fmt.Errorf("provider %s: %s must be a whole number above 0, not %q", p.Name, k, v)
			}
			if k == "rpm" {
				p.RPM = n
			} else {
				p.TPM = n
			}
		default:
			return Provider{}, fmt.Errorf("provider %s: unknown setting %q (known: base_url, api_key_env, rpm, tpm)", p.Name, k)
		}
	}
	if p.BaseURL == "" {
		p.BaseURL = DefaultBaseURL[p.Kind]
		if p.BaseURL == "" {
			return Provider{}, fmt.Errorf("provider %s: kind %s needs base_url", p.Name, p.Kind)
		}
	}
	if p.APIKeyEnv == "" {
		p.APIKeyEnv = DefaultAPIKeyEnv[p.Kind]
	}
	return p, nil
}

// ParseProviders reads providers from a list of command-line forms (see
// ParseProvider) and adds the built-in ones they do not replace. A name
// given twice is an error.
func ParseProviders(specs []string) ([]Provider, error) {
	var out []Provider
	seen := map[string]bool{}
	for _, s := range specs {
		if strings.TrimSpace(s) == "" {
			continue
		}
		p, err := ParseProvider(s)
		if err != nil {
			return nil, err
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("provider %s is given twice", p.Name)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	for _, b := range BuiltInProviders() {
		if !seen[b.Name] {
			out = append(out, b)
		}
	}
	return out, nil
}

// String returns the provider in its command-line form, without its key.
func (p Provider) String() string {
	s := p.Name + "=" + p.Kind + ",base_url=" + harness.RedactURL(p.BaseURL)
	if p.APIKeyEnv != "" {
		s += ",api_key_env=" + p.APIKeyEnv
	}
	if p.RPM > 0 {
		s += ",rpm=" + strconv.Itoa(p.RPM)
	}
	if p.TPM > 0 {
		s += ",tpm=" + strconv.Itoa(p.TPM)
	}
	return s
}

// ErrNoAPIKey is matched by the error of a provider whose key variable is
// not set.
var ErrNoAPIKey = errors.New("API key not set")

// key reads the provider's key from the environment (getenv, os.Getenv
// when nil). A provider with a key variable that is not set is an error
// naming the variable: at start for a provider given explicitly, when a
// run uses it for a built-in one (see NewRouter).
func (p Provider) key(getenv func(string) string) (string, error) {
	if p.APIKeyEnv == "" {
		return "", nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	k := getenv(p.APIKeyEnv)
	if k == "" {
		return "", fmt.Errorf("provider %s: %w: set the environment variable %s", p.Name, ErrNoAPIKey, p.APIKeyEnv)
	}
	return k, nil
}

func validName(s string) error {
	if s == "" {
		return errors.New("the name is empty")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("the name %q may hold only letters, digits, '-', '_' and '.'", s)
		}
	}
	return nil
}

func envName(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// Router is a harness.ChatModel that sends each request to the provider
// its model reference names. A reference "NAME/model" whose NAME is a
// provider goes to that provider as "model"; any other reference (no
// slash, or a first segment that names no provider, such as
// "meta-llama/Llama-3-8B") goes unchanged to the default client. The
// provider is thus part of every reference a run, a cache key or a
// report holds.
//
// A provider whose key is missing answers every request with an error
// matching ErrNoAPIKey that names the variable to set.
type Router struct {
	def       *Client
	providers map[string]*routed
}

type routed struct {
	p      Provider
	client *Client // nil when keyErr is set
	keyErr error
}

var (
	_ harness.ChatModel         = (*Router)(nil)
	_ harness.ModelLister       = (*Router)(nil)
	_ harness.RateLimitReporter = (*Router)(nil)
)

// RouterOptions configure NewRouter.
type RouterOptions struct {
	// Default is the client of references that name no provider.
	// Required.
	Default *Client
	// Providers are the named providers (see ParseProviders).
	Providers []Provider
	// Client is the template of each provider's client: its timeout,
	// retries, limits, rate-limit wait, concurrency bound and hooks; Name,
	// Kind, BaseURL, APIKey, RPM and TPM come from the provider. Model is left empty: a reference always
	// names its model.
	Client Options
	// Getenv reads the key variables (default os.Getenv).
	Getenv func(string) string
}

// NewRouter returns a router over the providers. A provider given
// explicitly whose key variable (its api_key_env, else its kind's usual
// one) is not set is an error naming the variable; a built-in one without
// its key is kept, and refuses the requests sent to it.
func NewRouter(o RouterOptions) (*Router, error) {
	if o.Default == nil {
		return nil, errors.New("llm: a router needs a default client")
	}
	r := &Router{def: o.Default, providers: map[string]*routed{}}
	for _, p := range o.Providers {
		if _, dup := r.providers[p.Name]; dup {
			return nil, fmt.Errorf("llm: provider %s is given twice", p.Name)
		}
		k, err := p.key(o.Getenv)
		if err != nil {
			if !p.builtIn {
				return nil, fmt.Errorf("llm: %w", err)
			}
			r.providers[p.Name] = &routed{p: p, keyErr: err}
			continue
		}
		co := o.Client
		co.Name, co.Kind, co.BaseURL, co.APIKey, co.Model = p.Name, p.Kind, p.BaseURL, k, ""
		co.RPM, co.TPM = p.RPM, p.TPM
		c, err := New(co)
		if err != nil {
			return nil, fmt.Errorf("llm: provider %s: %w", p.Name, err)
		}
		r.providers[p.Name] = &routed{p: p, client: c}
	}
	return r, nil
}

// Route returns the provider a model reference goes to ("" for the
// default client) and the model name sent to it.
func (r *Router) Route(ref string) (provider, model string) {
	if name, m, ok := strings.Cut(ref, "/"); ok && m != "" {
		if _, ok := r.providers[name]; ok {
			return name, m
		}
	}
	return "", ref
}

// Endpoint returns the provider a model reference goes to ("" for the
// default client), its kind and its base URL, credentials taken out.
func (r *Router) Endpoint(ref string) (provider, kind, baseURL string) {
	name, _ := r.Route(ref)
	if name == "" {
		return "", r.def.opts.Kind, harness.RedactURL(r.def.opts.BaseURL)
	}
	p := r.providers[name].p
	return name, p.Kind, harness.RedactURL(p.BaseURL)
}

// Providers returns the router's providers, sorted by name.
func (r *Router) Providers() []Provider {
	out := make([]Provider, 0, len(r.providers))
	for _, name := range slices.Sorted(maps.Keys(r.providers)) {
		out = append(out, r.providers[name].p)
	}
	return out
}

// Check returns the error a request for the model reference would fail
// with before it is sent: a provider without its key. nil means the
// reference can be sent.
func (r *Router) Check(ref string) error {
	name, _ := r.Route(ref)
	if name == "" {
		return nil
	}
	return r.providers[name].keyErr
}

// Chat sends req to the provider its Model names (the default client's
// model when empty), with the provider's prefix taken off.
func (r *Router) Chat(ctx context.Context, req *harness.ChatRequest) (*harness.ChatResponse, error) {
	if req == nil {
		return r.def.Chat(ctx, req)
	}
	ref := req.Model
	if ref == "" {
		ref = r.def.opts.Model
	}
	name, model := r.Route(ref)
	if name == "" {
		return r.def.Chat(ctx, req)
	}
	p := r.providers[name]
	if p.keyErr != nil {
		return nil, fmt.Errorf("llm: chat completion: %w", p.keyErr)
	}
	sent := *req
	sent.Model = model
	return p.client.Chat(ctx, &sent)
}

// Models lists the default client's models, then those of each provider
// that answers, as references ("anthropic/claude-..."). Only the default
// client's failure is an error: a provider without a key, or down, is
// left out of the list.
func (r *Router) Models(ctx context.Context) ([]string, error) {
	out, err := r.def.Models(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(r.providers)) {
		p := r.providers[name]
		if p.client == nil {
			continue
		}
		ms, err := p.client.Models(ctx)
		if err != nil {
			continue
		}
		for _, m := range ms {
			out = append(out, name+"/"+m)
		}
	}
	return out, nil
}

// Embed embeds with the default client.
func (r *Router) Embed(ctx context.Context, model string, texts []string) ([][]float32, error) {
	return r.def.Embed(ctx, model, texts)
}

// RateLimits merges the rate-limit state of the default client and of
// every provider.
func (r *Router) RateLimits() map[string]harness.RateLimitState {
	out := map[string]harness.RateLimitState{}
	add := func(c *Client) {
		if rr, ok := any(c).(harness.RateLimitReporter); ok {
			maps.Copy(out, rr.RateLimits())
		}
	}
	add(r.def)
	for _, p := range r.providers {
		if p.client != nil {
			add(p.client)
		}
	}
	return out
}

// Default returns the client of references that name no provider.
func (r *Router) Default() *Client { return r.def }
