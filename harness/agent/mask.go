package agent

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Mask replaces secret config values in every record the service returns
// (see docs/api.md). Sent back in an update, it keeps the stored value.
const Mask = harness.RedactedValue

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
// objects too, and the credentials of every URL masked (see harness.MaskURL). An empty or null secret stays as it is, so that a client
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
		if m, ok := harness.MaskURL(v); ok {
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

// restoreURLs replaces, in an updated config, every URL equal to the
// masked form of the stored value of the same key by that stored value
// (harness.RestoreMaskedURLs).
func restoreURLs(ve *harness.ValidationError, path string, cfg, stored map[string]any) {
	harness.RestoreMaskedURLs(ve, path, cfg, stored)
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
			case harness.HasMaskedCredentials(v):
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
				out = append(out, harness.URLCredentials(v)...)
			}
		}
	}
	walk(cfg, "")
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// redact replaces the secrets in a text, as they are and URL-escaped, by
// Mask (harness.RedactSecrets).
func redact(text string, secrets []string) string { return harness.RedactSecrets(text, secrets) }
