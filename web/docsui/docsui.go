// Package docsui serves the API reference at /docs: an HTML page that
// renders the server's OpenAPI document (/openapi.yaml) with Stoplight
// Elements, whose script and styles are compiled into the binary, so the
// page works on a machine without internet.
//
// The viewer is third-party code, vendored unmodified under elements/
// with its licence and a README giving its version and source. Only this
// file is Gauntlet's.
package docsui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ElementsVersion is the version of Stoplight Elements under elements/.
const ElementsVersion = "9.0.15"

//go:embed elements/web-components.min.js elements/styles.min.css
var elements embed.FS

// Prefix is the path the page and its assets are served under.
const Prefix = "/docs"

// CSP is the Content-Security-Policy of the page: the viewer's script and
// styles from this server only (Elements sets inline styles), requests to
// this server only, no framing; the page runs sandboxed.
const CSP = "default-src 'none'; base-uri 'none'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; " +
	"img-src 'self' data:; font-src 'self' data:; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"sandbox allow-same-origin allow-scripts"

// page is the HTML of /docs. The OpenAPI document's path is relative to
// the server's root, where the API serves it.
const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gauntlet API reference</title>
<link rel="stylesheet" href="` + Prefix + `/elements/styles.min.css">
<script src="` + Prefix + `/elements/web-components.min.js"></script>
</head>
<body style="height: 100vh; margin: 0;">
<elements-api apiDescriptionUrl="/openapi.yaml" router="hash" layout="sidebar" tryItCredentialsPolicy="same-origin"></elements-api>
</body>
</html>
`

// asset is a file ready to serve.
type asset struct {
	name, ctype, etag string
	data              []byte
}

func newAsset(name, ctype string, data []byte) *asset {
	sum := sha256.Sum256(data)
	return &asset{name: name, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:10]) + `"`, data: data}
}

// assets maps each served path to its file, read once.
var assets = sync.OnceValue(func() map[string]*asset {
	out := map[string]*asset{Prefix: newAsset("index.html", "text/html; charset=utf-8", []byte(page))}
	for name, ctype := range map[string]string{
		"elements/web-components.min.js": "text/javascript; charset=utf-8",
		"elements/styles.min.css":        "text/css; charset=utf-8",
	} {
		data, err := fs.ReadFile(elements, name)
		if err != nil {
			panic("docsui: " + err.Error()) // embedded above: cannot happen
		}
		out[Prefix+"/"+name] = newAsset(name, ctype, data)
	}
	return out
})

// Handler serves GET (or HEAD) /docs, the page, and /docs/elements/…, the
// viewer's script and styles; other paths under /docs/ are 404, other
// methods 405. Every answer carries a strong ETag and "Cache-Control:
// no-cache", so a browser revalidates with a cheap 304.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	a := assets()[strings.TrimSuffix(r.URL.Path, "/")]
	if a == nil {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	if a.name == "index.html" {
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Frame-Options", "DENY")
	}
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.data))
}
