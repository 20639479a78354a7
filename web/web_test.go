package web_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/web"
)

func get(t *testing.T, h http.Handler, method, target string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// files lists the embedded files, by path in web.FS.
func files(t *testing.T) []string {
	t.Helper()
	var out []string
	err := fs.WalkDir(web.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHandler(t *testing.T) {
	h := web.Handler()

	t.Run("index", func(t *testing.T) {
		res := get(t, h, http.MethodGet, "/")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d", res.StatusCode)
		}
		if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		for k, want := range map[string]string{
			"Cache-Control":           "no-cache",
			"X-Content-Type-Options":  "nosniff",
			"Content-Security-Policy": web.CSP,
			"X-Frame-Options":         "DENY",
		} {
			if got := res.Header.Get(k); got != want {
				t.Errorf("%s %q, want %q", k, got, want)
			}
		}
		if b := body(t, res); !strings.Contains(b, `<script type="module" src="/assets/js/app.js"></script>`) {
			t.Errorf("index.html does not load the app:\n%s", b)
		}
	})

	t.Run("every file with its content type", func(t *testing.T) {
		want := map[string]string{
			".html": "text/html; charset=utf-8",
			".css":  "text/css; charset=utf-8",
			".js":   "text/javascript; charset=utf-8",
			".svg":  "image/svg+xml",
		}
		for _, p := range files(t) {
			if p == "index.html" {
				continue
			}
			res := get(t, h, http.MethodGet, "/"+p)
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s: status %d", p, res.StatusCode)
				continue
			}
			ct, ok := want[path.Ext(p)]
			if !ok {
				t.Errorf("%s: a file type the test does not know; add it", p)
				continue
			}
			if got := res.Header.Get("Content-Type"); got != ct {
				t.Errorf("%s: Content-Type %q, want %q", p, got, ct)
			}
			data, _ := fs.ReadFile(web.FS(), p)
			if body(t, res) != string(data) {
				t.Errorf("%s: body differs from the embedded file", p)
			}
			if res.Header.Get("ETag") == "" || res.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("%s: ETag %q, Cache-Control %q", p, res.Header.Get("ETag"), res.Header.Get("Cache-Control"))
			}
		}
	})

	t.Run("not found", func(t *testing.T) {
		for _, p := range []string{"/assets/nope.js", "/assets/", "/assets/js", "/web.go", "/static/index.html", "/nope", "/assets/../web.go"} {
			if res := get(t, h, http.MethodGet, p); res.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
			}
		}
	})

	t.Run("revalidation", func(t *testing.T) {
		etag := get(t, h, http.MethodGet, "/assets/js/app.js").Header.Get("ETag")
		res := get(t, h, http.MethodGet, "/assets/js/app.js", "If-None-Match", etag)
		if res.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match %s: status %d, want 304", etag, res.StatusCode)
		}
		if res := get(t, h, http.MethodGet, "/assets/js/app.js", "If-None-Match", `"stale"`); res.StatusCode != http.StatusOK {
			t.Errorf("stale ETag: status %d, want 200", res.StatusCode)
		}
	})

	t.Run("methods", func(t *testing.T) {
		res := get(t, h, http.MethodHead, "/assets/app.css")
		if res.StatusCode != http.StatusOK || body(t, res) != "" || res.Header.Get("Content-Type") != "text/css; charset=utf-8" {
			t.Errorf("HEAD: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
		}
		res = get(t, h, http.MethodPost, "/")
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST /: %d Allow %q", res.StatusCode, res.Header.Get("Allow"))
		}
	})
}

// TestReferences checks, without a browser, that every asset the page and
// the modules name exists: a renamed file cannot break the page silently.
func TestReferences(t *testing.T) {
	have := map[string]bool{}
	for _, p := range files(t) {
		have[p] = true
	}
	index, err := fs.ReadFile(web.FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="/(assets/[^"]+)"`).FindAllStringSubmatch(string(index), -1)
	if len(refs) < 3 {
		t.Fatalf("index.html names %d assets; want the stylesheet, the icon and the app", len(refs))
	}
	for _, m := range refs {
		if !have[m[1]] {
			t.Errorf("index.html names %s, which does not exist", m[1])
		}
	}
	imports := regexp.MustCompile(`(?s)\bimport\s[^;]*?\sfrom\s+'(\./[^']+)'`)
	n := 0
	for _, p := range files(t) {
		if path.Ext(p) != ".js" {
			continue
		}
		src, _ := fs.ReadFile(web.FS(), p)
		for _, m := range imports.FindAllStringSubmatch(string(src), -1) {
			n++
			target := path.Join(path.Dir(p), m[1])
			if !have[target] {
				t.Errorf("%s imports %s, which does not exist", p, m[1])
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d imports in the modules: the pattern misses some", n)
	}
}

func TestContentType(t *testing.T) {
	for name, want := range map[string]string{
		"a.js": "text/javascript; charset=utf-8", "A.CSS": "text/css; charset=utf-8", "x.png": "image/png",
		"x.woff2": "font/woff2", "noext": "application/octet-stream",
	} {
		if got := web.ContentType(name); got != want {
			t.Errorf("ContentType(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestEmbedsOnlyTheDashboard checks that the binary carries the page and
// its assets and nothing of the development files beside them in web/
// (package.json, the ESLint and TypeScript configurations, the type
// declarations, node_modules), and that none of those is served.
func TestEmbedsOnlyTheDashboard(t *testing.T) {
	served := regexp.MustCompile(`^(index\.html|assets/([A-Za-z0-9_-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\.(css|js|svg|png|ico|woff2))$`)
	for _, p := range files(t) {
		if !served.MatchString(p) || strings.HasSuffix(p, ".d.ts") || strings.Contains(p, "node_modules") {
			t.Errorf("embedded %s: not a file of the page (only index.html and assets/ are embedded)", p)
		}
	}
	h := web.Handler()
	for _, p := range []string{
		"/package.json", "/package-lock.json", "/tsconfig.json", "/eslint.config.js", "/types/api.d.ts",
		"/node_modules/eslint/package.json", "/assets/node_modules/eslint/package.json", "/assets/../package.json",
		"/static/assets/js/app.js", "/.gitignore",
	} {
		if res := get(t, h, http.MethodGet, p); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, res.StatusCode)
		}
	}
}

// TestModulesAreTypeChecked checks that every module opts in to the type
// check with // @ts-check on its first line, so that an editor checks it
// as the project's check does (.ci/web-check).
func TestModulesAreTypeChecked(t *testing.T) {
	n := 0
	for _, p := range files(t) {
		if path.Ext(p) != ".js" {
			continue
		}
		n++
		src, err := fs.ReadFile(web.FS(), p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(src), "// @ts-check\n") {
			t.Errorf("%s does not start with // @ts-check", p)
		}
	}
	if n == 0 {
		t.Fatal("no modules found")
	}
}

// TestIndexHasNoInlineCode checks that index.html has no inline script,
// event-handler attribute or style attribute: the page's
// Content-Security-Policy would block them.
func TestIndexHasNoInlineCode(t *testing.T) {
	index, err := fs.ReadFile(web.FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	page := string(index)
	for _, tag := range regexp.MustCompile(`(?is)<script\b[^>]*>`).FindAllString(page, -1) {
		if !regexp.MustCompile(`(?i)\ssrc=`).MatchString(tag) {
			t.Errorf("inline script: %s", tag)
		}
	}
	if m := regexp.MustCompile(`(?is)<[a-z][^>]*\s(on[a-z]+|style)\s*=[^>]*>`).FindAllString(page, -1); m != nil {
		t.Errorf("inline handler or style: %q", m)
	}
}
