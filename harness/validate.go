package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// colorPattern is a #RRGGBB colour. The id rules below are loops rather
// than patterns: a bounded repeat such as {0,127} compiles to a program
// of hundreds of states, which every start of the binary paid for.
var colorPattern = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)

// MaxLevel is the highest level number a definition may use.
const MaxLevel = 1000

// ValidID reports whether id is a valid id for a domain, test, evaluator,
// tool or channel: ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$.
func ValidID(id string) bool {
	return len(id) >= 1 && len(id) <= 128 && wordByte(id[0], "") && wordBytes(id[1:], ".-")
}

// ValidAgentID reports whether id is a valid agent id: ^[a-zA-Z0-9_]+$, at
// most 128 characters.
func ValidAgentID(id string) bool { return len(id) >= 1 && len(id) <= 128 && wordBytes(id, "") }

// ValidFunctionName reports whether name is a valid name for a tool's
// function, as the model APIs accept it: ^[a-zA-Z0-9_-]{1,64}$.
func ValidFunctionName(name string) bool {
	return len(name) >= 1 && len(name) <= 64 && wordBytes(name, "-")
}

// wordBytes reports whether every byte of s is an ASCII letter, a digit,
// '_' or one of extra.
func wordBytes(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		if !wordByte(s[i], extra) {
			return false
		}
	}
	return true
}

// wordByte reports whether c is an ASCII letter, a digit, '_' or one of
// extra.
func wordByte(c byte, extra string) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || strings.IndexByte(extra, c) >= 0
}

// ValidColor reports whether c is a #RRGGBB colour.
func ValidColor(c string) bool { return colorPattern.MatchString(c) }

// TextProblem says why s cannot be stored as text: "contains a NUL
// character" or "is not valid UTF-8"; "" when s is fine. A NUL cuts the
// string short in many tools and databases, and invalid UTF-8 would be
// stored as replacement characters: either way the stored text would not
// be what was sent.
func TextProblem(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	return ""
}

// NameProblem says why s cannot be a name, an identifier, a file name or
// a user id, text that people read to tell records apart: TextProblem's
// reasons, "contains a control character" (a tab, a line break, the ESC of
// an ANSI escape sequence, DEL, a C1 control) or "contains a bidirectional
// control character (U+202E)" (U+202A to U+202E, U+2066 to U+2069,
// U+200E, U+200F, U+061C), which make a name show as other text:
// "invoice\u202Efdp.exe" reads "invoiceexe.pdf". "" when s is fine.
// Prompts, messages and answers may hold any text; only names are held to
// this.
func NameProblem(s string) string {
	if p := TextProblem(s); p != "" {
		return p
	}
	for _, r := range s {
		switch {
		case unicode.IsControl(r):
			return "contains a control character"
		case isBidiControl(r):
			return fmt.Sprintf("contains a bidirectional control character (%U)", r)
		}
	}
	return ""
}

// isBidiControl reports whether r is one of the invisible characters that
// change the direction of the text around it.
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// CheckName adds to ve a field error when s cannot be a name (see
// NameProblem). A NUL or invalid UTF-8 is left to CheckText, which
// validators run on the whole record, so that it is reported once.
func CheckName(ve *ValidationError, field, s string) {
	if TextProblem(s) != "" {
		return
	}
	if p := NameProblem(s); p != "" {
		ve.Add(field, "%s", p)
	}
}

// CheckText adds to ve a field error for every string in v that holds a
// NUL or invalid UTF-8 (see TextProblem): v itself when it is a string,
// else the strings of its fields (named by their json tags), map keys and
// values, slice elements, to any depth. Fields are named from field, as
// "system_prompt", "config.api_url" or "messages[2].content"; sorted map
// keys keep the order stable. Below a key that is not text, nothing more
// is reported: the key is the problem.
func CheckText(ve *ValidationError, field string, v any) {
	w := textWalk{ve: ve}
	w.walk(field, reflect.ValueOf(v), true)
}

// MaxRecordBytes is the most text one definition (a domain, level, test,
// evaluator, tool or agent) may hold, all its strings together: 1 MiB,
// the body limit of the API operations that create one. The validators
// hold every record to it, so that the importers (the definitions import,
// the definitions files, the dataset import) take nothing the API would
// refuse.
const MaxRecordBytes = 1 << 20

