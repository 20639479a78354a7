package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CORS: a web page served from another origin may call the API when its
// origin is one of Options.CORSOrigins. The API authenticates with a bearer
// token, which a page sends in the Authorization header, not with cookies:
// so the answers never say Access-Control-Allow-Credentials, and "*" (any
// origin) is allowed too. Pages of other origins get no CORS header, and
// their browsers refuse them the answers.

// The methods and request headers a page may use, and the answer headers
// it may read.
const (
	corsMethods        = "GET, POST, PUT, PATCH, DELETE"
	corsRequestHeaders = "Authorization, Content-Type, If-Match, If-None-Match"
	corsExposedHeaders = "ETag, Content-Disposition, WWW-Authenticate, Allow"
	// corsMaxAge is how long, in seconds, a browser may keep a preflight's
	// answer.
	corsMaxAge = "600"
)

// corsPolicy is the set of allowed origins.
type corsPolicy struct {
	any     bool
	origins map[string]bool
}

// newCORSPolicy checks a list of origins: each "*" or
// scheme://host[:port], http or https, nothing after the host. nil when the
// list is empty: no CORS answers at all.
func newCORSPolicy(list []string) (*corsPolicy, error) {
	p := &corsPolicy{origins: map[string]bool{}}
	for _, o := range list {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		if o == "*" {
			p.any = true
			continue
		}
		norm, err := normalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("server: CORS origin %q: %w", o, err)
		}
		p.origins[norm] = true
	}
	if !p.any && len(p.origins) == 0 {
		return nil, nil
	}
	return p, nil
}

// normalizeOrigin returns an origin as browsers send it in the Origin
// header: lower-case scheme and host, no default port, no trailing slash.
func normalizeOrigin(o string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(o, "/"))
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("want http://host[:port] or https://host[:port], or *")
	}
	if u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("an origin is scheme://host[:port] only, with no path, query or user")
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return scheme + "://" + host, nil
}

// allow returns the Access-Control-Allow-Origin value for origin, or ""
// when it is not allowed.
func (p *corsPolicy) allow(origin string) string {
	if p.any {
		return "*"
	}
	if norm, err := normalizeOrigin(origin); err == nil && p.origins[norm] {
		return origin
	}
	return ""
}

// cors answers preflight requests of allowed origins itself (before the
// token check: browsers send no Authorization header in a preflight) and
// adds the CORS headers to the answers they get. The answers always say
// Vary: Origin, since they depend on it.
func (p *corsPolicy) handler(next http.Handler) http.Handler {
	if p == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		allowed := ""
		if origin != "" {
			allowed = p.allow(origin)
		}
		if allowed == "" {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", allowed)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", corsMethods)
			h.Set("Access-Control-Allow-Headers", corsRequestHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposedHeaders)
		next.ServeHTTP(w, r)
	})
}
