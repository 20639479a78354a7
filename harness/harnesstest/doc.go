// Package harnesstest holds conformance kits for implementations of the
// harness interfaces, in the manner of testing/fstest.TestFS: an author
// runs them in a test of their own against their evaluator, channel or
// tool, built-in or plugin.
//
//	func TestKeyword(t *testing.T) {
//		harnesstest.TestEvaluator(t, keyword.Evaluator{}, harnesstest.EvalCase{
//			Name:    "all keywords",
//			Request: &harness.EvalRequest{Response: "red and blue", Evaluator: cfg},
//			Want:    &harnesstest.Verdict{Score: 1, Passed: true},
//		})
//	}
//
// Each kit runs its checks as subtests named after what they check
// (cases, nil-request, cancelled-context, concurrent...), so a failure
// says which rule was broken and `go test -run` can pick one. They check
// the contract every implementation shares — valid verdicts and outputs,
// errors rather than panics for nil or empty input, prompt return once the
// context is done, safety for concurrent use (run them with -race),
// optional interfaces that behave — not what a particular implementation
// computes; the cases an author passes add that.
//
// A plugin can be checked in both places it lives: in-process, against
// the implementation its main function serves, and through the host
// (harness/plugin/host), against the shim the host registers for it.
package harnesstest
