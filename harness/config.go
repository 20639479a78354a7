package harness

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gauntlet-eval/gauntlet/harness/internal/suggest"
)

// DecodeConfig decodes cfg, the config object of an evaluator or channel
// record, into dst, a pointer to the module's own config type (usually a
// struct), and checks it. It is DecodeConfig's zero ConfigDecoder: strict,
// for checking a record before it is stored.
//
// The rules are those of encoding/json, applied to the decoded map:
//
//   - A struct field takes the key named by its json tag, else its Go
//     name; `json:"-"` and unexported fields take none; the fields of an
//     embedded struct are promoted. Keys match names exactly: "Rubric"
//     does not set the field "rubric" (it is reported as an unknown key,
//     with "rubric" as the suggestion), since other code, such as secret
//     masking, reads config keys by their exact name.
//   - A key that no field takes is an error ("unknown setting"), with the
//     nearest known key as a suggestion; ConfigDecoder.IgnoreUnknown drops
//     such keys instead.
//   - Strings, booleans, numbers, lists and objects must meet fields of
//     the same kind: a string is never read as a number or a boolean. A
//     number goes into an integer field only when it is integral and fits
//     ("must be an integer, not 1.5"); any number type a JSON or YAML
//     decoder or Go code puts in a map is accepted (float64, int, uint64,
//     json.Number...). A field of type any gets the value as
//     encoding/json would give it (float64 numbers, map[string]any).
//   - null leaves a field as it is, except pointers, maps, slices and
//     interfaces, which become nil; an absent key leaves its field as it
//     is. Set defaults in dst before decoding.
//   - A field type with an UnmarshalJSON method decodes itself from the
//     value's JSON; one with an UnmarshalText method, from a string.
//
// Required settings and ranges are checked by the config type itself: when
// dst has a method Validate() error, DecodeConfig calls it after decoding,
// even when decoding found problems, so that every problem is reported at
// once. Validate reports its problems as a *ValidationError whose field
// names are relative to the config ("rubric", "headers.x", "keywords[2]";
// "" for the config as a whole); DecodeConfig puts them under "config".
// A problem Validate reports on a field that already failed to decode is
// dropped: "config.rubric: must be a string, not a number" says enough
// without "is required" besides. Any other error from Validate is reported
// on "config".
//
// Every problem is a FieldError of the returned *ValidationError (which
// matches ErrInvalid), named as the API reports it: "config.rubric",
// "config.headers.x", "config.keywords[2]". They are ordered by the
// declaration order of the top-level fields, unknown keys last. Messages
// never quote a value, which may be a secret. dst may be partly filled when
// an error is returned.
//
// Secrets masked by the server ("********") are replaced by their stored
// values before a record reaches a module's validator; DecodeConfig does
// not treat them specially.
//
// An error that is not a *ValidationError reports a mistake of the caller:
// dst is not a non-nil pointer.
func DecodeConfig(cfg map[string]any, dst any) error {
	return ConfigDecoder{}.Decode(cfg, dst)
}

// ConfigDecoder decodes config objects as DecodeConfig does, with options.
// The zero value is DecodeConfig.
type ConfigDecoder struct {
	// IgnoreUnknown drops keys that no field takes instead of reporting
	// them. Modules use it when they read a record that was checked when
	// it was stored (to run a channel or score a test): a record stored by
	// an older or newer version, with a key this version does not know,
	// still runs, while a write that carries the key is refused with a
	// clear error. Type errors and Validate's errors are reported either
	// way.
	IgnoreUnknown bool
}

// Decode decodes cfg into dst; see DecodeConfig.
func (d ConfigDecoder) Decode(cfg map[string]any, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("harness: DecodeConfig needs a non-nil pointer, not %T", dst)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	st := &configState{ignoreUnknown: d.IgnoreUnknown}
	st.decode(configRoot, reflect.ValueOf(cfg), rv.Elem(), 0)

	if v, ok := dst.(interface{ Validate() error }); ok {
		st.validate(v.Validate())
	}
	if len(st.fields) == 0 {
		return nil
	}
	st.sort(rv.Elem().Type())
	return &ValidationError{Fields: st.fields}
}

// configRoot is the field name configs are reported under.
const configRoot = "config"

// maxConfigDepth bounds the nesting DecodeConfig follows, so that a
// self-referencing map built in Go cannot recurse forever.
const maxConfigDepth = 64