// checkRecord checks the text of a record in one walk: CheckText's
// errors, then a field error when its strings (its fields, map keys and
// values, slice elements, []byte data, to any depth) add up to more than
// MaxRecordBytes, naming the largest of them (the first, of equals).
// kind names the record in that error ("domain", "test"…).
func checkRecord(ve *ValidationError, kind string, v any) {
	w := textWalk{ve: ve}
	w.walk("", reflect.ValueOf(v), true)
	if w.total > MaxRecordBytes {
		ve.Add(w.field, "is %d bytes; a %s holds at most %d bytes of text (1 MiB, as the API that creates one takes), and this one holds %d",
			w.largest, kind, MaxRecordBytes, w.total)
	}
}

// textWalk goes once through the strings of a value, reporting their
// text problems to ve and counting their bytes.
type textWalk struct {
	ve      *ValidationError
	total   int    // bytes of every string, map key and []byte
	largest int    // bytes of the largest of them
	field   string // the field of the largest
}

// count adds a string (or key, or []byte) of n bytes at field.
func (w *textWalk) count(field string, n int) {
	w.total += n
	if n > w.largest {
		w.field, w.largest = field, n
	}
}

// walk counts the strings of v, named from field, and reports their text
// problems when check is set; a map key that is not text is reported and
// clears check for its value, which is still counted.
func (w *textWalk) walk(field string, v reflect.Value, check bool) {
	switch v.Kind() {
	case reflect.String:
		if p := TextProblem(v.String()); check && p != "" {
			w.ve.Add(field, "%s", p)
		}
		w.count(field, v.Len())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			w.walk(field, v.Elem(), check)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			w.count(field, v.Len()) // []byte is data, not text, but it takes room
			return
		}
		for i := range v.Len() {
			w.walk(field+"["+itoa(i)+"]", v.Index(i), check)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(keyString(a), keyString(b)) })
		for _, k := range keys {
			name := keyString(k)
			f := joinField(field, name)
			w.count(f, len(name))
			keyOK := check
			if p := TextProblem(name); check && p != "" {
				w.ve.Add(f, "the key %s", p)
				keyOK = false
			}
			w.walk(f, v.MapIndex(k), keyOK)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			switch {
			case tag == "-":
				continue
			case tag == "" && sf.Anonymous:
				w.walk(field, v.Field(i), check)
				continue
			case tag == "":
				tag = sf.Name
			}
			w.walk(joinField(field, tag), v.Field(i), check)
		}
	}
}

func keyString(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	return fmt.Sprint(k.Interface())
}

// Lookup answers whether referenced definitions exist. The catalog
// implements it over its current contents; a nil Lookup skips reference
// checks.
type Lookup interface {
	HasDomain(id string) bool
	HasEvaluator(id string) bool
	HasTool(id string) bool
}

// Validator checks resources before they are stored. Its methods also fill
// defaults (a domain's name, a level's mode and pass threshold, an
// evaluator's type), so callers validate what they will store.
type Validator struct {
	// Registry knows the evaluator and expected answer types. Nil means a
	// fresh NewRegistry().
	Registry *Registry
	// Refs checks references to other definitions; nil skips those checks.
	Refs Lookup
}

func (v Validator) registry() *Registry {
	if v.Registry == nil {
		return NewRegistry()
	}
	return v.Registry
}

