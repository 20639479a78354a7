package agent

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Mask replaces secret config values in every record the service returns
// (see docs/api.md). Sent back in an update, it keeps the stored value.
const Mask = "********"

// IsSecretKey reports whether a config key holds a secret by the default
// rule, for channel types that do not declare their secret keys
// (harness.ConfigSecrets): bot_token, and any key containing "token",
// "secret", "password" or "key", in any case.
func IsSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"token", "secret", "password", "key"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// secretRule says which keys of a config hold secrets: the keys its type
// declares, or by the default rule (IsSecretKey) when it declares none.
type secretRule struct {
	declared bool
	paths    map[string]bool // declared: dotted paths from the config's root
}

// secretRuleOf is the rule of the config of an implementation (a channel
// type): its harness.ConfigSecrets declaration, else the default rule.
func secretRuleOf(impl any) secretRule {
	fields, declared := harness.DeclaredSecrets(impl)
	if !declared {
		return secretRule{}
	}
	r := secretRule{declared: true, paths: make(map[string]bool, len(fields))}
	for _, f := range fields {
		r.paths[f] = true
	}
	return r
}

// secret reports whether the key at path (dotted from the config's root;
// its last element is key) holds a secret.
func (r secretRule) secret(path, key string) bool {
	if r.declared {
		return r.paths[path]
	}
	return IsSecretKey(key)
}

// channelSecrets is the secret rule of a channel type.
func (sv *Supervisor) channelSecrets(typ string) secretRule {
	impl, ok := sv.reg.Channel(typ)
	if !ok {
		return secretRule{}
	}
	return secretRuleOf(impl)
}

// MaskConfig returns a copy of a channel config with the value of every
// secret key by the default rule (IsSecretKey) replaced by Mask, in nested
// objects too, and the credentials of every URL masked (see MaskURL). An empty or null secret stays as it is, so that a client
// can tell a secret that is not set. The service itself masks each record
// by the rule of its type: the keys the type declares
// (harness.ConfigSecrets), and this default rule only for types that
// declare none.
func MaskConfig(cfg map[string]any) map[string]any { return maskConfig(cfg, secretRule{}, "") }

func maskConfig(cfg map[string]any, rule secretRule, prefix string) map[string]any {
	if cfg == nil {
		return nil
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		path := prefix + k
		switch {
		case rule.secret(path, k) && v != nil && v != "":
			out[k] = Mask
		default:
			out[k] = maskValue(v, rule, path)
		}
	}
	return out
}

func maskValue(v any, rule secretRule, path string) any {
	switch v := v.(type) {
	case string:
		if m, ok := MaskURL(v); ok {
			return m
		}
		return v
	case map[string]any:
		return maskConfig(v, rule, path+".")
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = maskValue(e, rule, path)
		}
		return out
	}
	return v
}

// MaskURL returns s with the credentials of its userinfo replaced by Mask
// when s is a URL that carries them: "https://user:password@host/x"
// becomes "https://user:********@host/x", and "https://token@host/x"
// (a user name alone, often a token) "https://********@host/x".
// Everything else is kept byte for byte. ok is false, and s returned as
// it is, when s holds no credentials. The service masks every string of a
// returned config this way, whatever its key; sent back unchanged in an
// update, the masked URL keeps the stored one.
func MaskURL(s string) (masked string, ok bool) {
	start, end, ok := userinfo(s)
	if !ok {
		return s, false
	}
	info := s[start:end]
	if user, _, hasPass := strings.Cut(info, ":"); hasPass {
		info = user + ":" + Mask
	} else {
		info = Mask
	}
	return s[:start] + info + s[end:], true
}

// userinfo finds the userinfo of a URL, "user:password" in
// "scheme://user:password@host/path": s[start:end]. ok is false when s is
// not such a URL or has no userinfo.
func userinfo(s string) (start, end int, ok bool) {
	i := strings.Index(s, "://")
	if i <= 0 || strings.ContainsAny(s[:i], " \t\r\n/?#@") {
		return 0, 0, false
	}
	start = i + 3
	authority := s[start:]
	if j := strings.IndexAny(authority, "/?#"); j >= 0 {
		authority = authority[:j]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return 0, 0, false
	}
	return start, start + at, true
}

// urlSecrets returns the credentials of s's userinfo (the password, or
// the user name alone when there is no password), as written and
// percent-decoded; none when s carries none.
func urlSecrets(s string) []string {
	start, end, ok := userinfo(s)
	if !ok {
		return nil
	}
	info := s[start:end]
	if _, pass, hasPass := strings.Cut(info, ":"); hasPass {
		info = pass
	}
	if info == "" {
		return nil
	}
	out := []string{info}
	if dec, err := url.PathUnescape(info); err == nil && dec != info {
		out = append(out, dec)
	}
	return out
}

