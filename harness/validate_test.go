package harness

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// checkFieldError checks that err is nil when field is empty, and else a
// *ValidationError wrapping ErrInvalid that names field.
func checkFieldError(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want one wrapping ErrInvalid", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v (%T), want a *ValidationError", err, err)
	}
	var fields []string
	for _, f := range ve.Fields {
		fields = append(fields, f.Field)
		if f.Message == "" {
			t.Errorf("field %s has no message", f.Field)
		}
	}
	if !slices.Contains(fields, field) {
		t.Fatalf("fields = %q, want %q among them (%v)", fields, field, err)
	}
}

func TestValidID(t *testing.T) {
	cases := []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"_", true},
		{"9", true},
		{"math", true},
		{"Math_2.v1-beta", true},
		{"a..b", true},
		{"a-", true},
		{strings.Repeat("x", 128), true},
		{strings.Repeat("x", 129), false},
		{"", false},
		{"-a", false},
		{".a", false},
		{"..", false},
		{"a/b", false},
		{`a\b`, false},
		{"a b", false},
		{"a\n", false},
		{"é", false},
		{"a:b", false},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			if got := ValidID(tc.id); got != tc.ok {
				t.Fatalf("ValidID(%q) = %v, want %v", tc.id, got, tc.ok)
			}
		})
	}
}

func TestValidAgentID(t *testing.T) {
	cases := []struct {
		id string
		ok bool
	}{
		{"agent", true},
		{"Agent_1", true},
		{"_", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{"a-b", false},
		{"a.b", false},
		{"a b", false},
		{"a\n", false},
		{"é", false},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			if got := ValidAgentID(tc.id); got != tc.ok {
				t.Fatalf("ValidAgentID(%q) = %v, want %v", tc.id, got, tc.ok)
			}
		})
	}
}

func TestValidColor(t *testing.T) {
	cases := []struct {
		c  string
		ok bool
	}{
		{"#aabbcc", true},
		{"#AABBCC", true},
		{"#1a2B3c", true},
		{"#000000", true},
		{"", false},
		{"aabbcc", false},
		{"#abc", false},
		{"#aabbc", false},
		{"#aabbccdd", false},
		{"#gggggg", false},
		{"red", false},
		{" #aabbcc", false},
		{"#aabbcc\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.c, func(t *testing.T) {
			if got := ValidColor(tc.c); got != tc.ok {
				t.Fatalf("ValidColor(%q) = %v, want %v", tc.c, got, tc.ok)
			}
		})
	}
}

func TestCompileRegex(t *testing.T) {
	good := []string{`(\d+)`, `(?<answer>[A-E])`, `(?P<answer>\w+)`, `Answer:\s*(.+)$`, `(?i)yes|no`, `\d+(?=%)`, `(a)\1`}
	for _, p := range good {
		if _, err := CompileRegex(p); err != nil {
			t.Errorf("CompileRegex(%q): %v", p, err)
		}
	}
	bad := []string{`(`, `[a-`, `(?<answer>x`, `*x`}
	for _, p := range bad {
		if _, err := CompileRegex(p); err == nil {
			t.Errorf("CompileRegex(%q) succeeded", p)
		}
	}
}

// refs is a Lookup over fixed sets of ids.
type refs struct{ domains, evaluators, tools []string }

func (r refs) HasDomain(id string) bool    { return slices.Contains(r.domains, id) }
func (r refs) HasEvaluator(id string) bool { return slices.Contains(r.evaluators, id) }
func (r refs) HasTool(id string) bool      { return slices.Contains(r.tools, id) }

var known = refs{domains: []string{"math"}, evaluators: []string{"number"}, tools: []string{"weather", "clock"}}

