package docsui

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

//go:embed page.tmpl docs.css
var files embed.FS

var pageTemplate = template.Must(template.New("page.tmpl").
	Funcs(template.FuncMap{"lower": strings.ToLower}).
	ParseFS(files, "page.tmpl"))

// problemType is the media type of RFC 9457 error bodies. Their schema is
// the same for nearly every response: the page shows it once, in the list
// of schemas, and links to it.
const problemType = "application/problem+json"

// pageView is what the template shows.
type pageView struct {
	Title, Version string
	Description    text
	// Prefix is where the page is served, for its stylesheet; YAML and
	// JSON are the paths of the document.
	Prefix, YAML, JSON string
	// Auth lists the security schemes, DefaultAuth the operations'
	// default requirement.
	Auth        []*authView
	DefaultAuth string
	Groups      []*groupView
	Schemas     []*namedSchemaView
	// Problem links to the schema of the error bodies, when there is one.
	Problem label
}

type authView struct {
	Name, Kind  string
	Description text
}

type groupView struct {
	Name, ID    string
	Description text
	Ops         []*opView
}

type opView struct {
	ID, Method, Path, Summary string
	PathParts                 []pathPart
	Description               text
	Deprecated                bool
	// Auth says what the operation needs; Open is true when that is
	// nothing.
	Auth      string
	Open      bool
	Params    []*paramView
	Body      *bodyView
	Responses []*responseView

	// The operation and its path, for fillOperation.
	op   *huma.Operation
	item *huma.PathItem
}

type pathPart struct {
	Text  string
	Param bool
}

type paramView struct {
	Name, In             string
	Required, Deprecated bool
	Schema               *schemaView
	Description          text
}

type bodyView struct {
	Required    bool
	Description text
	Contents    []*contentView
}

type contentView struct {
	Type   string
	Schema *schemaView
	// Problem marks an error body, shown by its schema's name only.
	Problem bool
}

type responseView struct {
	Status, Class string
	Description   text
	Headers       []*paramView
	Contents      []*contentView
}

type namedSchemaView struct {
	Name, ID string
	Schema   *schemaView
}

