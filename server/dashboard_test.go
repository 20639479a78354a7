package server_test

import (
	"io/fs"
	"net/http"
	"path"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/web"
)

// TestDashboard checks the dashboard as the server mounts it: the page at
// /, its assets with their content types, 404 for anything else, and no
// token needed for the page while its API calls need one.
func TestDashboard(t *testing.T) {
	t.Parallel()
	const token = "dash-token"
	e := newEnv(t, withToken(token))
	noAuth := []string{"Authorization", ""}

	t.Run("the page at /", func(t *testing.T) {
		r := must(t, e.request(http.MethodGet, "/", nil, noAuth...), http.StatusOK)
		if ct := r.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		if !strings.Contains(string(r.body), `src="/assets/js/app.js"`) || !strings.Contains(string(r.body), "<title>Gauntlet</title>") {
			t.Errorf("not the dashboard:\n%s", r.body)
		}
		if cc := r.header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("Cache-Control %q, want no-cache (revalidated with the ETag)", cc)
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
	})

	t.Run("assets with their content types", func(t *testing.T) {
		want := map[string]string{".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
		n := 0
		err := fs.WalkDir(web.FS(), "assets", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			n++
			r := must(t, e.request(http.MethodGet, "/"+p, nil, noAuth...), http.StatusOK)
			if got, ok := want[path.Ext(p)]; !ok || r.contentType() != got {
				t.Errorf("/%s: Content-Type %q, want %q", p, r.header.Get("Content-Type"), got)
			}
			if r.header.Get("ETag") == "" || r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("/%s: headers %v", p, r.header)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 5 {
			t.Errorf("only %d assets", n)
		}
	})

	t.Run("unknown paths are 404", func(t *testing.T) {
		for _, p := range []string{"/assets/nope.js", "/assets/js/nope.js", "/assets/", "/index.html", "/dashboard", "/static/index.html"} {
			if r := e.request(http.MethodGet, p, nil, noAuth...); r.status != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, r.status)
			}
		}
	})

	t.Run("revalidation", func(t *testing.T) {
		r := must(t, e.request(http.MethodGet, "/assets/js/app.js", nil, noAuth...), http.StatusOK)
		if r2 := e.request(http.MethodGet, "/assets/js/app.js", nil, "If-None-Match", r.header.Get("ETag"), noAuth[0], noAuth[1]); r2.status != http.StatusNotModified {
			t.Errorf("If-None-Match: %d, want 304", r2.status)
		}
	})

	t.Run("the page needs no token, its API calls do", func(t *testing.T) {
		for _, p := range []string{"/", "/assets/js/app.js", "/assets/js/api.js", "/assets/app.css"} {
			must(t, e.request(http.MethodGet, p, nil, noAuth...), http.StatusOK)
		}
		for _, p := range []string{"/api/config", "/api/settings/domains", "/api/agents"} {
			mustProblem(t, e.request(http.MethodGet, p, nil, noAuth...), http.StatusUnauthorized)
			must(t, e.get(p), http.StatusOK)
		}
	})

	t.Run("the API keeps its routes", func(t *testing.T) {
		must(t, e.request(http.MethodGet, "/docs", nil, noAuth...), http.StatusOK)
		must(t, e.request(http.MethodGet, "/openapi.json", nil, noAuth...), http.StatusOK)
		if r := e.request(http.MethodPost, "/", nil, noAuth...); r.status != http.StatusMethodNotAllowed {
			t.Errorf("POST /: %d, want 405", r.status)
		}
	})
}