func TestValidatorDomain(t *testing.T) {
	cases := []struct {
		name  string
		d     Domain
		refs  Lookup
		field string
	}{
		{"minimal", Domain{ID: "math", Name: "Math"}, known, ""},
		{"every field", Domain{ID: "math", Name: "Math", Description: "d", EvaluatorID: "number", Enabled: true,
			SystemPrompt: "p", Icon: "i", Color: "#A1b2C3"}, known, ""},
		{"missing id", Domain{Name: "Math"}, known, "id"},
		{"bad id", Domain{ID: "my domain", Name: "Math"}, known, "id"},
		{"missing name", Domain{ID: "math", Name: "  "}, known, "name"},
		{"bad colour", Domain{ID: "math", Name: "Math", Color: "#12"}, known, "color"},
		{"unknown evaluator", Domain{ID: "math", Name: "Math", EvaluatorID: "ghost"}, known, "evaluator_id"},
		{"no reference checks without a Lookup", Domain{ID: "math", Name: "Math", EvaluatorID: "ghost"}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFieldError(t, Validator{Refs: tc.refs}.Domain(&tc.d), tc.field)
		})
	}
	t.Run("every error is reported", func(t *testing.T) {
		err := Validator{Refs: known}.Domain(&Domain{ID: "-", Color: "x", EvaluatorID: "ghost"})
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) != 4 {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestValidatorLevel(t *testing.T) {
	cases := []struct {
		name  string
		l     LevelConfig
		field string
	}{
		{"defaults", LevelConfig{DomainID: "math", Level: 1}, ""},
		{"every field", LevelConfig{DomainID: "math", Level: MaxLevel, SystemPrompt: "p", SystemPromptMode: PromptReplace,
			PassThreshold: 1, Tools: []string{"weather", "clock"}}, ""},
		{"level zero", LevelConfig{DomainID: "math", Level: 0, SystemPromptMode: PromptPrepend}, ""},
		{"no domain", LevelConfig{Level: 1}, ""},
		{"unknown domain", LevelConfig{DomainID: "ghost", Level: 1}, "domain_id"},
		{"negative level", LevelConfig{DomainID: "math", Level: -1}, "level"},
		{"level too high", LevelConfig{DomainID: "math", Level: MaxLevel + 1}, "level"},
		{"bad mode", LevelConfig{DomainID: "math", Level: 1, SystemPromptMode: "Append"}, "system_prompt_mode"},
		{"threshold below 0", LevelConfig{DomainID: "math", Level: 1, PassThreshold: -0.1}, "pass_threshold"},
		{"threshold above 1", LevelConfig{DomainID: "math", Level: 1, PassThreshold: 1.01}, "pass_threshold"},
		{"unknown tool", LevelConfig{DomainID: "math", Level: 1, Tools: []string{"weather", "ghost"}}, "tools[1]"},
		{"bad tool id", LevelConfig{DomainID: "math", Level: 1, Tools: []string{"a b"}}, "tools[0]"},
		{"tool twice", LevelConfig{DomainID: "math", Level: 1, Tools: []string{"clock", "clock"}}, "tools[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFieldError(t, Validator{Refs: known}.Level(&tc.l), tc.field)
		})
	}
	t.Run("an empty mode becomes append", func(t *testing.T) {
		l := LevelConfig{DomainID: "math", Level: 1}
		if err := (Validator{}).Level(&l); err != nil || l.SystemPromptMode != PromptAppend {
			t.Fatalf("mode %q, err %v", l.SystemPromptMode, err)
		}
	})
}

func TestValidatorTest(t *testing.T) {
	base := func(mod func(*Test)) Test {
		x := Test{ID: "t1", DomainID: "math", Level: 1, Prompt: "2 + 2?", Expected: Expected{Answer: "4", Type: "numeric"}}
		mod(&x)
		return x
	}
	cases := []struct {
		name  string
		t     Test
		field string
	}{
		{"valid", base(func(*Test) {}), ""},
		{"every field", base(func(x *Test) { x.Name, x.EvaluatorID, x.Tools = "n", "number", []string{"weather"} }), ""},
		{"tool_call with arguments", base(func(x *Test) {
			x.Expected = Expected{Answer: "get_weather", Type: "tool_call", Arguments: map[string]any{"city": "Paris"}}
		}), ""},
		{"missing id", base(func(x *Test) { x.ID = "" }), "id"},
		{"bad id", base(func(x *Test) { x.ID = "t/1" }), "id"},
		{"missing domain", base(func(x *Test) { x.DomainID = "" }), "domain_id"},
		{"unknown domain", base(func(x *Test) { x.DomainID = "ghost" }), "domain_id"},
		{"negative level", base(func(x *Test) { x.Level = -1 }), "level"},
		{"missing prompt", base(func(x *Test) { x.Prompt = "\n\t " }), "prompt"},
		{"unknown expected type", base(func(x *Test) { x.Expected.Type = "telepathy" }), "expected.type"},
		{"bad answer for its type", base(func(x *Test) { x.Expected.Answer = "four" }), "expected.answer"},
		{"negative tolerance", base(func(x *Test) { x.Expected.Tolerance = ptr(-1.0) }), "expected.tolerance"},
		{"unknown evaluator", base(func(x *Test) { x.EvaluatorID = "ghost" }), "evaluator_id"},
		{"unknown tool", base(func(x *Test) { x.Tools = []string{"ghost"} }), "tools[0]"},
		{"tool twice", base(func(x *Test) { x.Tools = []string{"weather", "clock", "weather"} }), "tools[2]"},
		{"expected sources", base(func(x *Test) { x.Expected.Sources = []string{"policy.md", "Handbook v2.pdf", "été.docx"} }), ""},
		{"no expected sources", base(func(x *Test) { x.Expected.Sources = []string{} }), ""},
		{"longest source name", base(func(x *Test) { x.Expected.Sources = []string{strings.Repeat("a", MaxSourceNameBytes)} }), ""},
		{"most sources", base(func(x *Test) { x.Expected.Sources = manySources(MaxExpectedSources) }), ""},
		{"empty source", base(func(x *Test) { x.Expected.Sources = []string{"a.md", ""} }), "expected.sources[1]"},
		{"source with a slash", base(func(x *Test) { x.Expected.Sources = []string{"docs/a.md"} }), "expected.sources[0]"},
		{"source with a backslash", base(func(x *Test) { x.Expected.Sources = []string{`docs\a.md`} }), "expected.sources[0]"},
		{"source with dot dot", base(func(x *Test) { x.Expected.Sources = []string{".."} }), "expected.sources[0]"},
		{"source with dot dot inside", base(func(x *Test) { x.Expected.Sources = []string{"a..md"} }), "expected.sources[0]"},
		{"hidden source", base(func(x *Test) { x.Expected.Sources = []string{".env"} }), "expected.sources[0]"},
		{"source with a tab", base(func(x *Test) { x.Expected.Sources = []string{"a\tb.md"} }), "expected.sources[0]"},
		{"source with a NUL", base(func(x *Test) { x.Expected.Sources = []string{"a\x00b.md"} }), "expected.sources[0]"},
		{"padded source", base(func(x *Test) { x.Expected.Sources = []string{" a.md"} }), "expected.sources[0]"},
		{"source too long", base(func(x *Test) { x.Expected.Sources = []string{strings.Repeat("a", MaxSourceNameBytes+1)} }), "expected.sources[0]"},
		{"source twice", base(func(x *Test) { x.Expected.Sources = []string{"a.md", "b.md", "a.md"} }), "expected.sources[2]"},
		{"too many sources", base(func(x *Test) { x.Expected.Sources = manySources(MaxExpectedSources + 1) }), "expected.sources"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFieldError(t, Validator{Refs: known}.Test(&tc.t), tc.field)
		})
	}
	t.Run("an empty expected type becomes exact", func(t *testing.T) {
		x := base(func(x *Test) { x.Expected.Type = "" })
		if err := (Validator{}).Test(&x); err != nil || x.Expected.Type != "exact" {
			t.Fatalf("type %q, err %v", x.Expected.Type, err)
		}
	})
}

