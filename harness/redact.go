package harness

import (
	"net/url"
	"strings"
)

// RedactedValue replaces a secret query parameter's value in RedactURL's
// result.
const RedactedValue = "********"

// secretParamWords are the substrings that make a query parameter's name
// (compared in lower case) look secret: key, api_key, apikey, token,
// access_token, secret, password, passwd, sig, signature...
var secretParamWords = []string{"key", "token", "secret", "pass", "sig"}

// RedactURL returns raw without the credentials it may carry, for showing
// or recording an endpoint's address: the userinfo ("user:password@") is
// removed and the value of every query parameter whose name looks secret
// (it contains key, token, secret, pass or sig, in any case) becomes
// RedactedValue. Everything else (scheme, host, port, path, the other
// parameters and their order, the fragment) is kept as written.
//
// A string that does not parse as a URL is returned with everything
// between "://" and the last "@" removed, and its secret query parameters
// masked the same way: it errs towards hiding too much.
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redactText(raw)
	}
	if u.Opaque != "" {
		// "user:pass@host" parses as scheme "user" with an opaque part:
		// the text form handles it.
		return redactText(raw)
	}
	u.User = nil
	u.RawQuery = redactQuery(u.RawQuery)
	return u.String()
}

// redactText is RedactURL for text that does not parse as a URL.
func redactText(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			raw = raw[:i+3] + rest[at+1:]
		}
	} else if at := strings.LastIndex(raw, "@"); at >= 0 {
		raw = raw[at+1:]
	}
	if q := strings.IndexByte(raw, '?'); q >= 0 {
		query, frag, hasFrag := strings.Cut(raw[q+1:], "#")
		raw = raw[:q+1] + redactQuery(query)
		if hasFrag {
			raw += "#" + frag
		}
	}
	return raw
}

// redactQuery masks the values of the secret parameters of a raw query,
// keeping the rest of it byte for byte.
func redactQuery(query string) string {
	if query == "" {
		return ""
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		name, value, ok := strings.Cut(p, "=")
		if !ok || value == "" {
			continue
		}
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if secretParam(name) {
			parts[i] = p[:len(p)-len(value)] + RedactedValue
		}
	}
	return strings.Join(parts, "&")
}

func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, w := range secretParamWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}