type configState struct {
	ignoreUnknown bool
	fields        []FieldError
	failed        []string // paths with a decode error
}

func (st *configState) add(path, format string, args ...any) {
	st.fields = append(st.fields, FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
	st.failed = append(st.failed, path)
}

// validate merges the error of the config type's Validate method.
func (st *configState) validate(err error) {
	if err == nil {
		return
	}
	ve, ok := err.(*ValidationError)
	if !ok {
		st.fields = append(st.fields, FieldError{Field: configRoot, Message: err.Error()})
		return
	}
	for _, f := range ve.Fields {
		f.Field = joinField(configRoot, f.Field)
		if !st.hasFailed(f.Field) {
			st.fields = append(st.fields, f)
		}
	}
}

// hasFailed reports whether path, or a field that holds it, failed to
// decode.
func (st *configState) hasFailed(path string) bool {
	for _, p := range st.failed {
		if path == p || strings.HasPrefix(path, p) && (path[len(p)] == '.' || path[len(p)] == '[') {
			return true
		}
	}
	return false
}

// sort orders the field errors by the declaration order of the top-level
// field they concern; unknown keys come last.
func (st *configState) sort(t reflect.Type) {
	rank := map[string]int{}
	if t.Kind() == reflect.Struct {
		for i, f := range cachedFields(t).list {
			rank[f.name] = i
		}
	}
	key := func(field string) int {
		rest, ok := strings.CutPrefix(field, configRoot+".")
		if !ok {
			return -1 // the config as a whole
		}
		if i := strings.IndexAny(rest, ".["); i >= 0 {
			rest = rest[:i]
		}
		if r, ok := rank[rest]; ok {
			return r
		}
		return len(rank)
	}
	slices.SortStableFunc(st.fields, func(a, b FieldError) int { return key(a.Field) - key(b.Field) })
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]()
)

// decode decodes src into dst, an addressable value, reporting problems
// under path.
func (st *configState) decode(path string, src, dst reflect.Value, depth int) {
	if depth > maxConfigDepth {
		st.add(path, "is nested too deeply")
		return
	}
	for src.IsValid() && src.Kind() == reflect.Interface {
		src = src.Elem()
	}
	if src.IsValid() && src.Kind() == reflect.Struct {
		// A struct from Go code: its JSON form.
		var v any
		b, err := json.Marshal(src.Interface())
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			st.add(path, "cannot be represented as JSON")
			return
		}
		src = reflect.ValueOf(v)
	}
	if isNull(src) {
		switch dst.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
			dst.SetZero()
		}
		return
	}
	if dst.Kind() == reflect.Pointer {
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		st.decode(path, src, dst.Elem(), depth+1)
		return
	}
	pt := reflect.PointerTo(dst.Type())
	switch {
	case pt.Implements(jsonUnmarshalerType):
		b, err := json.Marshal(src.Interface())
		if err == nil {
			err = dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b)
		}
		if err != nil {
			st.add(path, "%s", cleanJSONError(err))
		}
		return
	case pt.Implements(textUnmarshalerType):
		if src.Kind() != reflect.String || src.Type() == jsonNumberType {
			st.typeError(path, "a string", src)
			return
		}
		if err := dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(src.String())); err != nil {
			st.add(path, "%s", cleanJSONError(err))
		}
		return
	}

	switch dst.Kind() {
	case reflect.String:
		if dst.Type() == jsonNumberType && (src.CanInt() || src.CanUint() || src.CanFloat() || src.Type() == jsonNumberType) {
			b, err := json.Marshal(src.Interface())
			if err != nil {
				st.add(path, "is not a finite number")
				return
			}
			dst.SetString(string(b))
			return
		}
		if src.Kind() != reflect.String || src.Type() == jsonNumberType {
			st.typeError(path, "a string", src)
			return
		}
		dst.SetString(src.String())
	case reflect.Bool:
		if src.Kind() != reflect.Bool {
			st.typeError(path, "true or false", src)
			return
		}
		dst.SetBool(src.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		st.number(path, src, dst)
	case reflect.Interface:
		if dst.NumMethod() != 0 {
			st.add(path, "cannot be decoded into %s", dst.Type())
			return
		}
		b, err := json.Marshal(src.Interface())
		var v any
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			st.add(path, "cannot be represented as JSON")
			return
		}
		if v == nil {
			dst.SetZero()
			return
		}
		dst.Set(reflect.ValueOf(v))
	case reflect.Slice, reflect.Array:
		st.list(path, src, dst, depth)
	case reflect.Map:
		st.mapping(path, src, dst, depth)
	case reflect.Struct:
		st.object(path, src, dst, depth)
	default:
		st.add(path, "cannot be decoded into %s", dst.Type())
	}
}