// rubricJudge is an evaluator type whose records need config.rubric.
type rubricJudge struct{}

func (rubricJudge) Evaluate(context.Context, *EvalRequest) (*EvalResult, error) {
	return &EvalResult{}, nil
}

func (rubricJudge) ValidateConfig(cfg EvaluatorConfig) error {
	if _, ok := cfg.Config["rubric"].(string); !ok {
		return Invalid("config.rubric", "is required")
	}
	return nil
}

// plainJudge is an evaluator type without config checks.
type plainJudge struct{}

func (plainJudge) Evaluate(context.Context, *EvalRequest) (*EvalResult, error) {
	return &EvalResult{}, nil
}

func TestValidatorEvaluator(t *testing.T) {
	reg := NewRegistry()
	if err := reg.RegisterEvaluator("judge", rubricJudge{}); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterEvaluator("plain", plainJudge{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		e     EvaluatorConfig
		field string
	}{
		{"regex", EvaluatorConfig{ID: "number", Name: "Number", Type: "regex", ExtractionRegex: `(?<answer>-?\d+)`, UsesPass2: true}, ""},
		{"type defaults to regex", EvaluatorConfig{ID: "number", Name: "Number"}, ""},
		{"registered type with its config", EvaluatorConfig{ID: "j", Name: "J", Type: "judge",
			Config: map[string]any{"rubric": "be right", "weights": map[string]any{"a": 1.0}}}, ""},
		{"config refused by its type", EvaluatorConfig{ID: "j", Name: "J", Type: "judge"}, "config.rubric"},
		{"registered type without config checks", EvaluatorConfig{ID: "p", Name: "P", Type: "plain", Config: map[string]any{"x": 1}}, ""},
		{"registered type without config checks, bad regex", EvaluatorConfig{ID: "p", Name: "P", Type: "plain", ExtractionRegex: "("}, "extraction_regex"},
		{"bad regex", EvaluatorConfig{ID: "number", Name: "Number", ExtractionRegex: `(?<answer>\d+`}, "extraction_regex"},
		{"unknown type", EvaluatorConfig{ID: "x", Name: "X", Type: "oracle"}, "type"},
		{"missing id", EvaluatorConfig{Name: "X"}, "id"},
		{"bad id", EvaluatorConfig{ID: "x y", Name: "X"}, "id"},
		{"missing name", EvaluatorConfig{ID: "x"}, "name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFieldError(t, Validator{Registry: reg}.Evaluator(&tc.e), tc.field)
		})
	}
	t.Run("an empty type becomes regex", func(t *testing.T) {
		e := EvaluatorConfig{ID: "x", Name: "X"}
		if err := (Validator{}).Evaluator(&e); err != nil || e.Type != EvaluatorTypeRegex {
			t.Fatalf("type %q, err %v", e.Type, err)
		}
	})
	t.Run("a type another registry knows", func(t *testing.T) {
		e := EvaluatorConfig{ID: "j", Name: "J", Type: "judge", Config: map[string]any{"rubric": "r"}}
		checkFieldError(t, Validator{}.Evaluator(&e), "type")
	})
}

