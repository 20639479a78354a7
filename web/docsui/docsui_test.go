package docsui_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"golang.org/x/net/html"

	"github.com/gauntlet-eval/gauntlet/web/docsui"
)

const ref = "#/components/schemas/"

// hostile is a description that would run a script, or make markup, if
// the page did not escape it.
const hostile = `Closes </p><script>alert("x")</script><img src=x onerror=alert(1)> & "quotes"`

func ptr[T any](v T) *T { return &v }

// testDoc is a small document with what the page must show: a tag, a
// path parameter with a pattern, a query parameter with bounds and a
// default, a required body whose schema refers to itself (a cycle), an
// enumeration, an array, a map, a nullable reference, a problem response,
// an operation needing no credentials, and a chain of references deeper
// than the page expands.
func testDoc() *huma.OpenAPI {
	reg := huma.NewMapRegistry(ref, huma.DefaultSchemaNamer)
	m := reg.Map()
	m["Node"] = &huma.Schema{
		Type: huma.TypeObject, Description: "A node of a tree.",
		Properties: map[string]*huma.Schema{
			"name":     {Type: huma.TypeString, Description: hostile, MinLength: ptr(1), MaxLength: ptr(40)},
			"children": {Type: huma.TypeArray, Items: &huma.Schema{Ref: ref + "Node"}, Description: "The subtrees."},
			"kind":     {Ref: ref + "Kind"},
			"labels":   {Type: huma.TypeObject, AdditionalProperties: &huma.Schema{Type: huma.TypeInteger, Minimum: ptr(0.0)}, Description: "Counts by label."},
			"parent":   {AnyOf: []*huma.Schema{{Ref: ref + "Node"}, {Type: "null"}}, Description: "The parent, null at the root."},
			"weight":   {Type: huma.TypeNumber, Format: "double", Default: 1.5, ExclusiveMaximum: ptr(100.0)},
		},
		Required: []string{"name", "kind"},
	}
	m["Kind"] = &huma.Schema{Type: huma.TypeString, Enum: []any{"leaf", "branch"}, Description: "What a node is."}
	m["Problem"] = &huma.Schema{Type: huma.TypeObject, Description: "An error.", Properties: map[string]*huma.Schema{
		"status":         {Type: huma.TypeInteger, Description: "The HTTP status."},
		"problem_detail": {Type: huma.TypeString, Description: "What went wrong."},
	}}
	for i := 1; i <= 9; i++ {
		s := &huma.Schema{Type: huma.TypeObject, Properties: map[string]*huma.Schema{
			fmt.Sprintf("level%d", i): {Type: huma.TypeString},
		}}
		if i < 9 {
			s.Properties["next"] = &huma.Schema{Ref: fmt.Sprintf("%sChain%d", ref, i+1)}
		}
		m[fmt.Sprintf("Chain%d", i)] = s
	}
	problem := func(desc string) *huma.Response {
		return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{
			"application/problem+json": {Schema: &huma.Schema{Ref: ref + "Problem"}},
		}}
	}
	return &huma.OpenAPI{
		OpenAPI: "3.1.0",
		Info: &huma.Info{Title: "Trees <&>", Version: "1.2.3",
			Description: "Grows trees.\n\nSecond paragraph with `some_code` and <b>no bold</b>.\n\n- one\n- two"},
		Components: &huma.Components{
			Schemas: reg,
			SecuritySchemes: map[string]*huma.SecurityScheme{
				"bearer": {Type: "http", Scheme: "bearer", Description: "Send the server's token."},
			},
		},
		Security: []map[string][]string{{"bearer": {}}},
		Tags:     []*huma.Tag{{Name: "Trees", Description: "Everything about trees."}, {Name: "Unused"}},
		Paths: map[string]*huma.PathItem{
			"/trees/{tree_id}": {
				Get: &huma.Operation{
					OperationID: "get-tree", Tags: []string{"Trees"}, Summary: "Get a tree", Description: hostile,
					Parameters: []*huma.Param{
						{Name: "depth", In: "query", Description: "How deep to go.",
							Schema: &huma.Schema{Type: huma.TypeInteger, Format: "int64", Minimum: ptr(1.0), Maximum: ptr(10.0), Default: 3, Description: "How deep to go."}},
						{Name: "tree_id", In: "path", Required: true, Description: "The tree.",
							Schema: &huma.Schema{Type: huma.TypeString, Pattern: "^[a-z]+$"}},
					},
					Responses: map[string]*huma.Response{
						"200": {Description: "The tree.", Content: map[string]*huma.MediaType{
							"application/json": {Schema: &huma.Schema{Ref: ref + "Node"}},
						}, Headers: map[string]*huma.Param{"ETag": {Description: "The tree's version.", Schema: &huma.Schema{Type: huma.TypeString}}}},
						"404": problem("No such tree."),
					},
				},
				Put: &huma.Operation{
					OperationID: "put-tree", Tags: []string{"Trees"}, Summary: "Replace a tree",
					RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
						"application/json": {Schema: &huma.Schema{Ref: ref + "Node"}},
					}},
					Responses: map[string]*huma.Response{
						"204": {Description: "Replaced."},
						"422": problem("Not a valid tree."),
					},
				},
			},
			"/chain": {Get: &huma.Operation{
				OperationID: "get-chain", Tags: []string{"Trees"}, Summary: "A deep chain",
				Responses: map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{
					"application/json": {Schema: &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Ref: ref + "Chain1"}}},
				}}},
			}},
			"/hook": {Post: &huma.Operation{
				OperationID: "hook", Summary: "A webhook", Security: []map[string][]string{},
				RequestBody: &huma.RequestBody{Content: map[string]*huma.MediaType{
					"application/json": {Schema: &huma.Schema{Type: huma.TypeObject, AdditionalProperties: &huma.Schema{}}},
				}},
				Responses: map[string]*huma.Response{"default": problem("Anything else."), "200": {Description: "Taken."}},
			}},
		},
	}
}

