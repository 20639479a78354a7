package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/danielgtaylor/huma/v2/yaml"
)

// The OpenAPI document is built by huma from the Go types of this package
// and finished by finishAPI, which gives it what generated clients need:
//
//   - Schema names are API names. The request and response types of this
//     package are named apiX and documented as X (schemaName); library
//     types never appear in the document, so changing one cannot change the
//     API unnoticed.
//   - Response schemas are closed (additionalProperties: false) and list
//     every field that is always present as required, so generated types
//     have plain fields and no catch-all map.
//   - Request schemas say nothing about additional properties: the server
//     ignores fields it does not know (clients written against another
//     version keep working), and generated request types stay tight. The
//     two never share a schema (finishAPI panics if they do).
//   - A request field the server requires is tagged api:"required" (and
//     omitempty, so that huma does not check it): the document lists it as
//     required, and the library's validation, which reports every invalid
//     field of a body in one answer, refuses its absence.
//   - Every operation has one tag, defined with a description, and
//     declares the errors it can answer (register), each with the Problem
//     schema.
//   - The bearer scheme is always described; the document is the same
//     whether or not the server has a token.

// schemaPrefix is where huma puts named schemas.
const schemaPrefix = "#/components/schemas/"

// The tags, one per resource, in the order the docs show them.
const (
	tagDomains     = "Domains"
	tagLevels      = "Levels"
	tagTests       = "Tests"
	tagEvaluators  = "Evaluators"
	tagTools       = "Tools"
	tagTargets     = "Targets"
	tagDefinitions = "Definitions"
	tagEvaluation  = "Evaluation"
	tagResults     = "Results and history"
	tagAgents      = "Agents"
	tagKB          = "Agent knowledge base"
	tagChannels    = "Agent channels"
	tagChat        = "Agent chat"
	tagConfig      = "Config"
	tagPlugins     = "Plugins"
)

var apiTags = []*huma.Tag{
	{Name: tagDomains, Description: "Evaluation areas: named groups of tests organised by level, scored by one evaluator."},
	{Name: tagLevels, Description: "Per-level configuration of a domain: system prompt, how it combines with the domain's, pass threshold and tools."},
	{Name: tagTests, Description: "Prompts with their expected answers, at one level of one domain."},
	{Name: tagEvaluators, Description: "How a response is scored: the built-in regex extraction or a registered or plugin evaluator type."},
	{Name: tagTools, Description: "Functions offered to the model, with the mock output returned when one is called."},
	{Name: tagTargets, Description: "Black-box targets: HTTP endpoints a run sends each user turn to (targets/<id>.yaml), read-only; their secrets stay ${VAR} names."},
	{Name: tagDefinitions, Description: "Every definition at once: export, import, and the sync of the definition files into the cache."},
	{Name: tagEvaluation, Description: "Running an evaluation: start, stop, reset, resume, and its live status, matrix and log."},
	{Name: tagResults, Description: "Stored runs: their details, matrices, per-cell results and the definitions they used."},
	{Name: tagAgents, Description: "Conversational agents: system prompt, model and assigned tools."},
	{Name: tagKB, Description: "An agent's knowledge-base files: UTF-8 text given to the model with each message."},
	{Name: tagChannels, Description: "Messaging channels an agent answers on (telegram, webhook, or a channel plugin's type), and the webhook endpoint."},
	{Name: tagChat, Description: "Talking to an agent: one conversation per agent and user."},
	{Name: tagConfig, Description: "The non-secret configuration of the model endpoint."},
	{Name: tagPlugins, Description: "The evaluator, channel and tool plugins the server found, and the state of their processes."},
}

// bearerScheme describes the API token.
var bearerScheme = &huma.SecurityScheme{
	Type: "http", Scheme: "bearer",
	Description: "The server's --api-token, sent as \"Authorization: Bearer <token>\". " +
		"A server started without a token requires none and ignores the header, so clients can always send it; " +
		"with a token, a missing or wrong one is a 401 on every /api/ path but the webhook.",
}

// serverPkg is this package's import path, for schemaName.
var serverPkg = reflect.TypeFor[Server]().PkgPath()

// schemaName names the schema of a Go type: apiRunInfo in this package is
// "RunInfo". Types from elsewhere keep huma's names; the document's tests
// check that none is left.
func schemaName(t reflect.Type, hint string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := strings.CutPrefix(t.Name(), "api"); ok && t.PkgPath() == serverPkg && name != "" {
		return name
	}
	return huma.DefaultSchemaNamer(t, hint)
}

