package regexeval

import (
	"errors"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func ptr[T any](v T) *T { return &v }

func TestCompare(t *testing.T) {
	cases := []struct {
		name   string
		exp    harness.Expected
		answer string
		passed bool
		reason string // a substring of the reason when failed
	}{
		{"exact", harness.Expected{Answer: "Paris", Type: "exact"}, "Paris", true, ""},
		{"exact: case and white space", harness.Expected{Answer: "New  York City", Type: "exact"}, " new york\n city ", true, ""},
		{"exact: empty type means exact", harness.Expected{Answer: "Paris"}, "paris", true, ""},
		{"exact: different", harness.Expected{Answer: "Paris", Type: "exact"}, "Paris, France", false, `expected "Paris"`},

		{"numeric", harness.Expected{Answer: "42", Type: "numeric"}, "42", true, ""},
		{"numeric: thousands", harness.Expected{Answer: "1234", Type: "numeric"}, "1,234", true, ""},
		{"numeric: fraction", harness.Expected{Answer: "0.5", Type: "numeric"}, "1/2", true, ""},
		{"numeric: percent", harness.Expected{Answer: "0.5", Type: "numeric"}, "50%", true, ""},
		{"numeric: negative", harness.Expected{Answer: "-3.5", Type: "numeric"}, "−3.5", true, ""},
		{"numeric: markdown bold", harness.Expected{Answer: "42", Type: "numeric"}, "**42**", true, ""},
		{"numeric: boxed", harness.Expected{Answer: "42", Type: "numeric"}, `\boxed{42}`, true, ""},
		{"numeric: within default relative tolerance", harness.Expected{Answer: "1000000", Type: "numeric"}, "1000000.5", true, ""},
		{"numeric: outside default tolerance", harness.Expected{Answer: "100", Type: "numeric"}, "100.01", false, "expected 100"},
		{"numeric: tolerance", harness.Expected{Answer: "3.14159", Type: "numeric", Tolerance: ptr(0.01)}, "3.14", true, ""},
		{"numeric: zero tolerance", harness.Expected{Answer: "0.3", Type: "numeric", Tolerance: ptr(0.0)}, "0.3", true, ""},
		{"numeric: expected 0, absolute floor", harness.Expected{Answer: "0", Type: "numeric"}, "0.0000001", true, ""},
		{"numeric: expected 0, too far", harness.Expected{Answer: "0", Type: "numeric"}, "0.001", false, "expected 0"},
		{"numeric: wrong", harness.Expected{Answer: "42", Type: "numeric"}, "41", false, "got 41"},
		{"numeric: not a number", harness.Expected{Answer: "42", Type: "numeric"}, "forty-two", false, "not a number"},

		{"integer", harness.Expected{Answer: "1234", Type: "integer"}, "1,234", true, ""},
		{"integer: written as a float", harness.Expected{Answer: "7", Type: "integer"}, "7.0", true, ""},
		{"integer: beyond 2^53", harness.Expected{Answer: "12345678901234567891", Type: "integer"}, "12345678901234567891", true, ""},
		{"integer: beyond 2^53, off by one", harness.Expected{Answer: "12345678901234567891", Type: "integer"}, "12345678901234567890", false, "expected"},
		{"integer: not integral", harness.Expected{Answer: "7", Type: "integer"}, "7.5", false, "integer"},
		{"integer: wrong", harness.Expected{Answer: "7", Type: "integer"}, "8", false, "got 8"},

		{"choice", harness.Expected{Answer: "B", Type: "choice"}, "B", true, ""},
		{"choice: lower case in parentheses", harness.Expected{Answer: "B", Type: "choice"}, "(b)", true, ""},
		{"choice: letter leading the answer", harness.Expected{Answer: "B", Type: "choice"}, "B) Paris", true, ""},
		{"choice: letter and dot", harness.Expected{Answer: "c", Type: "choice"}, "C. 42", true, ""},
		{"choice: bold", harness.Expected{Answer: "D", Type: "choice"}, "**D**", true, ""},
		{"choice: wrong", harness.Expected{Answer: "B", Type: "choice"}, "A) London", false, "expected B, got A"},
		{"choice: no letter", harness.Expected{Answer: "B", Type: "choice"}, "Paris", false, "not a choice"},

		{"contains", harness.Expected{Answer: "paris", Type: "contains"}, "The capital is PARIS.", true, ""},
		{"contains: missing", harness.Expected{Answer: "paris", Type: "contains"}, "Lyon", false, "does not contain"},

		{"regex", harness.Expected{Answer: `^\d{3}-\d{4}$`, Type: "regex"}, "555-1234", true, ""},
		{"regex: look-ahead (regexp2)", harness.Expected{Answer: `^(?=.*\d)(?=.*[a-z]).{6,}$`, Type: "regex"}, "abc123", true, ""},
		{"regex: no match", harness.Expected{Answer: `^\d{3}-\d{4}$`, Type: "regex"}, "5551234", false, "does not match"},

		{"boolean: yes", harness.Expected{Answer: "yes", Type: "boolean"}, "Yes", true, ""},
		{"boolean: true is yes", harness.Expected{Answer: "yes", Type: "boolean"}, "TRUE", true, ""},
		{"boolean: leading word", harness.Expected{Answer: "true", Type: "boolean"}, "Yes, it does.", true, ""},
		{"boolean: no with a dot", harness.Expected{Answer: "no", Type: "boolean"}, "No.", true, ""},
		{"boolean: wrong", harness.Expected{Answer: "no", Type: "boolean"}, "Yes, of course", false, "expected no"},
		{"boolean: not is not no", harness.Expected{Answer: "no", Type: "boolean"}, "Not sure", false, "not yes, no"},

		{"json: equal with other key order and spacing", harness.Expected{Answer: `{"a":1,"b":[true,null]}`, Type: "json"},
			`{ "b": [true, null], "a": 1.0 }`, true, ""},
		{"json: in a fence", harness.Expected{Answer: `{"name":"x"}`, Type: "json"},
			"Here it is:\n```json\n{\"name\": \"x\"}\n```\nDone.", true, ""},
		{"json: amid text", harness.Expected{Answer: `[1,2,3]`, Type: "json"}, "The list is [1, 2, 3] as asked.", true, ""},
		{"json: scalar", harness.Expected{Answer: `"ok"`, Type: "json"}, `"ok"`, true, ""},
		{"json: different", harness.Expected{Answer: `{"a":1}`, Type: "json"}, `{"a":2}`, false, "expected JSON"},
		{"json: extra key is not equal", harness.Expected{Answer: `{"a":1}`, Type: "json"}, `{"a":1,"b":2}`, false, "expected JSON"},
		{"json: none", harness.Expected{Answer: `{"a":1}`, Type: "json"}, "no JSON here {", false, "no JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			score, passed, detail := Compare(tc.exp, tc.answer, nil)
			if passed != tc.passed || (score == 1) != tc.passed {
				t.Fatalf("Compare(%+v, %q) = %v, %v, %q; want passed=%v", tc.exp, tc.answer, score, passed, detail, tc.passed)
			}
			if !tc.passed && !strings.Contains(detail, tc.reason) {
				t.Errorf("detail %q does not mention %q", detail, tc.reason)
			}
			if tc.passed && detail != "" {
				t.Errorf("detail %q on a pass", detail)
			}
		})
	}
}

