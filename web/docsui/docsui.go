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
	"net/http"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gauntlet-eval/gauntlet/web"
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

// stylesheet is the page's CSS, embedded with the template.
var stylesheet = sync.OnceValue(func() *web.Asset {
	data, err := files.ReadFile("docs.css")
	if err != nil {
		panic("docsui: " + err.Error()) // embedded: cannot happen
	}
	return web.NewAsset("docs.css", "text/css; charset=utf-8", data)
})

// Handler serves GET (or HEAD) /docs, the reference of doc, and
// /docs/docs.css, its stylesheet; other paths under /docs/ are 404, other
// methods 405. The page is rendered on the first request and kept. Every
// answer carries a strong ETag and "Cache-Control: no-cache", so a
// browser revalidates with a cheap 304.
func Handler(doc *huma.OpenAPI) http.Handler {
	h := &handler{}
	h.page = sync.OnceValues(func() (*web.Asset, error) {
		data, err := render(doc)
		if err != nil {
			return nil, err
		}
		return web.NewAsset("index.html", "text/html; charset=utf-8", data), nil
	})
	return h
}

type handler struct {
	page func() (*web.Asset, error)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path != Prefix && path != Prefix+"/docs.css" {
		http.NotFound(w, r)
		return
	}
	if !web.GetOrHead(w, r) {
		return
	}
	if path != Prefix {
		stylesheet().Serve(w, r, nil)
		return
	}
	a, err := h.page()
	if err != nil {
		http.Error(w, "cannot render the API reference: "+err.Error(), http.StatusInternalServerError)
		return
	}
	a.Serve(w, r, pageHeaders)
}

// pageHeaders are the headers of the reference's page.
var pageHeaders = http.Header{
	"Content-Security-Policy": {CSP},
	"X-Frame-Options":         {"DENY"},
	"Referrer-Policy":         {"no-referrer"},
}