// apiConfig is the huma configuration of the API.
func apiConfig() huma.Config {
	cfg := huma.DefaultConfig("Gauntlet", Version)
	// The registry's defaults are the ones generated clients want: fields
	// are required unless tagged omitempty, and objects are closed
	// (finishAPI opens request objects again).
	cfg.Components.Schemas = huma.NewMapRegistry(schemaPrefix, schemaName)
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{"bearer": bearerScheme}
	cfg.Info.Description = "Evaluate language models and run conversational agents.\n\n" +
		"Errors are RFC 9457 problem+json documents (the Problem schema) with \"success\": false. " +
		"Request bodies may carry fields the server does not know: they are ignored. " +
		"PUT changes the fields present in the body and keeps the others; where a field's schema allows null, " +
		"null clears it (with oapi-codegen, generate with output-options.nullable-type and call SetNull; " +
		"in TypeScript, send null)."
	// No $schema fields or Link headers in responses: clients get the
	// bodies the documentation shows.
	cfg.CreateHooks = nil
	// Every error body has one shape, made here rather than by replacing
	// huma.NewError: importing this package changes nothing outside it.
	cfg.Transformers = []huma.Transformer{problemTransformer}
	// Relative to the document: right whatever address the server has.
	cfg.Servers = []*huma.Server{{URL: "/", Description: "this server"}}
	// With a token, bearer; without one, nothing. Both are listed so that
	// the document does not depend on the server's settings.
	cfg.Security = []map[string][]string{{"bearer": {}}, {}}
	cfg.Tags = apiTags
	// /docs is the server's own page, made from this document (package
	// docsui): huma's loads a viewer from a CDN, blank without internet.
	cfg.DocsPath = ""
	return cfg
}

// newAPI returns a huma API serving on mux with the conventions above. Call
// finishAPI once every operation is registered. Tests build their APIs
// with it too, so that they see the same errors and documents.
func newAPI(mux *http.ServeMux) huma.API {
	docs := &documents30{}
	api := huma.NewAPI(apiConfig(), humago.NewAdapter(docMux{mux, docs}, ""))
	docs.api = api
	// The problem responses refer to it by name.
	api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[apiProblem](), true, "")
	return api
}

// register registers an operation and documents the problem responses it
// can answer: those op.Errors declares, and those its shape implies (see
// documentErrors). op.Errors lists the statuses the handler itself
// answers: 404 for an unknown id, 409, 422 from the library's validation...
func register[I, O any](api huma.API, op huma.Operation, handler func(context.Context, *I) (*O, error)) {
	declared := op.Errors
	// huma would add 422 and 500 to any list, and a "default" response to
	// none: the responses are documented below, exactly.
	op.Errors = nil
	huma.Register(api, op, handler)
	documentErrors(operation(api.OpenAPI(), op.Method, op.Path), declared, true)
}

// addOperation documents an operation served by a plain handler. Its
// op.Errors lists every status the handler answers; only 401 and 500 are
// added (the middleware and a panic answer those).
func addOperation(api huma.API, op *huma.Operation) {
	declared := op.Errors
	op.Errors = nil
	api.OpenAPI().AddOperation(op)
	documentErrors(op, declared, false)
}

// operation returns the registered operation of method and path.
func operation(oa *huma.OpenAPI, method, path string) *huma.Operation {
	item := oa.Paths[path]
	if item == nil {
		panic("server: no path " + path)
	}
	op := map[string]*huma.Operation{
		http.MethodGet: item.Get, http.MethodPost: item.Post, http.MethodPut: item.Put,
		http.MethodDelete: item.Delete, http.MethodPatch: item.Patch,
	}[method]
	if op == nil {
		panic("server: no operation " + method + " " + path)
	}
	return op
}

