// Command gocheck reads an OpenAPI document and the Go types oapi-codegen
// generated from it, and fails when the generated types are loose:
//
//   - a type of a request or response object has an AdditionalProperties
//     catch-all map (the schema was left open);
//   - a field that a response always carries (required, not nullable) is a
//     pointer or a nullable.Nullable (the schema did not list it as
//     required, or allowed null).
//
// It is not part of the Gauntlet module: .ci/openapi-check runs it in the
// scratch module of the generated client:
//
//	go run ./gocheck -spec openapi.json -types client/client.gen.go
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func main() {
	spec := flag.String("spec", "", "the OpenAPI document (JSON)")
	types := flag.String("types", "", "the generated Go file")
	flag.Parse()
	problems, checked, err := check(*spec, *types)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocheck:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "gocheck:", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("gocheck: %d generated types are tight: no catch-all maps, required response fields are plain values\n", checked)
}

type schema = map[string]any

// field is a generated struct field: its JSON name and Go type.
type field struct {
	name, typ string
}

func check(specPath, typesPath string) (problems []string, checked int, err error) {
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return nil, 0, err
	}
	var doc schema
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", specPath, err)
	}
	structs, err := parseStructs(typesPath)
	if err != nil {
		return nil, 0, err
	}
	components, _ := doc["components"].(schema)
	schemas, _ := components["schemas"].(schema)
	requests, responses := usedSchemas(doc, schemas)

	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s, _ := schemas[name].(schema)
		props, _ := s["properties"].(schema)
		if len(props) == 0 || (!requests[name] && !responses[name]) {
			continue
		}
		fields, ok := structs[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("schema %s: no generated struct %s", name, name))
			continue
		}
		checked++
		byName := map[string]string{}
		for _, f := range fields {
			if f.name == "-" {
				problems = append(problems, fmt.Sprintf("%s has a catch-all AdditionalProperties map: its schema is open", name))
				continue
			}
			byName[f.name] = f.typ
		}
		if !responses[name] {
			continue
		}
		required, _ := s["required"].([]any)
		for _, r := range required {
			prop := r.(string)
			ps, _ := props[prop].(schema)
			if allowsNull(ps) {
				continue
			}
			typ, ok := byName[prop]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s.%s: no generated field", name, prop))
			case strings.HasPrefix(typ, "*") || strings.HasPrefix(typ, "nullable.Nullable"):
				problems = append(problems, fmt.Sprintf("%s.%s is %s: a field every response carries should be a plain value", name, prop, typ))
			}
		}
	}
	return problems, checked, nil
}

// allowsNull reports whether a property schema allows null.
func allowsNull(s schema) bool {
	if t, ok := s["type"].([]any); ok && slices.Contains(t, any("null")) {
		return true
	}
	if s["nullable"] == true {
		return true
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		list, _ := s[key].([]any)
		for _, sub := range list {
			if m, _ := sub.(schema); m["type"] == "null" {
				return true
			}
		}
	}
	return false
}

// usedSchemas returns the named schemas reachable from request bodies and
// from responses.
func usedSchemas(doc, schemas schema) (requests, responses map[string]bool) {
	requests, responses = map[string]bool{}, map[string]bool{}
	var walk func(v any, seen map[string]bool)
	walk = func(v any, seen map[string]bool) {
		switch v := v.(type) {
		case schema:
			if ref, ok := v["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				if !seen[name] {
					seen[name] = true
					walk(schemas[name], seen)
				}
				return
			}
			for _, x := range v {
				walk(x, seen)
			}
		case []any:
			for _, x := range v {
				walk(x, seen)
			}
		}
	}
	paths, _ := doc["paths"].(schema)
	for _, item := range paths {
		for _, op := range item.(schema) {
			o, ok := op.(schema)
			if !ok {
				continue
			}
			walk(o["requestBody"], requests)
			walk(o["responses"], responses)
		}
	}
	return requests, responses
}

// parseStructs returns the fields of every struct type of a Go file, by
// type name. oapi-codegen tags the catch-all AdditionalProperties map
// json:"-".
func parseStructs(path string) (map[string][]field, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string][]field{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			var fields []field
			for _, fl := range st.Fields.List {
				name := "-"
				if fl.Tag != nil {
					tag, _ := strconv.Unquote(fl.Tag.Value)
					if j, ok := reflect.StructTag(tag).Lookup("json"); ok {
						name, _, _ = strings.Cut(j, ",")
					}
				}
				fields = append(fields, field{name: name, typ: exprString(fset, fl.Type)})
			}
			out[ts.Name.Name] = fields
		}
	}
	return out, nil
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, e); err != nil {
		return fmt.Sprintf("%T", e)
	}
	return b.String()
}
