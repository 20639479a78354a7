package server

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// rejectBadParams answers 422 to a request whose path or query string holds
// a NUL, a control character or bytes that are not valid UTF-8 once
// percent-decoded, naming where ("path.run_id", "query.domain"), before any
// handler runs: no id, name or filter holds such text, and a database
// given one answers with an error of its own (a 500) rather than "not
// found". Query values may hold tabs and line breaks, which a search text
// can; path segments may not.
//
// mux names the path parameters: the segment at fault is named after the
// wildcard of the pattern that matches the request, "path" alone when none
// does.
func rejectBadParams(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if location, problem := badParam(mux, r); problem != "" {
			writeStatusError(w, huma.Error422UnprocessableEntity("validation failed: "+location+": "+problem,
				&huma.ErrorDetail{Location: location, Message: problem}))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// badParam returns where the first bad text of r's path or query is, and
// what is wrong with it; problem is "" when both are fine.
func badParam(mux *http.ServeMux, r *http.Request) (location, problem string) {
	segments := strings.Split(r.URL.EscapedPath(), "/")
	for i, seg := range segments {
		text, err := url.PathUnescape(seg)
		if err != nil {
			continue // the mux answers what it answers to a path it cannot read
		}
		if p := paramProblem(text, false); p != "" {
			return pathParam(mux, r, i), p
		}
	}
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			continue // dropped by the query parser, as it would be anyway
		}
		if p := paramProblem(key, false); p != "" {
			return "query", "a parameter name " + p
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			continue
		}
		if p := paramProblem(value, true); p != "" {
			return "query." + key, p
		}
	}
	return "", ""
}

// paramProblem says why s cannot be a parameter: "contains a NUL
// character", "is not valid UTF-8" or "contains a control character";
// "" when it can. lines allows tabs and line breaks.
func paramProblem(s string, lines bool) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	for _, c := range s {
		if unicode.IsControl(c) && !(lines && (c == '\t' || c == '\n' || c == '\r')) {
			return "contains a control character"
		}
	}
	return ""
}

// pathParam names segment i of r's path by the wildcard of the pattern mux
// matches it with: "path.run_id"; "path" when no wildcard is there.
func pathParam(mux *http.ServeMux, r *http.Request, i int) string {
	_, pattern := mux.Handler(r)
	_, path, _ := strings.Cut(pattern, " ")
	if path == "" {
		path = pattern
	}
	parts := strings.Split(path, "/")
	if i < len(parts) {
		if name, ok := strings.CutPrefix(parts[i], "{"); ok {
			name = strings.TrimSuffix(strings.TrimSuffix(name, "}"), "...")
			return "path." + name
		}
	}
	return "path"
}