// errorDescriptions describe each problem status in general; an
// operation's description says what its own conflicts or validations are.
var errorDescriptions = map[int]string{
	http.StatusBadRequest:            "Malformed JSON.",
	http.StatusUnauthorized:          "Missing or wrong API token (only on a server started with one).",
	http.StatusNotFound:              "An id in the path names nothing.",
	http.StatusConflict:              "Conflicts with the current state; the detail says how.",
	http.StatusPreconditionFailed:    "If-Match names none of the record's current ETags: it changed since it was read. Nothing was changed; the ETag header gives the current tag.",
	http.StatusRequestEntityTooLarge: "The body is over the operation's size limit.",
	http.StatusUnsupportedMediaType:  "A body that is not JSON (or, for an upload, not multipart or UTF-8 text).",
	http.StatusUnprocessableEntity:   "Validation failed: each invalid field is an entry of errors.",
	http.StatusTooManyRequests:       "Too many requests waiting; try again later.",
	http.StatusInternalServerError:   "An unexpected failure; the server log has the details.",
	http.StatusBadGateway:            "The model endpoint failed; the detail says why.",
	http.StatusServiceUnavailable:    "The request was cancelled or timed out before it finished (the client went away, or the server is shutting down).",
}

// documentErrors adds to op a problem+json response for each status in
// declared and each status every operation of its kind can answer:
//   - 401 on every /api/ operation that has the API's security (the token
//     may be required);
//   - 500 on every operation;
//   - 503 on every operation huma serves: a handler whose request is
//     cancelled or times out (the client went away, the server is shutting
//     down) answers it;
//   - with huma, which decodes and validates the request: 400, 413, 415
//     and 422 on operations with a JSON body (malformed, too large, not
//     JSON, not valid), and 422 on operations with a parameter huma
//     parses or checks (a number, an enumeration, a bound);
//   - 422 on every operation with a path or query parameter, which may
//     hold a NUL or a control character (rejectBadParams).
func documentErrors(op *huma.Operation, declared []int, byHuma bool) {
	codes := slices.Clone(declared)
	if strings.HasPrefix(op.Path, "/api/") && op.Security == nil {
		codes = append(codes, http.StatusUnauthorized)
	}
	if rb := op.RequestBody; byHuma && rb != nil && rb.Content["application/json"] != nil {
		codes = append(codes, http.StatusBadRequest, http.StatusRequestEntityTooLarge,
			http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity)
	}
	for _, p := range op.Parameters {
		if s := p.Schema; byHuma && s != nil && (s.Type != huma.TypeString || len(s.Enum) > 0 || s.Pattern != "" ||
			s.MinLength != nil || s.MaxLength != nil) {
			codes = append(codes, http.StatusUnprocessableEntity)
		}
		if p.In == "path" || p.In == "query" {
			codes = append(codes, http.StatusUnprocessableEntity) // rejectBadParams
		}
	}
	codes = append(codes, http.StatusInternalServerError)
	if byHuma {
		codes = append(codes, http.StatusServiceUnavailable)
	}
	slices.Sort(codes)
	if op.Responses == nil {
		op.Responses = map[string]*huma.Response{}
	}
	delete(op.Responses, "default")
	for _, code := range slices.Compact(codes) {
		desc := errorDescriptions[code]
		if desc == "" {
			desc = http.StatusText(code) + "."
		}
		op.Responses[strconv.Itoa(code)] = &huma.Response{
			Description: desc,
			Content: map[string]*huma.MediaType{
				"application/problem+json": {Schema: &huma.Schema{Ref: schemaPrefix + "Problem"}},
			},
		}
	}
}

// finishAPI completes the document once every operation is registered:
// request schemas are opened and response schemas closed, schemas no
// operation uses are dropped (huma registers its own error model). It
// panics when a schema serves both requests and responses: the server
// would then refuse unknown request fields, or the document would leave a
// response open.
func finishAPI(api huma.API) {
	oa := api.OpenAPI()
	reg := oa.Components.Schemas
	w := &schemaWalk{reg: reg, side: map[string]int{}}
	for _, item := range oa.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch} {
			if op == nil {
				continue
			}
			if op.RequestBody != nil {
				for _, mt := range op.RequestBody.Content {
					w.walk(mt.Schema, sideRequest)
				}
			}
			for _, r := range op.Responses {
				for _, mt := range r.Content {
					w.walk(mt.Schema, sideResponse)
				}
			}
		}
	}
	if len(w.conflicts) > 0 {
		panic("server: schemas used by both requests and responses: " + strings.Join(w.conflicts, ", "))
	}
	schemas := reg.Map()
	for name, s := range schemas {
		if d := schemaDocs[name]; d != "" && s.Description == "" {
			s.Description = d
		}
		t := reg.TypeFromRef(schemaPrefix + name)
		switch w.side[name] {
		case 0:
			delete(schemas, name)
		case sideRequest:
			documentRequired(s, t)
			arraysNotNull(s, t)
		case sideResponse:
			arraysNotNull(s, t)
		}
	}
}

