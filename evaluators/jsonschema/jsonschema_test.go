package jsonschema_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-eval/gauntlet/evaluators/jsonschema"
	"github.com/gauntlet-eval/gauntlet/harness"
)

const personSchema = `{
  "type": "object",
  "required": ["name", "age"],
  "properties": {
    "name": {"type": "string", "minLength": 1},
    "age": {"type": "integer", "minimum": 0},
    "email": {"type": "string", "format": "email"},
    "address": {
      "type": "object",
      "required": ["city"],
      "properties": {"city": {"type": "string"}}
    }
  },
  "additionalProperties": false
}`

func evaluate(t *testing.T, ev *jsonschema.Evaluator, schema, response string) *harness.EvalResult {
	t.Helper()
	res, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
		Test:     harness.Test{ID: "t1", Prompt: "Give JSON.", Expected: harness.Expected{Type: jsonschema.ExpectedType, Answer: schema}},
		Response: response,
	})
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return res
}

func TestEvaluate(t *testing.T) {
	ev := jsonschema.New(jsonschema.Options{})
	tests := []struct {
		name       string
		schema     string
		response   string
		wantScore  float64
		wantPassed bool
		wantTotal  int
		wantFailed []string
		wantSource string
		wantError  string // a substring of one of details["errors"]
	}{
		{
			name:     "valid object",
			schema:   personSchema,
			response: `{"name": "Ada", "age": 36}`,
			// root, /name, /age
			wantScore: 1, wantPassed: true, wantTotal: 3, wantFailed: []string{}, wantSource: "response",
		},
		{
			name:      "valid with optional members",
			schema:    personSchema,
			response:  `{"name": "Ada", "age": 36, "email": "ada@example.com", "address": {"city": "London"}}`,
			wantScore: 1, wantPassed: true, wantTotal: 5, wantFailed: []string{}, wantSource: "response",
		},
		{
			name:      "one wrong member",
			schema:    personSchema,
			response:  `{"name": "Ada", "age": "36"}`,
			wantScore: 2.0 / 3, wantTotal: 3, wantFailed: []string{"/age"}, wantSource: "response",
			wantError: "/age: got string, want integer",
		},
		{
			name:      "missing required member",
			schema:    personSchema,
			response:  `{"name": "Ada"}`,
			wantScore: 2.0 / 3, wantTotal: 3, wantFailed: []string{"/age"}, wantSource: "response",
			wantError: "missing property 'age'",
		},
		{
			name:      "nested error fails its top-level member",
			schema:    personSchema,
			response:  `{"name": "Ada", "age": 36, "address": {"town": "London"}}`,
			wantScore: 3.0 / 4, wantTotal: 4, wantFailed: []string{"/address"}, wantSource: "response",
			wantError: "/address: missing property 'city'",
		},
		{
			name:      "format is asserted",
			schema:    personSchema,
			response:  `{"name": "Ada", "age": 36, "email": "not an address"}`,
			wantScore: 3.0 / 4, wantTotal: 4, wantFailed: []string{"/email"}, wantSource: "response",
			wantError: "is not valid email",
		},
		{
			name:      "property not allowed",
			schema:    personSchema,
			response:  `{"name": "Ada", "age": 36, "nickname": "A"}`,
			wantScore: 3.0 / 4, wantTotal: 4, wantFailed: []string{"/nickname"}, wantSource: "response",
			wantError: "additional properties 'nickname' not allowed",
		},
		{
			name:      "wrong type at the root fails every check",
			schema:    personSchema,
			response:  `["Ada", 36]`,
			wantScore: 0, wantTotal: 3, wantFailed: []string{"(root)", "/name", "/age"}, wantSource: "response",
			wantError: "(root): got array, want object",
		},
		{
			name:      "root constraint other than type",
			schema:    `{"type": "object", "minProperties": 2, "properties": {"a": {"type": "integer"}}}`,
			response:  `{"a": 1}`,
			wantScore: 0.5, wantTotal: 2, wantFailed: []string{"(root)"}, wantSource: "response",
			wantError: "minProperties",
		},
		{
			name:      "array elements are checks",
			schema:    `{"type": "array", "items": {"type": "integer"}, "minItems": 1}`,
			response:  `[1, "two", 3, 4.5]`,
			wantScore: 3.0 / 5, wantTotal: 5, wantFailed: []string{"/1", "/3"}, wantSource: "response",
			wantError: "/1: got string, want integer",
		},
		{
			name:      "scalar schema",
			schema:    `{"type": "integer", "maximum": 10}`,
			response:  `42`,
			wantScore: 0, wantTotal: 1, wantFailed: []string{"(root)"}, wantSource: "response",
			wantError: "maximum",
		},
		{
			name:      "anyOf counts once where it sits",
			schema:    `{"type": "object", "properties": {"id": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^[a-z]+$"}]}}}`,
			response:  `{"id": "ABC"}`,
			wantScore: 0.5, wantTotal: 2, wantFailed: []string{"/id"}, wantSource: "response",
			wantError: "/id: 'anyOf' failed",
		},
		{
			name:       "definitions through $ref",
			schema:     `{"$ref": "#/$defs/point", "$defs": {"point": {"type": "object", "required": ["x", "y"], "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}}}`,
			response:   `{"x": 1, "y": "2"}`,
			wantScore:  2.0 / 3,
			wantTotal:  3,
			wantFailed: []string{"/y"}, wantSource: "response",
			wantError: "/y: got string, want number",
		},
		{
			name:      "big integers keep their precision",
			schema:    `{"type": "integer", "maximum": 9007199254740993}`,
			response:  `9007199254740993`,
			wantScore: 1, wantPassed: true, wantTotal: 1, wantFailed: []string{}, wantSource: "response",
		},
		{
			name:   "json fence",
			schema: personSchema,
			response: "Here you are:\n\n```json\n{\"name\": \"Ada\", \"age\": 36}\n```\n\nAnything else?" +
				"\n```json\n{\"name\": 1}\n```",
			wantScore: 1, wantPassed: true, wantTotal: 3, wantFailed: []string{}, wantSource: "fence",
		},
		{
			name:      "fence without info string",
			schema:    personSchema,
			response:  "```\n{\"name\": \"Ada\", \"age\": 36}\n```",
			wantScore: 1, wantPassed: true, wantTotal: 3, wantFailed: []string{}, wantSource: "fence",
		},
		{
			name:      "embedded object",
			schema:    personSchema,
			response:  `Sure! The record is {"name": "Ada", "age": 36} as requested.`,
			wantScore: 1, wantPassed: true, wantTotal: 3, wantFailed: []string{}, wantSource: "embedded",
		},
		{
			name:      "embedded skips brackets that are not JSON",
			schema:    `{"type": "array", "items": {"type": "string"}}`,
			response:  `Options [a] and {b}: ["x", "y"] -- done`,
			wantScore: 1, wantPassed: true, wantTotal: 3, wantFailed: []string{}, wantSource: "embedded",
		},
		{
			name:      "no JSON at all",
			schema:    personSchema,
			response:  "I cannot help with that.",
			wantScore: 0, wantTotal: 1, wantFailed: []string{"(root)"}, wantSource: "none",
			wantError: "no JSON value found",
		},
		{
			name:      "empty response",
			schema:    personSchema,
			response:  "  \n",
			wantScore: 0, wantTotal: 1, wantFailed: []string{"(root)"}, wantSource: "none",
			wantError: "empty response",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := evaluate(t, ev, tt.schema, tt.response)
			d := res.Details
			if math.Abs(res.Score-tt.wantScore) > 1e-9 || res.Passed != tt.wantPassed {
				t.Errorf("score, passed = %v, %v; want %v, %v (details %v)", res.Score, res.Passed, tt.wantScore, tt.wantPassed, d)
			}
			if d["checks_total"] != tt.wantTotal {
				t.Errorf("checks_total = %v, want %d", d["checks_total"], tt.wantTotal)
			}
			passed, _ := d["checks_passed"].(int)
			if want := tt.wantTotal - len(tt.wantFailed); passed != want {
				t.Errorf("checks_passed = %v, want %d", d["checks_passed"], want)
			}
			if got := d["failed_checks"]; !reflect.DeepEqual(got, tt.wantFailed) {
				t.Errorf("failed_checks = %#v, want %#v", got, tt.wantFailed)
			}
			if d["json_source"] != tt.wantSource {
				t.Errorf("json_source = %v, want %s", d["json_source"], tt.wantSource)
			}
			errs, _ := d["errors"].([]string)
			if tt.wantError == "" && len(errs) > 0 {
				t.Errorf("errors = %q, want none", errs)
			}
			if tt.wantError != "" && !strings.Contains(strings.Join(errs, "\n"), tt.wantError) {
				t.Errorf("errors = %q, want one containing %q", errs, tt.wantError)
			}
			if _, has := d["reason"]; has == res.Passed {
				t.Errorf("reason present = %v with passed = %v", has, res.Passed)
			}
		})
	}
}

