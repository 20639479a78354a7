package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness/catalog"
	"github.com/gauntlet-eval/gauntlet/harness/store"
	"github.com/gauntlet-eval/gauntlet/server"
)

func withCORS(origins ...string) envOption {
	return func(o *server.Options) { o.CORSOrigins = origins }
}

// rawSend sends a request as it is: no token, and no Accept-Encoding the
// client adds (Go's transport asks for gzip and decompresses by itself
// unless told not to).
func rawSend(t *testing.T, req *http.Request) *response {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &response{status: res.StatusCode, header: res.Header, body: data}
}

func (e *testEnv) raw(t *testing.T, method, path string, header ...string) *response {
	t.Helper()
	req, err := http.NewRequest(method, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return rawSend(t, req)
}

func hasVary(r *response, name string) bool {
	for _, v := range r.header.Values("Vary") {
		for item := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(item), name) {
				return true
			}
		}
	}
	return false
}

// TestCORS checks the allowed origins with a server that has a token: a
// preflight needs none and lists the methods and headers; the real request
// needs the token and carries the CORS headers, its 401 too; other origins
// get no CORS header.
func TestCORS(t *testing.T) {
	t.Parallel()
	const allowed, other = "https://dash.example.com", "https://evil.example.com"
	e := newEnv(t, withToken("tok"), withCORS(allowed, "http://localhost:5173/"))
	auth := "Bearer tok"

	t.Run("preflight of an allowed origin, without the token", func(t *testing.T) {
		r := e.raw(t, http.MethodOptions, "/api/settings/domains/math", "Origin", allowed,
			"Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "authorization, content-type, if-match")
		if r.status != http.StatusNoContent {
			t.Fatalf("preflight: %s", r)
		}
		h := r.header
		if h.Get("Access-Control-Allow-Origin") != allowed || !hasVary(r, "Origin") {
			t.Errorf("Allow-Origin %q, Vary %q", h.Get("Access-Control-Allow-Origin"), h.Values("Vary"))
		}
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			if !strings.Contains(h.Get("Access-Control-Allow-Methods"), m) {
				t.Errorf("Allow-Methods %q lacks %s", h.Get("Access-Control-Allow-Methods"), m)
			}
		}
		for _, name := range []string{"Authorization", "Content-Type", "If-Match", "If-None-Match"} {
			if !strings.Contains(h.Get("Access-Control-Allow-Headers"), name) {
				t.Errorf("Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), name)
			}
		}
		if h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("Allow-Credentials %q: the token is a header, not a credential", h.Get("Access-Control-Allow-Credentials"))
		}
	})

	t.Run("the origin as written with a trailing slash is allowed", func(t *testing.T) {
		r := e.raw(t, http.MethodOptions, "/api/agents", "Origin", "http://localhost:5173",
			"Access-Control-Request-Method", "GET")
		if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
			t.Fatalf("%s %v", r, r.header)
		}
	})

	t.Run("request of an allowed origin", func(t *testing.T) {
		r := e.raw(t, http.MethodGet, "/api/settings/domains", "Origin", allowed, "Authorization", auth)
		must(t, r, http.StatusOK)
		if r.header.Get("Access-Control-Allow-Origin") != allowed || !hasVary(r, "Origin") {
			t.Errorf("Allow-Origin %q, Vary %q", r.header.Get("Access-Control-Allow-Origin"), r.header.Values("Vary"))
		}
		for _, name := range []string{"ETag", "Content-Disposition"} {
			if !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), name) {
				t.Errorf("Expose-Headers %q lacks %s", r.header.Get("Access-Control-Expose-Headers"), name)
			}
		}
		// Without the token: still 401, readable by the page.
		r = e.raw(t, http.MethodGet, "/api/settings/domains", "Origin", allowed)
		mustProblem(t, r, http.StatusUnauthorized)
		if r.header.Get("Access-Control-Allow-Origin") != allowed {
			t.Errorf("401 without Allow-Origin")
		}
	})

	t.Run("other origins get no CORS header", func(t *testing.T) {
		for _, r := range []*response{
			e.raw(t, http.MethodOptions, "/api/settings/domains", "Origin", other, "Access-Control-Request-Method", "GET"),
			e.raw(t, http.MethodGet, "/api/settings/domains", "Origin", other, "Authorization", auth),
			e.raw(t, http.MethodGet, "/api/settings/domains", "Authorization", auth),
		} {
			for name := range r.header {
				if strings.HasPrefix(name, "Access-Control-") {
					t.Errorf("%d answer has %s: %q", r.status, name, r.header.Get(name))
				}
			}
			if !hasVary(r, "Origin") {
				t.Errorf("Vary %q: the answer depends on Origin", r.header.Values("Vary"))
			}
		}
		// The preflight of another origin is no free pass: it is refused
		// like any request without the token.
		mustProblem(t, e.raw(t, http.MethodOptions, "/api/settings/domains", "Origin", other,
			"Access-Control-Request-Method", "GET"), http.StatusUnauthorized)
	})
}

func TestCORSAnyOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCORS("*"))
	r := e.raw(t, http.MethodGet, "/api/settings/domains", "Origin", "https://anywhere.example")
	must(t, r, http.StatusOK)
	if r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("Allow-Origin %q, want *", r.header.Get("Access-Control-Allow-Origin"))
	}
}

func TestCORSNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.raw(t, http.MethodGet, "/api/settings/domains", "Origin", "https://anywhere.example")
	must(t, r, http.StatusOK)
	for name := range r.header {
		if strings.HasPrefix(name, "Access-Control-") {
			t.Errorf("a server without CORS origins answers %s", name)
		}
	}
}

// TestCORSOriginsChecked refuses origins that are not scheme://host[:port].
func TestCORSOriginsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, databaseURL(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, _, err := catalog.Open(ctx, catalog.Options{Dir: t.TempDir(), DB: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"example.com", "ftp://example.com", "https://example.com/app", "https://user@example.com", "https://example.com?x=1", "https://"} {
		if _, err := server.New(server.Options{Catalog: cat, CORSOrigins: []string{bad}}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v, want an error naming it", bad, err)
		}
	}
	for _, good := range []string{"*", "http://localhost:5173", "https://EXAMPLE.com:443/", "http://[::1]:8080"} {
		if _, err := server.New(server.Options{Catalog: cat, CORSOrigins: []string{good}}); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// TestGzipAnswers checks compression through the whole server: a large
// list is gzip when asked, with the headers that say so, and decodes to
// the JSON the uncompressed answer has; without Accept-Encoding, no gzip.
func TestGzipAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 40 {
		must(t, e.post("/api/settings/domains", map[string]any{"id": fmt.Sprintf("d%02d", i),
			"name": "Domain " + strings.Repeat("x", 40), "description": "A domain of the compression test"}), http.StatusCreated)
	}
	plain := e.raw(t, http.MethodGet, "/api/settings/domains")
	must(t, plain, http.StatusOK)
	if plain.header.Get("Content-Encoding") != "" || !json.Valid(plain.body) || len(plain.body) < 2048 {
		t.Fatalf("without Accept-Encoding: Content-Encoding %q, %d bytes", plain.header.Get("Content-Encoding"), len(plain.body))
	}
	zipped := e.raw(t, http.MethodGet, "/api/settings/domains", "Accept-Encoding", "gzip")
	must(t, zipped, http.StatusOK)
	if zipped.header.Get("Content-Encoding") != "gzip" || !hasVary(zipped, "Accept-Encoding") ||
		!strings.HasPrefix(zipped.header.Get("Content-Type"), "application/json") {
		t.Fatalf("headers %v", zipped.header)
	}
	if len(zipped.body) >= len(plain.body) {
		t.Errorf("compressed %d bytes, plain %d", len(zipped.body), len(plain.body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, plain.body) {
		t.Fatalf("decompressed answer differs from the plain one")
	}
	// A small answer is not worth it; a 304 has no body to compress.
	small := e.raw(t, http.MethodGet, "/api/settings/domains/d00", "Accept-Encoding", "gzip")
	must(t, small, http.StatusOK)
	if small.header.Get("Content-Encoding") != "" {
		t.Errorf("small answer compressed")
	}
	r := e.raw(t, http.MethodGet, "/api/settings/domains/d00", "Accept-Encoding", "gzip", "If-None-Match", small.header.Get("ETag"))
	if r.status != http.StatusNotModified || r.header.Get("Content-Encoding") != "" || len(r.body) != 0 {
		t.Errorf("304: %d %v %q", r.status, r.header, r.body)
	}
}