// arraysNotNull says that the array fields of t are never null, unless
// tagged nullable:"true": huma documents every slice as nullable, but the
// answers send [] (see nonNil), and a request's null is the same as the
// field's absence. Generated clients then have plain slices.
func arraysNotNull(s *huma.Schema, t reflect.Type) {
	if t == nil || t.Kind() != reflect.Struct {
		return
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if p := s.Properties[name]; p != nil && p.Type == huma.TypeArray && f.Tag.Get("nullable") != "true" {
			p.Nullable = false
		}
	}
}

// documentRequired lists in s.Required the fields of t tagged
// api:"required". Only the document changes: huma checks the fields its
// own tags made required when the schema was built, and these are not.
func documentRequired(s *huma.Schema, t reflect.Type) {
	if t == nil || t.Kind() != reflect.Struct {
		return
	}
	for f := range t.Fields() {
		if f.Tag.Get("api") != "required" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if !slices.Contains(s.Required, name) {
			s.Required = append(s.Required, name)
		}
	}
}

const (
	sideRequest = 1 + iota
	sideResponse
	sideBoth // scalar schemas only
)

// schemaWalk visits every schema reachable from a request or a response.
type schemaWalk struct {
	reg       huma.Registry
	side      map[string]int
	conflicts []string
}

func (w *schemaWalk) walk(s *huma.Schema, side int) {
	if s == nil {
		return
	}
	if name, ok := strings.CutPrefix(s.Ref, schemaPrefix); ok {
		target := w.reg.Map()[name]
		switch w.side[name] {
		case side, sideBoth:
			return
		case 0:
			w.side[name] = side
		default:
			if target != nil && target.Type == huma.TypeObject {
				w.conflicts = append(w.conflicts, name)
				return
			}
			// An enumeration or another scalar: the same on both sides.
			w.side[name] = sideBoth
		}
		w.walk(target, side)
		return
	}
	if _, isBool := s.AdditionalProperties.(bool); isBool && s.Type == huma.TypeObject {
		if side == sideRequest {
			// Unknown request fields are ignored, and huma's validation
			// skips the check when this is nil.
			s.AdditionalProperties = nil
		} else {
			s.AdditionalProperties = false
		}
	}
	for _, p := range s.Properties {
		w.walk(p, side)
	}
	w.walk(s.Items, side)
	if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
		w.walk(ap, side)
	}
	for _, list := range [][]*huma.Schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, sub := range list {
			w.walk(sub, side)
		}
	}
	w.walk(s.Not, side)
}

// nullable returns "s or null": in OpenAPI 3.1 anyOf [s, {type: null}],
// which generators turn into a nullable type (oapi-codegen's
// nullable.Nullable, TypeScript's T | null). When s allows any value
// ({}), it becomes {not: {type: null}}, so that the two branches do not
// overlap. The 3.0 document says the same with nullable (see downgrade).
func nullable(s *huma.Schema) *huma.Schema {
	if s.Ref == "" && s.Type == "" && len(s.AnyOf)+len(s.OneOf)+len(s.AllOf) == 0 && s.Not == nil {
		s = &huma.Schema{Not: &huma.Schema{Type: "null"}}
	}
	return &huma.Schema{AnyOf: []*huma.Schema{s, {Type: "null"}}}
}

// Enumerations used by several schemas are named schemas of their own, so
// that a generated client has one type for each (a Go string type, a
// TypeScript union) whichever operation it comes from.

// apiSystemPromptMode is how a level's system prompt combines with its
// domain's.
type apiSystemPromptMode string

// Schema refers to the SystemPromptMode schema.
func (apiSystemPromptMode) Schema(r huma.Registry) *huma.Schema {
	return namedEnum(r, "SystemPromptMode", "How a level's system prompt combines with its domain's: "+
		"append (after it, a blank line between; the default), prepend (before it) or replace (alone).",
		"append", "prepend", "replace")
}

// apiRunStatus is a stored run's status.
type apiRunStatus string

