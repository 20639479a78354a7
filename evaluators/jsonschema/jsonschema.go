package jsonschema

import (
	"context"
	"fmt"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Type is the evaluator type an evaluator record names to use this
// evaluator, and the name a plugin executable of it carries
// (gauntlet-evaluator-json_schema).
const Type = "json_schema"

// ExpectedType is the expected answer type of tests scored by this
// evaluator: expected.answer holds a JSON Schema. RegisterExpectedType
// makes it valid in a Registry.
const ExpectedType = "json_schema"

// Options configures an Evaluator. The zero value is ready to use.
type Options struct {
	// CacheSize is the number of compiled schemas kept (by schema text);
	// zero means DefaultCacheSize.
	CacheSize int
}

// Evaluator scores a response by validating its JSON against the JSON
// Schema in the test's expected answer. It implements harness.Evaluator and
// harness.ConfigValidator, and is safe for concurrent use. Create it with
// New.
type Evaluator struct {
	schemas *cache
}

var (
	_ harness.Evaluator       = (*Evaluator)(nil)
	_ harness.ConfigValidator = (*Evaluator)(nil)
)

// New returns an Evaluator with the given options.
func New(opts Options) *Evaluator {
	return &Evaluator{schemas: newCache(opts.CacheSize)}
}

// RegisterExpectedType registers ExpectedType in reg, with a check that
// rejects, when a test is written, an expected answer that is not a JSON
// Schema this package compiles. The error is a *harness.ValidationError on
// the field "answer".
func RegisterExpectedType(reg *harness.Registry) error {
	return reg.RegisterExpectedType(ExpectedType, CheckExpected)
}

// CheckExpected is the write-time check of ExpectedType: expected.answer
// must compile as a JSON Schema (see the package documentation for the
// drafts and the features supported). It is a harness.ExpectedChecker.
func CheckExpected(exp harness.Expected) error {
	if _, err := compile(exp.Answer); err != nil {
		return harness.Invalid("answer", "%v", err)
	}
	return nil
}

// Config is the config of an evaluator record of type json_schema. The
// evaluator has no settings, since each test's expected answer holds its
// schema: the config must be empty or absent.
type Config struct{}

// ValidateConfig checks an evaluator record of this type: its config
// decodes into a Config with harness.DecodeConfig, so any key is an error
// naming it ("config.strict: unknown setting"). extraction_regex and
// uses_pass2 are ignored. It implements harness.ConfigValidator.
func (e *Evaluator) ValidateConfig(cfg harness.EvaluatorConfig) error {
	return harness.DecodeConfig(cfg.Config, &Config{})
}

// Evaluate finds the JSON value of req.Response and validates it against
// the JSON Schema in req.Test.Expected.Answer. The test's expected type
// must be ExpectedType (or empty): a test of another type, such as json,
// holds no schema. The score is the share of checks passed (see the package
// documentation); the test passes when every check passes, which is when
// the value is valid against the schema.
//
// Details hold extracted_answer (the JSON text found), json_source
// ("response", "fence", "embedded" or "none"), checks_total,
// checks_passed, failed_checks (the names of the failed checks), errors
// (one line per validation error) and, when the test failed, reason.
//
// A response with no JSON scores 0 with a reason; that is not an error.
// Evaluate returns an error wrapping harness.ErrInvalid when the expected
// type is another one, or the expected answer is not a JSON Schema this
// package compiles.
func (e *Evaluator) Evaluate(ctx context.Context, req *harness.EvalRequest) (*harness.EvalResult, error) {
	if req == nil {
		return nil, fmt.Errorf("jsonschema: nil request: %w", harness.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if typ := req.Test.Expected.Type; typ != "" && typ != ExpectedType {
		return nil, fmt.Errorf("jsonschema: test %s: expected type %q: this evaluator scores tests of type %s, whose answer is a JSON Schema: %w",
			req.Test.ID, typ, ExpectedType, harness.ErrInvalid)
	}
	sch, err := e.schemas.get(req.Test.Expected.Answer)
	if err != nil {
		return nil, fmt.Errorf("jsonschema: test %s: expected.answer %v: %w", req.Test.ID, err, harness.ErrInvalid)
	}
	doc, ok := findJSON(req.Response)
	details := map[string]any{
		"extracted_answer": doc.text,
		"json_source":      doc.source,
	}
	res := &harness.EvalResult{Details: details}
	if !ok {
		reason := "no JSON value found in the response"
		if strings.TrimSpace(req.Response) == "" {
			reason = "empty response"
		}
		details["checks_total"] = 1
		details["checks_passed"] = 0
		details["failed_checks"] = []string{RootCheck}
		details["errors"] = []string{RootCheck + ": " + reason}
		details["reason"] = reason
		return res, nil
	}
	out := score(sch, doc.value)
	details["checks_total"] = out.total
	details["checks_passed"] = out.passed
	details["failed_checks"] = nonNil(out.failed)
	details["errors"] = nonNil(out.errors)
	res.Score = float64(out.passed) / float64(out.total)
	res.Passed = out.passed == out.total
	if !res.Passed {
		details["reason"] = fmt.Sprintf("%d of %d checks failed: %s", out.total-out.passed, out.total,
			strings.Join(out.errors[:min(3, len(out.errors))], "; "))
	}
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
