package regexeval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strings"
	"unicode"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/textjson"
)

// The expected answer types this evaluator scores.
const (
	typeExact    = "exact"
	typeNumeric  = "numeric"
	typeInteger  = "integer"
	typeChoice   = "choice"
	typeContains = "contains"
	typeRegex    = "regex"
	typeBoolean  = "boolean"
	typeJSON     = "json"
	typeToolCall = "tool_call"
)

// defaultTolerance is the relative tolerance of numeric comparisons when
// the test sets none; for an expected 0 it is an absolute one.
const defaultTolerance = 1e-6

// target is an expected answer prepared for comparisons: parsed once,
// compared with any number of candidate answers.
type target struct {
	typ    string
	answer string // the expected answer as written, trimmed
	tol    float64
	num    float64
	bigInt *big.Int // integer type: exact comparison beyond 2^53
	choice string
	flag   bool
	json   any
	pat    *pattern
	args   map[string]any // tool_call: expected.arguments with JSON numbers
}

// newTarget prepares exp. An unknown type or an expected answer that does
// not parse for its type is an error wrapping harness.ErrInvalid: the test
// definition is wrong, not the response.
func newTarget(exp harness.Expected, patterns *cache) (*target, error) {
	t := &target{typ: exp.Type, answer: strings.TrimSpace(exp.Answer), tol: defaultTolerance}
	if t.typ == "" {
		t.typ = typeExact // the default of harness.Validator.Test
	}
	if exp.Tolerance != nil {
		t.tol = *exp.Tolerance
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("expected answer of type %s: %s: %w", t.typ, fmt.Sprintf(format, args...), harness.ErrInvalid)
	}
	var ok bool
	switch t.typ {
	case typeExact, typeContains:
		if t.answer == "" {
			return nil, bad("empty")
		}
	case typeNumeric, typeInteger:
		if t.num, ok = harness.ParseNumber(t.answer); !ok {
			return nil, bad("%q is not a number", t.answer)
		}
		if t.typ == typeInteger {
			if t.num != math.Trunc(t.num) {
				return nil, bad("%q is not an integer", t.answer)
			}
			t.bigInt = parseBigInt(t.answer)
		}
		if t.tol < 0 || math.IsNaN(t.tol) {
			return nil, bad("negative tolerance")
		}
	case typeChoice:
		if t.choice, ok = parseChoice(t.answer); !ok {
			return nil, bad("%q is not a choice letter", t.answer)
		}
	case typeBoolean:
		if t.flag, ok = parseBool(t.answer); !ok {
			return nil, bad("%q is not yes, no, true or false", t.answer)
		}
	case typeJSON:
		if err := json.Unmarshal([]byte(t.answer), &t.json); err != nil {
			return nil, bad("not JSON: %v", err)
		}
	case typeRegex:
		if t.answer == "" {
			return nil, bad("empty")
		}
		var err error
		if t.pat, err = patterns.get(exp.Answer); err != nil {
			return nil, bad("%v", err)
		}
	case typeToolCall:
		if t.answer == "" {
			return nil, bad("empty function name")
		}
		if exp.Arguments != nil {
			// A JSON round trip gives YAML ints and JSON float64s one form.
			b, err := json.Marshal(exp.Arguments)
			if err == nil {
				err = json.Unmarshal(b, &t.args)
			}
			if err != nil {
				return nil, bad("arguments: %v", err)
			}
		}
	default:
		return nil, fmt.Errorf("unknown expected type %q: %w", t.typ, harness.ErrInvalid)
	}
	return t, nil
}

// verdict is the comparison of one candidate answer with the target.
type verdict struct {
	// usable is false when the answer does not parse for the type (not a
	// number, no choice letter...): a second pass may help.
	usable bool
	passed bool
	reason string // why it failed
	// err is set when the answer could not be judged at all (a regex hit
	// its match timeout): the test is an error, not a failure.
	err error
}

func fail(format string, args ...any) verdict {
	return verdict{usable: true, reason: fmt.Sprintf(format, args...)}
}

func unusable(format string, args ...any) verdict {
	return verdict{reason: fmt.Sprintf(format, args...)}
}