func TestEvaluateExtractedAnswer(t *testing.T) {
	ev := jsonschema.New(jsonschema.Options{})
	res := evaluate(t, ev, personSchema, "Result:\n```json\n{\"name\": \"Ada\", \"age\": 36}\n```")
	if got, want := res.Details["extracted_answer"], `{"name": "Ada", "age": 36}`; got != want {
		t.Errorf("extracted_answer = %q, want %q", got, want)
	}
	res = evaluate(t, ev, personSchema, `x {"name": "Ada", "age": 36} y`)
	if got, want := res.Details["extracted_answer"], `{"name": "Ada", "age": 36}`; got != want {
		t.Errorf("extracted_answer = %q, want %q", got, want)
	}
}

func TestEvaluateBadSchema(t *testing.T) {
	ev := jsonschema.New(jsonschema.Options{})
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"empty", "", "is empty"},
		{"not JSON", "{type: object}", "is not JSON"},
		{"unknown type name", `{"type": "strng"}`, "/type: value must be one of"},
		{"bad keyword value", `{"minLength": -1}`, "/minLength"},
		{"pattern that does not compile", `{"pattern": "(?<=a)b"}`, "is not valid regex"},
		{"reference to another document", `{"$ref": "other.json"}`, "references to other documents are not supported"},
		{"reference to a file", `{"$ref": "file:///etc/passwd"}`, "references to other documents are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // the second time from the cache
				res, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
					Test:     harness.Test{ID: "bad", Expected: harness.Expected{Type: jsonschema.ExpectedType, Answer: tt.schema}},
					Response: `{}`,
				})
				if res != nil || err == nil {
					t.Fatalf("Evaluate = %v, %v; want an error", res, err)
				}
				if !errors.Is(err, harness.ErrInvalid) {
					t.Errorf("error %v does not wrap harness.ErrInvalid", err)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q does not contain %q", err, tt.want)
				}
			}
		})
	}
}