func checkID(ve *ValidationError, field, id string) {
	switch {
	case id == "":
		ve.Add(field, "is required")
	case !ValidID(id):
		ve.Add(field, "must match ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
	}
}

func (v Validator) checkTools(ve *ValidationError, field string, ids []string) {
	seen := map[string]bool{}
	for i, id := range ids {
		f := field + "[" + itoa(i) + "]"
		switch {
		case !ValidID(id):
			ve.Add(f, "is not a valid tool id")
		case seen[id]:
			ve.Add(f, "tool %q is listed twice", id)
		case v.Refs != nil && !v.Refs.HasTool(id):
			ve.Add(f, "unknown tool %q", id)
		}
		seen[id] = true
	}
}

// Domain validates a domain.
func (v Validator) Domain(d *Domain) error {
	ve := &ValidationError{}
	checkRecord(ve, "domain", d)
	checkID(ve, "id", d.ID)
	if strings.TrimSpace(d.Name) == "" {
		ve.Add("name", "is required")
	}
	CheckName(ve, "name", d.Name)
	if d.Color != "" && !ValidColor(d.Color) {
		ve.Add("color", "must be a hex colour #RRGGBB")
	}
	if d.EvaluatorID != "" && v.Refs != nil && !v.Refs.HasEvaluator(d.EvaluatorID) {
		ve.Add("evaluator_id", "unknown evaluator %q", d.EvaluatorID)
	}
	return ve.Err()
}

// Level validates a level configuration; an empty mode becomes "append".
func (v Validator) Level(l *LevelConfig) error {
	ve := &ValidationError{}
	checkRecord(ve, "level", l)
	if l.SystemPromptMode == "" {
		l.SystemPromptMode = PromptAppend
	}
	if l.DomainID != "" && v.Refs != nil && !v.Refs.HasDomain(l.DomainID) {
		ve.Add("domain_id", "unknown domain %q", l.DomainID)
	}
	if l.Level < 0 || l.Level > MaxLevel {
		ve.Add("level", "must be between 0 and %d", MaxLevel)
	}
	if !l.SystemPromptMode.Valid() {
		ve.Add("system_prompt_mode", "must be one of append, prepend, replace")
	}
	if !(l.PassThreshold >= 0 && l.PassThreshold <= 1) { // also refuses NaN
		ve.Add("pass_threshold", "must be between 0 and 1")
	}
	v.checkTools(ve, "tools", l.Tools)
	if l.Params != nil && l.Params.IsZero() {
		l.Params = nil
	}
	if l.Params != nil {
		ve.Merge("params", l.Params.Validate())
	}
	return ve.Err()
}

// Test validates a test; an empty expected type becomes "exact".
func (v Validator) Test(t *Test) error {
	ve := &ValidationError{}
	checkRecord(ve, "test", t)
	checkID(ve, "id", t.ID)
	CheckName(ve, "name", t.Name)
	switch {
	case t.DomainID == "":
		ve.Add("domain_id", "is required")
	case v.Refs != nil && !v.Refs.HasDomain(t.DomainID):
		ve.Add("domain_id", "unknown domain %q", t.DomainID)
	}
	if t.Level < 0 || t.Level > MaxLevel {
		ve.Add("level", "must be between 0 and %d", MaxLevel)
	}
	v.checkConversation(ve, t)
	if t.Expected.Type == "" {
		t.Expected.Type = "exact"
	}
	if t.Kind() == "prompt" || t.Expected.Answer != "" {
		// A conversation test's own expected answer is optional: a
		// multi-turn test's are on its turns, a simulated user's goal is
		// its criteria.
		ve.Merge("expected", v.Expected(t.Expected))
	}
	checkSources(ve, "expected.sources", t.Expected.Sources)
	if t.EvaluatorID != "" && v.Refs != nil && !v.Refs.HasEvaluator(t.EvaluatorID) {
		ve.Add("evaluator_id", "unknown evaluator %q", t.EvaluatorID)
	}
	v.checkTools(ve, "tools", t.Tools)
	return ve.Err()
}

// Bounds of a test's expected.sources.
const (
	// MaxExpectedSources is how many files a test may expect.
	MaxExpectedSources = 50
	// MaxSourceNameBytes is the longest file name a test may expect, as
	// the longest knowledge-base file name.
	MaxSourceNameBytes = 255
)

// checkSources checks a test's expected.sources: at most
// MaxExpectedSources knowledge-base file names, each listed once and
// each a plain name as a knowledge base takes it (not empty, at most
// MaxSourceNameBytes bytes, no "/", "\", "..", leading dot, leading or
// trailing space or control character).
func checkSources(ve *ValidationError, field string, names []string) {
	if len(names) > MaxExpectedSources {
		ve.Add(field, "lists %d files; at most %d", len(names), MaxExpectedSources)
		return
	}
	seen := make(map[string]bool, len(names))
	for i, name := range names {
		f := field + "[" + itoa(i) + "]"
		if TextProblem(name) != "" {
			continue // CheckText says why
		}
		if why := sourceNameProblem(name); why != "" {
			ve.Add(f, "%s", why)
			continue
		}
		if seen[name] {
			ve.Add(f, "file %q is listed twice", name)
		}
		seen[name] = true
	}
}

// sourceNameProblem says why name cannot be a knowledge-base file name;
// "" when it can.
func sourceNameProblem(name string) string {
	switch {
	case name == "":
		return "is empty: name a knowledge-base file"
	case len(name) > MaxSourceNameBytes:
		return fmt.Sprintf("is longer than %d bytes", MaxSourceNameBytes)
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case strings.ContainsAny(name, `/\`):
		return `must be a plain file name, without "/" or "\"`
	case strings.Contains(name, ".."):
		return `must not contain ".."`
	case name[0] == '.':
		return "must not start with a dot"
	case strings.TrimSpace(name) != name:
		return "must not start or end with a space"
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "must not contain control characters"
	case strings.IndexFunc(name, isBidiControl) >= 0:
		return "must not contain bidirectional control characters"
	}
	return ""
}

// Expected validates an expected answer against the checks of its type,
// and its trajectory when it has one (Trajectory.Validate).
func (v Validator) Expected(e Expected) error {
	var err error
	check, ok := v.registry().ExpectedType(e.Type)
	switch {
	case !ok:
		err = Invalid("type", "unknown expected type %q (known: %s)", e.Type,
			strings.Join(v.registry().ExpectedTypes(), ", "))
	case e.Tolerance != nil && !(*e.Tolerance >= 0 && *e.Tolerance <= math.MaxFloat64):
		err = Invalid("tolerance", "must be a finite number, not negative")
	default:
		err = check(e)
	}
	if e.Trajectory == nil {
		return err
	}
	ve := &ValidationError{}
	ve.Merge("", err)
	ve.Merge("trajectory", e.Trajectory.Validate())
	return ve.Err()
}

// Evaluator validates an evaluator record; an empty type becomes "regex".
func (v Validator) Evaluator(e *EvaluatorConfig) error {
	ve := &ValidationError{}
	checkRecord(ve, "evaluator", e)
	checkID(ve, "id", e.ID)
	if strings.TrimSpace(e.Name) == "" {
		ve.Add("name", "is required")
	}
	CheckName(ve, "name", e.Name)
	if e.Type == "" {
		e.Type = EvaluatorTypeRegex
	}
	impl, registered := v.registry().Evaluator(e.Type)
	if e.Type != EvaluatorTypeRegex && !registered {
		ve.Add("type", "unknown evaluator type %q", e.Type)
	}
	if cv, ok := impl.(ConfigValidator); ok && registered {
		// The implementation checks its own settings, regex included.
		ve.Merge("", cv.ValidateConfig(*e))
	} else if e.ExtractionRegex != "" {
		if _, err := CompileRegex(e.ExtractionRegex); err != nil {
			ve.Add("extraction_regex", "does not compile: %v", err)
		}
	}
	return ve.Err()
}

// Tool validates a tool record; an empty name becomes the function's name.
func (v Validator) Tool(t *ToolDefinition) error {
	ve := &ValidationError{}
	checkRecord(ve, "tool", t)
	checkID(ve, "id", t.ID)
	if t.Name == "" {
		t.Name = t.Function.Name
	}
	switch {
	case t.Function.Name == "":
		ve.Add("function.name", "is required")
	case !ValidFunctionName(t.Function.Name):
		ve.Add("function.name", "must match ^[a-zA-Z0-9_-]{1,64}$")
	}
	if strings.TrimSpace(t.Name) == "" {
		ve.Add("name", "is required")
	}
	CheckName(ve, "name", t.Name)
	ve.Merge("function.parameters", checkParameters(t.Function.Parameters))
	if t.MockResponse != nil {
		if _, err := json.Marshal(t.MockResponse); err != nil {
			ve.Add("mock_response", "is not JSON: %v", err)
		}
	}
	checkMCP(ve, t)
	return ve.Err()
}

func checkParameters(p map[string]any) error {
	if p == nil {
		return nil
	}
	ve := &ValidationError{}
	if typ, ok := p["type"]; ok && typ != "object" {
		ve.Add("type", `must be "object"`)
	}
	props, hasProps := p["properties"]
	propMap, isMap := props.(map[string]any)
	if hasProps && !isMap {
		ve.Add("properties", "must be an object")
	}
	for name, s := range propMap {
		if _, ok := s.(map[string]any); !ok {
			ve.Add("properties."+name, "must be a schema object")
		}
	}
	if req, ok := p["required"]; ok {
		list, isList := req.([]any)
		if !isList {
			ve.Add("required", "must be an array of parameter names")
		}
		for i, r := range list {
			name, isString := r.(string)
			switch {
			case !isString:
				ve.Add("required["+itoa(i)+"]", "must be a string")
			case isMap && propMap[name] == nil:
				ve.Add("required["+itoa(i)+"]", "names no property %q", name)
			}
		}
	}
	return ve.Err()
}

// Agent validates an agent record.
func (v Validator) Agent(a *Agent) error {
	ve := &ValidationError{}
	checkRecord(ve, "agent", a)
	switch {
	case a.ID == "":
		ve.Add("id", "is required")
	case !ValidAgentID(a.ID):
		ve.Add("id", "must match ^[a-zA-Z0-9_]+$ (at most 128 characters)")
	}
	CheckName(ve, "name", a.Name)
	return ve.Err()
}
