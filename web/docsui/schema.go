package docsui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// schemaPrefix begins the references to the document's named schemas.
const schemaPrefix = "#/components/schemas/"

// maxDepth bounds how many objects deep an operation's schemas are
// expanded; a deeper object is a link to its schema.
const maxDepth = 6

// schemaView is a schema as the page shows it: its type, constraints and
// description, and the fields of the object it holds (directly, or as the
// items of an array or the values of a map), expanded recursively.
type schemaView struct {
	Type  label
	Facts []fact
	Desc  text
	// Fields are the properties of the object, sorted by name.
	Fields []*fieldView
	// Of says whose fields these are when they are not the schema's
	// own: "each item: …" of an array, "each value: …" of a map.
	Of label
	// Alternatives are the schemas of a oneOf, anyOf or allOf, with
	// Combine saying which.
	Alternatives []*schemaView
	Combine      string
	// Note says why the fields are not shown here, with a link to them.
	Note string
	See  label
}

// fieldView is a property of an object.
type fieldView struct {
	Name     string
	Required bool
	Schema   *schemaView
}

// label is a short type description: text with links to named schemas.
type label []labelPart

type labelPart struct{ Text, Href string }

// fact is one constraint or property of a schema: a name, and values
// shown as code (none for a flag such as "read-only").
type fact struct {
	Name   string
	Values []string
}

// schemas renders the schemas of one document.
type schemas struct {
	byName map[string]*huma.Schema
	// anchor maps a named schema to its id on the page.
	anchor map[string]string
}

func newSchemas(doc *huma.OpenAPI, ids *idSet) *schemas {
	s := &schemas{byName: map[string]*huma.Schema{}, anchor: map[string]string{}}
	if doc.Components != nil && doc.Components.Schemas != nil {
		s.byName = doc.Components.Schemas.Map()
	}
	for _, name := range sortedKeys(s.byName) {
		s.anchor[name] = ids.add("schema-" + name)
	}
	return s
}

// resolve returns the named schema ref refers to, and its name; nil when
// ref is not a reference to one of them.
func (r *schemas) resolve(ref string) (*huma.Schema, string) {
	name, ok := strings.CutPrefix(ref, schemaPrefix)
	if !ok {
		return nil, ""
	}
	return r.byName[name], name
}

// link is the label of a reference: the schema's name linking to it, or
// the reference itself when it names nothing in the document.
func (r *schemas) link(ref string) label {
	if target, name := r.resolve(ref); target != nil {
		return label{{Text: name, Href: "#" + r.anchor[name]}}
	}
	return label{{Text: ref}}
}

// nullBranch returns the other schema of an anyOf or oneOf [x, {type:
// null}] (in either order): "x or null".
func nullBranch(list []*huma.Schema) *huma.Schema {
	if len(list) != 2 {
		return nil
	}
	for i, s := range list {
		if s != nil && s.Type == "null" && s.Ref == "" && len(s.Properties) == 0 {
			return list[1-i]
		}
	}
	return nil
}

// label describes the type of s in a few words.
func (r *schemas) label(s *huma.Schema) label {
	if s == nil {
		return label{{Text: "any"}}
	}
	var l label
	switch {
	case s.Ref != "":
		l = r.link(s.Ref)
	case nullBranch(s.AnyOf) != nil:
		l = append(r.label(nullBranch(s.AnyOf)), labelPart{Text: " or null"})
	case nullBranch(s.OneOf) != nil:
		l = append(r.label(nullBranch(s.OneOf)), labelPart{Text: " or null"})
	case len(s.OneOf) > 0:
		l = r.join("one of: ", s.OneOf, " | ")
	case len(s.AnyOf) > 0:
		l = r.join("any of: ", s.AnyOf, " | ")
	case len(s.AllOf) > 0:
		l = r.join("all of: ", s.AllOf, " & ")
	case s.Type == "" && s.Not != nil && s.Not.Type == "null":
		l = label{{Text: "any value but null"}}
	case s.Type == "":
		l = label{{Text: "any"}}
	case s.Type == huma.TypeArray:
		l = append(label{{Text: "array of "}}, r.label(s.Items)...)
	case s.Type == huma.TypeObject && len(s.Properties) == 0:
		if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
			l = append(label{{Text: "map of string to "}}, r.label(ap)...)
		} else {
			l = label{{Text: "object"}}
		}
	default:
		l = label{{Text: s.Type}}
		if s.Format != "" {
			l = append(l, labelPart{Text: " (" + s.Format + ")"})
		}
	}
	if s.Nullable {
		l = append(l, labelPart{Text: " or null"})
	}
	return l
}

