package jsonschema

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// RootCheck names the check on the value as a whole in
// details["failed_checks"]; member checks are named by their JSON pointer
// ("/name", "/0").
const RootCheck = "(root)"

// maxErrors bounds details["errors"].
const maxErrors = 50

// maxSchemaDepth bounds the walk through $ref and allOf that finds what
// the root schema says about the value's members.
const maxSchemaDepth = 32

// outcome is the result of the checks on one value.
type outcome struct {
	total, passed int
	failed        []string // names of the failed checks, in check order
	errors        []string // validation errors at the leaves, sorted
}

// checkSet is an ordered set of named checks, each passed or failed.
type checkSet struct {
	order  []string
	failed map[string]bool
}

func (c *checkSet) add(name string) {
	if _, ok := c.failed[name]; !ok {
		c.failed[name] = false
		c.order = append(c.order, name)
	}
}

func (c *checkSet) fail(name string) {
	c.add(name)
	c.failed[name] = true
}

// score validates value against sch and scores it with the checks the
// package documentation defines.
func score(sch *jsv.Schema, value any) outcome {
	set := &checkSet{failed: map[string]bool{}}
	set.add(RootCheck)
	schemas := flatten(sch)
	// Required properties are checks whatever the value, so that every
	// response to a test has the same checks for them.
	for _, name := range required(schemas) {
		set.add(member(name))
	}
	switch v := value.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if constrainedProperty(schemas, k) {
				set.add(member(k))
			}
		}
	case []any:
		for i := range v {
			if constrainedItem(schemas, i) {
				set.add(member(strconv.Itoa(i)))
			}
		}
	}

	var out outcome
	err := sch.Validate(value)
	var verr *jsv.ValidationError
	if err != nil && !errors.As(err, &verr) {
		// Not a validation failure (cannot happen with decoded JSON):
		// the value as a whole fails.
		set.fail(RootCheck)
		out.errors = []string{err.Error()}
	}
	if verr != nil {
		leaves := collectLeaves(verr, nil)
		whole := false
		for _, l := range leaves {
			out.errors = append(out.errors, message(l))
			if attribute(set, l) {
				whole = true
			}
		}
		if whole {
			for _, name := range set.order {
				set.failed[name] = true
			}
		}
		if !anyFailed(set) {
			set.fail(RootCheck)
		}
		sort.Strings(out.errors)
		out.errors = compactStrings(out.errors)
		if len(out.errors) > maxErrors {
			n := len(out.errors) - maxErrors
			out.errors = append(out.errors[:maxErrors], strconv.Itoa(n)+" more errors")
		}
	}

	out.total = len(set.order)
	for _, name := range set.order {
		if set.failed[name] {
			out.failed = append(out.failed, name)
		} else {
			out.passed++
		}
	}
	return out
}

// attribute marks the check a leaf error belongs to as failed. It reports
// whether the error rejects the value as a whole (its type, const, enum or
// format at the root, or a false root schema).
func attribute(set *checkSet, e *jsv.ValidationError) (whole bool) {
	if len(e.InstanceLocation) > 0 {
		set.fail(member(e.InstanceLocation[0]))
		return false
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, name := range k.Missing {
			set.fail(member(name))
		}
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			set.fail(member(name))
		}
	case *kind.PropertyNames:
		set.fail(member(k.Property))
	case *kind.Type, *kind.Const, *kind.Enum, *kind.Format, *kind.FalseSchema:
		set.fail(RootCheck)
		return true
	default:
		set.fail(RootCheck)
	}
	return false
}

func anyFailed(set *checkSet) bool {
	for _, f := range set.failed {
		if f {
			return true
		}
	}
	return false
}

// collectLeaves appends the errors at the leaves of the error tree. The
// failure of anyOf, oneOf, contains and propertyNames is a leaf itself:
// the errors under it are those of alternatives, not of the value.
func collectLeaves(e *jsv.ValidationError, out []*jsv.ValidationError) []*jsv.ValidationError {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf, *kind.Contains, *kind.PropertyNames:
		return append(out, e)
	}
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = collectLeaves(c, out)
	}
	return out
}

// message is one line describing a leaf error: "/age: got string, want
// integer", "(root): missing property 'name'".
func message(e *jsv.ValidationError) string {
	text, _, _ := strings.Cut(e.Error(), "\n")
	// The library writes "at '<pointer>': <what>"; keep <what>.
	if rest, ok := strings.CutPrefix(text, "at "); ok {
		if i := strings.Index(rest, ": "); i >= 0 {
			text = rest[i+2:]
		}
	}
	loc := RootCheck
	if len(e.InstanceLocation) > 0 {
		loc = pointer(e.InstanceLocation)
	}
	return loc + ": " + text
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// member is the name of the check of a top-level member: its JSON pointer.
func member(token string) string { return pointer([]string{token}) }

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(t))
	}
	return b.String()
}

// flatten returns the root schema and the schemas that apply to the same
// value through $ref and allOf, each once.
func flatten(root *jsv.Schema) []*jsv.Schema {
	var out []*jsv.Schema
	seen := map[*jsv.Schema]bool{}
	var walk func(s *jsv.Schema, depth int)
	walk = func(s *jsv.Schema, depth int) {
		if s == nil || seen[s] || depth > maxSchemaDepth {
			return
		}
		seen[s] = true
		out = append(out, s)
		walk(s.Ref, depth+1)
		for _, a := range s.AllOf {
			walk(a, depth+1)
		}
	}
	walk(root, 0)
	return out
}

// required lists the properties the schemas require, each once, in order.
func required(schemas []*jsv.Schema) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range schemas {
		for _, name := range s.Required {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// constrainedProperty reports whether a schema says anything about the
// member key of an object: it is in properties, matches a
// patternProperties pattern, or falls under an additionalProperties that
// is false or a schema.
func constrainedProperty(schemas []*jsv.Schema, key string) bool {
	for _, s := range schemas {
		if _, ok := s.Properties[key]; ok {
			return true
		}
		for re := range s.PatternProperties {
			if re.MatchString(key) {
				return true
			}
		}
		switch a := s.AdditionalProperties.(type) {
		case bool:
			if !a {
				return true
			}
		case *jsv.Schema:
			return true
		}
	}
	return false
}

// constrainedItem reports whether a schema says anything about the i-th
// element of an array: items (2020-12), prefixItems, or the items and
// additionalItems of earlier drafts.
func constrainedItem(schemas []*jsv.Schema, i int) bool {
	for _, s := range schemas {
		if s.Items2020 != nil || i < len(s.PrefixItems) {
			return true
		}
		switch it := s.Items.(type) {
		case *jsv.Schema:
			return true
		case []*jsv.Schema:
			if i < len(it) {
				return true
			}
			switch a := s.AdditionalItems.(type) {
			case bool:
				if !a {
					return true
				}
			case *jsv.Schema:
				return true
			}
		}
	}
	return false
}