var pass = verdict{usable: true, passed: true}

// judge compares answer with the target. tool_call is not judged on text;
// see judgeCalls.
func (t *target) judge(answer string) verdict {
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return unusable("empty answer")
	}
	switch t.typ {
	case typeExact:
		if strings.EqualFold(collapse(answer), collapse(t.answer)) {
			return pass
		}
		return fail("expected %q, got %q", t.answer, answer)
	case typeContains:
		if strings.Contains(strings.ToLower(answer), strings.ToLower(t.answer)) {
			return pass
		}
		return fail("%q does not contain %q", answer, t.answer)
	case typeNumeric:
		n, ok := harness.ParseNumber(unwrap(answer))
		if !ok {
			return unusable("%q is not a number", answer)
		}
		if within(n, t.num, t.tol) {
			return pass
		}
		return fail("expected %s (tolerance %g), got %s", t.answer, t.tol, answer)
	case typeInteger:
		s := unwrap(answer)
		n, ok := harness.ParseNumber(s)
		if !ok {
			return unusable("%q is not a number", answer)
		}
		if n != math.Trunc(n) {
			return fail("expected the integer %s, got %s", t.answer, answer)
		}
		if b := parseBigInt(s); b != nil && t.bigInt != nil {
			ok = b.Cmp(t.bigInt) == 0
		} else {
			ok = n == t.num
		}
		if ok {
			return pass
		}
		return fail("expected %s, got %s", t.answer, answer)
	case typeChoice:
		c, ok := parseChoice(answer)
		if !ok {
			return unusable("%q is not a choice letter", answer)
		}
		if c == t.choice {
			return pass
		}
		return fail("expected %s, got %s", t.choice, c)
	case typeBoolean:
		v, ok := parseBool(answer)
		if !ok {
			return unusable("%q is not yes, no, true or false", answer)
		}
		if v == t.flag {
			return pass
		}
		return fail("expected %s, got %q", yesNo(t.flag), answer)
	case typeJSON:
		v, ok := findJSON(answer)
		if !ok {
			return unusable("no JSON value in the answer")
		}
		if reflect.DeepEqual(v, t.json) {
			return pass
		}
		got, _ := json.Marshal(v)
		return fail("expected JSON %s, got %s", t.answer, got)
	case typeRegex:
		ok, err := t.pat.match(answer)
		switch {
		case err != nil:
			return verdict{err: fmt.Errorf("expected pattern: %w", err)}
		case ok:
			return pass
		}
		return fail("%q does not match %q", answer, t.answer)
	}
	return fail("expected type %s is not compared on text", t.typ)
}

// judgeCalls scores a tool_call target: passed when some call has the
// expected name and arguments that include the expected ones. It returns
// the name of the matching call ("" when none).
func (t *target) judgeCalls(calls []harness.ToolCall) (string, verdict) {
	if len(calls) == 0 {
		return "", fail("no tool was called; expected a call to %s", t.answer)
	}
	var names []string
	var argErrs []string
	for _, c := range calls {
		names = append(names, c.Name)
		if c.Name != t.answer {
			continue
		}
		if t.args == nil {
			return c.Name, pass
		}
		got, err := harness.ParseArguments(c.Arguments)
		if err != nil {
			argErrs = append(argErrs, fmt.Sprintf("arguments are not JSON: %q", c.Arguments))
			continue
		}
		if harness.JSONSubset(any(t.args), got) {
			return c.Name, pass
		}
		argErrs = append(argErrs, fmt.Sprintf("arguments %s", compactJSON(c.Arguments)))
	}
	if len(argErrs) > 0 {
		want, _ := json.Marshal(t.args)
		return "", fail("%s was called but no call's arguments include %s (%s)", t.answer, want,
			strings.Join(argErrs, "; "))
	}
	return "", fail("expected a call to %s; called: %s", t.answer, strings.Join(names, ", "))
}

func compactJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// within reports whether got is want within the relative tolerance tol;
// for want == 0, tol is absolute.
func within(got, want, tol float64) bool {
	d := math.Abs(got - want)
	if want == 0 {
		return d <= tol
	}
	return d <= tol*math.Abs(want)
}

