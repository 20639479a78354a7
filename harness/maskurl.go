package harness

import (
	"net/url"
	"strconv"
	"strings"
)

// Credentials in URLs of records (a channel's callback_url, a URL in an
// evaluator's config) are never shown: a service returns the URL with
// its credentials masked (MaskURL, MaskURLs), and a masked URL sent back
// unchanged in an update keeps the stored one (RestoreMaskedURLs).

// MaskURL returns s with the credentials of its userinfo replaced by
// RedactedValue when s is a URL that carries them:
// "https://user:password@host/x" becomes "https://user:********@host/x",
// and "https://token@host/x" (a user name alone, often a token)
// "https://********@host/x". Everything else is kept byte for byte, so
// that a client can still tell where the URL points. ok is false, and s
// returned as it is, when s holds no credentials.
//
// Unlike RedactURL, which removes the credentials of an address shown
// for information, MaskURL keeps their place, so that the masked URL sent
// back in an update can be recognised (RestoreMaskedURLs).
func MaskURL(s string) (masked string, ok bool) {
	start, end, ok := userinfo(s)
	if !ok {
		return s, false
	}
	info := s[start:end]
	if user, _, hasPass := strings.Cut(info, ":"); hasPass {
		info = user + ":" + RedactedValue
	} else {
		info = RedactedValue
	}
	return s[:start] + info + s[end:], true
}

// MaskURLs returns a copy of v, a JSON value (a string, a
// map[string]any, a []any, to any depth), with the credentials of every
// string that is a URL masked by MaskURL, whatever its key. Values that
// hold no such URL are shared with v, not copied.
func MaskURLs(v any) any {
	switch v := v.(type) {
	case string:
		if m, ok := MaskURL(v); ok {
			return m
		}
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = MaskURLs(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = MaskURLs(e)
		}
		return out
	}
	return v
}

// RestoreMaskedURLs undoes MaskURLs in a value sent back by a client: v
// (a string, a map[string]any, a []any) is compared with stored, the
// value at the same place in the stored record, and every URL of v equal
// to the masked form of the stored URL at the same place is replaced by
// the stored URL, credentials included. Maps and lists of v are changed
// in place; the result is v, or the stored string when v is a masked
// string.
//
// A URL of v whose credentials are the mask but that is not the masked
// stored URL (another host, port, path or user, or nothing stored there)
// is an error added to ve, at field and its path below (field.key,
// field[2]): stored credentials only go to the address they were given
// for, and the mask is never taken for a password.
func RestoreMaskedURLs(ve *ValidationError, field string, v, stored any) any {
	switch v := v.(type) {
	case string:
		if !HasMaskedCredentials(v) {
			return v
		}
		if old, ok := stored.(string); ok {
			if m, masked := MaskURL(old); masked && m == v {
				return old
			}
		}
		ve.Add(field, "holds the mask %q as its credentials, but is not the stored URL: send the credentials again in clear", RedactedValue)
	case map[string]any:
		old, _ := stored.(map[string]any)
		for k, e := range v {
			v[k] = RestoreMaskedURLs(ve, field+"."+k, e, old[k])
		}
	case []any:
		old, _ := stored.([]any)
		for i, e := range v {
			var o any
			if i < len(old) {
				o = old[i]
			}
			v[i] = RestoreMaskedURLs(ve, field+"["+strconv.Itoa(i)+"]", e, o)
		}
	}
	return v
}

// HasMaskedURLs reports whether v (a JSON value, to any depth) holds a
// URL whose credentials are the mask: whether RestoreMaskedURLs has
// anything to do.
func HasMaskedURLs(v any) bool {
	switch v := v.(type) {
	case string:
		return HasMaskedCredentials(v)
	case map[string]any:
		for _, e := range v {
			if HasMaskedURLs(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if HasMaskedURLs(e) {
				return true
			}
		}
	}
	return false
}

// HasMaskedCredentials reports whether s is a URL whose credentials are
// RedactedValue, as MaskURL writes them or percent-encoded.
func HasMaskedCredentials(s string) bool {
	for _, c := range urlSecrets(s) {
		if c == RedactedValue {
			return true
		}
	}
	return false
}

// URLCredentials lists the credentials of the URLs in v (a string, or
// the strings of a map or a list, to any depth): the password, or the
// user name alone when there is no password, as written and
// percent-decoded. They are what to keep out of a log or an error
// message.
func URLCredentials(v any) []string {
	switch v := v.(type) {
	case string:
		return urlSecrets(v)
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, URLCredentials(e)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, URLCredentials(e)...)
		}
		return out
	}
	return nil
}

// RedactSecrets replaces every secret in text, as it is and URL-escaped
// (path and query forms), by RedactedValue. Give the longest secrets
// first, so that a secret containing another is replaced whole.
func RedactSecrets(text string, secrets []string) string {
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, form := range []string{s, url.PathEscape(s), url.QueryEscape(s)} {
			text = strings.ReplaceAll(text, form, RedactedValue)
		}
	}
	return text
}

// RedactURLsIn applies RedactURL to every URL in a text, such as an
// error that quotes the address it failed to reach: a word (split at
// spaces, quotes and brackets trimmed) that contains "://" loses its
// credentials.
func RedactURLsIn(text string) string {
	for _, f := range strings.Fields(text) {
		u := strings.Trim(f, "\"'`()[]<>,;")
		if strings.Contains(u, "://") {
			if r := RedactURL(u); r != u {
				text = strings.ReplaceAll(text, u, r)
			}
		}
	}
	return text
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
