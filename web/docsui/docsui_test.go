package docsui_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/web/docsui"
)

func TestHandler(t *testing.T) {
	h := docsui.Handler()
	get := func(method, path string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	page := get(http.MethodGet, "/docs")
	if page.Code != http.StatusOK || page.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /docs: %d %q", page.Code, page.Header().Get("Content-Type"))
	}
	body := page.Body.String()
	for _, want := range []string{`src="/docs/elements/web-components.min.js"`, `href="/docs/elements/styles.min.css"`, `apiDescriptionUrl="/openapi.yaml"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Errorf("the page refers to another site:\n%s", body)
	}
	if page.Header().Get("Content-Security-Policy") != docsui.CSP {
		t.Errorf("CSP %q", page.Header().Get("Content-Security-Policy"))
	}
	for path, ctype := range map[string]string{
		"/docs/elements/web-components.min.js": "text/javascript; charset=utf-8",
		"/docs/elements/styles.min.css":        "text/css; charset=utf-8",
	} {
		w := get(http.MethodGet, path)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != ctype || w.Body.Len() < 100000 {
			t.Errorf("%s: %d %q, %d bytes", path, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
		if again := get(http.MethodGet, path, "If-None-Match", w.Header().Get("ETag")); again.Code != http.StatusNotModified {
			t.Errorf("%s revalidated: %d, want 304", path, again.Code)
		}
		if head := get(http.MethodHead, path); head.Code != http.StatusOK {
			t.Errorf("HEAD %s: %d", path, head.Code)
		}
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/docs/elements/LICENSE", http.StatusNotFound},
		{http.MethodGet, "/docs/elements/", http.StatusNotFound},
		{http.MethodGet, "/docs/other", http.StatusNotFound},
		{http.MethodPost, "/docs", http.StatusMethodNotAllowed},
	} {
		if w := get(tc.method, tc.path); w.Code != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, w.Code, tc.status)
		}
	}
}