// render makes the page of doc.
func render(doc *huma.OpenAPI) ([]byte, error) {
	ids := &idSet{seen: map[string]bool{}}
	for _, fixed := range []string{"main", "top", "authentication", "schemas"} {
		ids.add(fixed)
	}
	grouped := groups(doc, ids)
	r := newSchemas(doc, ids)
	p := &pageView{Prefix: Prefix, YAML: DocumentYAML, JSON: DocumentJSON, Title: "API", DefaultAuth: describeSecurity(doc.Security)}
	if doc.Info != nil {
		p.Title, p.Version, p.Description = doc.Info.Title, doc.Info.Version, parseText(doc.Info.Description)
	}
	if doc.Components != nil {
		for _, name := range sortedKeys(doc.Components.SecuritySchemes) {
			sc := doc.Components.SecuritySchemes[name]
			p.Auth = append(p.Auth, &authView{Name: name, Kind: schemeKind(sc), Description: parseText(sc.Description)})
		}
	}
	p.Groups = grouped
	for _, g := range p.Groups {
		for _, op := range g.Ops {
			r.fillOperation(doc, op)
		}
	}
	for _, name := range sortedKeys(r.byName) {
		p.Schemas = append(p.Schemas, &namedSchemaView{Name: name, ID: r.anchor[name], Schema: r.named(name)})
	}
	p.Problem = r.problemLink(doc)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// methods are the operations of a path item in the order the page lists
// them.
func methods(item *huma.PathItem) []struct {
	name string
	op   *huma.Operation
} {
	return []struct {
		name string
		op   *huma.Operation
	}{
		{http.MethodGet, item.Get}, {http.MethodHead, item.Head}, {http.MethodPost, item.Post},
		{http.MethodPut, item.Put}, {http.MethodPatch, item.Patch}, {http.MethodDelete, item.Delete},
		{http.MethodOptions, item.Options}, {http.MethodTrace, item.Trace},
	}
}

// groups sorts the operations into one group per tag: the document's
// tags in their order, then tags it does not list, then the untagged
// operations. An operation with several tags is listed under its first.
// Within a group, operations are in path order. An operation's id on the
// page is its operationId, so links to it stay valid; the other ids are
// handed out after them.
func groups(doc *huma.OpenAPI, ids *idSet) []*groupView {
	var ops []*opView
	for _, path := range sortedKeys(doc.Paths) {
		item := doc.Paths[path]
		for _, m := range methods(item) {
			if m.op == nil || m.op.Hidden {
				continue
			}
			v := &opView{Method: m.name, Path: path, PathParts: splitPath(path), Summary: m.op.Summary,
				Description: parseText(m.op.Description), Deprecated: m.op.Deprecated, op: m.op, item: item}
			id := m.op.OperationID
			if id == "" {
				id = strings.ToLower(m.name) + "-" + path
			}
			v.ID = ids.add(id)
			ops = append(ops, v)
		}
	}
	byTag := map[string]*groupView{}
	var order []*groupView
	group := func(name string) *groupView {
		if g := byTag[name]; g != nil {
			return g
		}
		g := &groupView{Name: name, ID: ids.add("tag-" + name)}
		byTag[name] = g
		order = append(order, g)
		return g
	}
	for _, t := range doc.Tags {
		group(t.Name).Description = parseText(t.Description)
	}
	var untagged []*opView
	for _, v := range ops {
		if len(v.op.Tags) == 0 {
			untagged = append(untagged, v)
			continue
		}
		g := group(v.op.Tags[0])
		g.Ops = append(g.Ops, v)
	}
	if len(untagged) > 0 {
		g := group("Other")
		g.Ops = append(g.Ops, untagged...)
	}
	return slices.DeleteFunc(order, func(g *groupView) bool { return len(g.Ops) == 0 })
}

// fillOperation renders the rest of v: what it needs, its parameters, its
// body and its responses.
func (r *schemas) fillOperation(doc *huma.OpenAPI, v *opView) {
	op := v.op
	security := op.Security
	if security == nil {
		security = doc.Security
	}
	v.Auth = describeSecurity(security)
	v.Open = v.Auth == noAuth
	for _, p := range parameters(doc, v.item.Parameters, op.Parameters) {
		v.Params = append(v.Params, r.param(p))
	}
	if rb := requestBody(doc, op.RequestBody); rb != nil {
		b := &bodyView{Required: rb.Required, Description: parseText(rb.Description)}
		for _, ct := range sortedKeys(rb.Content) {
			b.Contents = append(b.Contents, r.content(ct, rb.Content[ct]))
		}
		v.Body = b
	}
	for _, code := range statuses(op.Responses) {
		resp := response(doc, op.Responses[code])
		if resp == nil {
			continue
		}
		rv := &responseView{Status: code, Class: "s" + code[:1], Description: parseText(resp.Description)}
		for _, name := range sortedKeys(resp.Headers) {
			h := resp.Headers[name]
			if h == nil {
				continue
			}
			hv := r.param(h)
			hv.Name, hv.In = name, "header"
			rv.Headers = append(rv.Headers, hv)
		}
		for _, ct := range sortedKeys(resp.Content) {
			rv.Contents = append(rv.Contents, r.content(ct, resp.Content[ct]))
		}
		v.Responses = append(v.Responses, rv)
	}
}

func (r *schemas) param(p *huma.Param) *paramView {
	v := &paramView{Name: p.Name, In: p.In, Required: p.Required, Deprecated: p.Deprecated,
		Description: parseText(p.Description), Schema: r.view(p.Schema, &walk{expandRefs: true}, 0)}
	if p.Schema != nil && strings.TrimSpace(p.Schema.Description) == strings.TrimSpace(p.Description) {
		// huma repeats the description in the schema.
		v.Schema.Desc = nil
	}
	return v
}

// content renders a body of type ct. An error body shows only its
// schema's name, which links to the schema.
func (r *schemas) content(ct string, mt *huma.MediaType) *contentView {
	var s *huma.Schema
	if mt != nil {
		s = mt.Schema
	}
	if ct == problemType {
		return &contentView{Type: ct, Schema: &schemaView{Type: r.label(s)}, Problem: true}
	}
	return &contentView{Type: ct, Schema: r.view(s, &walk{expandRefs: true}, 0)}
}

// problemLink returns the label of the schema of the document's error
// bodies: the first named schema an operation answers as problem+json.
func (r *schemas) problemLink(doc *huma.OpenAPI) label {
	for _, path := range sortedKeys(doc.Paths) {
		for _, m := range methods(doc.Paths[path]) {
			if m.op == nil {
				continue
			}
			for _, code := range statuses(m.op.Responses) {
				resp := response(doc, m.op.Responses[code])
				if resp == nil || resp.Content[problemType] == nil || resp.Content[problemType].Schema == nil {
					continue
				}
				if ref := resp.Content[problemType].Schema.Ref; ref != "" {
					if target, _ := r.resolve(ref); target != nil {
						return r.link(ref)
					}
				}
			}
		}
	}
	return nil
}

// noAuth is what an operation that needs no credentials shows.
const noAuth = "none"

// describeSecurity says what a security requirement asks for: the
// alternatives, of which one is enough ("bearer, or none" when the
// credentials are optional).
func describeSecurity(reqs []map[string][]string) string {
	var alts []string
	optional := false
	for _, req := range reqs {
		if len(req) == 0 {
			optional = true
			continue
		}
		var all []string
		for _, name := range sortedKeys(req) {
			if scopes := req[name]; len(scopes) > 0 {
				name += " (" + strings.Join(scopes, ", ") + ")"
			}
			all = append(all, name)
		}
		alts = append(alts, strings.Join(all, " and "))
	}
	if len(alts) == 0 {
		return noAuth
	}
	out := strings.Join(alts, ", or ")
	if optional {
		out += ", or none"
	}
	return out
}

// schemeKind says in a few words what a security scheme is.
func schemeKind(sc *huma.SecurityScheme) string {
	switch strings.ToLower(sc.Type) {
	case "http":
		if strings.EqualFold(sc.Scheme, "bearer") {
			k := "HTTP bearer token: the header Authorization: Bearer <token>"
			if sc.BearerFormat != "" {
				k += " (" + sc.BearerFormat + ")"
			}
			return k
		}
		return "HTTP authentication, scheme " + sc.Scheme
	case "apikey":
		return "API key in the " + sc.In + " " + sc.Name
	case "oauth2":
		return "OAuth 2.0"
	case "openidconnect":
		return "OpenID Connect: " + sc.OpenIDConnectURL
	}
	return sc.Type
}

// paramOrder sorts parameters by where they go.
var paramOrder = map[string]int{"path": 0, "query": 1, "header": 2, "cookie": 3}

// parameters returns the parameters of an operation: those of its path,
// replaced by the operation's own of the same name and place, sorted by
// place (path, query, header, cookie), in document order within one.
func parameters(doc *huma.OpenAPI, shared, own []*huma.Param) []*huma.Param {
	var out []*huma.Param
	key := func(p *huma.Param) string { return p.In + " " + p.Name }
	ownKeys := map[string]bool{}
	for _, p := range own {
		if p = param(doc, p); p != nil {
			ownKeys[key(p)] = true
		}
	}
	for _, p := range shared {
		if p = param(doc, p); p != nil && !ownKeys[key(p)] {
			out = append(out, p)
		}
	}
	for _, p := range own {
		if p = param(doc, p); p != nil {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b *huma.Param) int { return paramOrder[a.In] - paramOrder[b.In] })
	return out
}

// maxRefs bounds the chain of references followed to a parameter, body
// or response, so that a cycle ends.
const maxRefs = 8

func param(doc *huma.OpenAPI, p *huma.Param) *huma.Param {
	for range maxRefs {
		if p == nil || p.Ref == "" {
			return p
		}
		name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/")
		if !ok || doc.Components == nil {
			return nil
		}
		p = doc.Components.Parameters[name]
	}
	return nil
}

func requestBody(doc *huma.OpenAPI, b *huma.RequestBody) *huma.RequestBody {
	for range maxRefs {
		if b == nil || b.Ref == "" {
			return b
		}
		name, ok := strings.CutPrefix(b.Ref, "#/components/requestBodies/")
		if !ok || doc.Components == nil {
			return nil
		}
		b = doc.Components.RequestBodies[name]
	}
	return nil
}

func response(doc *huma.OpenAPI, r *huma.Response) *huma.Response {
	for range maxRefs {
		if r == nil || r.Ref == "" {
			return r
		}
		name, ok := strings.CutPrefix(r.Ref, "#/components/responses/")
		if !ok || doc.Components == nil {
			return nil
		}
		r = doc.Components.Responses[name]
	}
	return nil
}

// statuses returns the response codes in order: numbers and ranges (2XX)
// by their digits, default last.
func statuses(m map[string]*huma.Response) []string {
	keys := sortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int {
		return rank(a) - rank(b)
	})
	return keys
}