// hasMaskedCredentials reports whether s is a URL whose credentials are
// Mask (as MaskURL writes them, or percent-encoded).
func hasMaskedCredentials(s string) bool {
	for _, c := range urlSecrets(s) {
		if c == Mask {
			return true
		}
	}
	return false
}

// restoreURLs replaces, in an updated config, every URL equal to the
// masked form of the stored value of the same key by that stored value,
// so that a record read back and sent back keeps its credentials. A URL
// with masked credentials that differs otherwise (another host, path or
// user) is an error naming its field: the stored credentials only go to
// the address they were given for.
func restoreURLs(ve *harness.ValidationError, path string, cfg, stored map[string]any) {
	for k, v := range cfg {
		cfg[k] = restoreURL(ve, path+"."+k, v, stored[k])
	}
}

func restoreURL(ve *harness.ValidationError, field string, v, stored any) any {
	switch v := v.(type) {
	case string:
		if !hasMaskedCredentials(v) {
			return v
		}
		if old, ok := stored.(string); ok {
			if m, masked := MaskURL(old); masked && m == v {
				return old
			}
		}
		ve.Add(field, "holds the mask %q as its credentials, but is not the stored URL: send the credentials again in clear", Mask)
	case map[string]any:
		old, _ := stored.(map[string]any)
		restoreURLs(ve, field, v, old)
	case []any:
		old, _ := stored.([]any)
		for i, e := range v {
			var o any
			if i < len(old) {
				o = old[i]
			}
			v[i] = restoreURL(ve, field+"["+strconv.Itoa(i)+"]", e, o)
		}
	}
	return v
}

// masked returns a channel record with its config masked by the rule of
// its type.
func (sv *Supervisor) masked(c harness.ChannelConfig) harness.ChannelConfig {
	c.Config = maskConfig(c.Config, sv.channelSecrets(c.Type), "")
	if c.Config == nil {
		c.Config = map[string]any{}
	}
	return c
}

// unmask replaces the Mask values of an updated config by the stored ones.
// A Mask where nothing is stored is an error naming the key.
func unmask(ve *harness.ValidationError, path string, cfg, stored map[string]any) {
	for k, v := range cfg {
		field := path + "." + k
		switch v := v.(type) {
		case string:
			if v != Mask {
				continue
			}
			old, ok := stored[k]
			if !ok {
				ve.Add(field, "is the mask %q, but no value is stored to keep", Mask)
				continue
			}
			cfg[k] = old
		case map[string]any:
			old, _ := stored[k].(map[string]any)
			unmask(ve, field, v, old)
		}
	}
}

// checkNoMask refuses Mask as a value of a new config, and as the
// credentials of one of its URLs.
func checkNoMask(ve *harness.ValidationError, path string, cfg map[string]any) {
	for k, v := range cfg {
		switch v := v.(type) {
		case string:
			switch {
			case v == Mask:
				ve.Add(path+"."+k, "is the mask %q, not a value", Mask)
			case hasMaskedCredentials(v):
				ve.Add(path+"."+k, "holds the mask %q as its credentials, not a value", Mask)
			}
		case map[string]any:
			checkNoMask(ve, path+"."+k, v)
		}
	}
}

// secretValues lists the secret values of a config by rule, longest
// first: every scalar under a secret key (a declared secret that is an
// object or a list gives all of its scalars), and the credentials of the
// URLs under the other keys.
func secretValues(cfg map[string]any, rule secretRule) []string {
	var out []string
	var leaves func(v any)
	leaves = func(v any) {
		switch v := v.(type) {
		case nil, bool:
		case string:
			if v != "" {
				out = append(out, v)
			}
		case map[string]any:
			for _, e := range v {
				leaves(e)
			}
		case []any:
			for _, e := range v {
				leaves(e)
			}
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		for k, v := range m {
			path := prefix + k
			switch sub, isMap := v.(map[string]any); {
			case rule.declared && rule.paths[path]:
				leaves(v)
			case isMap:
				walk(sub, path+".")
			case rule.secret(path, k):
				leaves(v)
			default:
				out = append(out, urlCredentials(v)...)
			}
		}
	}
	walk(cfg, "")
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// urlCredentials lists the credentials of the URLs in v (a string, or
// the strings of a list, to any depth).
func urlCredentials(v any) []string {
	switch v := v.(type) {
	case string:
		return urlSecrets(v)
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, urlCredentials(e)...)
		}
		return out
	}
	return nil
}

// redact replaces the secrets in a text, as they are and URL-escaped, by
// Mask.
func redact(text string, secrets []string) string {
	for _, s := range secrets {
		for _, form := range []string{s, url.PathEscape(s), url.QueryEscape(s)} {
			text = strings.ReplaceAll(text, form, Mask)
		}
	}
	return text
}
