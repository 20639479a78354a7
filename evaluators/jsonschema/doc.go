// Package jsonschema is a first-party evaluator, type "json_schema": the
// model's response must be JSON that validates against the JSON Schema
// held in the test's expected answer. It suits tests that ask for
// structured output ("reply with a JSON object with name and age").
//
// # Lifecycle
//
// A program builds one Evaluator with New, registers it under Type, and
// registers the expected answer type so that tests using it validate on
// write:
//
//	reg := harness.NewRegistry()
//	reg.RegisterEvaluator(jsonschema.Type, jsonschema.New(jsonschema.Options{}))
//	jsonschema.RegisterExpectedType(reg)
//
// A test then says
//
//	expected:
//	  type: json_schema
//	  answer: '{"type": "object", "required": ["name", "age"], "properties": {...}}'
//
// and a domain or test names an evaluator record of type json_schema. A
// test of another expected type (json, exact...) is an error, not a
// silent pass: its answer is not a schema. The
// same constructor serves a plugin main. The Evaluator holds no global
// state, only a bounded cache of compiled schemas, and is safe for
// concurrent use.
//
// # Schemas
//
// Schemas are compiled with github.com/santhosh-tekuri/jsonschema/v6:
// draft 2020-12 unless "$schema" names draft 4, 6, 7 or 2019-09. A schema
// is checked against its meta-schema when it is compiled, so a typo such as
// {"type": "strng"} is refused. "format" is asserted (an "email" that is not
// an e-mail address fails), whatever the draft. "pattern" uses Go's RE2
// syntax. References must stay inside the schema ("#/$defs/item"): no
// file or network is ever read. Compiled schemas are cached by their text.
//
// # Finding the JSON
//
// The value validated is the one harness/textjson's Find gives, the first
// of: the whole trimmed response, when it is one JSON value; the body of
// the first ``` fenced block that parses (```json or any other info
// string; blocks nested in a longer fence are tried too); the first {...}
// or [...] in the text that parses (the first 64 candidate positions are
// tried). The work is linear in the response's length, whatever it holds.
// A response with no JSON scores 0, with the reason in details; that is a
// failed test, not an error.
//
// # Checks and the partial score
//
// The score is checks_passed / checks_total, where the checks are:
//
//   - the root check, "(root)": the value as a whole — every constraint the
//     schema puts on the value itself rather than on one of its members
//     (type, enum, minProperties, anyOf at the root, ...);
//   - one check per property the schema requires, whatever the value;
//   - for an object, one check per other property of the value the schema
//     constrains (named in properties, matching patternProperties, or
//     under an additionalProperties that is false or a schema); member
//     checks are named by their JSON pointer ("/age");
//   - for an array: one check per element the schema constrains (items,
//     prefixItems), named "/0", "/1", ...
//
// "What the schema says" is read from the root schema and the schemas its
// root $ref and allOf lead to. A check fails when a validation error lies
// at or below its member (a nested error in /address/city fails /address),
// when a required property is missing, or when a property is not allowed
// (additionalProperties false, propertyNames). An error under anyOf, oneOf
// or contains counts once, where the combinator sits. When the value is
// rejected as a whole — a wrong type, const, enum or format at the root, or
// a false schema — every check fails and the score is 0. A value valid
// against the schema passes every check: the test passes exactly when the
// value is valid, and then scores 1. No JSON at all is one failed root
// check.
//
// For example, with a schema requiring name (a string) and age (an
// integer), {"name": "Ada", "age": "36"} passes the root and /name and
// fails /age: score 2/3.
//
// # Details
//
// extracted_answer (the JSON text validated), json_source (response,
// fence, embedded or none), checks_total, checks_passed, failed_checks
// (check names), errors (one line per validation error, "/age: got string,
// want integer", at most 50) and, when the test failed, reason.
//
// # Settings
//
// The evaluator record needs no config (Config has no fields); any key is
// refused by ValidateConfig. extraction_regex and uses_pass2 are not used.
package jsonschema
