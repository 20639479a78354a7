package server_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// apiDoc is a decoded OpenAPI document with helpers to walk it.
type apiDoc map[string]any

func (d apiDoc) schemas() map[string]any {
	c, _ := d["components"].(map[string]any)
	s, _ := c["schemas"].(map[string]any)
	return s
}

// operation is one operation of the document.
type operation struct {
	method, path string
	op           map[string]any
}

func (o operation) String() string { return fmt.Sprintf("%s %s", strings.ToUpper(o.method), o.path) }

func (d apiDoc) operations() []operation {
	var out []operation
	paths, _ := d["paths"].(map[string]any)
	for p, item := range paths {
		for m, op := range item.(map[string]any) {
			if o, ok := op.(map[string]any); ok {
				out = append(out, operation{m, p, o})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func (o operation) responses() map[string]any {
	r, _ := o.op["responses"].(map[string]any)
	return r
}

// bodySchemas returns the schemas of a request body or response.
func bodySchemas(v any) []map[string]any {
	m, _ := v.(map[string]any)
	content, _ := m["content"].(map[string]any)
	var out []map[string]any
	for _, mt := range content {
		if s, ok := mt.(map[string]any)["schema"].(map[string]any); ok {
			out = append(out, s)
		}
	}
	return out
}

// visit calls f on every schema reachable from s, each named schema once;
// name is the component's name, or "" inside one.
func (d apiDoc) visit(s map[string]any, seen map[string]bool, f func(name string, s map[string]any)) {
	d.walk("", s, seen, f)
}

func (d apiDoc) walk(name string, s map[string]any, seen map[string]bool, f func(string, map[string]any)) {
	if s == nil {
		return
	}
	if ref, ok := s["$ref"].(string); ok {
		n := strings.TrimPrefix(ref, "#/components/schemas/")
		if seen[n] {
			return
		}
		seen[n] = true
		target, _ := d.schemas()[n].(map[string]any)
		d.walk(n, target, seen, f)
		return
	}
	f(name, s)
	props, _ := s["properties"].(map[string]any)
	for _, p := range props {
		d.walk("", p.(map[string]any), seen, f)
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if sub, ok := s[k].(map[string]any); ok {
			d.walk("", sub, seen, f)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		list, _ := s[k].([]any)
		for _, sub := range list {
			d.walk("", sub.(map[string]any), seen, f)
		}
	}
}

// types returns the types a schema allows: "type" as a string or a list.
func types(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// TestOpenAPIForClients checks the document as a client generator reads
// it: API names, tags, closed and complete responses, tight requests,
// declared errors, nullable fields that can be cleared.
func TestOpenAPIForClients(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{noExamples: true})
	var doc apiDoc
	must(t, e.get("/openapi.json"), http.StatusOK).decode(t, &doc)
	ops := doc.operations()

	// Which named schemas requests and responses use.
	requestSchemas, responseSchemas := map[string]bool{}, map[string]bool{}
	for _, o := range ops {
		for _, s := range bodySchemas(o.op["requestBody"]) {
			doc.visit(s, requestSchemas, func(string, map[string]any) {})
		}
		for _, r := range o.responses() {
			for _, s := range bodySchemas(r) {
				doc.visit(s, responseSchemas, func(string, map[string]any) {})
			}
		}
	}

	t.Run("schemas have API names and serve requests or responses, not both", func(t *testing.T) {
		leaky := regexp.MustCompile(`(Body|Output|Fields)$|^(Info|Detail|Config|Result|Stats|Cell|Status|ErrorModel|ErrorDetail|Usage|Counts|FileError|FunctionDef|Snapshot|LiveMatrix|KBFile)$`)
		for name := range doc.schemas() {
			if leaky.MatchString(name) && name != "KBFile" {
				t.Errorf("schema %s has a Go name, not an API name", name)
			}
			object := doc.schemas()[name].(map[string]any)["type"] == "object"
			switch {
			case requestSchemas[name] && responseSchemas[name] && object:
				t.Errorf("schema %s serves requests and responses: one must stay open, the other closed", name)
			case !requestSchemas[name] && !responseSchemas[name]:
				t.Errorf("schema %s is not used", name)
			}
		}
		for name, s := range doc.schemas() {
			if d, _ := s.(map[string]any)["description"].(string); d == "" {
				t.Errorf("schema %s has no description", name)
			}
		}
		for _, want := range []string{"RunInfo", "AgentDetail", "Success", "Problem", "Domain", "TestResult", "KBFile", "WebhookReply"} {
			if doc.schemas()[want] == nil {
				t.Errorf("no schema %s", want)
			}
		}
	})

	t.Run("response schemas are closed and list what is always present", func(t *testing.T) {
		seen := map[string]bool{}
		for _, o := range ops {
			for code, r := range o.responses() {
				for _, s := range bodySchemas(r) {
					doc.visit(s, seen, func(name string, s map[string]any) {
						props, _ := s["properties"].(map[string]any)
						if len(props) == 0 {
							return // a map or a scalar
						}
						where := name
						if where == "" {
							where = fmt.Sprintf("inline in %s %s", o, code)
						}
						if s["additionalProperties"] != false {
							t.Errorf("response schema %s: additionalProperties %v, want false", where, s["additionalProperties"])
						}
						if req, _ := s["required"].([]any); len(req) == 0 {
							t.Errorf("response schema %s lists no required field", where)
						}
					})
				}
			}
		}
	})

	t.Run("request schemas tolerate unknown fields without saying so", func(t *testing.T) {
		seen := map[string]bool{}
		for _, o := range ops {
			for _, s := range bodySchemas(o.op["requestBody"]) {
				doc.visit(s, seen, func(name string, s map[string]any) {
					if props, _ := s["properties"].(map[string]any); len(props) > 0 && s["additionalProperties"] != nil {
						t.Errorf("request schema %s %s: additionalProperties %v, want none (generated types stay tight; the server ignores unknown fields)",
							name, o, s["additionalProperties"])
					}
				})
			}
		}
		for name, want := range map[string][]string{
			"DomainCreate": {"id", "name"}, "TestCreate": {"domain_id", "level", "prompt"}, "TestMove": {"domain_id", "level"},
			"EvaluatorCreate": {"id", "name"}, "ToolCreate": {"id", "function"}, "AgentCreate": {"id"},
			"ChatMessage": {"message", "user_id"}, "KBFileCreate": {"filename", "content"}, "LevelImport": {"domain_id", "level"},
		} {
			s, _ := doc.schemas()[name].(map[string]any)
			var got []string
			req, _ := s["required"].([]any)
			for _, r := range req {
				got = append(got, r.(string))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s requires %v, want %v", name, got, want)
			}
		}
		if s, _ := doc.schemas()["DomainUpdate"].(map[string]any); s["required"] != nil {
			t.Errorf("DomainUpdate requires %v: an update changes only the fields present", s["required"])
		}
	})

	t.Run("every operation has one defined tag, a description and a kebab-case id", func(t *testing.T) {
		defined := map[string]bool{}
		tags, _ := doc["tags"].([]any)
		for _, tag := range tags {
			m := tag.(map[string]any)
			if d, _ := m["description"].(string); d == "" {
				t.Errorf("tag %v has no description", m["name"])
			}
			defined[m["name"].(string)] = true
		}
		used := map[string]bool{}
		kebab := regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
		for _, o := range ops {
			opTags, _ := o.op["tags"].([]any)
			if len(opTags) != 1 || !defined[opTags[0].(string)] {
				t.Errorf("%s: tags %v, want one tag defined at the top", o, opTags)
			} else {
				used[opTags[0].(string)] = true
			}
			if d, _ := o.op["description"].(string); d == "" {
				t.Errorf("%s: no description", o)
			}
			if id, _ := o.op["operationId"].(string); !kebab.MatchString(id) {
				t.Errorf("%s: operationId %q is not kebab-case", o, id)
			}
		}
		for name := range defined {
			if !used[name] {
				t.Errorf("tag %s tags no operation", name)
			}
		}
	})

	t.Run("every error is a Problem, and the common ones are declared", func(t *testing.T) {
		for _, o := range ops {
			rs := o.responses()
			if rs["default"] != nil {
				t.Errorf("%s: a default response; declare the statuses instead", o)
			}
			for code, r := range rs {
				if code < "400" {
					continue
				}
				schemas := bodySchemas(r)
				if len(schemas) != 1 || schemas[0]["$ref"] != "#/components/schemas/Problem" {
					t.Errorf("%s %s: body %v, want the Problem schema", o, code, schemas)
				}
				content := r.(map[string]any)["content"].(map[string]any)
				if content["application/problem+json"] == nil {
					t.Errorf("%s %s: not application/problem+json", o, code)
				}
			}
			want := []string{"500"}
			if o.path != "/api/channels/{channel_id}/webhook" {
				want = append(want, "401") // a server with a token requires it
			} else if sec, ok := o.op["security"].([]any); !ok || len(sec) != 0 {
				t.Errorf("%s: security %v, want [] (the webhook needs no API token)", o, o.op["security"])
			}
			if rb, _ := o.op["requestBody"].(map[string]any); rb != nil {
				want = append(want, "413", "422")
			}
			for _, code := range want {
				if rs[code] == nil {
					t.Errorf("%s: %s not declared; responses %v", o, code, slices.Sorted(mapKeys(rs)))
				}
			}
		}
	})

	t.Run("no reference has siblings", func(t *testing.T) {
		// OpenAPI 3.0 ignores them, and linters refuse them.
		var check func(path string, v any)
		check = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				if _, ok := v["$ref"]; ok && len(v) > 1 {
					t.Errorf("%s: $ref with siblings %v", path, slices.Sorted(mapKeys(v)))
				}
				for k, x := range v {
					check(path+"/"+k, x)
				}
			case []any:
				for i, x := range v {
					check(fmt.Sprintf("%s/%d", path, i), x)
				}
			}
		}
		check("#", map[string]any(doc))
	})

	t.Run("the same field has the same enumeration in requests and responses", func(t *testing.T) {
		// One named enumeration each: one type in a generated client.
		for _, c := range []struct {
			enum, prop string
			schemas    []string
		}{
			{"SystemPromptMode", "system_prompt_mode", []string{"Level", "LevelUpdate", "LevelImport"}},
			{"RunStatus", "status", []string{"RunInfo", "LastRun"}},
			{"ChannelStatus", "status", []string{"Channel", "ChannelState"}},
		} {
			if e, _ := doc.schemas()[c.enum].(map[string]any); e["enum"] == nil {
				t.Errorf("no enumeration %s", c.enum)
			}
			for _, name := range c.schemas {
				s, _ := doc.schemas()[name].(map[string]any)
				p, _ := s["properties"].(map[string]any)[c.prop].(map[string]any)
				if p["$ref"] != "#/components/schemas/"+c.enum {
					t.Errorf("%s.%s = %v, want the %s enumeration", name, c.prop, p, c.enum)
				}
			}
		}
	})

	t.Run("fields an update clears with null say so", func(t *testing.T) {
		prop := func(schema, name string) map[string]any {
			s, _ := doc.schemas()[schema].(map[string]any)
			p, _ := s["properties"].(map[string]any)[name].(map[string]any)
			return p
		}
		allowsNull := func(p map[string]any) bool {
			if slices.Contains(types(p), "null") {
				return true
			}
			list, _ := p["anyOf"].([]any)
			for _, x := range list {
				if slices.Contains(types(x.(map[string]any)), "null") {
					return true
				}
			}
			return false
		}
		for _, f := range [][2]string{
			{"ExpectedInput", "tolerance"}, {"ExpectedInput", "arguments"}, {"ToolUpdate", "mock_response"}, {"AgentUpdate", "model"},
		} {
			if p := prop(f[0], f[1]); !allowsNull(p) {
				t.Errorf("%s.%s = %v: null is not allowed, so generated clients cannot clear it", f[0], f[1], p)
			}
		}
		// A response field that may be null says so too.
		if p := prop("RunInfo", "config"); !allowsNull(p) {
			t.Errorf("RunInfo.config = %v, want RunConfig or null", p)
		}
	})

	t.Run("bodies once untyped are typed", func(t *testing.T) {
		find := func(method, path string) operation {
			for _, o := range ops {
				if o.method == method && o.path == path {
					return o
				}
			}
			t.Fatalf("no %s %s", method, path)
			return operation{}
		}
		for _, c := range []struct {
			method, path, code, schema string
		}{
			{"post", "/api/agents/{agent_id}/kb", "201", "KBFile"},
			{"post", "/api/channels/{channel_id}/webhook", "200", "WebhookReply"},
			{"post", "/api/channels/{channel_id}/webhook", "202", "WebhookQueued"},
			{"delete", "/api/settings/domains/{domain_id}", "200", "Success"},
		} {
			s := bodySchemas(find(c.method, c.path).responses()[c.code])
			if len(s) != 1 || s[0]["$ref"] != "#/components/schemas/"+c.schema {
				t.Errorf("%s %s %s: %v, want %s", c.method, c.path, c.code, s, c.schema)
			}
		}
	})

	t.Run("the bearer scheme is always described", func(t *testing.T) {
		c, _ := doc["components"].(map[string]any)
		schemes, _ := c["securitySchemes"].(map[string]any)
		bearer, _ := schemes["bearer"].(map[string]any)
		if bearer["type"] != "http" || bearer["scheme"] != "bearer" || bearer["description"] == nil {
			t.Errorf("securitySchemes %v", schemes)
		}
	})
}
