package catalog

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/gauntlet-eval/gauntlet/harness/internal/suggest"
)

// Definition files are strict: a key the format does not know is an error,
// so that a typo ("typ:", "pass_treshold:") is reported instead of being
// dropped in silence and its default used. The decoder of go-yaml stops at
// the first unknown field; this file walks the parsed document against the
// Go type first, so that every unknown key is reported at once, each at its
// line and with the nearest known key as a suggestion.

// Problem is one thing wrong in a definitions file, at a line when known.
type Problem struct {
	// Line is the line of the file the problem is at, from 1; 0 when the
	// problem is about the file as a whole.
	Line int
	// Key is the unknown key, for an unknown-key problem.
	Key string
	// Message says what is wrong.
	Message string
}

// Error returns the message, prefixed with its line when known.
func (p *Problem) Error() string {
	if p.Line > 0 {
		return "line " + strconv.Itoa(p.Line) + ": " + p.Message
	}
	return p.Message
}

// Problems are the problems found in one file. A file with any problem loads
// nothing.
type Problems []*Problem

// Error lists the problems, separated by semicolons.
func (ps Problems) Error() string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Error()
	}
	return strings.Join(parts, "; ")
}

// decodeStrict decodes one YAML document into v, a pointer to a struct.
// It returns Problems for a syntax error, an unknown key, a value of the
// wrong kind or more than one document.
func decodeStrict(data []byte, v any) error {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return Problems{yamlProblem(err)}
	}
	var body ast.Node
	var probs Problems
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			probs = append(probs, &Problem{Line: lineOfNode(doc.Body),
				Message: "a definitions file holds one YAML document; this is a second one"})
			break
		}
		body = doc.Body
	}
	if body == nil {
		return errors.New("file is empty")
	}
	walkKeys(body, reflect.TypeOf(v).Elem(), &probs)
	if len(probs) > 0 {
		return probs
	}
	if err := yaml.NodeToValue(body, v); err != nil {
		return Problems{yamlProblem(err)}
	}
	return nil
}

// yamlProblem turns an error of the YAML library into a Problem at its
// line.
func yamlProblem(err error) *Problem {
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := &Problem{Message: ye.GetMessage()}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			p.Line = tk.Position.Line
		}
		return p
	}
	return &Problem{Message: err.Error()}
}

func lineOfNode(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

var (
	bytesUnmarshaler     = reflect.TypeFor[yaml.BytesUnmarshaler]()
	interfaceUnmarshaler = reflect.TypeFor[yaml.InterfaceUnmarshaler]()
	textUnmarshaler      = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// freeForm reports whether values of t take any keys: maps, interfaces and
// types that decode themselves.
func freeForm(t reflect.Type) bool {
	if t.Kind() == reflect.Interface || t.Kind() == reflect.Map {
		return true
	}
	pt := reflect.PointerTo(t)
	for _, u := range []reflect.Type{bytesUnmarshaler, interfaceUnmarshaler, textUnmarshaler} {
		if t.Implements(u) || pt.Implements(u) {
			return true
		}
	}
	return false
}

// structMap reports whether t is a map whose values are structs that
// take known keys only.
func structMap(t reflect.Type) bool {
	if t.Kind() != reflect.Map {
		return false
	}
	e := t.Elem()
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	return e.Kind() == reflect.Struct && !freeForm(e)
}

// unwrap skips the anchors and tags around a node.
func unwrap(n ast.Node) ast.Node {
	for {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			n = x.Value
		default:
			return n
		}
	}
}

// walkKeys reports every key of n that type t does not know, recursing
// into known keys whose values are structs or lists of structs.
func walkKeys(n ast.Node, t reflect.Type, probs *Problems) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || freeForm(t) && !structMap(t) {
		return
	}
	n = unwrap(n)
	switch t.Kind() {
	case reflect.Map:
		// A map of structs (pricing's models): its keys are free, the
		// keys of each value are the struct's.
		if m, ok := n.(*ast.MappingNode); ok {
			for _, kv := range m.Values {
				walkKeys(kv.Value, t.Elem(), probs)
			}
		} else if kv, ok := n.(*ast.MappingValueNode); ok {
			walkKeys(kv.Value, t.Elem(), probs)
		}
	case reflect.Slice, reflect.Array:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for _, item := range seq.Values {
				walkKeys(item, t.Elem(), probs)
			}
		}
	case reflect.Struct:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			if mv, isPair := n.(*ast.MappingValueNode); isPair {
				m = &ast.MappingNode{Values: []*ast.MappingValueNode{mv}}
			} else {
				return // the decoder reports a value of the wrong kind
			}
		}
		fields := yamlFields(t)
		for _, kv := range m.Values {
			if kv.Key.IsMergeKey() {
				walkKeys(kv.Value, t, probs)
				continue
			}
			name := keyName(kv.Key)
			ft, known := fields[name]
			if !known {
				*probs = append(*probs, &Problem{Line: lineOfNode(kv.Key), Key: name,
					Message: unknownKeyMessage(name, fields)})
				continue
			}
			walkKeys(kv.Value, ft, probs)
		}
	}
}

