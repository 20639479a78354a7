// Package stats says whether a score, or a change of score, is real: the
// uncertainty of a cell's score when tests are asked one or more times
// (repeats), and the paired comparison of two runs. It is pure Go with no
// dependency beyond the standard library, and it holds no state: every
// function is a computation on the slices it is given.
//
// # Units and errors
//
// The unit of every figure is the test. Repeats of one test are averaged
// first and then treated as one value, because they are not independent
// draws: the same prompt asked five times says much less than five
// different prompts, and counting repeats as tests would make intervals
// look tighter than the evidence allows.
//
// A sample that ended in error (the model call, a plugin or the evaluator
// failed) says nothing about the model, so it is left out everywhere: it is
// neither a pass nor a failure, and a test whose every repeat ended in
// error is not counted. [Aggregate] reports per test the pass rate over its
// scored repeats, pass@k (passed at least once) and pass-all-k (passed
// every scored repeat).
//
// # Cell intervals
//
// [Cell] returns a cell's score (the mean of its tests' scores), the
// standard error and a 95 % interval, and names the method it used:
//
//   - When every test's score is 0 or 1 (pass/fail scoring, one repeat, or
//     repeats that agree), the Wilson score interval of k passing tests of
//     n. It is the interval statisticians recommend for a proportion: it
//     stays inside [0, 1], does not collapse to a point at 0 % or 100 %,
//     and keeps close to its 95 % promise even for a handful of tests.
//   - When fewer than [TinyN] tests have scores between 0 and 1, the same
//     Wilson formula at the mean score. A score in [0, 1] can vary at most
//     as much as a pass/fail with the same mean, so this interval errs on
//     the wide side, which is the honest side with so few tests.
//   - Otherwise a percentile bootstrap over tests: the tests are drawn with
//     replacement [DefaultResamples] times, and the interval runs from the
//     2.5th to the 97.5th percentile of the resampled means. It assumes
//     only that the tests are a sample from a larger population of similar
//     tests, and it follows the skew of bounded scores. The draws come from
//     a PCG generator seeded by the caller ([Options.Seed]): the same input
//     and seed always give the same interval.
//   - Beyond [LargeN] tests, the normal interval (mean ± 1.96 standard
//     errors), which the bootstrap matches at that size.
//
// # Comparing two runs
//
// [Pairs] matches two runs' samples by test id and repeat, dropping any
// pair with an error; [Compare] then compares them test by test (each
// test's difference is the mean over its paired repeats). The p-value comes
// from the sign-flip permutation test: if the two runs do equally well,
// each test's difference is as likely to be positive as negative, so all
// ways of flipping the signs are equally likely, and p is the share of them
// that show a total change at least as large as the one observed. It makes
// no assumption about the shape of the scores, is exact for small
// comparisons, and for pass/fail outcomes it is exactly McNemar's test
// ([McNemar]): only the tests that flipped count, b from pass to fail and c
// from fail to pass. A comparison is significant when p is below
// [Options.Alpha] (default [DefaultAlpha]).
//
// The interval of the change (head − base) is the normal one, delta ± 1.96
// standard errors, or Wilson's for fewer than [TinyN] tests. It tells how
// large the change may be; significance is decided by the p-value.
//
// # Assumptions and limits
//
// Intervals and tests treat the tests of a cell as a sample of the tests
// one could have written; they say nothing about tests unlike these. Many
// cells compared at once will show some "significant" changes by chance
// (about one in twenty at alpha 0.05 when nothing changed): look at the
// size of the change and at the flipped tests too. With repeats, a changed
// answer on one repeat moves that test's difference only by 1/k.
package stats
