package harness

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The built-in expected answer types.
var builtinExpected = map[string]ExpectedChecker{
	"exact":    nonEmpty,
	"contains": nonEmpty,
	"numeric": func(e Expected) error {
		if _, ok := ParseNumber(e.Answer); !ok {
			return Invalid("answer", "%q is not a number", e.Answer)
		}
		return nil
	},
	"integer": func(e Expected) error {
		n, ok := ParseNumber(e.Answer)
		if !ok || n != math.Trunc(n) {
			return Invalid("answer", "%q is not an integer", e.Answer)
		}
		return nil
	},
	"choice": func(e Expected) error {
		if _, ok := ParseChoice(e.Answer); !ok {
			return Invalid("answer", "%q is not a choice letter such as B", e.Answer)
		}
		return nil
	},
	"regex": func(e Expected) error {
		if err := nonEmpty(e); err != nil {
			return err
		}
		if _, err := CompileRegex(e.Answer); err != nil {
			return Invalid("answer", "does not compile: %v", err)
		}
		return nil
	},
	"boolean": func(e Expected) error {
		if _, ok := ParseBool(e.Answer); !ok {
			return Invalid("answer", "%q is not yes, no, true or false", e.Answer)
		}
		return nil
	},
	"json": func(e Expected) error {
		if !json.Valid([]byte(e.Answer)) {
			return Invalid("answer", "is not valid JSON")
		}
		return nil
	},
	"tool_call": func(e Expected) error {
		if !ValidFunctionName(e.Answer) {
			return Invalid("answer", "must be a function name matching ^[a-zA-Z0-9_-]{1,64}$")
		}
		return nil
	},
}

func nonEmpty(e Expected) error {
	if strings.TrimSpace(e.Answer) == "" {
		return Invalid("answer", "is required")
	}
	return nil
}

// BuiltinExpectedTypes lists the expected answer types every Registry
// knows, sorted.
func BuiltinExpectedTypes() []string { return NewRegistry().ExpectedTypes() }

// ParseNumber reads a number the way people and models write them:
// "1,234", "-3.5", "+2", "1e3", "1/2", "50%" (0.5), "$12", "−4" (Unicode
// minus). It reports false when s is not a number.
func ParseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\u2212", "-")
	s = strings.TrimRight(s, ".")
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else {
		s = strings.TrimPrefix(s, "+")
	}
	s = strings.TrimPrefix(s, "$")
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, false
	}
	scale := 1.0
	if strings.HasSuffix(s, "%") {
		scale, s = 0.01, strings.TrimSpace(strings.TrimSuffix(s, "%"))
	}
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return 0, false
	}
	var v float64
	if num, den, ok := strings.Cut(s, "/"); ok {
		n, err1 := parsePlain(num)
		d, err2 := parsePlain(den)
		if err1 != nil || err2 != nil || d == 0 {
			return 0, false
		}
		v = n / d
	} else {
		n, err := parsePlain(s)
		if err != nil {
			return 0, false
		}
		v = n
	}
	if neg {
		v = -v
	}
	v *= scale
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// parsePlain parses a decimal with optional thousands separators.
func parsePlain(s string) (float64, error) {
	if strings.Contains(s, ",") {
		parts := strings.Split(strings.SplitN(s, ".", 2)[0], ",")
		for i, p := range parts {
			if (i > 0 && len(p) != 3) || p == "" {
				return 0, strconv.ErrSyntax
			}
		}
		s = strings.ReplaceAll(s, ",", "")
	}
	if s == "" || strings.ContainsAny(s, "xXpP_") || strings.EqualFold(s, "inf") || strings.EqualFold(s, "nan") ||
		strings.EqualFold(s, "infinity") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(s, 64)
}

// ParseBool reads yes/no/true/false (any case).
func ParseBool(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes", "true":
		return true, true
	case "no", "false":
		return false, true
	}
	return false, false
}

// ParseChoice reads a choice letter such as "B", "(b)" or "B)", returning
// it upper-cased.
func ParseChoice(s string) (string, bool) {
	s = strings.Trim(strings.TrimSpace(s), "()[].:")
	if len(s) != 1 {
		return "", false
	}
	c := s[0]
	if c >= 'a' && c <= 'z' {
		c -= 'a' - 'A'
	}
	if c < 'A' || c > 'Z' {
		return "", false
	}
	return string(c), true
}

func itoa(i int) string { return strconv.Itoa(i) }