func isNull(v reflect.Value) bool {
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// typeError reports a value of the wrong kind: "must be a string, not a
// number".
func (st *configState) typeError(path, want string, src reflect.Value) {
	st.add(path, "must be %s, not %s", want, kindName(src))
}

// kindName names the JSON kind of a decoded value.
func kindName(v reflect.Value) string {
	if v.Type() == jsonNumberType {
		return "a number"
	}
	switch v.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return v.Type().String()
}

// number decodes a number into a numeric field.
func (st *configState) number(path string, src, dst reflect.Value) {
	var (
		i     int64
		u     uint64
		f     float64
		kind  byte // 'i', 'u' or 'f': which of i, u, f holds the value
		isNum = true
	)
	switch {
	case src.Type() == jsonNumberType:
		s := src.String()
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			i, kind = v, 'i'
		} else if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			u, kind = v, 'u'
		} else if v, err := strconv.ParseFloat(s, 64); err == nil {
			f, kind = v, 'f'
		} else if isRangeErr(err) {
			st.add(path, "is out of range")
			return
		} else {
			isNum = false
		}
	case src.CanInt():
		i, kind = src.Int(), 'i'
	case src.CanUint():
		u, kind = src.Uint(), 'u'
	case src.CanFloat():
		f, kind = src.Float(), 'f'
	default:
		isNum = false
	}
	if !isNum {
		want := "a number"
		if !dst.CanFloat() {
			want = "an integer"
		}
		st.typeError(path, want, src)
		return
	}

	if dst.CanFloat() {
		switch kind {
		case 'i':
			f = float64(i)
		case 'u':
			f = float64(u)
		}
		if dst.OverflowFloat(f) {
			st.add(path, "is out of range")
			return
		}
		dst.SetFloat(f)
		return
	}

	// An integer field: the value must be integral and fit.
	if kind == 'f' {
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f):
			st.add(path, "must be an integer, not %s", strconv.FormatFloat(f, 'g', -1, 64))
			return
		case f >= 0 && f < 1<<64:
			u, kind = uint64(f), 'u'
		case f < 0 && f >= -(1<<63):
			i, kind = int64(f), 'i'
		default:
			st.rangeError(path, dst)
			return
		}
	}
	if dst.CanInt() {
		if kind == 'u' {
			if u > math.MaxInt64 {
				st.rangeError(path, dst)
				return
			}
			i = int64(u)
		}
		if dst.OverflowInt(i) {
			st.rangeError(path, dst)
			return
		}
		dst.SetInt(i)
		return
	}
	if kind == 'i' {
		if i < 0 {
			st.rangeError(path, dst)
			return
		}
		u = uint64(i)
	}
	if dst.OverflowUint(u) {
		st.rangeError(path, dst)
		return
	}
	dst.SetUint(u)
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// rangeError reports an integer that does not fit dst's type.
func (st *configState) rangeError(path string, dst reflect.Value) {
	bits := dst.Type().Bits()
	if dst.CanInt() {
		st.add(path, "must be an integer from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
		return
	}
	st.add(path, "must be an integer from 0 to %d", uint64(math.MaxUint64)>>(64-bits))
}

// list decodes a list into a slice or array field.
func (st *configState) list(path string, src, dst reflect.Value, depth int) {
	if dst.Kind() == reflect.Slice && dst.Type().Elem().Kind() == reflect.Uint8 && src.Kind() == reflect.String {
		// []byte: base64 text, as encoding/json has it.
		b, err := json.Marshal(src.Interface())
		if err == nil {
			err = json.Unmarshal(b, dst.Addr().Interface())
		}
		if err != nil {
			st.add(path, "must be base64 text")
		}
		return
	}
	if src.Kind() != reflect.Slice && src.Kind() != reflect.Array {
		st.typeError(path, "a list", src)
		return
	}
	n := src.Len()
	if dst.Kind() == reflect.Array {
		if n > dst.Len() {
			st.add(path, "must have at most %d items, not %d", dst.Len(), n)
			return
		}
		for i := n; i < dst.Len(); i++ {
			dst.Index(i).SetZero()
		}
	} else {
		dst.Set(reflect.MakeSlice(dst.Type(), n, n))
	}
	for i := range n {
		st.decode(path+"["+strconv.Itoa(i)+"]", src.Index(i), dst.Index(i), depth+1)
	}
}

// mapping decodes an object into a map field with string keys.
func (st *configState) mapping(path string, src, dst reflect.Value, depth int) {
	if dst.Type().Key().Kind() != reflect.String {
		st.add(path, "cannot be decoded into %s", dst.Type())
		return
	}
	if src.Kind() != reflect.Map || src.Type().Key().Kind() != reflect.String {
		st.typeError(path, "an object", src)
		return
	}
	if dst.IsNil() {
		dst.Set(reflect.MakeMapWithSize(dst.Type(), src.Len()))
	}
	keys := src.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	elem := dst.Type().Elem()
	for _, k := range keys {
		v := reflect.New(elem).Elem()
		st.decode(path+"."+k.String(), src.MapIndex(k), v, depth+1)
		dst.SetMapIndex(reflect.ValueOf(k.String()).Convert(dst.Type().Key()), v)
	}
}

// object decodes an object into a struct field.
func (st *configState) object(path string, src, dst reflect.Value, depth int) {
	if src.Kind() != reflect.Map || src.Type().Key().Kind() != reflect.String {
		st.typeError(path, "an object", src)
		return
	}
	fields := cachedFields(dst.Type())
	keys := src.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		name := k.String()
		f, ok := fields.byName[name]
		if !ok {
			if !st.ignoreUnknown {
				st.fields = append(st.fields, FieldError{
					Field:   path + "." + name,
					Message: unknownSettingMessage(name, fields.names()),
				})
			}
			continue
		}
		st.decode(path+"."+name, src.MapIndex(k), fieldByIndex(dst, f.index), depth+1)
	}
}

