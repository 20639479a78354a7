package agent

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Mask replaces secret config values in every record the service returns
// (see docs/api.md). Sent back in an update, it keeps the stored value.
const Mask = "********"

// IsSecretKey reports whether a config key holds a secret: bot_token, and
// any key containing "token", "secret", "password" or "key", in any case.
func IsSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"token", "secret", "password", "key"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// MaskConfig returns a copy of a channel config with the value of every
// secret key (see IsSecretKey) replaced by Mask, in nested objects too. An
// empty or null secret stays as it is, so that a client can tell a secret
// that is not set.
func MaskConfig(cfg map[string]any) map[string]any {
	if cfg == nil {
		return nil
	}
	out := make(map[string]any, len(cfg))
	for k, v := range cfg {
		switch {
		case IsSecretKey(k) && v != nil && v != "":
			out[k] = Mask
		default:
			out[k] = maskValue(v)
		}
	}
	return out
}

func maskValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return MaskConfig(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = maskValue(e)
		}
		return out
	}
	return v
}

// masked returns a channel record with its config masked.
func masked(c harness.ChannelConfig) harness.ChannelConfig {
	c.Config = MaskConfig(c.Config)
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

// checkNoMask refuses Mask as a value of a new config.
func checkNoMask(ve *harness.ValidationError, path string, cfg map[string]any) {
	for k, v := range cfg {
		switch v := v.(type) {
		case string:
			if v == Mask {
				ve.Add(path+"."+k, "is the mask %q, not a value", Mask)
			}
		case map[string]any:
			checkNoMask(ve, path+"."+k, v)
		}
	}
}

// secretValues lists the secret values of a config, longest first.
func secretValues(cfg map[string]any) []string {
	var out []string
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				walk(sub)
				continue
			}
			if !IsSecretKey(k) || v == nil {
				continue
			}
			var s string
			switch v := v.(type) {
			case string:
				s = v
			case bool:
				continue
			default:
				s = fmt.Sprint(v)
			}
			if s != "" {
				out = append(out, s)
			}
		}
	}
	walk(cfg)
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
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