func TestCompareToolCall(t *testing.T) {
	weather := harness.Expected{Type: "tool_call", Answer: "get_weather",
		Arguments: map[string]any{"city": "Paris", "days": 3, "opts": map[string]any{"unit": "C"}}}
	cases := []struct {
		name   string
		exp    harness.Expected
		calls  []harness.ToolCall
		passed bool
		reason string
	}{
		{"called, no arguments expected", harness.Expected{Type: "tool_call", Answer: "search"},
			[]harness.ToolCall{{Name: "search", Arguments: `{"q":"x"}`}}, true, ""},
		{"arguments a deep subset, numbers as float64", weather,
			[]harness.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris","days":3.0,"opts":{"unit":"C","lang":"fr"},"x":1}`}}, true, ""},
		{"second call matches", weather, []harness.ToolCall{
			{Name: "search", Arguments: `{}`},
			{Name: "get_weather", Arguments: `{"city":"Paris","days":3,"opts":{"unit":"C"}}`},
		}, true, ""},
		{"empty arguments string is {}", harness.Expected{Type: "tool_call", Answer: "now", Arguments: map[string]any{}},
			[]harness.ToolCall{{Name: "now"}}, true, ""},
		{"some arguments match: fails", weather,
			[]harness.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris","days":2,"opts":{"unit":"C"}}`}}, false, "arguments"},
		{"nested argument missing", weather,
			[]harness.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris","days":3,"opts":{}}`}}, false, "arguments"},
		{"arguments not JSON", weather,
			[]harness.ToolCall{{Name: "get_weather", Arguments: `city=Paris`}}, false, "not JSON"},
		{"array arguments compared element-wise", harness.Expected{Type: "tool_call", Answer: "sum",
			Arguments: map[string]any{"xs": []any{1, 2}}},
			[]harness.ToolCall{{Name: "sum", Arguments: `{"xs":[1,2,3]}`}}, false, "arguments"},
		{"other function", weather, []harness.ToolCall{{Name: "search", Arguments: `{}`}}, false, "called: search"},
		{"no call", weather, nil, false, "no tool was called"},
		{"names are case-sensitive", harness.Expected{Type: "tool_call", Answer: "search"},
			[]harness.ToolCall{{Name: "Search"}}, false, "called: Search"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			score, passed, detail := Compare(tc.exp, "", tc.calls)
			if passed != tc.passed || (score == 1) != tc.passed {
				t.Fatalf("got %v, %v, %q; want passed=%v", score, passed, detail, tc.passed)
			}
			if !strings.Contains(detail, tc.reason) {
				t.Errorf("detail %q does not mention %q", detail, tc.reason)
			}
		})
	}
}

func TestInvalidExpected(t *testing.T) {
	for _, exp := range []harness.Expected{
		{Answer: "x", Type: "fuzzy"},
		{Answer: "abc", Type: "numeric"},
		{Answer: "1.5", Type: "integer"},
		{Answer: "Paris", Type: "choice"},
		{Answer: "maybe", Type: "boolean"},
		{Answer: "{", Type: "json"},
		{Answer: "(", Type: "regex"},
		{Answer: " ", Type: "exact"},
		{Answer: "", Type: "tool_call"},
	} {
		t.Run(exp.Type, func(t *testing.T) {
			if _, err := newTarget(exp, &defaultEvaluator.patterns); !errors.Is(err, harness.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if score, passed, detail := Compare(exp, "x", nil); score != 0 || passed || detail == "" {
				t.Fatalf("Compare = %v, %v, %q", score, passed, detail)
			}
		})
	}
}
