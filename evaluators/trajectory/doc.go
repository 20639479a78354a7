// Package trajectory is a first-party evaluator, type "trajectory": it
// scores the tool calls a model made while answering — which functions,
// in which order, with which arguments — against the test's
// expected.trajectory, and not the answer's text. It suits agents and
// tool-using models, where the path matters as much as the destination.
//
// # Lifecycle
//
// A program builds one Evaluator with New, registers it under Type, and
// registers the expected answer type so that tests that check the
// trajectory alone validate on write:
//
//	reg := harness.NewRegistry()
//	reg.RegisterEvaluator(trajectory.Type, trajectory.New())
//	trajectory.RegisterExpectedType(reg)
//
// A test offers tools (its own or its level's) and says
//
//	expected:
//	  type: trajectory
//	  trajectory:
//	    tools: [search_flights, book_flight]
//	    mode: in_order
//	    arguments:
//	      - {destination: Paris}
//	    max_steps: 4
//
// and a domain or test names an evaluator record of type trajectory. A
// test of another expected type may carry a trajectory too (a tool_call
// test, say): this evaluator scores its trajectory and ignores its answer.
// A test without a trajectory is an error, not a silent pass. The same
// constructor serves the plugin main in cmd/gauntlet-evaluator-trajectory.
// The Evaluator holds no state and is safe for concurrent use.
//
// # Matching
//
// The comparison is harness.MatchTrajectory, which plugin authors can call
// themselves. tools are function names (a tool record's function.name).
// A call matches an entry when it has the entry's name and, when
// arguments[i] is a non-empty object, its arguments include it
// (harness.JSONSubset: extra keys at any depth are allowed, arrays compare
// element by element, numbers as JSON numbers). One call matches one entry
// at most. The modes:
//
//   - exact: the calls are the entries, in order, as many as listed.
//   - in_order: the entries appear among the calls, in order; other calls
//     may come before, between and after them.
//   - any_order: each entry has a call of its own, in any order; other
//     calls are allowed.
//   - subset: each call has an entry of its own: the model called nothing
//     the list does not allow. Entries may go unused; no call at all
//     passes. List a tool twice to allow two calls.
//
// max_steps, when set, bounds the number of calls in every mode: with more
// calls the test fails with score 0.
//
// # Score
//
// The score is the share of what the mode requires that matched: the
// entries found in order along a longest common subsequence (in_order),
// the entries with a call (any_order), the calls with an entry (subset,
// 1 with no calls), or the longest common subsequence over the longer of
// the two lists (exact). The test passes when everything matched: a score
// of 1 within max_steps.
//
// # Details
//
// details.trajectory is harness.TrajectoryResult: mode, score, passed,
// expected (each entry with the index of its call, or null), actual (each
// call with its arguments, as JSON or as the text the model sent, and the
// index of its entry, or null), matched, total, max_steps, diverged_at
// (the index in actual where the calls left the trajectory, or null) and
// reason. details.reason repeats the reason, and extracted_answer lists
// the names of the calls made.
//
// # Settings
//
// The evaluator record needs no config; any key is refused by
// ValidateConfig. extraction_regex and uses_pass2 are not used.
package trajectory
