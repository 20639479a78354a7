package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// The definition files are written by this small YAML emitter rather than
// by the YAML library, whose writer mangles some strings (carriage
// returns, NUL, whitespace-only lines) and mis-indents custom scalars. It
// covers what definitions hold: structs (with yaml tags: name, omitempty,
// "-"), maps (keys sorted), slices, strings, numbers, booleans and nil. The
// output is block style, two-space indentation, and reads back with any
// YAML 1.2 parser; each string takes the simplest style that round-trips:
// plain, single-quoted, a literal block for multi-line text, or JSON-style
// double quotes for anything else.

// encodeYAML renders v as a YAML document.
func encodeYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	e := &emitter{b: &b}
	if err := e.value(reflect.ValueOf(v), 0, ctxTop); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type emitter struct{ b *bytes.Buffer }

// Where a value is written: at the top of the document, after "key:", or
// after "- ".
type position int

const (
	ctxTop position = iota
	ctxMapValue
	ctxSeqItem
)

func (e *emitter) indent(n int) { e.b.WriteString(strings.Repeat("  ", n)) }

// isEmpty reports whether v counts as empty for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	case reflect.Slice, reflect.Map, reflect.String, reflect.Array:
		return v.Len() == 0
	default:
		return v.IsZero()
	}
}

type field struct {
	name string
	v    reflect.Value
}

func structFields(v reflect.Value) []field {
	var out []field
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		fv := v.Field(i)
		if strings.Contains(opts, "omitempty") && isEmpty(fv) {
			continue
		}
		out = append(out, field{name, fv})
	}
	return out
}

func mapFields(v reflect.Value) ([]field, error) {
	if v.Type().Key().Kind() != reflect.String {
		return nil, fmt.Errorf("yaml: map key type %s is not supported", v.Type().Key())
	}
	keys := v.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	out := make([]field, len(keys))
	for i, k := range keys {
		out[i] = field{k.String(), v.MapIndex(k)}
	}
	return out, nil
}

// value writes v at nesting depth n. For a collection in a map value or a
// sequence item, the caller has written "key:" or "- " already.
func (e *emitter) value(v reflect.Value, n int, pos position) error {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return e.scalar("null", pos)
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		return e.mapping(structFields(v), n, pos)
	case reflect.Map:
		fields, err := mapFields(v)
		if err != nil {
			return err
		}
		return e.mapping(fields, n, pos)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return fmt.Errorf("yaml: byte slices are not supported")
		}
		return e.sequence(v, n, pos)
	case reflect.String:
		if v.Type() == reflect.TypeFor[json.Number]() {
			return e.scalar(v.String(), pos)
		}
		return e.text(v.String(), n, pos)
	case reflect.Bool:
		return e.scalar(strconv.FormatBool(v.Bool()), pos)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return e.scalar(strconv.FormatInt(v.Int(), 10), pos)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return e.scalar(strconv.FormatUint(v.Uint(), 10), pos)
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("yaml: %v is not a JSON number", f)
		}
		return e.scalar(formatFloat(f), pos)
	default:
		return fmt.Errorf("yaml: %s values are not supported", v.Kind())
	}
}

// formatFloat writes integral values as integers (the cache keeps numbers
// as JSON, which reads every number back as a float64: "3" must stay "3"),
// and exponents with a fraction ("1.0e-06": the parser reads "1e-06" as a
// string where the type is not known, as in mock_response).
func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if mant, exp, ok := strings.Cut(s, "e"); ok && !strings.Contains(mant, ".") {
		return mant + ".0e" + exp
	}
	return s
}

// scalar writes a one-line scalar and ends the line.
func (e *emitter) scalar(s string, pos position) error {
	if pos == ctxMapValue {
		e.b.WriteByte(' ')
	}
	e.b.WriteString(s)
	e.b.WriteByte('\n')
	return nil
}