func (r *schemas) join(prefix string, list []*huma.Schema, sep string) label {
	l := label{{Text: prefix}}
	for i, s := range list {
		if i > 0 {
			l = append(l, labelPart{Text: sep})
		}
		l = append(l, r.label(s)...)
	}
	return l
}

// facts lists the constraints of s.
func facts(s *huma.Schema) []fact {
	if s == nil {
		return nil
	}
	var out []fact
	add := func(name string, values ...string) { out = append(out, fact{Name: name, Values: values}) }
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, v := range s.Enum {
			vals[i] = value(v)
		}
		add("one of", vals...)
	}
	if s.Default != nil {
		add("default", value(s.Default))
	}
	for _, n := range []struct {
		name string
		v    *float64
	}{
		{"minimum", s.Minimum}, {"greater than", s.ExclusiveMinimum},
		{"maximum", s.Maximum}, {"less than", s.ExclusiveMaximum},
		{"multiple of", s.MultipleOf},
	} {
		if n.v != nil {
			add(n.name, strconv.FormatFloat(*n.v, 'f', -1, 64))
		}
	}
	for _, n := range []struct {
		name string
		v    *int
	}{
		{"min length", s.MinLength}, {"max length", s.MaxLength},
		{"min items", s.MinItems}, {"max items", s.MaxItems},
		{"min properties", s.MinProperties}, {"max properties", s.MaxProperties},
	} {
		if n.v != nil {
			add(n.name, strconv.Itoa(*n.v))
		}
	}
	if s.Pattern != "" {
		add("pattern", s.Pattern)
	}
	if s.UniqueItems {
		add("unique items")
	}
	if s.ReadOnly {
		add("read-only")
	}
	if s.WriteOnly {
		add("write-only")
	}
	if s.Deprecated {
		add("deprecated")
	}
	if len(s.Examples) > 0 {
		add("example", value(s.Examples[0]))
	}
	return out
}

