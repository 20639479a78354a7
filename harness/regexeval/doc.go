// Package regexeval is Gauntlet's built-in evaluator, type "regex"
// (harness.EvaluatorTypeRegex): it extracts an answer from a model's
// response with the evaluator record's extraction_regex, optionally asks
// the model to restate its final answer (the second pass), and compares the
// answer with the test's expected answer per its type (see
// harness.BuiltinExpectedTypes).
//
// # Lifecycle
//
// A program builds one Evaluator with New and registers it:
//
//	reg.RegisterEvaluator(harness.EvaluatorTypeRegex, regexeval.New(regexeval.Options{}))
//
// The engine then calls Evaluate for every test, from many goroutines at
// once; the Evaluator keeps only a cache of compiled patterns. The
// validator calls ValidateConfig before an evaluator record is stored.
//
// # Extraction
//
// The response, trimmed, is searched with extraction_regex. The answer is
// the named group "answer", else the first capturing group (the first
// unnamed one when the pattern has both named and unnamed groups, as
// regexp2 numbers them), else the whole match. When the pattern matches
// several times the last match wins; matches that extract only white space
// are skipped, so that a pattern able to match the empty string does not
// always extract "" at the end of the text. An empty extraction_regex makes
// the whole trimmed response the answer.
//
// Patterns are compiled by harness.CompileRegex's rules, the same that
// check them when a record is written. A pattern the standard library's
// regexp accepts runs there, in linear time. Any other pattern (look-arounds, back-references, atomic groups,
// \Z...) runs on github.com/dlclark/regexp2 with a match timeout
// (Options.MatchTimeout): a timeout makes Evaluate return an error wrapping
// ErrMatchTimeout, so the test is an error, not a failure. regexp2 runs in its RE2 compatibility mode, so \d, \w,
// \s, $, [[:alpha:]] and (?P<name>...) mean what they mean in RE2 whichever
// engine runs the pattern: \d is [0-9], not every Unicode digit, and $ is
// the end of the text (which, trimmed, never ends with a newline). Known
// remaining differences between the engines, all on non-ASCII or rare input:
// \b and \B use Unicode word characters on regexp2 and ASCII ones on the
// standard library, regexp2's \s also matches \v, and case folding under
// (?i) differs for a few letters such as ſ.
//
// # Second pass
//
// When the evaluator record sets uses_pass2 and nothing usable was
// extracted — no match, or text that does not parse for the
// expected type, such as a numeric answer that is not a number — and the
// request carries a Model, Evaluate continues the conversation with a user
// message asking for only the final answer (Pass2Prompt), extracts from the
// reply, and falls back to the trimmed reply itself. Its tokens are counted
// in EvalResult.Usage.
//
// # Expected types
//
// exact (trimmed, case- and white-space-insensitive), numeric (relative
// tolerance, default 1e-6, absolute when the expected value is 0), integer
// (exact, also beyond 2^53), choice ("B", "(b)", "B) Paris"), contains
// (case-insensitive), regex (the expected answer is a pattern searched in
// the answer), boolean (yes/no/true/false, alone or leading the answer),
// json (semantic equality; the answer's JSON value as harness/textjson
// finds it: the whole answer, a ``` fenced block, or amid text), and tool_call (the model called the function
// expected.answer with arguments that include expected.arguments). Scores
// are 1 or 0. For numeric, integer, choice and boolean answers, Markdown
// emphasis or code marks and a LaTeX \boxed{} around the answer are
// ignored ("**42**" is 42).
package regexeval
