// Package textjson finds a JSON value in free text, such as a language
// model's answer: the whole answer, the body of a ``` fenced block, or an
// object or array amid prose. Evaluators that read JSON from answers (the
// regex evaluator's json type, the JSON Schema evaluator, the judge's
// verdicts) share it, so that they agree on what counts as the answer's
// JSON.
//
// The text is untrusted: it may hold any bytes and be of any length. Find
// and Objects never panic, and their work is linear in the length of the
// text, with small constants (see MaxStarts, MaxFences and Find).
//
// The package returns the JSON text it found, as a substring of the input;
// callers decode it with encoding/json as they need (with json.Number, into
// a struct...).
package textjson