// value shows a value of the document: a string as it is (quoted when
// empty), anything else as JSON.
func value(v any) string {
	if s, ok := v.(string); ok {
		if s == "" {
			return `""`
		}
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// walk is the state of one expansion: the named schemas being expanded
// (to stop at a cycle) and whether references are expanded at all.
type walk struct {
	stack      []string
	expandRefs bool
}

// view renders s; depth counts the objects expanded around it.
func (r *schemas) view(s *huma.Schema, w *walk, depth int) *schemaView {
	v := &schemaView{Type: r.label(s), Facts: facts(s)}
	if s == nil {
		return v
	}
	v.Desc = parseText(s.Description)
	core := s
	// A reference or "x or null": the constraints and description of
	// what it stands for.
	for range 8 {
		next := nullBranch(core.AnyOf)
		if next == nil {
			next = nullBranch(core.OneOf)
		}
		if next == nil {
			break
		}
		core = next
	}
	if core.Ref != "" {
		target, name := r.resolve(core.Ref)
		if target == nil {
			v.Note = "This reference names no schema of the document."
			return v
		}
		if core != s {
			v.Facts = append(v.Facts, facts(core)...)
		}
		if target.Type != huma.TypeObject && target.Type != huma.TypeArray && len(target.Properties) == 0 {
			// A named enumeration or scalar: its constraints here.
			v.Facts = append(v.Facts, facts(target)...)
		}
		if len(v.Desc) == 0 {
			v.Desc = parseText(target.Description)
		}
		r.expand(v, target, name, w, depth)
		return v
	}
	if core != s {
		v.Facts = append(v.Facts, facts(core)...)
		if len(v.Desc) == 0 {
			v.Desc = parseText(core.Description)
		}
	}
	r.expand(v, core, "", w, depth)
	return v
}

// expand fills v with the fields (or alternatives) of s, which is the
// named schema name when name is not empty.
func (r *schemas) expand(v *schemaView, s *huma.Schema, name string, w *walk, depth int) {
	if name != "" {
		switch {
		case !w.expandRefs:
			return // the type's link leads to them
		case slices.Contains(w.stack, name):
			v.Note, v.See = "Recursive: the fields of", r.link(schemaPrefix+name)
			return
		case depth >= maxDepth:
			if hasFields(r, s, 0) {
				v.Note, v.See = "Fields: see", r.link(schemaPrefix+name)
			}
			return
		}
		w.stack = append(w.stack, name)
		defer func() { w.stack = w.stack[:len(w.stack)-1] }()
	}
	switch {
	case len(s.Properties) > 0:
		if depth >= maxDepth {
			v.Note = "Nested too deep to show here."
			return
		}
		for _, prop := range sortedKeys(s.Properties) {
			v.Fields = append(v.Fields, &fieldView{
				Name:     prop,
				Required: slices.Contains(s.Required, prop),
				Schema:   r.view(s.Properties[prop], w, depth+1),
			})
		}
	case s.Type == huma.TypeArray && s.Items != nil:
		r.inner(v, s.Items, "each item", w, depth)
	case s.Type == huma.TypeObject:
		if ap, ok := s.AdditionalProperties.(*huma.Schema); ok {
			r.inner(v, ap, "each value", w, depth)
		}
	case nullBranch(s.AnyOf) == nil && len(s.AnyOf) > 0:
		r.alternatives(v, "any of", s.AnyOf, w, depth)
	case nullBranch(s.OneOf) == nil && len(s.OneOf) > 0:
		r.alternatives(v, "one of", s.OneOf, w, depth)
	case len(s.AllOf) > 0:
		r.alternatives(v, "all of", s.AllOf, w, depth)
	}
}

// inner shows what an array's items or a map's values hold: their
// constraints, and their fields when they are objects.
func (r *schemas) inner(v *schemaView, s *huma.Schema, of string, w *walk, depth int) {
	iv := r.view(s, w, depth)
	for _, f := range iv.Facts {
		v.Facts = append(v.Facts, fact{Name: of + ": " + f.Name, Values: f.Values})
	}
	if len(iv.Fields) > 0 || len(iv.Alternatives) > 0 {
		v.Fields, v.Alternatives, v.Combine = iv.Fields, iv.Alternatives, iv.Combine
		v.Of = append(label{{Text: of + ": "}}, iv.Type...)
	}
	if iv.Note != "" {
		v.Note, v.See = iv.Note, iv.See
	}
}

func (r *schemas) alternatives(v *schemaView, combine string, list []*huma.Schema, w *walk, depth int) {
	v.Combine = combine
	for _, s := range list {
		v.Alternatives = append(v.Alternatives, r.view(s, w, depth+1))
	}
}

// hasFields reports whether s, once references are followed, holds an
// object with properties.
func hasFields(r *schemas, s *huma.Schema, n int) bool {
	if s == nil || n > maxDepth {
		return false
	}
	if s.Ref != "" {
		target, _ := r.resolve(s.Ref)
		return hasFields(r, target, n+1)
	}
	if len(s.Properties) > 0 {
		return true
	}
	if ap, ok := s.AdditionalProperties.(*huma.Schema); ok && hasFields(r, ap, n+1) {
		return true
	}
	for _, list := range [][]*huma.Schema{s.AnyOf, s.OneOf, s.AllOf} {
		for _, sub := range list {
			if hasFields(r, sub, n+1) {
				return true
			}
		}
	}
	return hasFields(r, s.Items, n+1)
}

// named renders the named schema name for the page's list of schemas:
// its own fields, with references as links rather than expanded.
func (r *schemas) named(name string) *schemaView {
	s := r.byName[name]
	v := &schemaView{Type: r.label(s), Facts: facts(s), Desc: parseText(s.Description)}
	r.expand(v, s, "", &walk{stack: []string{name}}, 0)
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