// serve answers one request.
func serve(h http.Handler, method, path string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// page renders testDoc and parses it.
func page(t *testing.T) (*html.Node, string) {
	t.Helper()
	w := serve(docsui.Handler(testDoc()), http.MethodGet, "/docs")
	if w.Code != http.StatusOK {
		t.Fatalf("GET /docs: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	root, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return root, body
}

// byID returns the element with the id.
func byID(t *testing.T, root *html.Node, id string) *html.Node {
	t.Helper()
	for n := range root.Descendants() {
		if n.Type == html.ElementNode && attr(n, "id") == id {
			return n
		}
	}
	t.Fatalf("no element #%s", id)
	return nil
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

// elements returns the elements named tag under n.
func elements(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && d.Data == tag {
			out = append(out, d)
		}
	}
	return out
}

// blocks are the elements whose text a space separates from the
// neighbouring text, as a browser's layout does.
var blocks = map[string]bool{"p": true, "li": true, "td": true, "th": true, "tr": true, "ul": true, "ol": true,
	"dt": true, "dd": true, "h1": true, "h2": true, "h3": true, "h4": true, "summary": true, "div": true, "table": true}

// text returns the text of n, its whitespace collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		if blocks[n.Data] {
			b.WriteByte(' ')
		}
		for c := range n.ChildNodes() {
			walk(c)
		}
		if blocks[n.Data] {
			b.WriteByte(' ')
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// rowOf returns the table row of the parameter or header called name.
func rowOf(t *testing.T, n *html.Node, name string) string {
	t.Helper()
	for _, tr := range elements(n, "tr") {
		if tds := elements(tr, "td"); len(tds) > 0 && strings.HasPrefix(text(tds[0]), name) {
			return text(tr)
		}
	}
	t.Fatalf("no row %s in %s", name, text(n))
	return ""
}

// fieldOf returns the field called name directly in the list ul.
func fieldOf(t *testing.T, ul *html.Node, name string) *html.Node {
	t.Helper()
	for li := range ul.ChildNodes() {
		if li.Type == html.ElementNode && li.Data == "li" && strings.HasPrefix(text(li), name+" ") {
			return li
		}
	}
	t.Fatalf("no field %s in %s", name, text(ul))
	return nil
}

func hasLink(n *html.Node, href string) bool {
	return slices.ContainsFunc(elements(n, "a"), func(a *html.Node) bool { return attr(a, "href") == href })
}

func contains(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func TestPage(t *testing.T) {
	root, body := page(t)

	t.Run("header", func(t *testing.T) {
		top := byID(t, root, "top")
		contains(t, "the header", text(top), "Trees <&> API reference", "1.2.3", "Grows trees.", "/openapi.yaml", "/openapi.json",
			"bearer: HTTP bearer token", "Send the server's token.", "Unless an operation says otherwise, it accepts: bearer.")
		if !hasLink(top, "/openapi.yaml") || !hasLink(top, "/openapi.json") || !hasLink(top, "#schema-Problem") {
			t.Errorf("the header lacks its links: %s", text(top))
		}
		// The description's subset: paragraphs, a list, code; the
		// markup in it is text.
		if len(elements(top, "ul")) != 1 || text(elements(top, "ul")[0]) != "one two" {
			t.Errorf("the list: %s", text(top))
		}
		if !slices.ContainsFunc(elements(top, "code"), func(c *html.Node) bool { return text(c) == "some_code" }) {
			t.Error("no code span")
		}
		if len(elements(top, "b")) != 0 || !strings.Contains(body, "&lt;b&gt;no bold&lt;/b&gt;") {
			t.Error("the description's markup was not escaped")
		}
	})

	t.Run("the table of contents", func(t *testing.T) {
		nav := elements(root, "nav")[0]
		got := text(nav)
		contains(t, "the contents", got, "Authentication", "Trees", "GET A deep chain", "GET Get a tree", "PUT Replace a tree", "Other", "POST A webhook", "Schemas")
		if strings.Contains(got, "Unused") {
			t.Error("a tag without operations is listed")
		}
		for _, id := range []string{"#get-tree", "#put-tree", "#hook", "#get-chain", "#tag-Trees", "#tag-Other", "#schemas"} {
			if !hasLink(nav, id) {
				t.Errorf("no link to %s", id)
			}
		}
		// Trees (the document's first tag) before Other (the untagged).
		if strings.Index(got, "Trees") > strings.Index(got, "Other") {
			t.Errorf("group order: %s", got)
		}
	})

	t.Run("an operation with parameters", func(t *testing.T) {
		op := byID(t, root, "get-tree")
		got := text(op)
		contains(t, "get-tree", got, "Get a tree", "GET /trees/{tree_id}", "auth: bearer", "operationId get-tree", `Closes </p><script>alert("x")</script>`)
		path := rowOf(t, op, "tree_id")
		contains(t, "tree_id", path, "required", "path", "string", "The tree.", "pattern ^[a-z]+$")
		depth := rowOf(t, op, "depth")
		contains(t, "depth", depth, "query", "integer (int64)", "How deep to go.", "default 3", "minimum 1", "maximum 10")
		if strings.Count(depth, "How deep to go.") != 1 || strings.Contains(depth, "required") {
			t.Errorf("depth: %s", depth)
		}
		// Path parameters first.
		if strings.Index(got, "tree_id path") > strings.Index(got, "depth query") {
			t.Errorf("parameter order: %s", got)
		}
		contains(t, "the ETag header", rowOf(t, op, "ETag"), "string", "The tree's version.")
		contains(t, "the responses", got, "200 The tree. Header Type Description ETag", "application/json Node", "404 No such tree. application/problem+json Problem")
		// The error body links to the schema, shown once at the end.
		if !hasLink(op, "#schema-Problem") || strings.Contains(got, "problem_detail") {
			t.Errorf("the problem response is not just a link: %s", got)
		}
	})

	t.Run("a required body with a cycle, an enumeration, an array, a map", func(t *testing.T) {
		op := byID(t, root, "put-tree")
		got := text(op)
		contains(t, "put-tree", got, "PUT /trees/{tree_id}", "Request body required", "application/json Node", "A node of a tree.",
			"204 Replaced.", "422 Not a valid tree.")
		fields := elements(op, "ul")[0]
		contains(t, "name", text(fieldOf(t, fields, "name")), "string required", `Closes </p><script>`, "min length 1", "max length 40")
		contains(t, "kind", text(fieldOf(t, fields, "kind")), "Kind required", "What a node is.", "one of leaf, branch")
		contains(t, "labels", text(fieldOf(t, fields, "labels")), "map of string to integer", "Counts by label.", "each value: minimum 0")
		contains(t, "weight", text(fieldOf(t, fields, "weight")), "number (double)", "default 1.5", "less than 100")
		parent := fieldOf(t, fields, "parent")
		contains(t, "parent", text(parent), "Node or null", "The parent, null at the root.", "Recursive: the fields of Node")
		children := fieldOf(t, fields, "children")
		contains(t, "children", text(children), "array of Node", "The subtrees.", "Recursive: the fields of Node")
		if !hasLink(children, "#schema-Node") {
			t.Error("the cycle does not link to the schema")
		}
		if strings.Contains(text(children), "required") {
			t.Error("children is not required")
		}
	})

	t.Run("depth limit", func(t *testing.T) {
		op := byID(t, root, "get-chain")
		got := text(op)
		contains(t, "get-chain", got, "array of Chain1", "each item: Chain1", "level1", "level6", "Fields: see Chain7")
		if strings.Contains(got, "level7") || !hasLink(op, "#schema-Chain7") {
			t.Errorf("expanded past the limit: %s", got)
		}
	})

	t.Run("no credentials, a map of anything, default last", func(t *testing.T) {
		op := byID(t, root, "hook")
		got := text(op)
		contains(t, "hook", got, "POST /hook", "no credentials", "Request body optional", "map of string to any", "200 Taken. default Anything else.")
		if strings.Contains(got, "auth:") {
			t.Errorf("the webhook needs credentials: %s", got)
		}
	})

	t.Run("schemas, once each", func(t *testing.T) {
		contains(t, "Problem", text(byID(t, root, "schema-Problem")), "Problem", "An error.", "problem_detail string", "What went wrong.", "status integer")
		if n := strings.Count(body, "problem_detail"); n != 1 {
			t.Errorf("the problem schema is shown %d times, want once", n)
		}
		node := byID(t, root, "schema-Node")
		contains(t, "Node", text(node), "children array of Node", "kind Kind required")
		// References are links there, not expanded again.
		if strings.Contains(text(node), "Recursive") || !hasLink(node, "#schema-Kind") {
			t.Errorf("Node: %s", text(node))
		}
		contains(t, "Kind", text(byID(t, root, "schema-Kind")), "string", "one of leaf, branch")
	})

	t.Run("hostile strings are text", func(t *testing.T) {
		if len(elements(root, "script")) != 0 || len(elements(root, "img")) != 0 {
			t.Error("a description made an element")
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") || strings.Contains(body, "onerror=alert") && !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("unescaped markup in the page")
		}
	})

	t.Run("nothing from elsewhere", func(t *testing.T) {
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "//cdn") {
			t.Error("the page refers to another site")
		}
		links := elements(root, "link")
		if len(links) != 2 || attr(links[1], "href") != "/docs/docs.css" {
			t.Errorf("the page's links: %d", len(links))
		}
	})
}

func TestHandler(t *testing.T) {
	h := docsui.Handler(testDoc())
	for path, ctype := range map[string]string{
		"/docs":          "text/html; charset=utf-8",
		"/docs/":         "text/html; charset=utf-8",
		"/docs/docs.css": "text/css; charset=utf-8",
	} {
		w := serve(h, http.MethodGet, path)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != ctype || w.Body.Len() < 1000 {
			t.Errorf("%s: %d %q, %d bytes", path, w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
		if w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, w.Header())
		}
		etag := w.Header().Get("ETag")
		if again := serve(h, http.MethodGet, path, "If-None-Match", etag); etag == "" || again.Code != http.StatusNotModified {
			t.Errorf("%s revalidated with %q: %d, want 304", path, etag, again.Code)
		}
		if other := serve(h, http.MethodGet, path, "If-None-Match", `"other"`); other.Code != http.StatusOK {
			t.Errorf("%s with another tag: %d", path, other.Code)
		}
		if head := serve(h, http.MethodHead, path); head.Code != http.StatusOK || head.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d, %d bytes", path, head.Code, head.Body.Len())
		}
	}
	page := serve(h, http.MethodGet, "/docs")
	if csp := page.Header().Get("Content-Security-Policy"); csp != docsui.CSP {
		t.Errorf("CSP %q", csp)
	}
	for _, want := range []string{"default-src 'none'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(docsui.CSP, want) {
			t.Errorf("the CSP lacks %s", want)
		}
	}
	if strings.Contains(docsui.CSP, "script-src") || strings.Contains(docsui.CSP, "unsafe") {
		t.Errorf("the CSP allows scripts or inline code: %s", docsui.CSP)
	}
	if page.Header().Get("X-Frame-Options") != "DENY" {
		t.Error("no X-Frame-Options")
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/docs/elements/web-components.min.js", http.StatusNotFound},
		{http.MethodGet, "/docs/index.html", http.StatusNotFound},
		{http.MethodGet, "/docs/other", http.StatusNotFound},
		{http.MethodGet, "/docs/docs.css.map", http.StatusNotFound},
		{http.MethodGet, "/docsx", http.StatusNotFound},
		{http.MethodPost, "/docs", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/docs/docs.css", http.StatusMethodNotAllowed},
	} {
		if w := serve(h, tc.method, tc.path); w.Code != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, w.Code, tc.status)
		} else if tc.status == http.StatusMethodNotAllowed && w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", tc.method, tc.path, w.Header().Get("Allow"))
		}
	}
}

// TestRenderedOnce: the page is made on the first request and kept, so a
// later change to the document does not show (and costs nothing).
func TestRenderedOnce(t *testing.T) {
	doc := testDoc()
	h := docsui.Handler(doc)
	first := serve(h, http.MethodGet, "/docs")
	doc.Info.Title = "Changed"
	second := serve(h, http.MethodGet, "/docs")
	if !bytes.Equal(first.Body.Bytes(), second.Body.Bytes()) || first.Header().Get("ETag") != second.Header().Get("ETag") {
		t.Error("the page changed")
	}
	// Another handler renders the document as it is now.
	if third := serve(docsui.Handler(doc), http.MethodGet, "/docs"); !strings.Contains(third.Body.String(), "Changed API reference") ||
		third.Header().Get("ETag") == first.Header().Get("ETag") {
		t.Error("a new handler shows the old document")
	}
}

// TestEmptyDocument: a document without info, components, tags or paths
// still makes a page.
func TestEmptyDocument(t *testing.T) {
	w := serve(docsui.Handler(&huma.OpenAPI{OpenAPI: "3.1.0"}), http.MethodGet, "/docs")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "The document declares no credentials") {
		t.Errorf("%d\n%s", w.Code, w.Body)
	}
}