// Schema refers to the RunStatus schema.
func (apiRunStatus) Schema(r huma.Registry) *huma.Schema {
	return namedEnum(r, "RunStatus", "A run's status. interrupted: the process died during the run. aborted: reset.",
		"running", "completed", "stopped", "interrupted", "aborted")
}

// apiChannelStatus is a channel's state.
type apiChannelStatus string

// Schema refers to the ChannelStatus schema.
func (apiChannelStatus) Schema(r huma.Registry) *huma.Schema {
	return namedEnum(r, "ChannelStatus", "A channel's state. error: the channel failed; last_error says why, and it is retried with backoff.",
		"stopped", "running", "error")
}

// namedEnum registers a string enumeration under name, once, and returns a
// reference to it.
func namedEnum(r huma.Registry, name, description string, values ...string) *huma.Schema {
	if r.Map()[name] == nil {
		s := &huma.Schema{Type: huma.TypeString, Description: description}
		for _, v := range values {
			s.Enum = append(s.Enum, v)
		}
		s.PrecomputeMessages()
		r.Map()[name] = s
	}
	return &huma.Schema{Ref: schemaPrefix + name}
}

// docMux is the mux huma registers its routes on. It serves the OpenAPI
// 3.0 documents itself: huma's downgrade leaves 3.1 constructs in them.
type docMux struct {
	*http.ServeMux
	docs *documents30
}

func (m docMux) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	switch pattern {
	case "GET /openapi-3.0.json":
		handler = m.docs.serveJSON
	case "GET /openapi-3.0.yaml":
		handler = m.docs.serveYAML
	}
	m.ServeMux.HandleFunc(pattern, handler)
}

// documents30 serves the OpenAPI 3.0 documents, made once on first use.
type documents30 struct {
	api        huma.API
	once       sync.Once
	json, yaml []byte
	err        error
}

func (d *documents30) make() {
	d.once.Do(func() {
		d.json, d.err = downgrade(d.api.OpenAPI())
		if d.err != nil {
			return
		}
		var buf bytes.Buffer
		d.err = yaml.Convert(&buf, bytes.NewReader(d.json))
		d.yaml = buf.Bytes()
	})
}

func (d *documents30) serveJSON(w http.ResponseWriter, _ *http.Request) { d.serve(w, "json") }

func (d *documents30) serveYAML(w http.ResponseWriter, _ *http.Request) { d.serve(w, "yaml") }

func (d *documents30) serve(w http.ResponseWriter, kind string) {
	d.make()
	if d.err != nil {
		writeProblem(w, http.StatusInternalServerError, "cannot make the OpenAPI 3.0 document: "+d.err.Error())
		return
	}
	body := d.json
	if kind == "yaml" {
		body = d.yaml
	}
	w.Header().Set("Content-Type", "application/openapi+"+kind)
	w.Write(body)
}

// downgrade returns the OpenAPI 3.0 form of the document: huma's downgrade
// (type arrays become nullable, and so on), then each "X or null" that
// nullable made, which 3.0 cannot say with anyOf, is said its way: a
// reference becomes {type, nullable: true, allOf: [reference]}, and "any
// value or null" becomes {}, which allows null already.
func downgrade(oa *huma.OpenAPI) ([]byte, error) {
	b, err := oa.Downgrade()
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("downgrade: %w", err)
	}
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	fixNullable30(doc, schemas)
	return json.Marshal(doc)
}

func fixNullable30(v any, schemas map[string]any) {
	switch v := v.(type) {
	case map[string]any:
		if list, ok := v["anyOf"].([]any); ok && len(list) == 2 {
			if null, _ := list[1].(map[string]any); null["type"] == "null" && len(null) == 1 {
				only, _ := list[0].(map[string]any)
				delete(v, "anyOf")
				if ref, isRef := only["$ref"].(string); isRef {
					target, _ := schemas[strings.TrimPrefix(ref, schemaPrefix)].(map[string]any)
					v["type"], v["nullable"], v["allOf"] = target["type"], true, []any{only}
				}
				if _, any := only["not"]; !any && only["$ref"] == nil {
					for k, x := range only {
						v[k] = x
					}
					v["nullable"] = true
				}
				// Else only is {not: {type: null}}: v, without anyOf, is {}.
			}
		}
		for _, x := range v {
			fixNullable30(x, schemas)
		}
	case []any:
		for _, x := range v {
			fixNullable30(x, schemas)
		}
	}
}