// collapse replaces each run of white space with one space.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// unwrap removes decorations models put around a short answer: Markdown
// emphasis and code (**42**, `42`), LaTeX math and \boxed{42}.
func unwrap(s string) string {
	for range 4 {
		s = strings.TrimSpace(s)
		before := s
		for _, w := range []string{"**", "__", "*", "_", "`", "$"} {
			if len(s) > 2*len(w) && strings.HasPrefix(s, w) && strings.HasSuffix(s, w) {
				s = s[len(w) : len(s)-len(w)]
				break
			}
		}
		if strings.HasPrefix(s, `\boxed{`) && strings.HasSuffix(s, "}") {
			s = s[len(`\boxed{`) : len(s)-1]
		}
		if s == before {
			break
		}
	}
	return strings.TrimSpace(s)
}

// choiceLead finds a choice letter that starts a longer answer: "B) Paris",
// "(b) Paris", "C. 42", "[D] none", "A: yes", "B - Paris".
var choiceLead = regexp.MustCompile(`^[(\[]?([A-Za-z])(?:[)\].:]|\s+[-–—]\s)`)

// parseChoice reads a choice letter: harness.ParseChoice ("B", "(b)",
// "B.") or a letter leading a longer answer ("B) Paris").
func parseChoice(s string) (string, bool) {
	s = unwrap(s)
	if c, ok := harness.ParseChoice(s); ok {
		return c, true
	}
	if m := choiceLead.FindStringSubmatch(s); m != nil {
		return strings.ToUpper(m[1]), true
	}
	return "", false
}

// parseBool reads yes/no/true/false, alone or as the first word of the
// answer ("Yes, it does.", "No.").
func parseBool(s string) (bool, bool) {
	s = unwrap(s)
	if v, ok := harness.ParseBool(s); ok {
		return v, true
	}
	s = strings.TrimLeftFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	end := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) })
	if end < 0 {
		return false, false // one word, already tried
	}
	return harness.ParseBool(s[:end])
}

// parseBigInt reads an integer written with optional sign, $ and thousands
// separators, for exact comparisons of integers beyond float64's 2^53. It
// returns nil for anything else (1e3, 1/2...), which is compared as a
// float64.
func parseBigInt(s string) *big.Int {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\u2212", "-"))
	s = strings.TrimRight(s, ".")
	neg := strings.HasPrefix(s, "-")
	if neg || strings.HasPrefix(s, "+") {
		s = s[1:]
	}
	s = strings.ReplaceAll(strings.TrimPrefix(s, "$"), ",", "")
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return nil
	}
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil
	}
	if neg {
		b.Neg(b)
	}
	return b
}

// findJSON reads the JSON value of an answer, as textjson.Find finds it:
// the whole answer, else the first ``` fenced block that is JSON, else the
// first object or array amid the text. Numbers become float64.
func findJSON(s string) (any, bool) {
	found, ok := textjson.Find(s)
	if !ok {
		return nil, false
	}
	var v any
	if json.Unmarshal([]byte(found.Text), &v) != nil {
		return nil, false
	}
	return v, true
}

// Compare scores answer against an expected answer with the rules of the
// regex evaluator: 1 or 0, passed when 1, and a reason when
// it failed. calls are the tool calls the model made, used by the tool_call
// type only. An expected answer that is invalid for its type, or an unknown
// type, scores 0 with the problem in detail. Compare does no extraction:
// pass the extracted answer, or the whole response.
func Compare(expected harness.Expected, answer string, calls []harness.ToolCall) (score float64, passed bool, detail string) {
	t, err := newTarget(expected, &defaultEvaluator.patterns)
	if err != nil {
		return 0, false, err.Error()
	}
	var v verdict
	if t.typ == typeToolCall {
		_, v = t.judgeCalls(calls)
	} else {
		v = t.judge(answer)
	}
	switch {
	case v.err != nil:
		return 0, false, v.err.Error()
	case v.passed:
		return 1, true, ""
	}
	return 0, false, v.reason
}
