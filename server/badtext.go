package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
)

// rejectBadText answers 422 to a JSON request body that is not valid UTF-8
// or holds a NUL byte, naming the field ("body.messages[1].content") that
// holds it. Go's JSON decoder would silently turn invalid bytes into
// U+FFFD, storing something other than what was sent, so the raw bytes are
// checked before any handler decodes them. A NUL written as the escape
// \u0000 is valid JSON: the validators catch it once decoded. A body that
// cannot be read whole (over its route's limit, past its read deadline)
// is answered 413, 408 or 400 here.
//
// maxCheckedBody is the largest JSON body it reads to check: every
// route's own limit is at most this, and the limiter (which runs first)
// has already refused a body over its route's limit.
func rejectBadText(maxCheckedBody int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || !isJSON(r.Header.Get("Content-Type")) ||
			r.ContentLength > maxCheckedBody {
			next.ServeHTTP(w, r)
			return
		}
		var buf bytes.Buffer
		if r.ContentLength > 0 {
			// One allocation of the declared size, not a doubling series.
			buf.Grow(int(r.ContentLength) + bytes.MinRead)
		}
		_, err := buf.ReadFrom(io.LimitReader(r.Body, maxCheckedBody+1))
		if err != nil {
			writeBodyError(w, err)
			return
		}
		body := buf.Bytes()
		if int64(len(body)) > maxCheckedBody {
			// Over every limit: let the operation refuse it.
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			next.ServeHTTP(w, r)
			return
		}
		r.Body.Close()
		if off, problem := badByte(body); off >= 0 {
			writeBadText(w, locate(body, off), problem)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// isJSON reports whether a Content-Type is JSON (application/json or a
// +json type such as application/merge-patch+json).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// badByte returns the offset of the first NUL byte or invalid UTF-8
// sequence in b, and what is wrong there; -1 when b is fine.
func badByte(b []byte) (int, string) {
	for i := 0; i < len(b); {
		c := b[i]
		if c == 0 {
			return i, "contains a NUL character"
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i, "is not valid UTF-8"
		}
		i += size
	}
	return -1, ""
}

// jsonFrame is one open object or array while locate walks a body.
type jsonFrame struct {
	object  bool
	key     string
	index   int
	wantKey bool
}

// locate returns the path, from "body", of the JSON value or key that
// holds byte off of body: "body.name", "body.messages[2].content". When the
// body stops being valid JSON before off, it returns the path reached.
func locate(body []byte, off int) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []jsonFrame
	path := func() string {
		var b strings.Builder
		b.WriteString("body")
		for _, f := range stack {
			if f.object {
				b.WriteString("." + f.key)
			} else {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		return b.String()
	}
	beforeValue := func() {
		if n := len(stack); n > 0 && !stack[n-1].object {
			stack[n-1].index++
		}
	}
	afterValue := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	prev := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			// The decoder stopped inside the next value (a raw NUL in a
			// string): in an array, that is the next element.
			beforeValue()
			return path()
		}
		end := int(dec.InputOffset())
		hit := off >= prev && off < end
		prev = end
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				beforeValue()
				if hit {
					return path()
				}
				stack = append(stack, jsonFrame{object: t == '{', wantKey: t == '{', index: -1})
			default:
				stack = stack[:len(stack)-1]
				afterValue()
			}
			continue
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				stack[n-1].key, stack[n-1].wantKey = t, false
				if hit {
					return path()
				}
				continue
			}
		}
		beforeValue()
		if hit {
			return path()
		}
		afterValue()
	}
}

// writeBadText writes the 422 problem of a body with bad text at location.
func writeBadText(w http.ResponseWriter, location, problem string) {
	writeStatusError(w, huma.Error422UnprocessableEntity("validation failed: "+location+": "+problem,
		&huma.ErrorDetail{Location: location, Message: problem}))
}