func TestValidatorTool(t *testing.T) {
	params := func(p map[string]any) ToolDefinition {
		return ToolDefinition{ID: "weather", Function: FunctionDef{Name: "get_weather", Parameters: p}}
	}
	cases := []struct {
		name  string
		t     ToolDefinition
		field string
	}{
		{"minimal", ToolDefinition{ID: "clock", Function: FunctionDef{Name: "now"}}, ""},
		{"full", ToolDefinition{ID: "weather", Name: "Weather", Description: "d", Function: FunctionDef{Name: "get_weather",
			Description: "d", Parameters: map[string]any{"type": "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}},
			MockResponse: map[string]any{"temp": 21.5, "sky": []any{"sunny", map[string]any{"wind": nil}}}}, ""},
		{"parameters without a type", params(map[string]any{"properties": map[string]any{}}), ""},
		{"missing id", ToolDefinition{Function: FunctionDef{Name: "now"}}, "id"},
		{"bad id", ToolDefinition{ID: ".x", Function: FunctionDef{Name: "now"}}, "id"},
		{"missing function name", ToolDefinition{ID: "x", Name: "X"}, "function.name"},
		{"bad function name", ToolDefinition{ID: "x", Function: FunctionDef{Name: "get.weather"}}, "function.name"},
		{"function name too long", ToolDefinition{ID: "x", Function: FunctionDef{Name: strings.Repeat("f", 65)}}, "function.name"},
		{"parameters not an object", params(map[string]any{"type": "string"}), "function.parameters.type"},
		{"properties not an object", params(map[string]any{"type": "object", "properties": []any{"city"}}), "function.parameters.properties"},
		{"property not a schema", params(map[string]any{"type": "object", "properties": map[string]any{"city": "string"}}),
			"function.parameters.properties.city"},
		{"required not a list", params(map[string]any{"type": "object", "required": "city"}), "function.parameters.required"},
		{"required not a string", params(map[string]any{"type": "object", "properties": map[string]any{}, "required": []any{1}}),
			"function.parameters.required[0]"},
		{"required names no property", params(map[string]any{"type": "object",
			"properties": map[string]any{"city": map[string]any{}}, "required": []any{"city", "date"}}), "function.parameters.required[1]"},
		{"mock_response not JSON", ToolDefinition{ID: "x", Function: FunctionDef{Name: "x"}, MockResponse: math.Inf(1)}, "mock_response"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFieldError(t, Validator{}.Tool(&tc.t), tc.field)
		})
	}
	t.Run("an empty name becomes the function's", func(t *testing.T) {
		x := ToolDefinition{ID: "clock", Function: FunctionDef{Name: "now"}}
		if err := (Validator{}).Tool(&x); err != nil || x.Name != "now" {
			t.Fatalf("name %q, err %v", x.Name, err)
		}
	})
}

func TestValidatorAgent(t *testing.T) {
	cases := []struct {
		name  string
		a     Agent
		field string
	}{
		{"valid", Agent{ID: "helper_1", Name: "Helper"}, ""},
		{"missing id", Agent{Name: "Helper"}, "id"},
		{"dash in id", Agent{ID: "help-desk"}, "id"},
		{"id too long", Agent{ID: strings.Repeat("a", 129)}, "id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkFieldError(t, Validator{}.Agent(&tc.a), tc.field)
		})
	}
}

