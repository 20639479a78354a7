package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"
)

// Asset is a response ready to serve: a file's bytes, its media type and
// a strong ETag of its content. The dashboard and the API reference
// (package docsui) serve theirs the same way.
type Asset struct {
	Name        string
	ContentType string
	ETag        string
	Data        []byte
}

// NewAsset makes an Asset of data, its ETag from a SHA-256 of it.
func NewAsset(name, contentType string, data []byte) *Asset {
	sum := sha256.Sum256(data)
	return &Asset{Name: name, ContentType: contentType, ETag: `"` + hex.EncodeToString(sum[:10]) + `"`, Data: data}
}

// GetOrHead reports whether r is a GET or a HEAD; for any other method it
// answers 405 with Allow and returns false.
func GetOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
	return false
}

// Serve answers a GET or HEAD (see GetOrHead) with the asset:
// "Cache-Control: no-cache" with its ETag, so that a browser
// revalidates with a cheap 304 and never keeps a stale file after an
// upgrade; nosniff; and page, the headers of an HTML page (its
// Content-Security-Policy, say), when not nil. Ranges and conditional
// requests are http.ServeContent's.
func (a *Asset) Serve(w http.ResponseWriter, r *http.Request, page http.Header) {
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.ETag)
	h.Set("X-Content-Type-Options", "nosniff")
	for k, v := range page {
		h[k] = append([]string(nil), v...)
	}
	http.ServeContent(w, r, a.Name, time.Time{}, bytes.NewReader(a.Data))
}