// fieldByIndex returns the field of v at index, allocating embedded
// pointers on the way.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// configField is a struct field a config key can set.
type configField struct {
	name  string
	index []int
}

type configFields struct {
	list   []configField // in declaration order
	byName map[string]configField
}

func (fs *configFields) names() []string {
	out := make([]string, len(fs.list))
	for i, f := range fs.list {
		out[i] = f.name
	}
	return out
}

var fieldCache sync.Map // reflect.Type → *configFields

func cachedFields(t reflect.Type) *configFields {
	if v, ok := fieldCache.Load(t); ok {
		return v.(*configFields)
	}
	fs := &configFields{byName: map[string]configField{}}
	depthOf := map[string]int{}
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			if sf.Anonymous && name == "" {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					if !sf.IsExported() {
						continue // it could not be allocated
					}
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct && depth < maxConfigDepth {
					walk(et, idx, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			// The shallowest field of a name wins, as in encoding/json.
			if d, seen := depthOf[name]; seen && d <= depth {
				continue
			}
			depthOf[name] = depth
			f := configField{name: name, index: idx}
			if _, seen := fs.byName[name]; seen {
				fs.list = slices.DeleteFunc(fs.list, func(o configField) bool { return o.name == name })
			}
			fs.byName[name] = f
			fs.list = append(fs.list, f)
		}
	}
	walk(t, nil, 0)
	v, _ := fieldCache.LoadOrStore(t, fs)
	return v.(*configFields)
}

// unknownSettingMessage names the nearest known key, or lists them.
func unknownSettingMessage(key string, known []string) string {
	if len(known) == 0 {
		return "unknown setting: there are no settings"
	}
	if best, ok := suggest.Nearest(key, known); ok {
		return fmt.Sprintf("unknown setting (did you mean %q?)", best)
	}
	sorted := slices.Sorted(slices.Values(known))
	return "unknown setting (known: " + strings.Join(sorted, ", ") + ")"
}

// cleanJSONError words the error of a field's own UnmarshalJSON or
// UnmarshalText without encoding/json's Go type names.
func cleanJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		switch te.Value {
		case "object":
			return "must not be an object"
		case "array":
			return "must not be a list"
		case "":
			return "has the wrong type"
		}
		return "must not be a " + te.Value
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