func rank(code string) int {
	if n, err := strconv.Atoi(code); err == nil {
		return n * 10
	}
	if len(code) == 3 && code[0] >= '1' && code[0] <= '5' {
		return int(code[0]-'0')*1000 + 999 // 2XX after every 2xx
	}
	return 1 << 30
}

// splitPath marks the parameters of a path template.
func splitPath(path string) []pathPart {
	var out []pathPart
	for path != "" {
		start := strings.IndexByte(path, '{')
		end := strings.IndexByte(path, '}')
		if start < 0 || end < start {
			out = append(out, pathPart{Text: path})
			break
		}
		if start > 0 {
			out = append(out, pathPart{Text: path[:start]})
		}
		out = append(out, pathPart{Text: path[start : end+1], Param: true})
		path = path[end+1:]
	}
	return out
}

// idSet hands out the page's element ids: each made of letters, digits,
// "-", "_" and ".", and unique.
type idSet struct{ seen map[string]bool }

func (s *idSet) add(raw string) string {
	var b strings.Builder
	dash := false
	for _, c := range raw {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
		switch {
		case ok:
			b.WriteRune(c)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	id := strings.Trim(b.String(), "-")
	if id == "" {
		id = "id"
	}
	base := id
	for n := 2; s.seen[id]; n++ {
		id = base + "-" + strconv.Itoa(n)
	}
	s.seen[id] = true
	return id
}
