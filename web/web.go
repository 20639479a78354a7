package web

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
)

//go:embed static
var embedded embed.FS

// FS returns the dashboard's files: index.html at the root, everything
// else under assets/.
func FS() fs.FS {
	sub, err := fs.Sub(embedded, "static")
	if err != nil {
		panic(err) // "static" is a valid path: cannot happen
	}
	return sub
}

// CSP is the Content-Security-Policy of the page: scripts, styles and API
// calls from the server itself only, no inline code, no framing.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// contentTypes are the media types of the files the dashboard ships;
// others fall back to the mime package.
var contentTypes = map[string]string{
	".html":  "text/html; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".json":  "application/json",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff2": "font/woff2",
}

// ContentType returns the media type the handler sends for a file name.
func ContentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ct, ok := contentTypes[ext]; ok {
		return ct
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// files reads every embedded file once, keyed by its path in FS.
var files = sync.OnceValue(func() map[string]*Asset {
	out := map[string]*Asset{}
	root := FS()
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		out[p] = NewAsset(p, ContentType(p), data)
		return nil
	})
	if err != nil {
		panic("web: read embedded files: " + err.Error())
	}
	return out
})

// Handler serves the dashboard: GET (or HEAD) / is index.html and
// /assets/<path> the files under assets/; any other path is 404, any
// other method 405.
//
// Asset names carry no content hash, so every answer says
// "Cache-Control: no-cache" with a strong ETag: a browser revalidates each
// file with a cheap 304 and never runs stale code after an upgrade.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	var name string
	switch p := r.URL.Path; {
	case p == "/" || p == "/index.html":
		name = "index.html"
	case strings.HasPrefix(p, "/assets/"):
		name = strings.TrimPrefix(p, "/")
	}
	f := files()[name]
	if f == nil || (name != "index.html" && !strings.HasPrefix(name, "assets/")) {
		http.NotFound(w, r)
		return
	}
	if !GetOrHead(w, r) {
		return
	}
	var page http.Header
	if f.Name == "index.html" {
		page = pageHeaders
	}
	f.Serve(w, r, page)
}

// pageHeaders are the headers of the dashboard's page.
var pageHeaders = http.Header{
	"Content-Security-Policy": {CSP},
	"X-Frame-Options":         {"DENY"},
	"Referrer-Policy":         {"same-origin"},
}
