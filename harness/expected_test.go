package harness

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestParseNumber(t *testing.T) {
	good := []struct {
		in   string
		want float64
	}{
		{"0", 0},
		{"42", 42},
		{" 42 ", 42},
		{"1,234", 1234},
		{"1,234,567.89", 1234567.89},
		{"-3.5", -3.5},
		{"+2", 2},
		{"\u22124", -4}, // Unicode minus sign
		{"1/2", 0.5},
		{"-1/4", -0.25},
		{"50%", 0.5},
		{"12.5 %", 0.125},
		{"$12", 12},
		{"-$5", -5},
		{"$1,000", 1000},
		{"1e3", 1000},
		{"2.5E-2", 0.025},
		{"3.", 3},
		{".5", 0.5},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseNumber(tc.in)
			if !ok || math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("ParseNumber(%q) = %v, %v; want %v, true", tc.in, got, ok, tc.want)
			}
		})
	}
	bad := []string{
		"", " ", "abc", "1,23", "1,2345", ",123", "12,", "1 000", "1/0", "0/0", "1/", "/2", "1/2/3",
		"%", "$", "--1", "-+1", "inf", "-Infinity", "NaN", "0x10", "1_000", "1e400", "1.2.3", "4 apples",
	}
	for _, in := range bad {
		t.Run("bad "+in, func(t *testing.T) {
			if got, ok := ParseNumber(in); ok {
				t.Fatalf("ParseNumber(%q) = %v, true; want false", in, got)
			}
		})
	}
}

func TestParseBool(t *testing.T) {
	cases := []struct {
		in        string
		value, ok bool
	}{
		{"yes", true, true},
		{"YES", true, true},
		{" Yes\n", true, true},
		{"true", true, true},
		{"True", true, true},
		{"no", false, true},
		{"NO", false, true},
		{"false", false, true},
		{"FALSE", false, true},
		{"", false, false},
		{"y", false, false},
		{"n", false, false},
		{"1", false, false},
		{"0", false, false},
		{"yess", false, false},
		{"not sure", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			v, ok := ParseBool(tc.in)
			if v != tc.value || ok != tc.ok {
				t.Fatalf("ParseBool(%q) = %v, %v; want %v, %v", tc.in, v, ok, tc.value, tc.ok)
			}
		})
	}
}

func TestParseChoice(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"B", "B", true},
		{"b", "B", true},
		{" c ", "C", true},
		{"(d)", "D", true},
		{"E)", "E", true},
		{"[a]", "A", true},
		{"A.", "A", true},
		{"z:", "Z", true},
		{"", "", false},
		{"AB", "", false},
		{"1", "", false},
		{"()", "", false},
		{"é", "", false},
		{"B C", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseChoice(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ParseChoice(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBuiltinExpectedTypes(t *testing.T) {
	want := []string{"boolean", "choice", "contains", "exact", "integer", "json", "numeric", "regex", "tool_call"}
	if got := BuiltinExpectedTypes(); !slices.Equal(got, want) {
		t.Fatalf("BuiltinExpectedTypes() = %v, want %v", got, want)
	}
}

func TestValidatorExpected(t *testing.T) {
	cases := []struct {
		name  string
		e     Expected
		field string // empty: valid
	}{
		{"exact", Expected{Type: "exact", Answer: "Paris"}, ""},
		{"exact without an answer", Expected{Type: "exact", Answer: "  "}, "answer"},
		{"contains", Expected{Type: "contains", Answer: "ocean"}, ""},
		{"contains without an answer", Expected{Type: "contains"}, "answer"},
		{"numeric", Expected{Type: "numeric", Answer: "1,234"}, ""},
		{"numeric fraction with tolerance", Expected{Type: "numeric", Answer: "1/3", Tolerance: ptr(0.01)}, ""},
		{"numeric zero tolerance", Expected{Type: "numeric", Answer: "3", Tolerance: ptr(0.0)}, ""},
		{"numeric not a number", Expected{Type: "numeric", Answer: "abc"}, "answer"},
		{"negative tolerance", Expected{Type: "numeric", Answer: "1", Tolerance: ptr(-0.1)}, "tolerance"},
		{"integer", Expected{Type: "integer", Answer: "42"}, ""},
		{"integer in exponent form", Expected{Type: "integer", Answer: "1e3"}, ""},
		{"integer with a fraction", Expected{Type: "integer", Answer: "4.5"}, "answer"},
		{"choice", Expected{Type: "choice", Answer: "B"}, ""},
		{"choice of two letters", Expected{Type: "choice", Answer: "BC"}, "answer"},
		{"regex", Expected{Type: "regex", Answer: `^(?i)paris\.?$`}, ""},
		{"regex with look-ahead", Expected{Type: "regex", Answer: `^(?=.*\d)\w+$`}, ""},
		{"regex that does not compile", Expected{Type: "regex", Answer: "("}, "answer"},
		{"empty regex", Expected{Type: "regex"}, "answer"},
		{"boolean", Expected{Type: "boolean", Answer: "No"}, ""},
		{"boolean maybe", Expected{Type: "boolean", Answer: "maybe"}, "answer"},
		{"json", Expected{Type: "json", Answer: `{"a": [1, 2]}`}, ""},
		{"json scalar", Expected{Type: "json", Answer: `3`}, ""},
		{"bad json", Expected{Type: "json", Answer: `{a: 1}`}, "answer"},
		{"tool_call", Expected{Type: "tool_call", Answer: "get_weather", Arguments: map[string]any{"city": "Paris"}}, ""},
		{"tool_call with a bad name", Expected{Type: "tool_call", Answer: "get weather"}, "answer"},
		{"unknown type", Expected{Type: "telepathy", Answer: "x"}, "type"},
		{"empty type", Expected{Answer: "x"}, "type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validator{}.Expected(tc.e)
			checkFieldError(t, err, tc.field)
		})
	}
}

func TestRegisterExpectedType(t *testing.T) {
	reg := NewRegistry()
	v := Validator{Registry: reg}
	e := Expected{Type: "rubric", Answer: ""}
	checkFieldError(t, v.Expected(e), "type")
	if err := reg.RegisterExpectedType("rubric", nil); err != nil {
		t.Fatal(err)
	}
	checkFieldError(t, v.Expected(e), "")
	if err := reg.RegisterExpectedType("rubric", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("second registration: %v, want ErrConflict", err)
	}
	if err := reg.RegisterExpectedType("exact", nil); !errors.Is(err, ErrConflict) {
		t.Fatalf("registering a built-in type: %v, want ErrConflict", err)
	}
	strict := func(e Expected) error {
		if e.Answer != "ok" {
			return Invalid("answer", "must be ok")
		}
		return nil
	}
	if err := reg.RegisterExpectedType("strict", strict); err != nil {
		t.Fatal(err)
	}
	checkFieldError(t, v.Expected(Expected{Type: "strict", Answer: "no"}), "answer")
	// Another registry does not know it.
	checkFieldError(t, Validator{}.Expected(Expected{Type: "strict", Answer: "ok"}), "type")
}
