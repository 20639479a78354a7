// Package docsui serves the API reference at /docs: an HTML page made on
// the server, by this package, from the API's OpenAPI document. It lists
// the operations by tag, each with its parameters, request body,
// responses and the credentials it needs, and expands the schemas into
// their fields. The page has no script and loads nothing but its own
// stylesheet (and the dashboard's icon), so it works on a machine without
// internet.
//
// Every string of the document goes into the page through html/template,
// escaped; descriptions are plain text in which blank lines separate
// paragraphs, lines beginning with "- " make a list and `backticks` mark
// code, and nothing else is interpreted.
//
// The page is made once, on its first request: the document must be
// complete by then and not change afterwards.
package docsui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// Prefix is the path the page and its stylesheet are served under.
const Prefix = "/docs"

// CSP is the Content-Security-Policy of the page: styles and images from
// this server only, no script at all, no framing, no forms.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; " +
	"form-action 'none'; frame-ancestors 'none'; sandbox allow-same-origin"

// The page links to the document the server serves at these paths.
const (
	DocumentYAML = "/openapi.yaml"
	DocumentJSON = "/openapi.json"
)

// asset is a response ready to serve.
type asset struct {
	name, ctype, etag string
	data              []byte
}

func newAsset(name, ctype string, data []byte) *asset {
	sum := sha256.Sum256(data)
	return &asset{name: name, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:10]) + `"`, data: data}
}

// stylesheet is the page's CSS, embedded with the template.
var stylesheet = sync.OnceValue(func() *asset {
	data, err := files.ReadFile("docs.css")
	if err != nil {
		panic("docsui: " + err.Error()) // embedded: cannot happen
	}
	return newAsset("docs.css", "text/css; charset=utf-8", data)
})

// Handler serves GET (or HEAD) /docs, the reference of doc, and
// /docs/docs.css, its stylesheet; other paths under /docs/ are 404, other
// methods 405. The page is rendered on the first request and kept. Every
// answer carries a strong ETag and "Cache-Control: no-cache", so a
// browser revalidates with a cheap 304.
func Handler(doc *huma.OpenAPI) http.Handler {
	h := &handler{}
	h.page = sync.OnceValues(func() (*asset, error) {
		data, err := render(doc)
		if err != nil {
			return nil, err
		}
		return newAsset("index.html", "text/html; charset=utf-8", data), nil
	})
	return h
}

type handler struct {
	page func() (*asset, error)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path != Prefix && path != Prefix+"/docs.css" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	a := stylesheet()
	if path == Prefix {
		var err error
		if a, err = h.page(); err != nil {
			http.Error(w, "cannot render the API reference: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	if a.name == "index.html" {
		hd.Set("Content-Security-Policy", CSP)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
	}
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.data))
}