func TestValidationError(t *testing.T) {
	ve := &ValidationError{}
	if ve.Err() != nil {
		t.Fatal("an empty ValidationError is an error")
	}
	ve.Add("id", "is required")
	ve.Merge("tests[1]", Invalid("expected.type", "unknown expected type %q", "x"))
	ve.Merge("tools", Invalid("[0]", "unknown tool"))
	ve.Merge("", Invalid("name", "is required"))
	ve.Merge("config", errors.New("plain error"))
	ve.Merge("ignored", nil)
	var fields []string
	for _, f := range ve.Fields {
		fields = append(fields, f.Field)
	}
	want := []string{"id", "tests[1].expected.type", "tools[0]", "name", "config"}
	if !slices.Equal(fields, want) {
		t.Fatalf("fields %q, want %q", fields, want)
	}
	err := ve.Err()
	if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is: %v", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "invalid: id: is required; tests[1].expected.type: unknown expected type \"x\"") ||
		!strings.Contains(msg, "config: plain error") {
		t.Fatalf("message %q", msg)
	}
	if (FieldError{Message: "whole"}).Error() != "whole" {
		t.Fatal("a field error without a field")
	}
}

func TestEffectiveSystemPrompt(t *testing.T) {
	cases := []struct {
		name, domain string
		level        LevelConfig
		want         string
	}{
		{"append", "D", LevelConfig{SystemPrompt: "L", SystemPromptMode: PromptAppend}, "D\n\nL"},
		{"empty mode appends", "D", LevelConfig{SystemPrompt: "L"}, "D\n\nL"},
		{"prepend", "D", LevelConfig{SystemPrompt: "L", SystemPromptMode: PromptPrepend}, "L\n\nD"},
		{"replace", "D", LevelConfig{SystemPrompt: "L", SystemPromptMode: PromptReplace}, "L"},
		{"replace with nothing", "D", LevelConfig{SystemPromptMode: PromptReplace}, ""},
		{"no level prompt", "D", LevelConfig{SystemPromptMode: PromptPrepend}, "D"},
		{"no domain prompt", "", LevelConfig{SystemPrompt: "L", SystemPromptMode: PromptAppend}, "L"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := EffectiveSystemPrompt(tc.domain, tc.level); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestValidatorsRefuseBadText: a NUL or invalid UTF-8 in any text field of
// any record is an error naming that field.
func TestValidatorsRefuseBadText(t *testing.T) {
	v := Validator{}
	domain := func() *Domain { return &Domain{ID: "d", Name: "D"} }
	level := func() *LevelConfig { return &LevelConfig{Level: 1} }
	test := func() *Test {
		return &Test{ID: "t", DomainID: "d", Level: 1, Prompt: "p", Expected: Expected{Answer: "a", Type: "exact"}}
	}
	evaluator := func() *EvaluatorConfig { return &EvaluatorConfig{ID: "e", Name: "E"} }
	tool := func() *ToolDefinition { return &ToolDefinition{ID: "x", Function: FunctionDef{Name: "f"}} }
	agent := func() *Agent { return &Agent{ID: "a"} }
	cases := []struct {
		field string
		check func(bad string) error
	}{
		{"id", func(b string) error { d := domain(); d.ID = b; return v.Domain(d) }},
		{"name", func(b string) error { d := domain(); d.Name = b; return v.Domain(d) }},
		{"description", func(b string) error { d := domain(); d.Description = b; return v.Domain(d) }},
		{"system_prompt", func(b string) error { d := domain(); d.SystemPrompt = b; return v.Domain(d) }},
		{"icon", func(b string) error { d := domain(); d.Icon = b; return v.Domain(d) }},
		{"system_prompt", func(b string) error { l := level(); l.SystemPrompt = b; return v.Level(l) }},
		{"id", func(b string) error { x := test(); x.ID = b; return v.Test(x) }},
		{"name", func(b string) error { x := test(); x.Name = b; return v.Test(x) }},
		{"prompt", func(b string) error { x := test(); x.Prompt = b; return v.Test(x) }},
		{"expected.answer", func(b string) error { x := test(); x.Expected.Answer = b; return v.Test(x) }},
		{"expected.arguments.city", func(b string) error {
			x := test()
			x.Expected = Expected{Answer: "f", Type: "tool_call", Arguments: map[string]any{"city": []any{"ok", b}}}
			return v.Test(x)
		}},
		{"name", func(b string) error { e := evaluator(); e.Name = b; return v.Evaluator(e) }},
		{"description", func(b string) error { e := evaluator(); e.Description = b; return v.Evaluator(e) }},
		{"config.prompt", func(b string) error { e := evaluator(); e.Config = map[string]any{"prompt": b}; return v.Evaluator(e) }},
		{"name", func(b string) error { x := tool(); x.Name = b; return v.Tool(x) }},
		{"function.description", func(b string) error { x := tool(); x.Function.Description = b; return v.Tool(x) }},
		{"mock_response.text", func(b string) error { x := tool(); x.MockResponse = map[string]any{"text": b}; return v.Tool(x) }},
		{"id", func(b string) error { a := agent(); a.ID = b; return v.Agent(a) }},
		{"name", func(b string) error { a := agent(); a.Name = b; return v.Agent(a) }},
		{"description", func(b string) error { a := agent(); a.Description = b; return v.Agent(a) }},
		{"system_prompt", func(b string) error { a := agent(); a.SystemPrompt = b; return v.Agent(a) }},
		{"model", func(b string) error { a := agent(); a.Model = &b; return v.Agent(a) }},
	}
	for _, bad := range []struct{ name, text, message string }{
		{"NUL", "ab\x00c", "NUL"},
		{"invalid UTF-8", "ab\xffc", "UTF-8"},
	} {
		for _, tc := range cases {
			t.Run(bad.name+"/"+tc.field, func(t *testing.T) {
				err := tc.check(bad.text)
				checkFieldError(t, err, strings.Replace(tc.field, ".city", ".city[1]", 1))
				if !strings.Contains(err.Error(), bad.message) {
					t.Errorf("%v does not say %s", err, bad.message)
				}
			})
		}
	}
	if err := v.Test(&Test{ID: "t", DomainID: "d", Prompt: "héllo\tworld ✓", Expected: Expected{Answer: "a"}}); err != nil {
		t.Errorf("good text refused: %v", err)
	}
}

func TestTextProblem(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "plain": "", "é✓\n\t": "", "a\x00": "contains a NUL character",
		"\xc3": "is not valid UTF-8", "\xed\xa0\x80": "is not valid UTF-8",
	} {
		if got := TextProblem(in); got != want {
			t.Errorf("TextProblem(%q) = %q, want %q", in, got, want)
		}
	}
}

// manySources returns n distinct file names.
func manySources(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "doc" + itoa(i) + ".md"
	}
	return out
}

func TestNameProblem(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"Plain name", ""},
		{"名前 — Ünïcødé 🙂 (x) 'y' \"z\"", ""},
		{"שלום مرحبا", ""},
		{"a\x00b", "contains a NUL character"},
		{"a\xffb", "is not valid UTF-8"},
		{"\x1b[31mred", "contains a control character"},
		{"a\tb", "contains a control character"},
		{"a\nb", "contains a control character"},
		{"a\x7fb", "contains a control character"},
		{"a\u0085b", "contains a control character"},
		{"invoice\u202Efdp.exe", "contains a bidirectional control character (U+202E)"},
		{"a\u202Ab", "contains a bidirectional control character (U+202A)"},
		{"a\u2066b", "contains a bidirectional control character (U+2066)"},
		{"a\u2069b", "contains a bidirectional control character (U+2069)"},
		{"a\u200Eb", "contains a bidirectional control character (U+200E)"},
		{"a\u200Fb", "contains a bidirectional control character (U+200F)"},
		{"a\u061Cb", "contains a bidirectional control character (U+061C)"},
	} {
		if got := NameProblem(tc.name); got != tc.want {
			t.Errorf("NameProblem(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	// CheckName leaves NUL and invalid UTF-8 to CheckText.
	ve := &ValidationError{}
	CheckName(ve, "name", "a\x00b")
	CheckName(ve, "name", "ok")
	if ve.Err() != nil {
		t.Errorf("CheckName reported %v", ve)
	}
	CheckName(ve, "name", "a\u202Eb")
	if len(ve.Fields) != 1 || ve.Fields[0].Field != "name" {
		t.Errorf("CheckName: %v", ve)
	}
}

func TestValidatorsRefuseControlNames(t *testing.T) {
	v := Validator{}
	const bad = "evil\u202Etxt.exe"
	for what, err := range map[string]error{
		"domain":    v.Domain(&Domain{ID: "d", Name: bad}),
		"test":      v.Test(&Test{ID: "t", DomainID: "d", Prompt: "p", Name: bad, Expected: Expected{Answer: "a"}}),
		"evaluator": v.Evaluator(&EvaluatorConfig{ID: "e", Name: bad}),
		"tool":      v.Tool(&ToolDefinition{ID: "t", Name: bad, Function: FunctionDef{Name: "f"}}),
		"agent":     v.Agent(&Agent{ID: "a", Name: bad}),
		"source":    v.Test(&Test{ID: "t", DomainID: "d", Prompt: "p", Expected: Expected{Answer: "a", Sources: []string{bad}}}),
	} {
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) != 1 {
			t.Errorf("%s: %v", what, err)
		}
	}
}