func keyName(k ast.MapKeyNode) string {
	switch x := unwrap(k).(type) {
	case *ast.StringNode:
		return x.Value
	case ast.ScalarNode:
		return fmt.Sprint(x.GetValue())
	}
	return k.String()
}

// yamlFields maps the keys a struct type takes to their types, as go-yaml
// names them: the yaml tag, else the json tag, else the lower-cased field
// name; "-" and unexported fields take no key; inline structs add theirs.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range yamlFields(ft) {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// unknownKeyMessage names an unknown key and suggests the nearest known
// one, or lists the known keys when none is near.
func unknownKeyMessage(key string, fields map[string]reflect.Type) string {
	known := sortedKeys(fields)
	if best, ok := suggest.Nearest(key, known); ok {
		return fmt.Sprintf("unknown key %q (did you mean %q?)", key, best)
	}
	return fmt.Sprintf("unknown key %q (known keys: %s)", key, strings.Join(known, ", "))
}

// lineOfField returns the line of a field named as validation errors name
// them ("tests[1].expected.type") in a YAML file, or of its nearest
// enclosing part that is present; 0 when the file does not parse.
func lineOfField(data []byte, field string) int {
	file, err := parser.ParseBytes(data, 0)
	if err != nil || len(file.Docs) == 0 || file.Docs[0] == nil {
		return 0
	}
	n := unwrap(file.Docs[0].Body)
	line := 0
	for _, part := range splitField(field) {
		var next ast.Node
		var at *token.Token
		switch x := n.(type) {
		case *ast.MappingNode:
			for _, kv := range x.Values {
				if keyName(kv.Key) == part {
					next, at = kv.Value, kv.Key.GetToken()
				}
			}
		case *ast.MappingValueNode:
			if keyName(x.Key) == part {
				next, at = x.Value, x.Key.GetToken()
			}
		case *ast.SequenceNode:
			if i, err := strconv.Atoi(part); err == nil && i >= 0 && i < len(x.Values) {
				next = x.Values[i]
				at = next.GetToken()
			}
		}
		if next == nil {
			break
		}
		if at != nil && at.Position != nil {
			line = at.Position.Line
		}
		n = unwrap(next)
	}
	return line
}

// splitField splits "tests[1].expected.type" into tests, 1, expected, type.
func splitField(field string) []string {
	var out []string
	for _, part := range strings.Split(field, ".") {
		for part != "" {
			name, rest, ok := strings.Cut(part, "[")
			if name != "" {
				out = append(out, name)
			}
			if !ok {
				break
			}
			idx, after, _ := strings.Cut(rest, "]")
			out = append(out, idx)
			part = after
		}
	}
	return out
}