func TestEvaluateOtherExpectedType(t *testing.T) {
	ev := jsonschema.New(jsonschema.Options{})
	tests := []struct {
		name    string
		typ     string
		wantErr bool
	}{
		{"json_schema", jsonschema.ExpectedType, false},
		{"empty type", "", false},
		{"json", "json", true},
		{"exact", "exact", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
				Test:     harness.Test{ID: "t", Expected: harness.Expected{Type: tt.typ, Answer: `{"type": "object"}`}},
				Response: `{"a": 1}`,
			})
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, harness.ErrInvalid)) {
				t.Errorf("Evaluate: %v, want error %v wrapping ErrInvalid", err, tt.wantErr)
			}
		})
	}
}

func TestEvaluateCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := jsonschema.New(jsonschema.Options{}).Evaluate(ctx, &harness.EvalRequest{
		Test: harness.Test{Expected: harness.Expected{Answer: personSchema}},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestRegisterExpectedType(t *testing.T) {
	reg := harness.NewRegistry()
	if err := jsonschema.RegisterExpectedType(reg); err != nil {
		t.Fatal(err)
	}
	if err := jsonschema.RegisterExpectedType(reg); !errors.Is(err, harness.ErrConflict) {
		t.Errorf("second registration: %v, want ErrConflict", err)
	}
	v := harness.Validator{Registry: reg}
	tests := []struct {
		name      string
		answer    string
		wantField string // "" for valid
	}{
		{"valid schema", personSchema, ""},
		{"boolean schema", "true", ""},
		{"draft-07 schema", `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "definitions": {}}`, ""},
		{"empty", "", "answer"},
		{"not JSON", "object with a name", "answer"},
		{"not a schema", `{"type": 12}`, "answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Expected(harness.Expected{Type: jsonschema.ExpectedType, Answer: tt.answer})
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Expected: %v", err)
				}
				return
			}
			var ve *harness.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tt.wantField {
				t.Fatalf("Expected: %v, want a ValidationError on %q", err, tt.wantField)
			}
		})
	}
}

