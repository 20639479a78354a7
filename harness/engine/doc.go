// Package engine runs evaluations: one run at a time, its tests in flight
// concurrently up to a limit, each test's prompt sent to a
// harness.ChatModel (with its tools answered in a bounded loop), the
// response scored by the test's evaluator, and every finished result
// written to the runs store at once.
//
// Lifecycle: New, then Start (one run; a second Start while running is
// harness.ErrConflict), and Stop (cancel the requests in flight, keep what
// finished) or Reset (give up on a stuck run at once). Status, Matrix and
// PollLogs report progress; Options.OnEvent lets a program watch a run
// without HTTP. New marks runs that a dead process left "running" as
// "interrupted".
package engine
