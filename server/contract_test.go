package server_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

// maxCheckedResponse is the largest response body the checker validates.
const maxCheckedResponse = 64 << 20

// responseChecker serves the API and holds every answer of an /api/
// operation against the server's own OpenAPI document: its status must be
// documented for the operation, and a JSON body must match the schema
// documented for that status. Every test server has one (startEnvWith),
// so the whole suite checks that the document says what the server
// answers: required fields really present, closed schemas really closed,
// every error status declared.
type responseChecker struct {
	next http.Handler
	key  [sha256.Size]byte

	once    sync.Once
	doc     *openapiDoc
	loadErr error

	mu       sync.Mutex
	failures []string
}

// newResponseChecker checks the answers of next, the handler of a server
// whose API is api.
func newResponseChecker(next http.Handler, api huma.API) *responseChecker {
	return &responseChecker{next: next, key: documentKey(api.OpenAPI())}
}

// openapiDoc is a parsed OpenAPI document and the schemas compiled from
// it so far. Test servers with the same operations serve the same
// document, so it is fetched, parsed and compiled once per process for
// all of them (openapiDocs), not once per server: serialising and
// parsing it was a large part of the suite's work.
type openapiDoc struct {
	doc      map[string]any
	compiler *jsv.Compiler

	mu      sync.Mutex
	schemas map[string]*jsv.Schema
}

// openapiDocs holds the parsed documents by documentKey.
var openapiDocs struct {
	sync.Mutex
	m map[[sha256.Size]byte]*openapiDoc
}

// documentKey identifies the document of a server without serialising
// it: the operations registered, each with its declared statuses. The
// servers of one test binary that register the same operations serve the
// same document, as its schemas come from the same Go types; a server
// with operations of its own (an engine, agents) gets a document of its
// own.
func documentKey(oa *huma.OpenAPI) [sha256.Size]byte {
	var lines []string
	for path, item := range oa.Paths {
		for method, op := range map[string]*huma.Operation{
			http.MethodGet: item.Get, http.MethodPut: item.Put, http.MethodPost: item.Post, http.MethodDelete: item.Delete,
			http.MethodOptions: item.Options, http.MethodHead: item.Head, http.MethodPatch: item.Patch, http.MethodTrace: item.Trace,
		} {
			if op == nil {
				continue
			}
			lines = append(lines, fmt.Sprintf("%s %s %s %v", method, path, op.OperationID, slices.Sorted(maps.Keys(op.Responses))))
		}
	}
	sort.Strings(lines)
	return sha256.Sum256([]byte(strings.Join(lines, "\n")))
}

// document returns the parsed document of the servers of this key,
// fetched from next (GET /openapi.json) on the first call for it.
func document(key [sha256.Size]byte, next http.Handler) (*openapiDoc, error) {
	openapiDocs.Lock()
	defer openapiDocs.Unlock()
	if d := openapiDocs.m[key]; d != nil {
		return d, nil
	}
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET /openapi.json: %d", rec.Code)
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		return nil, err
	}
	d := &openapiDoc{compiler: jsv.NewCompiler(), schemas: map[string]*jsv.Schema{}}
	d.doc, _ = doc.(map[string]any)
	if err := d.compiler.AddResource("mem:///openapi.json", doc); err != nil {
		return nil, err
	}
	if openapiDocs.m == nil {
		openapiDocs.m = map[[sha256.Size]byte]*openapiDoc{}
	}
	openapiDocs.m[key] = d
	return d, nil
}

// teeWriter records the status and (the start of) the body of a response.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	big    bool
}

func (w *teeWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.body.Len()+len(b) <= maxCheckedResponse {
		w.body.Write(b)
	} else {
		w.big = true
	}
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (c *responseChecker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tw := &teeWriter{ResponseWriter: w, status: http.StatusOK}
	c.next.ServeHTTP(tw, r)
	// The mux sets the pattern it matched, "GET /api/settings/domains/{domain_id}".
	method, path, ok := strings.Cut(r.Pattern, " ")
	if !ok || !strings.HasPrefix(path, "/api/") || tw.big {
		return
	}
	if tw.status == http.StatusMovedPermanently || tw.status == http.StatusTemporaryRedirect || tw.status == http.StatusPermanentRedirect {
		return // the mux's redirect to the clean path, not the operation
	}
	body := tw.body.Bytes()
	if tw.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			c.mu.Lock()
			c.failures = append(c.failures, fmt.Sprintf("%s %s: gzip body: %v", r.Method, r.URL.Path, err))
			c.mu.Unlock()
			return
		}
	}
	if err := c.check(method, path, tw.status, tw.Header().Get("Content-Type"), body); err != nil {
		c.mu.Lock()
		c.failures = append(c.failures, fmt.Sprintf("%s %s answered %d: %v\n%.600s", r.Method, r.URL.Path, tw.status, err, body))
		c.mu.Unlock()
	}
}

// problems returns the answers that did not match the document.
func (c *responseChecker) problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failures
}

func (c *responseChecker) load() error {
	c.once.Do(func() { c.doc, c.loadErr = document(c.key, c.next) })
	return c.loadErr
}

func (c *responseChecker) check(method, path string, status int, contentType string, body []byte) error {
	if err := c.load(); err != nil {
		return err
	}
	paths, _ := c.doc.doc["paths"].(map[string]any)
	item, _ := paths[path].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	if op == nil {
		return fmt.Errorf("no operation %s %s in the document", method, path)
	}
	responses, _ := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, _ := responses[code].(map[string]any)
	if resp == nil {
		return fmt.Errorf("status %d is not documented for %s (%v)", status, op["operationId"], keys(responses))
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("a body where the document shows none")
		}
		return nil
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	if content[mt] == nil {
		return fmt.Errorf("content type %q, documented: %v", contentType, keys(content))
	}
	pointer := "/paths/" + escape(path) + "/" + strings.ToLower(method) + "/responses/" + code + "/content/" + escape(mt) + "/schema"
	schema, err := c.doc.schema(pointer)
	if err != nil {
		return err
	}
	switch mt {
	case "text/csv":
		return nil // text, as documented
	case "application/pdf", "application/octet-stream", "text/plain", "text/markdown", "text/html",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return nil // a file's bytes as uploaded
	case "application/x-ndjson":
		// Each line is one value of the schema.
		for i, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
			v, err := jsv.UnmarshalJSON(bytes.NewReader(line))
			if err != nil {
				return fmt.Errorf("line %d is not JSON: %v", i+1, err)
			}
			if err := schema.Validate(v); err != nil {
				return fmt.Errorf("line %d does not match the documented schema: %v", i+1, err)
			}
		}
		return nil
	}
	v, err := jsv.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %v", err)
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("body does not match the documented schema: %v", err)
	}
	return nil
}

// schema returns the schema at pointer, compiled on first use.
func (d *openapiDoc) schema(pointer string) (*jsv.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.schemas[pointer]; s != nil {
		return s, nil
	}
	s, err := d.compiler.Compile("mem:///openapi.json#" + pointer)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %v", pointer, err)
	}
	d.schemas[pointer] = s
	return s, nil
}

// escape makes a JSON pointer token of s, percent-encoded for a URI
// fragment.
func escape(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	return url.PathEscape(s)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