func TestValidateConfig(t *testing.T) {
	ev := jsonschema.New(jsonschema.Options{})
	tests := []struct {
		name       string
		cfg        harness.EvaluatorConfig
		wantFields []string
	}{
		{"no config", harness.EvaluatorConfig{ID: "js", Type: jsonschema.Type}, nil},
		{"empty config", harness.EvaluatorConfig{ID: "js", Type: jsonschema.Type, Config: map[string]any{}}, nil},
		{"regex settings are ignored", harness.EvaluatorConfig{ID: "js", Type: jsonschema.Type, ExtractionRegex: "(", UsesPass2: true}, nil},
		{"unknown keys", harness.EvaluatorConfig{ID: "js", Type: jsonschema.Type, Config: map[string]any{"strict": true, "mode": "x"}},
			[]string{"config.mode", "config.strict"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ev.ValidateConfig(tt.cfg)
			var got []string
			var ve *harness.ValidationError
			if errors.As(err, &ve) {
				for _, f := range ve.Fields {
					got = append(got, f.Field)
				}
			} else if err != nil {
				t.Fatalf("ValidateConfig: %v is not a *harness.ValidationError", err)
			}
			if !reflect.DeepEqual(got, tt.wantFields) {
				t.Errorf("fields = %q, want %q", got, tt.wantFields)
			}
			if err != nil && !errors.Is(err, harness.ErrInvalid) {
				t.Errorf("error does not match harness.ErrInvalid")
			}
		})
	}
}

func TestValidatorUsesValidateConfig(t *testing.T) {
	reg := harness.NewRegistry()
	if err := reg.RegisterEvaluator(jsonschema.Type, jsonschema.New(jsonschema.Options{})); err != nil {
		t.Fatal(err)
	}
	err := harness.Validator{Registry: reg}.Evaluator(&harness.EvaluatorConfig{
		ID: "js", Name: "JSON", Type: jsonschema.Type, Config: map[string]any{"x": 1},
	})
	if err == nil || !strings.Contains(err.Error(), "config.x") {
		t.Fatalf("Validator.Evaluator = %v, want an error on config.x", err)
	}
}

// Many goroutines score against a few schemas at once; run with -race.
func TestEvaluateConcurrent(t *testing.T) {
	ev := jsonschema.New(jsonschema.Options{CacheSize: 2})
	schemas := []string{
		personSchema,
		`{"type": "array", "items": {"type": "integer"}}`,
		`{"type": "string", "format": "date"}`,
	}
	responses := []string{`{"name": "Ada", "age": 36}`, `[1, 2, 3]`, `"2024-02-29"`}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			k := i % len(schemas)
			res, err := ev.Evaluate(context.Background(), &harness.EvalRequest{
				Test:     harness.Test{ID: fmt.Sprint(i), Expected: harness.Expected{Answer: schemas[k]}},
				Response: responses[k],
			})
			switch {
			case err != nil:
				errs <- err
			case !res.Passed:
				errs <- fmt.Errorf("request %d: not passed: %v", i, res.Details)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