func (e *emitter) mapping(fields []field, n int, pos position) error {
	if len(fields) == 0 {
		return e.scalar("{}", pos)
	}
	for i, f := range fields {
		switch {
		case pos == ctxMapValue && i == 0:
			e.b.WriteByte('\n')
			e.indent(n)
		case pos == ctxSeqItem && i == 0:
			// "- key: value" on the item's line.
		default:
			e.indent(n)
		}
		e.b.WriteString(quoteKey(f.name))
		e.b.WriteByte(':')
		if err := e.value(f.v, n+1, ctxMapValue); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

func (e *emitter) sequence(v reflect.Value, n int, pos position) error {
	if v.Len() == 0 {
		return e.scalar("[]", pos)
	}
	for i := 0; i < v.Len(); i++ {
		switch {
		case pos == ctxMapValue && i == 0:
			e.b.WriteByte('\n')
			e.indent(n)
		case pos == ctxSeqItem && i == 0:
		default:
			e.indent(n)
		}
		e.b.WriteString("-")
		item := v.Index(i)
		for item.Kind() == reflect.Interface && !item.IsNil() {
			item = item.Elem()
		}
		if k := item.Kind(); (k == reflect.Struct || k == reflect.Map || k == reflect.Slice) && !isEmpty(item) {
			e.b.WriteByte(' ')
		}
		// Items are written as a map value would be ("- x" after the
		// dash), except collections, which continue on the dash's line.
		itemPos := ctxMapValue
		if k := item.Kind(); (k == reflect.Struct || k == reflect.Map || k == reflect.Slice) && !isEmpty(item) {
			itemPos = ctxSeqItem
		}
		if err := e.value(item, n+1, itemPos); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	return nil
}

// text writes a string scalar in the simplest style that reads back as
// the same string.
func (e *emitter) text(s string, n int, pos position) error {
	switch {
	case plainSafe(s):
		return e.scalar(s, pos)
	case literalSafe(s):
		if pos == ctxMapValue {
			e.b.WriteByte(' ')
		}
		e.b.WriteByte('|')
		body := s
		if strings.HasSuffix(s, "\n") {
			body = strings.TrimSuffix(s, "\n")
		} else {
			e.b.WriteByte('-')
		}
		e.b.WriteByte('\n')
		for _, line := range strings.Split(body, "\n") {
			if line != "" {
				e.indent(n)
				e.b.WriteString(line)
			}
			e.b.WriteByte('\n')
		}
		return nil
	case emitPrintable(s) && !strings.ContainsAny(s, "\n\t"):
		return e.scalar("'"+strings.ReplaceAll(s, "'", "''")+"'", pos)
	default:
		return e.scalar(emitDoubleQuoted(s), pos)
	}
}

func quoteKey(s string) string {
	switch {
	case plainSafe(s):
		return s
	case emitPrintable(s) && !strings.ContainsAny(s, "\n\t"):
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	default:
		return emitDoubleQuoted(s)
	}
}

// emitDoubleQuoted writes s as a JSON string, which is also a valid YAML
// double-quoted scalar.
func emitDoubleQuoted(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func emitPrintable(s string) bool {
	for _, r := range s {
		if r == unicode.ReplacementChar || r == '\uFEFF' || (!unicode.IsPrint(r) && r != ' ' && r != '\n' && r != '\t') {
			return false
		}
	}
	return true
}

// plainSafe reports whether s can be written unquoted and read back as the
// same string (not as a number, boolean, null or structure).
func plainSafe(s string) bool {
	if s == "" || !emitPrintable(s) || strings.ContainsAny(s, "\n\t") || s != strings.TrimSpace(s) {
		return false
	}
	if strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(s[0])) {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") || strings.Contains(s, "<<") {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", "-.inf", "+.inf", ".nan":
		return false
	}
	// Anything that starts like a number, or a date, stays quoted.
	c := s[0]
	if c >= '0' && c <= '9' || c == '+' || c == '.' {
		return false
	}
	return true
}

// literalSafe reports whether s can be a literal block scalar (|, |-).
func literalSafe(s string) bool {
	if !strings.Contains(s, "\n") || !emitPrintable(s) || strings.ContainsAny(s, "\t\r") {
		return false
	}
	body := strings.TrimSuffix(s, "\n")
	// The first non-empty line sets the block's indentation: it must not
	// start with a space.
	if first := strings.TrimLeft(body, "\n"); first == "" || first[0] == ' ' || strings.HasSuffix(body, "\n") {
		return false
	}
	for _, line := range strings.Split(body, "\n") {
		if line != strings.TrimRight(line, " ") {
			return false
		}
	}
	return true
}

func validUTF8(s string) bool {
	return strings.ToValidUTF8(s, "\uFFFD") == s && !strings.ContainsRune(s, unicode.ReplacementChar)
}
